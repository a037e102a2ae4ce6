// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast through stock librxe (ibv_attach_mcast/ibv_detach_mcast),
 * between two devices: a sender on DEV_S, three UD QPs on DEV_R of which
 * two are attached to GROUP (an IPv4 or IPv6 multicast address the
 * receiving netdev has joined: `ip address add GROUP/32 dev DEV autojoin`,
 * /128 for IPv6; GID_INDEX_S then names an IPv6 GID of DEV_S).
 *
 * Checks, each printed as "ok: ..." (any failure exits 1):
 *   - attaching to a unicast GID fails with EINVAL, detaching from a
 *     group the QP is not in fails with EINVAL, a repeated attach succeeds;
 *   - every SEND to the group (destination QP 0xFFFFFF) reaches both
 *     attached QPs, byte for byte, with the sender's QP number, the GRH
 *     flag and the group as the IP destination in the GRH area; the QP that
 *     is not attached gets nothing;
 *   - after one QP detaches, only the other gets the next SENDs, and a
 *     second detach fails with EINVAL;
 *   - a group takes 56 QPs and refuses the 57th with ENOMEM (the device's
 *     max_mcast_qp_attach, which it reports);
 *   - a QP still attached cannot be destroyed (EBUSY, from ib_uverbs) until
 *     it detaches; the process then exits with QPs attached, for the
 *     kernel to clean up.
 * With MCAST_FILTER_CMD set, it runs that command (after "filter:") while
 * both groups exist, to show the netdev's multicast filter.
 *
 *   mcast DEV_S GID_INDEX_S DEV_R GID_INDEX_R GROUP
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QKEY 0x11223344u
#define MSG 256
#define GRH 40
#define SLOTS 16
#define MCAST_QPN 0xffffffu
#define MAX_ATTACH 56

static void die(const char *what)
{
	fprintf(stderr, "FAILED: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "FAILED: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("no device %s", name);
	ibv_free_device_list(list);
	return ctx;
}

/* A UD QP in RTS with its own CQ and SLOTS receive buffers posted. */
static void ud_end(struct end *e, struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				    .qkey = QKEY };

	e->ctx = ctx;
	e->pd = pd;
	e->cq = ibv_create_cq(ctx, 2 * SLOTS, NULL, NULL, 0);
	if (!e->cq)
		die("ibv_create_cq");
	init.send_cq = init.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &init);
	if (!e->qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify to INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE))
		die("modify to RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify to RTS");
	e->buf = calloc(SLOTS, GRH + MSG);
	e->mr = ibv_reg_mr(pd, e->buf, SLOTS * (GRH + MSG), IBV_ACCESS_LOCAL_WRITE);
	if (!e->buf || !e->mr)
		die("ibv_reg_mr");
	for (int i = 0; i < SLOTS; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(e->buf + i * (GRH + MSG)),
				       .length = GRH + MSG, .lkey = e->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(e->qp, &wr, &bad))
			die("ibv_post_recv");
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Up to `want` completions of e's CQ within `seconds`. */
static int poll_for(struct end *e, struct ibv_wc *wc, int want, double seconds)
{
	double end = now() + seconds;
	int got = 0;

	while (got < want && now() < end) {
		int n = ibv_poll_cq(e->cq, want - got, wc + got);

		if (n < 0)
			die("ibv_poll_cq");
		got += n;
	}
	return got;
}

static void payload(uint8_t *p, int seq)
{
	for (int i = 0; i < MSG; i++)
		p[i] = (uint8_t)(seq * 31 + i * 7 + 1);
}

static void send_messages(struct end *s, struct ibv_ah *ah, int first, int count)
{
	struct ibv_wc wc[SLOTS];

	for (int m = first; m < first + count; m++) {
		struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = MSG,
				       .lkey = s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = m, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = MCAST_QPN,
				   .remote_qkey = QKEY },
		}, *bad;

		payload(s->buf, m);
		if (ibv_post_send(s->qp, &wr, &bad))
			die("ibv_post_send");
		if (poll_for(s, wc, 1, 10) != 1 || wc[0].status != IBV_WC_SUCCESS)
			fail("send completion of message %s", "to the group");
	}
}

/* Is the group an IPv4 one (an IPv4-mapped GID)? */
static int is_ipv4_group(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

/* e receives exactly messages first..first+count-1, checked. */
static void expect_messages(struct end *e, const char *who, int first, int count,
			    uint32_t src_qpn, const union ibv_gid *group)
{
	struct ibv_wc wc[SLOTS];
	uint8_t want[MSG];
	int got = poll_for(e, wc, count, 20);

	if (got != count) {
		fprintf(stderr, "FAILED: %s received %d of %d messages\n", who, got, count);
		exit(1);
	}
	for (int i = 0; i < count; i++) {
		uint8_t *slot = e->buf + wc[i].wr_id * (GRH + MSG);

		if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV)
			fail("%s: a receive completed in error", who);
		if (wc[i].byte_len != GRH + MSG || wc[i].src_qp != src_qpn ||
		    !(wc[i].wc_flags & IBV_WC_GRH)) {
			fprintf(stderr, "FAILED: %s: byte_len %u src_qp %u flags %x\n", who,
				wc[i].byte_len, wc[i].src_qp, wc[i].wc_flags);
			exit(1);
		}
		/* IPv4: the IP header sits in the last 20 bytes of the GRH area,
		 * its destination address at 16; IPv6: the IPv6 header fills
		 * it, the destination at 24. Either names the group. */
		if (is_ipv4_group(group) ? memcmp(slot + 20 + 16, &group->raw[12], 4) :
					   memcmp(slot + 24, group->raw, 16))
			fail("%s: the GRH area does not name the group", who);
		payload(want, first + i);
		if (memcmp(slot + GRH, want, MSG))
			fail("%s: payload differs", who);
		/* Post the slot again. */
		struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = GRH + MSG,
				       .lkey = e->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = wc[i].wr_id, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(e->qp, &wr, &bad))
			die("ibv_post_recv");
	}
	/* Nothing more (a duplicate, a message for another group). */
	if (poll_for(e, wc, 1, 0.5))
		fail("%s received a message too many", who);
}

static void expect_nothing(struct end *e, const char *who)
{
	struct ibv_wc wc[1];

	if (poll_for(e, wc, 1, 1.0))
		fail("%s received a message it is not attached for", who);
}

static void expect_errno(const char *what, int rc, int want)
{
	/* libibverbs returns the errno (positive) from these. */
	if (rc != want) {
		fprintf(stderr, "FAILED: %s: got %d (%s), want %s\n", what, rc,
			rc ? strerror(rc) : "success", strerror(want));
		exit(1);
	}
	printf("ok: %s: %s\n", what, want ? strerror(want) : "success");
}

int main(int argc, char **argv)
{
	union ibv_gid mgid = { 0 }, mgid2, unicast;
	struct end s, r[3];
	struct ibv_qp *extra[MAX_ATTACH];
	struct ibv_device_attr dattr;
	struct in_addr in;

	if (argc != 6)
		fail("usage: %s", "mcast DEV_S GID_INDEX_S DEV_R GID_INDEX_R GROUP");
	if (strchr(argv[5], ':')) {
		if (inet_pton(AF_INET6, argv[5], mgid.raw) != 1 || mgid.raw[0] != 0xff)
			fail("GROUP %s is not an IPv6 multicast address", argv[5]);
	} else {
		if (!inet_aton(argv[5], &in))
			fail("GROUP %s is not an IPv4 address", argv[5]);
		mgid.raw[10] = mgid.raw[11] = 0xff;
		memcpy(&mgid.raw[12], &in.s_addr, 4);
	}
	/* The second group: GROUP with its last bit flipped (239.1.2.2 for
	 * 239.1.2.3). */
	mgid2 = mgid;
	mgid2.raw[15] ^= 1;

	struct ibv_context *cs = open_device(argv[1]), *cr = open_device(argv[3]);
	struct ibv_pd *ps = ibv_alloc_pd(cs), *pr = ibv_alloc_pd(cr);

	if (!ps || !pr)
		die("ibv_alloc_pd");
	if (ibv_query_device(cr, &dattr))
		die("ibv_query_device");
	if (dattr.max_mcast_qp_attach != MAX_ATTACH)
		fail("max_mcast_qp_attach is not %s", "56");
	ud_end(&s, cs, ps);
	for (int i = 0; i < 3; i++)
		ud_end(&r[i], cr, pr);

	if (ibv_query_gid(cr, 1, atoi(argv[4]), &unicast))
		die("ibv_query_gid");
	expect_errno("attach to a unicast GID", ibv_attach_mcast(r[0].qp, &unicast, 0), EINVAL);
	expect_errno("detach from a group never joined", ibv_detach_mcast(r[0].qp, &mgid, 0), EINVAL);
	expect_errno("attach QP 0", ibv_attach_mcast(r[0].qp, &mgid, 0), 0);
	expect_errno("attach QP 1", ibv_attach_mcast(r[1].qp, &mgid, 0), 0);
	expect_errno("attach QP 0 again", ibv_attach_mcast(r[0].qp, &mgid, 0), 0);
	expect_errno("detach QP 2, not a member", ibv_detach_mcast(r[2].qp, &mgid, 0), EINVAL);

	struct ibv_ah_attr ah_attr = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = mgid, .sgid_index = atoi(argv[2]), .hop_limit = 1 },
	};
	struct ibv_ah *ah = ibv_create_ah(ps, &ah_attr);

	if (!ah)
		die("ibv_create_ah to the group");

	send_messages(&s, ah, 0, 8);
	expect_messages(&r[0], "attached QP 0", 0, 8, s.qp->qp_num, &mgid);
	expect_messages(&r[1], "attached QP 1", 0, 8, s.qp->qp_num, &mgid);
	expect_nothing(&r[2], "QP 2");
	printf("ok: 8 SENDs to the group reached both attached QPs, byte for byte, and not the third\n");

	expect_errno("detach QP 1", ibv_detach_mcast(r[1].qp, &mgid, 0), 0);
	expect_errno("detach QP 1 again", ibv_detach_mcast(r[1].qp, &mgid, 0), EINVAL);
	send_messages(&s, ah, 8, 4);
	expect_messages(&r[0], "attached QP 0", 8, 4, s.qp->qp_num, &mgid);
	expect_nothing(&r[1], "detached QP 1");
	printf("ok: after QP 1 detached, 4 SENDs reached QP 0 only\n");

	/* 56 QPs in a second group: the three above and 53 more; the 57th is
	 * refused. */
	for (int i = 0; i < MAX_ATTACH - 2; i++) {
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_UD, .send_cq = r[0].cq, .recv_cq = r[0].cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		extra[i] = ibv_create_qp(pr, &init);
		if (!extra[i])
			die("ibv_create_qp (extra)");
	}
	for (int i = 0; i < 3; i++)
		if (ibv_attach_mcast(r[i].qp, &mgid2, 0))
			die("attach to the second group");
	for (int i = 0; i < MAX_ATTACH - 3; i++)
		if (ibv_attach_mcast(extra[i], &mgid2, 0))
			die("attach to the second group");
	expect_errno("attach a 57th QP to a group", ibv_attach_mcast(extra[MAX_ATTACH - 3], &mgid2, 0),
		     ENOMEM);
	/* The first group is unaffected by the second. */
	send_messages(&s, ah, 12, 2);
	expect_messages(&r[0], "attached QP 0", 12, 2, s.qp->qp_num, &mgid);
	printf("ok: a group of 56 QPs refuses the 57th; the first group still delivers\n");

	/* The netdev's multicast filter while both groups exist, for the
	 * script to check. */
	const char *cmd = getenv("MCAST_FILTER_CMD");

	if (cmd) {
		printf("filter:\n");
		fflush(stdout);
		if (system(cmd))
			fail("%s failed", cmd);
	}

	/* ib_uverbs refuses to destroy a QP that is still attached. */
	expect_errno("destroy an attached QP", ibv_destroy_qp(extra[0]), EBUSY);
	expect_errno("detach it", ibv_detach_mcast(extra[0], &mgid2, 0), 0);
	expect_errno("then destroy it", ibv_destroy_qp(extra[0]), 0);

	/* Exit with both groups attached and everything allocated: closing
	 * the device detaches the QPs, destroys them and takes the groups
	 * out of the netdev's filter (the script checks). */
	printf("ok: multicast\n");
	return 0;
}
