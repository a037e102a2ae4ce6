/*
 * hostile_ring: write malformed send WQEs straight into the send ring that
 * librxe shares with the kernel, ring the doorbell the way librxe does, and
 * report what the driver did. A correct driver answers a malformed WQE with
 * an error completion or by moving the QP to ERROR; it never crashes, warns
 * or hangs. tests/vm/x_hostile_ring.sh builds and runs this in the guest.
 *
 *   hostile_ring DEV GID_INDEX [CASE...]   run the cases (default: all)
 *   hostile_ring --list                    print the case names
 *
 * Each case gets a fresh pair of RC QPs on DEV, connected to each other
 * (both in RTS, the peer with receives posted), so the requester would run;
 * the ud_ cases get a pair of UD QPs instead, with an address handle that
 * leads from one to the other (and, for some cases, a second protection
 * domain with an address handle of its own).
 * After the case, a health check sends one message over another fresh pair
 * through the ordinary ibv_post_send, which must complete successfully.
 * One line per case:
 *   CASE name: doorbell=..., completion=..., qp=STATE, health=ok -> VERDICT
 * VERDICT is OK (error completion or QP in ERROR; for lenient cases anything
 * that is not a crash or a hang), or UNEXPECTED. Exit 0 if every case was
 * OK, 1 if one was UNEXPECTED, 2 if the set-up failed.
 *
 * Finding the ring: librxe keeps it in its private struct rxe_qp, which
 * starts with the struct ibv_qp that ibv_create_qp returns. The mirror below
 * is rdma-core 44's layout (providers/rxe/rxe.h, libibverbs/driver.h). It is
 * checked before use: the send and receive queue pointers must each be the
 * start of a mapping of /dev/infiniband/uverbs* in /proc/self/maps, of the
 * size the kernel reported (mminfo), with a ring geometry that fits the QP's
 * caps. If librxe's layout ever changes, the program says so and exits 2
 * instead of writing to the wrong place.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>

/* rdma-core 44: libibverbs/driver.h */
struct mirror_verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

/* rdma-core 44: providers/rxe/rxe.h */
struct mirror_rxe_wq {
	struct rxe_queue_buf *queue;
	pthread_spinlock_t lock;
	unsigned int max_sge;
	unsigned int max_inline;
};

struct mirror_rxe_qp {
	struct mirror_verbs_qp vqp;
	struct mminfo rq_mmap_info;
	struct mirror_rxe_wq rq;
	struct mminfo sq_mmap_info;
	struct mirror_rxe_wq sq;
	unsigned int ssn;
	uint32_t cur_index;
	int err;
};

/* rdma-core 44: providers/rxe/rxe.h */
struct mirror_rxe_ah {
	struct ibv_ah ibv_ah;
	struct rxe_av av;
	int ah_num;
};

/* librxe's doorbell: struct ibv_post_send (kern-abi.h) with no WRs */
struct doorbell_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 wr_count;
	__u32 sge_count;
	__u32 wqe_size;
};

#define MR_SIZE (64 * 1024)
#define NRECV 8

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid gid;
static int gid_index;
static int poll_ms = 10000;

#define UD_QKEY 0x11111111

/* What rdma-core 44's headers do not name yet: IB_ACCESS_FLUSH_GLOBAL,
 * IB_UVERBS_WR_FLUSH, IB_UVERBS_WC_FLUSH, IB_FLUSH_GLOBAL, IB_FLUSH_RANGE. */
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define WR_FLUSH 14
#define WC_FLUSH 8
#define FLUSH_TYPE_GLOBAL 1
#define FLUSH_LEVEL_RANGE 0

struct pair {
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *a, *b;
	struct ibv_qp_cap cap;
	int ud;
	/* UD only: the way from a to b, in pd; and a PD and AH of another
	 * process's making (created on demand by a case) */
	struct ibv_ah *ah;
	uint32_t ah_num;
	struct ibv_pd *other_pd;
	struct ibv_ah *other_ah;
};

static const char *state_str(enum ibv_qp_state s)
{
	static const char *names[] = { "RESET", "INIT", "RTR", "RTS", "SQD",
				       "SQE", "ERR" };
	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static int modify(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			    ACCESS_FLUSH_GLOBAL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;		/* 1 s: ACKs are slow under TCG */
	a.retry_cnt = 7;
	a.rnr_retry = 3;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* INIT, RTR, RTS for a UD QP */
static int modify_ud(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = UD_QKEY;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* An address handle in pd to this device's own GID, and the number the
 * kernel gave it. librxe keeps it in its struct rxe_ah, which it allocates
 * zeroed and, when the kernel gives a number, leaves the AV in all zero
 * (it fills one only for old kernels); checked: a number in 1 .. 2^24 - 1
 * after an all-zero AV. */
static struct ibv_ah *create_ah(struct ibv_pd *in_pd, uint32_t *ah_num)
{
	static const struct rxe_av zero_av;
	struct ibv_ah_attr at;
	struct mirror_rxe_ah *rah;
	struct ibv_ah *ah;

	memset(&at, 0, sizeof(at));
	at.is_global = 1;
	at.grh.dgid = gid;
	at.grh.sgid_index = gid_index;
	at.grh.hop_limit = 1;
	at.port_num = 1;
	ah = ibv_create_ah(in_pd, &at);
	if (!ah)
		return NULL;
	rah = (struct mirror_rxe_ah *)ah;
	if (rah->ah_num <= 0 || rah->ah_num >= (1 << 24) ||
	    memcmp(&rah->av, &zero_av, sizeof(zero_av))) {
		fprintf(stderr, "librxe's struct rxe_ah is not rdma-core 44's: "
			"cannot find the AH number\n");
		exit(2);
	}
	*ah_num = (uint32_t)rah->ah_num;
	return ah;
}

static struct ibv_qp *create_qp(struct ibv_cq *cq, struct ibv_qp_cap *cap, int ud)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC;
	ia.sq_sig_all = 0;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = NRECV;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
	qp = ibv_create_qp(pd, &ia);
	if (qp && cap)
		*cap = ia.cap;
	return qp;
}

static int pair_create(struct pair *p, int ud)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *bad;
	int i;

	memset(p, 0, sizeof(*p));
	p->ud = ud;
	p->cq_a = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	p->cq_b = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->cq_a || !p->cq_b)
		return -1;
	p->a = create_qp(p->cq_a, &p->cap, ud);
	p->b = create_qp(p->cq_b, NULL, ud);
	if (!p->a || !p->b)
		return -1;
	if (ud) {
		if (modify_ud(p->a) || modify_ud(p->b))
			return -1;
		p->ah = create_ah(pd, &p->ah_num);
		if (!p->ah)
			return -1;
	} else if (modify(p->a, p->b->qp_num) || modify(p->b, p->a->qp_num)) {
		return -1;
	}
	/* the peer receives into the second half of the MR */
	for (i = 0; i < NRECV; i++) {
		sge.addr = (uintptr_t)buf + MR_SIZE / 2;
		sge.length = MR_SIZE / 2;
		sge.lkey = mr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 1000 + i;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		if (ibv_post_recv(p->b, &rwr, &bad))
			return -1;
	}
	return 0;
}

static void pair_destroy(struct pair *p)
{
	if (p->other_ah && ibv_destroy_ah(p->other_ah))
		printf("  note: destroy_ah(other) failed: %s\n", strerror(errno));
	if (p->ah && ibv_destroy_ah(p->ah))
		printf("  note: destroy_ah failed: %s\n", strerror(errno));
	if (p->a && ibv_destroy_qp(p->a))
		printf("  note: destroy_qp(a) failed: %s\n", strerror(errno));
	if (p->b && ibv_destroy_qp(p->b))
		printf("  note: destroy_qp(b) failed: %s\n", strerror(errno));
	if (p->cq_a && ibv_destroy_cq(p->cq_a))
		printf("  note: destroy_cq(a) failed: %s\n", strerror(errno));
	if (p->cq_b && ibv_destroy_cq(p->cq_b))
		printf("  note: destroy_cq(b) failed: %s\n", strerror(errno));
	if (p->other_pd && ibv_dealloc_pd(p->other_pd))
		printf("  note: dealloc_pd(other) failed: %s\n", strerror(errno));
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Poll CQ for one completion for up to ms milliseconds: 1 got, 0 none. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	long end = now_ms() + ms;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return -1;
		if (n)
			return 1;
		usleep(1000);
	} while (now_ms() < end);
	return 0;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/* ---- the ring ---- */

static int mapped_uverbs(const void *p, size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) != 2)
			continue;
		if (lo == (uintptr_t)p && strstr(line, "/dev/infiniband/uverbs")) {
			*len = hi - lo;
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

static int check_queue(const char *what, struct rxe_queue_buf *q,
		       const struct mminfo *mi, unsigned int min_wr)
{
	size_t len, need;

	if (!q || !mapped_uverbs(q, &len)) {
		fprintf(stderr, "%s ring pointer %p is not a uverbs mapping\n",
			what, (void *)q);
		return -1;
	}
	if (mi->size > len || mi->size + 4096 <= len) {
		fprintf(stderr, "%s ring: mminfo size %u, mapping %zu\n", what,
			mi->size, len);
		return -1;
	}
	if (q->log2_elem_size < 5 || q->log2_elem_size > 20 ||
	    (q->index_mask & (q->index_mask + 1)) || q->index_mask + 1 < min_wr) {
		fprintf(stderr, "%s ring: log2_elem_size %u index_mask %#x\n",
			what, q->log2_elem_size, q->index_mask);
		return -1;
	}
	need = sizeof(*q) + ((size_t)(q->index_mask + 1) << q->log2_elem_size);
	if (need > mi->size) {
		fprintf(stderr, "%s ring: needs %zu > %u\n", what, need, mi->size);
		return -1;
	}
	return 0;
}

static struct rxe_queue_buf *send_ring(struct pair *p)
{
	struct mirror_rxe_qp *rqp = (struct mirror_rxe_qp *)p->a;

	if (check_queue("send", rqp->sq.queue, &rqp->sq_mmap_info,
			p->cap.max_send_wr + 1) ||
	    check_queue("receive", rqp->rq.queue, &rqp->rq_mmap_info,
			p->cap.max_recv_wr + 1) ||
	    rqp->sq.max_sge != p->cap.max_send_sge) {
		fprintf(stderr, "librxe's struct rxe_qp is not rdma-core 44's: "
			"cannot find the send ring\n");
		return NULL;
	}
	return rqp->sq.queue;
}

static uint32_t prod_load(struct rxe_queue_buf *q)
{
	return __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED);
}

static void prod_store(struct rxe_queue_buf *q, uint32_t v)
{
	__atomic_store_n(&q->producer_index, v, __ATOMIC_RELEASE);
}

static struct rxe_send_wqe *slot(struct rxe_queue_buf *q, uint32_t index)
{
	return (struct rxe_send_wqe *)(q->data +
		((size_t)(index & q->index_mask) << q->log2_elem_size));
}

/* A well-formed signaled SEND of len bytes from the MR, as librxe builds it. */
static struct rxe_send_wqe *wqe_send(struct rxe_queue_buf *q, uint32_t len)
{
	struct rxe_send_wqe *w = slot(q, prod_load(q));

	memset(w, 0, (size_t)1 << q->log2_elem_size);
	w->wr.wr_id = 0x5e5e;
	w->wr.opcode = IBV_WR_SEND;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	w->dma.length = len;
	w->dma.resid = len;
	w->dma.num_sge = 1;
	w->dma.sge[0].addr = (uintptr_t)buf;
	w->dma.sge[0].length = len;
	w->dma.sge[0].lkey = mr->lkey;
	return w;
}

static void publish(struct rxe_queue_buf *q)
{
	prod_store(q, (prod_load(q) + 1) & q->index_mask);
}

static int doorbell_raw(struct ibv_qp *qp, uint32_t wr_count, uint32_t wqe_size,
			const void *extra, size_t extra_len)
{
	struct ib_uverbs_post_send_resp resp;
	char msg[sizeof(struct doorbell_cmd) + 256];
	struct doorbell_cmd cmd;
	size_t len = sizeof(cmd) + extra_len;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = len / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = qp->handle;
	cmd.wr_count = wr_count;
	cmd.sge_count = 0;
	cmd.wqe_size = wqe_size;
	memcpy(msg, &cmd, sizeof(cmd));
	if (extra_len)
		memcpy(msg + sizeof(cmd), extra, extra_len);
	if (write(qp->context->cmd_fd, msg, len) != (ssize_t)len)
		return errno ? errno : EIO;
	return 0;
}

static int doorbell(struct ibv_qp *qp)
{
	return doorbell_raw(qp, 0, sizeof(struct ibv_send_wr), NULL, 0);
}

/* ---- the cases ---- */

struct result {
	int db;		/* doorbell errno */
	int check_data;	/* a success must deliver expect[0..64) to the peer
			 * (behind the 40-byte network header on UD) */
	int check_nothing; /* the peer must receive nothing */
	int ok_before;	/* successful completions the case itself polled */
	int at_most_once; /* more than one successful completion is a WQE
			   * executed twice */
	unsigned char expect[64];
	int want_opcode; /* a success must complete with this opcode (0: any) */
};

typedef void (*case_fn)(struct pair *, struct rxe_queue_buf *, struct result *);

static void c_valid(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64);
	publish(q);
	r->db = doorbell(p->a);
}

/* A FLUSH of the peer's MR, as a newer librxe's ibv_wr_flush builds it:
 * it must complete successfully (FLUSH has no verb in rdma-core 44). */
static void c_valid_flush(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct rxe_send_wqe *w = slot(q, prod_load(q));

	memset(w, 0, (size_t)1 << q->log2_elem_size);
	w->wr.wr_id = 0xf1;
	w->wr.opcode = WR_FLUSH;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	w->wr.wr.flush.remote_addr = (uintptr_t)buf;
	w->wr.wr.flush.length = 4096;
	w->wr.wr.flush.rkey = mr->rkey;
	w->wr.wr.flush.type = FLUSH_TYPE_GLOBAL;
	w->wr.wr.flush.level = FLUSH_LEVEL_RANGE;
	w->dma.length = 4096;
	w->dma.resid = 4096;
	w->iova = (uintptr_t)buf;
	publish(q);
	r->db = doorbell(p->a);
	r->want_opcode = WC_FLUSH;
}

static void c_bad_opcode(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->wr.opcode = 0x7f;
	publish(q);
	r->db = doorbell(p->a);
}

static void c_opcode_ffffffff(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->wr.opcode = 0xffffffff;
	publish(q);
	r->db = doorbell(p->a);
}

static void huge(struct pair *p, struct rxe_queue_buf *q, struct result *r, uint32_t len)
{
	struct rxe_send_wqe *w = wqe_send(q, 64);

	w->dma.length = w->dma.resid = len;
	w->dma.sge[0].length = len;
	publish(q);
	r->db = doorbell(p->a);
}

static void c_len_2g(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	huge(p, q, r, 0x80000000u);
}

static void c_len_ffffffff(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	huge(p, q, r, 0xffffffffu);
}

/* dma.length says 64 but the only SGE says 2^31 */
static void c_sge_len_mismatch(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->dma.sge[0].length = 0x80000000u;
	publish(q);
	r->db = doorbell(p->a);
}

/* an RDMA WRITE of 2^31 - 1 bytes */
static void c_write_len_huge(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct rxe_send_wqe *w = wqe_send(q, 64);

	w->wr.opcode = IBV_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = (uintptr_t)buf + MR_SIZE / 2;
	w->wr.wr.rdma.rkey = mr->rkey;
	w->iova = (uintptr_t)buf + MR_SIZE / 2;
	w->dma.length = w->dma.resid = 0x7fffffff;
	w->dma.sge[0].length = 0x7fffffff;
	publish(q);
	r->db = doorbell(p->a);
}

/* num_sge beyond max_send_sge: the SGEs after the first are zero-length,
 * then the walk runs off the slot (and, for 65535, off the ring) */
static void nsge(struct pair *p, struct rxe_queue_buf *q, struct result *r, uint32_t n)
{
	struct rxe_send_wqe *w = wqe_send(q, 64);

	w->dma.num_sge = n;
	w->dma.sge[0].length = 0;
	w->dma.length = w->dma.resid = 64;
	publish(q);
	r->db = doorbell(p->a);
}

static void c_num_sge_max_plus_1(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	nsge(p, q, r, p->cap.max_send_sge + 1);
}

static void c_num_sge_65535(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	nsge(p, q, r, 65535);
}

/* the kernel keeps its walk position (cur_sge, sge_offset) in the shared
 * WQE: start it beyond the SGE array */
static void c_cur_sge_beyond(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->dma.cur_sge = 100000;
	publish(q);
	r->db = doorbell(p->a);
}

static void c_sge_offset_huge(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->dma.sge_offset = 0x7ffffff0;
	publish(q);
	r->db = doorbell(p->a);
}

static void c_bogus_lkey(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->dma.sge[0].lkey = 0xdeadbe00 | (mr->lkey & 0xff);
	publish(q);
	r->db = doorbell(p->a);
}

static void c_sge_addr_outside_mr(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64)->dma.sge[0].addr = (uintptr_t)buf + MR_SIZE + 4096;
	publish(q);
	r->db = doorbell(p->a);
}

static void inl(struct pair *p, struct rxe_queue_buf *q, struct result *r, uint32_t len)
{
	struct rxe_send_wqe *w = wqe_send(q, 64);

	w->wr.send_flags |= IBV_SEND_INLINE;
	w->dma.num_sge = 0;
	w->dma.length = w->dma.resid = len;
	publish(q);
	r->db = doorbell(p->a);
}

/* inline beyond max_inline_data, still inside the slot's neighbours */
static void c_inline_over_max(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	inl(p, q, r, p->cap.max_inline_data + 1024);
}

/* inline length far beyond the whole ring */
static void c_inline_huge(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	inl(p, q, r, 1u << 24);
}

/* inline data whose walk position (sge_offset) starts far outside the WQE */
static void c_inline_offset_huge(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct rxe_send_wqe *w = wqe_send(q, 64);

	w->wr.send_flags |= IBV_SEND_INLINE;
	w->dma.num_sge = 0;
	w->dma.sge_offset = 0x10000000;
	/* a driver that ignores the shared walk state sends the slot's own
	 * inline bytes; any other 64 bytes came from somewhere else */
	r->check_data = 1;
	memcpy(r->expect, w->dma.inline_data, sizeof(r->expect));
	publish(q);
	r->db = doorbell(p->a);
}

/* one good WQE, then a producer index with bits above index_mask */
static void c_prod_unmasked(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	uint32_t prod = prod_load(q);

	wqe_send(q, 64);
	prod_store(q, ((prod + 1) & q->index_mask) + 4 * (q->index_mask + 1));
	r->db = doorbell(p->a);
}

/* producer 0xffffffff: every slot of the ring looks posted (zeroed ones too) */
static void c_prod_ffffffff(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64);
	prod_store(q, 0xffffffff);
	r->db = doorbell(p->a);
}

/* the producer moved backwards past the consumer: the ring looks full of
 * WQEs that were never written */
static void c_prod_behind(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_send(q, 64);
	prod_store(q, (prod_load(q) - 1) & q->index_mask);
	r->db = doorbell(p->a);
}

/* A 32 KiB RDMA WRITE, rung; while the requester holds it (in flight),
 * the producer index is put back under it; once it completes, moved forward
 * over it again and rung. The WQE must not run twice: a second successful
 * completion means the driver read the slot it had already executed. */
static void c_prod_rewound(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	uint32_t prod = prod_load(q);
	struct rxe_send_wqe *w = wqe_send(q, MR_SIZE / 2);
	struct ibv_wc wc;

	w->wr.opcode = IBV_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = (uintptr_t)buf + MR_SIZE / 2;
	w->wr.wr.rdma.rkey = mr->rkey;
	publish(q);
	r->db = doorbell(p->a);
	prod_store(q, prod);
	r->at_most_once = 1;
	if (poll_one(p->cq_a, &wc, poll_ms) == 1 && wc.status == IBV_WC_SUCCESS)
		r->ok_before = 1;
	publish(q);
	if (!r->db)
		r->db = doorbell(p->a);
}

/* doorbell with wr_count 2^32-1 and no WRs in the write */
static void c_db_wr_count_huge(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	(void)q;
	r->db = doorbell_raw(p->a, 0xffffffff, sizeof(struct ibv_send_wr), NULL, 0);
}

/* doorbell carrying one WR through the uverbs path (librxe never does this) */
static void c_db_wr_count_1(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct ib_uverbs_send_wr wr;

	(void)q;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1111;
	wr.opcode = IB_UVERBS_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	r->db = doorbell_raw(p->a, 1, sizeof(wr), &wr, sizeof(wr));
}

/* doorbell whose wqe_size is smaller than a WR */
static void c_db_wqe_size_0(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	(void)q;
	r->db = doorbell_raw(p->a, 0, 0, NULL, 0);
}

/* a good WQE, then a doorbell on a QP handle that does not exist */
static void c_db_bad_handle(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	uint32_t h = p->a->handle;

	wqe_send(q, 64);
	publish(q);
	p->a->handle = 0x7fffffff;
	r->db = doorbell(p->a);
	p->a->handle = h;
	/* the WQE is posted: a good doorbell sends it */
	doorbell(p->a);
}

/* ---- UD cases: the WQE names its destination by an AH number ---- */

/* A well-formed signaled UD SEND of len bytes to the peer QP. */
static struct rxe_send_wqe *wqe_ud(struct pair *p, struct rxe_queue_buf *q, uint32_t len)
{
	struct rxe_send_wqe *w = wqe_send(q, len);

	w->wr.wr.ud.remote_qpn = p->b->qp_num;
	w->wr.wr.ud.remote_qkey = UD_QKEY;
	w->wr.wr.ud.ah_num = p->ah_num;
	return w;
}

static void ud_post(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	publish(q);
	r->db = doorbell(p->a);
}

static void c_ud_valid_send(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_ud(p, q, 64);
	r->check_data = 1;
	memcpy(r->expect, buf, sizeof(r->expect));
	ud_post(p, q, r);
}

/* an AH number that was never handed out */
static void c_ud_bad_ah(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_ud(p, q, 64)->wr.wr.ud.ah_num = 0x00fffffe;
	ud_post(p, q, r);
}

/* AH number 0: old librxe's "the address is in the WQE"; the AV there is
 * all zeroes */
static void c_ud_ah_zero(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_ud(p, q, 64)->wr.wr.ud.ah_num = 0;
	ud_post(p, q, r);
}

/* the number of an AH in another protection domain */
static void c_ud_ah_other_pd(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	uint32_t num;

	p->other_pd = ibv_alloc_pd(ctx);
	p->other_ah = p->other_pd ? create_ah(p->other_pd, &num) : NULL;
	if (!p->other_ah) {
		r->db = errno ? errno : EIO;
		return;
	}
	wqe_ud(p, q, 64)->wr.wr.ud.ah_num = num;
	ud_post(p, q, r);
}

/* the number of an AH destroyed before the doorbell */
static void c_ud_ah_destroyed(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct ibv_ah *ah;
	uint32_t num;

	ah = create_ah(pd, &num);
	if (!ah || ibv_destroy_ah(ah)) {
		r->db = errno ? errno : EIO;
		return;
	}
	wqe_ud(p, q, 64)->wr.wr.ud.ah_num = num;
	ud_post(p, q, r);
}

/* longer than any port MTU: completes, and no packet leaves (C10-93.1.1) */
static void c_ud_oversize(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	wqe_ud(p, q, 8192);
	r->check_nothing = 1;
	ud_post(p, q, r);
}

/* an RDMA WRITE on a UD QP */
static void c_ud_rdma_write(struct pair *p, struct rxe_queue_buf *q, struct result *r)
{
	struct rxe_send_wqe *w = wqe_ud(p, q, 64);

	w->wr.opcode = IBV_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = (uintptr_t)buf + MR_SIZE / 2;
	w->wr.wr.rdma.rkey = mr->rkey;
	ud_post(p, q, r);
}

struct hcase {
	const char *name;
	case_fn fn;
	int strict;	/* must end in an error completion or QP ERROR */
	int expect_success; /* the valid baseline */
	int expect_db_error;
	int ud;		/* runs on a pair of UD QPs */
};

static const struct hcase cases[] = {
	{ "valid_send", c_valid, 0, 1, 0 },
	{ "valid_flush", c_valid_flush, 0, 1, 0 },
	{ "bad_opcode", c_bad_opcode, 1, 0, 0 },
	{ "opcode_ffffffff", c_opcode_ffffffff, 1, 0, 0 },
	{ "len_2g", c_len_2g, 1, 0, 0 },
	{ "len_ffffffff", c_len_ffffffff, 1, 0, 0 },
	{ "sge_len_mismatch", c_sge_len_mismatch, 0, 0, 0 },
	{ "write_len_huge", c_write_len_huge, 1, 0, 0 },
	{ "num_sge_max_plus_1", c_num_sge_max_plus_1, 1, 0, 0 },
	{ "num_sge_65535", c_num_sge_65535, 1, 0, 0 },
	{ "cur_sge_beyond", c_cur_sge_beyond, 0, 0, 0 },
	{ "sge_offset_huge", c_sge_offset_huge, 0, 0, 0 },
	{ "bogus_lkey", c_bogus_lkey, 1, 0, 0 },
	{ "sge_addr_outside_mr", c_sge_addr_outside_mr, 1, 0, 0 },
	{ "inline_over_max", c_inline_over_max, 1, 0, 0 },
	{ "inline_huge", c_inline_huge, 1, 0, 0 },
	{ "inline_offset_huge", c_inline_offset_huge, 0, 0, 0 },
	{ "prod_unmasked", c_prod_unmasked, 0, 0, 0 },
	{ "prod_ffffffff", c_prod_ffffffff, 0, 0, 0 },
	{ "prod_behind", c_prod_behind, 0, 0, 0 },
	{ "prod_rewound", c_prod_rewound, 0, 0, 0 },
	{ "db_wr_count_huge", c_db_wr_count_huge, 0, 0, 1 },
	{ "db_wr_count_1", c_db_wr_count_1, 0, 0, 0 },
	{ "db_wqe_size_0", c_db_wqe_size_0, 0, 0, 1 },
	{ "db_bad_handle", c_db_bad_handle, 0, 0, 1 },
	{ "ud_valid_send", c_ud_valid_send, 0, 1, 0, 1 },
	{ "ud_bad_ah", c_ud_bad_ah, 1, 0, 0, 1 },
	{ "ud_ah_zero", c_ud_ah_zero, 1, 0, 0, 1 },
	{ "ud_ah_other_pd", c_ud_ah_other_pd, 1, 0, 0, 1 },
	{ "ud_ah_destroyed", c_ud_ah_destroyed, 1, 0, 0, 1 },
	{ "ud_oversize", c_ud_oversize, 0, 1, 0, 1 },
	{ "ud_rdma_write", c_ud_rdma_write, 1, 0, 0, 1 },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* Send one message over a fresh pair with the ordinary verbs. */
static int health(void)
{
	struct pair p;
	struct ibv_sge sge = { (uintptr_t)buf, 128, 0 };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	int ok = 0;

	if (pair_create(&p, 0))
		goto out;
	sge.lkey = mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(p.a, &wr, &bad))
		goto out;
	if (poll_one(p.cq_a, &wc, poll_ms) != 1 || wc.status != IBV_WC_SUCCESS)
		goto out;
	if (poll_one(p.cq_b, &wc, poll_ms) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != 128)
		goto out;
	ok = 1;
out:
	pair_destroy(&p);
	return ok;
}

static int run_case(const struct hcase *c)
{
	struct pair p;
	struct rxe_queue_buf *q;
	struct result r = { 0 };
	struct ibv_wc wc;
	char comp[256] = "none", wrong_opcode[64] = "";
	int got, n_ok = 0, n_err = 0, first_err = -1, alive, data_bad = 0;
	int off = c->ud ? 40 : 0; /* UD: the network header comes first */
	enum ibv_qp_state st;
	long end;
	const char *verdict;

	if (pair_create(&p, c->ud)) {
		printf("CASE %s: set-up failed: %s -> UNEXPECTED\n", c->name,
		       strerror(errno));
		pair_destroy(&p);
		return 0;
	}
	q = send_ring(&p);
	if (!q) {
		pair_destroy(&p);
		exit(2);
	}
	memset(buf + MR_SIZE / 2, 0xcc, 64 + off);
	c->fn(&p, q, &r);

	/* Collect completions for up to poll_ms; stop early on an error one
	 * or, after the first completion, once 500 ms pass quietly. */
	end = now_ms() + poll_ms;
	for (;;) {
		got = poll_one(p.cq_a, &wc, (int)(end - now_ms() > 0 ? end - now_ms() : 0));
		if (got != 1)
			break;
		if (wc.status == IBV_WC_SUCCESS && r.want_opcode &&
		    (int)wc.opcode != r.want_opcode) {
			snprintf(wrong_opcode, sizeof(wrong_opcode),
				 ", completion opcode %d, not %d", wc.opcode, r.want_opcode);
			data_bad = 1;
		}
		if (wc.status == IBV_WC_SUCCESS)
			n_ok++;
		else {
			n_err++;
			if (first_err < 0)
				first_err = wc.status;
		}
		if (first_err >= 0)
			break;
		end = now_ms() + 500;
	}
	if (n_ok || n_err)
		snprintf(comp, sizeof(comp), "%d ok, %d error%s%s", n_ok, n_err,
			 first_err >= 0 ? " (first: " : "",
			 first_err >= 0 ? ibv_wc_status_str(first_err) : "");
	if (first_err >= 0)
		strcat(comp, ")");
	if (r.check_data && n_ok) {
		struct ibv_wc rwc;

		if (poll_one(p.cq_b, &rwc, poll_ms) != 1)
			strcat(comp, ", peer received nothing");
		else if (rwc.status != IBV_WC_SUCCESS)
			strcat(comp, ", peer receive failed");
		else if (rwc.byte_len != 64 + (unsigned int)off ||
			 memcmp(buf + MR_SIZE / 2 + off, r.expect, 64)) {
			strcat(comp, ", peer got bytes that are not the WQE's (LEAK)");
			data_bad = 1;
		} else
			strcat(comp, ", peer got the WQE's own bytes");
	}
	if (r.check_nothing && poll_one(p.cq_b, &wc, 2000) == 1) {
		strcat(comp, ", but the peer received a message");
		data_bad = 1;
	}
	strcat(comp, wrong_opcode);
	n_ok += r.ok_before;
	if (r.ok_before)
		snprintf(comp + strlen(comp), sizeof(comp) - strlen(comp),
			 ", %d ok before the case returned", r.ok_before);
	if (r.at_most_once && n_ok > 1) {
		strcat(comp, ", the WQE ran twice");
		data_bad = 1;
	}
	st = qp_state(p.a);
	pair_destroy(&p);
	alive = health();

	if (!alive || data_bad)
		verdict = "UNEXPECTED";
	else if (c->expect_success)
		verdict = (n_ok == 1 && !n_err && !r.db) ? "OK" : "UNEXPECTED";
	else if (c->expect_db_error)
		verdict = r.db ? "OK" : "UNEXPECTED";
	else if (c->strict)
		verdict = (n_err || st == IBV_QPS_ERR) ? "OK" : "UNEXPECTED";
	else
		verdict = "OK";
	printf("CASE %s: doorbell=%s, completion=%s, qp=%s, health=%s -> %s%s\n",
	       c->name, r.db ? strerror(r.db) : "ok", comp, state_str(st),
	       alive ? "ok" : "FAILED", verdict,
	       c->strict || c->expect_success || c->expect_db_error ? "" : " (lenient)");
	fflush(stdout);
	return verdict[0] == 'O';
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int i, j, n, all_ok = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NCASES; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV GID_INDEX [CASE...] | --list\n", argv[0]);
		return 2;
	}
	if (getenv("HOSTILE_POLL_MS"))
		poll_ms = atoi(getenv("HOSTILE_POLL_MS"));
	gid_index = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			break;
	if (!list || i == n) {
		fprintf(stderr, "no device %s\n", argv[1]);
		return 2;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "open %s / query gid %d failed\n", argv[1], gid_index);
		return 2;
	}
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, MR_SIZE);
	if (!pd || !buf)
		return 2;
	memset(buf, 0xab, MR_SIZE);
	mr = ibv_reg_mr(pd, buf, MR_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			ACCESS_FLUSH_GLOBAL);
	if (!mr) {
		perror("reg_mr");
		return 2;
	}
	if (!health()) {
		fprintf(stderr, "the health check fails before any case\n");
		return 2;
	}
	for (i = 0; i < NCASES; i++) {
		int want = argc == 3;

		for (j = 3; j < argc; j++)
			want |= !strcmp(argv[j], cases[i].name);
		if (want && !run_case(&cases[i]))
			all_ok = 0;
	}
	for (j = 3; j < argc; j++) {
		for (i = 0; i < NCASES; i++)
			if (!strcmp(argv[j], cases[i].name))
				break;
		if (i == NCASES) {
			fprintf(stderr, "no case %s\n", argv[j]);
			all_ok = 0;
		}
	}
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return all_ok ? 0 : 1;
}
