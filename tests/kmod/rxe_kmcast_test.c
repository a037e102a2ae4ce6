// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast from a kernel ULP's point of view (as IPoIB-style users
 * and rdma_cm's kernel clients use it): a UD QP on the sending device and
 * three on the receiving one, two of them attached to an IPv4 group with
 * ib_attach_mcast(). SENDs to the group (QP 0xFFFFFF) through an address
 * handle made with rdma_create_ah() must reach both attached QPs, each
 * with its GRH and every payload byte, and not the third; after
 * ib_detach_mcast() of one, only the other. Attaching to a unicast GID
 * and detaching twice must fail.
 *
 * The receiving netdev must have joined the group at the IP level (as
 * rdma_cm does for its members): `ip address add GROUP/32 dev DEV
 * autojoin`; tests/vm/t_kmcast.sh sets that up.
 *
 * The test runs when the module loads; loading fails if it fails, with
 * the reason in the kernel log ("rxe_kmcast_test: ...").
 *
 *   insmod rxe_kmcast_test.ko dev_s=rxe0 gid_index=1 dev_r=rxe1 group=239.1.2.7
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/if_ether.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>

static char *dev_s = "rxe0";
module_param(dev_s, charp, 0444);
MODULE_PARM_DESC(dev_s, "sending RDMA device");
static int gid_index = 1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "GID index of the sender's RoCEv2 IPv4 GID");
static char *dev_r = "rxe1";
module_param(dev_r, charp, 0444);
MODULE_PARM_DESC(dev_r, "receiving RDMA device");
static char *group = "239.1.2.7";
module_param(group, charp, 0444);
MODULE_PARM_DESC(group, "IPv4 multicast group the receiving netdev has joined");

#define TAG "rxe_kmcast_test: "
#define QKEY 0x11223344u
#define MSG 512
#define GRH_BYTES 40
#define SLOT (GRH_BYTES + MSG)
#define SLOTS 8
#define MCAST_QPN 0xffffffu
#define POLL_MS 20000
#define QUIET_MS 500

/* One UD QP with its own CQ and a buffer of SLOTS receive slots. */
struct km_qp {
	struct ib_device *ibdev;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;
};

struct km_side {
	struct ib_device *ibdev;
	struct ib_pd *pd;
};

static struct ib_device *km_found_s, *km_found_r;

static int km_qp_init(struct km_side *side, struct km_qp *q)
{
	struct ib_qp_init_attr init = {
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UD,
	};
	struct ib_qp_attr attr = {};
	int ret;

	q->ibdev = side->ibdev;
	q->buf = kzalloc(SLOTS * SLOT, GFP_KERNEL);
	if (!q->buf)
		return -ENOMEM;
	q->dma = ib_dma_map_single(q->ibdev, q->buf, SLOTS * SLOT, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(q->ibdev, q->dma)) {
		q->dma = 0;
		return -ENOMEM;
	}
	q->cq = ib_alloc_cq(q->ibdev, NULL, 2 * SLOTS, 0, IB_POLL_DIRECT);
	if (IS_ERR(q->cq)) {
		ret = PTR_ERR(q->cq);
		q->cq = NULL;
		return ret;
	}
	init.send_cq = q->cq;
	init.recv_cq = q->cq;
	q->qp = ib_create_qp(side->pd, &init);
	if (IS_ERR(q->qp)) {
		ret = PTR_ERR(q->qp);
		q->qp = NULL;
		return ret;
	}
	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qkey = QKEY;
	ret = ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(q->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 1;
	return ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

static void km_qp_fini(struct km_qp *q)
{
	if (q->qp)
		ib_destroy_qp(q->qp);
	if (q->cq)
		ib_free_cq(q->cq);
	if (q->dma)
		ib_dma_unmap_single(q->ibdev, q->dma, SLOTS * SLOT, DMA_BIDIRECTIONAL);
	kfree(q->buf);
}

static int km_post_recv(struct km_side *side, struct km_qp *q, int slot)
{
	struct ib_sge sge = {
		.addr = q->dma + slot * SLOT, .length = SLOT,
		.lkey = side->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(q->qp, &wr, NULL);
}

static u8 km_byte(int seq, int i)
{
	return (u8)(seq * 31 + i * 7 + 1);
}

/* Polls q's CQ for one completion, for at most ms milliseconds. */
static int km_poll_one(struct km_qp *q, struct ib_wc *wc, int ms)
{
	int waited, n;

	for (waited = 0; waited <= ms; waited++) {
		n = ib_poll_cq(q->cq, 1, wc);
		if (n)
			return n;
		msleep(1);
	}
	return 0;
}

/* Sends message seq from s (its slot 0) to the group through ah. */
static int km_send(struct km_side *side, struct km_qp *s, struct ib_ah *ah, int seq)
{
	struct ib_sge sge = {
		.addr = s->dma, .length = MSG, .lkey = side->pd->local_dma_lkey,
	};
	struct ib_ud_wr wr = {
		.wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED },
		.ah = ah, .remote_qpn = MCAST_QPN, .remote_qkey = QKEY,
	};
	struct ib_wc wc;
	int i, ret;

	ib_dma_sync_single_for_cpu(s->ibdev, s->dma, MSG, DMA_TO_DEVICE);
	for (i = 0; i < MSG; i++)
		s->buf[i] = km_byte(seq, i);
	ib_dma_sync_single_for_device(s->ibdev, s->dma, MSG, DMA_TO_DEVICE);
	ret = ib_post_send(s->qp, &wr.wr, NULL);
	if (ret) {
		pr_err(TAG "post_send of message %d: %d\n", seq, ret);
		return ret;
	}
	if (km_poll_one(s, &wc, POLL_MS) != 1 || wc.status != IB_WC_SUCCESS) {
		pr_err(TAG "message %d: no successful send completion\n", seq);
		return -EIO;
	}
	return 0;
}

/*
 * r (named who) receives exactly messages first..first+count-1 from
 * src_qpn, each with its GRH naming the group and every payload byte
 * right, and nothing more; every slot is posted again.
 */
static int km_expect(struct km_side *side, struct km_qp *r, const char *who, int first,
		     int count, u32 src_qpn, __be32 grp)
{
	struct ib_wc wc;
	int m, i;

	for (m = 0; m < count; m++) {
		const u8 *slot;

		if (km_poll_one(r, &wc, POLL_MS) != 1) {
			pr_err(TAG "%s received %d of %d messages\n", who, m, count);
			return -EIO;
		}
		if (wc.status != IB_WC_SUCCESS || wc.opcode != IB_WC_RECV ||
		    wc.byte_len != SLOT || wc.src_qp != src_qpn ||
		    !(wc.wc_flags & IB_WC_GRH) || wc.wr_id >= SLOTS) {
			pr_err(TAG "%s: status %d opcode %d byte_len %u src_qp %u flags %x\n",
			       who, wc.status, wc.opcode, wc.byte_len, wc.src_qp, wc.wc_flags);
			return -EIO;
		}
		ib_dma_sync_single_for_cpu(r->ibdev, r->dma + wc.wr_id * SLOT, SLOT,
					   DMA_FROM_DEVICE);
		slot = r->buf + wc.wr_id * SLOT;
		/* IPv4: the IP header is the last 20 bytes of the GRH area. */
		if (memcmp(slot + 20 + 16, &grp, 4)) {
			pr_err(TAG "%s: the GRH area does not name the group\n", who);
			return -EIO;
		}
		for (i = 0; i < MSG; i++) {
			if (slot[GRH_BYTES + i] != km_byte(first + m, i)) {
				pr_err(TAG "%s: message %d differs at byte %d\n", who, first + m, i);
				return -EIO;
			}
		}
		if (km_post_recv(side, r, wc.wr_id))
			return -EIO;
	}
	if (km_poll_one(r, &wc, QUIET_MS)) {
		pr_err(TAG "%s received a message too many\n", who);
		return -EIO;
	}
	return 0;
}

/*
 * One round: messages first..first+n-1 sent from s to the group, then
 * each receiver r[i] (named who[i]) must have exactly got[i] of them,
 * from the first on (0 or n).
 */
static int km_round(struct km_side *ss, struct km_qp *s, struct ib_ah *ah,
		    struct km_side *rs, struct km_qp *r, const char *const who[3],
		    const int got[3], int first, int n, __be32 grp)
{
	int i, ret = 0;

	for (i = first; i < first + n && !ret; i++)
		ret = km_send(ss, s, ah, i);
	for (i = 0; i < 3 && !ret; i++)
		ret = km_expect(rs, &r[i], who[i], first, got[i], s->qp->qp_num, grp);
	return ret;
}

static int km_side_init(struct ib_device *ibdev, struct km_side *side)
{
	side->ibdev = ibdev;
	side->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(side->pd)) {
		int ret = PTR_ERR(side->pd);

		side->pd = NULL;
		return ret;
	}
	return 0;
}

static int km_run(void)
{
	struct km_side ss = {}, rs = {};
	struct km_qp s = {}, r[3] = {};
	struct rdma_ah_attr ah_attr = {};
	struct ib_ah *ah = NULL;
	union ib_gid mgid = {}, unicast = {};
	int attached[2] = { 0, 0 };
	__be32 grp;
	int ret, i, slot;

	if (!in4_pton(group, -1, (u8 *)&grp, -1, NULL) || !ipv4_is_multicast(grp)) {
		pr_err(TAG "group %s is not an IPv4 multicast address\n", group);
		return -EINVAL;
	}
	ipv6_addr_set_v4mapped(grp, (struct in6_addr *)mgid.raw);
	ipv6_addr_set_v4mapped(htonl(0x0a000001), (struct in6_addr *)unicast.raw);

	ret = km_side_init(km_found_s, &ss);
	if (!ret)
		ret = km_side_init(km_found_r, &rs);
	if (!ret)
		ret = km_qp_init(&ss, &s);
	for (i = 0; i < 3 && !ret; i++)
		ret = km_qp_init(&rs, &r[i]);
	if (ret) {
		pr_err(TAG "set-up: %d\n", ret);
		goto out;
	}
	for (i = 0; i < 3; i++)
		for (slot = 0; slot < SLOTS && !ret; slot++)
			ret = km_post_recv(&rs, &r[i], slot);
	if (ret) {
		pr_err(TAG "post_recv: %d\n", ret);
		goto out;
	}

	ret = ib_attach_mcast(r[0].qp, &unicast, 0);
	if (ret != -EINVAL) {
		pr_err(TAG "attach to a unicast GID: %d, expected -EINVAL\n", ret);
		ret = -EIO;
		goto out;
	}
	for (i = 0; i < 2; i++) {
		ret = ib_attach_mcast(r[i].qp, &mgid, 0);
		if (ret) {
			pr_err(TAG "attach QP %d: %d\n", i, ret);
			goto out;
		}
		attached[i] = 1;
	}

	ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&ah_attr, 1);
	rdma_ah_set_grh(&ah_attr, &mgid, 0, gid_index, 1, 0);
	ip_eth_mc_map(grp, ah_attr.roce.dmac);
	ah = rdma_create_ah(ss.pd, &ah_attr, 0);
	if (IS_ERR(ah)) {
		ret = PTR_ERR(ah);
		ah = NULL;
		pr_err(TAG "create_ah to the group: %d\n", ret);
		goto out;
	}

	ret = km_round(&ss, &s, ah, &rs, r,
		       (const char *const[3]){ "attached QP 0", "attached QP 1", "the QP not attached" },
		       (const int[3]){ 4, 4, 0 }, 0, 4, grp);
	if (ret)
		goto out;

	ret = ib_detach_mcast(r[1].qp, &mgid, 0);
	if (ret) {
		pr_err(TAG "detach QP 1: %d\n", ret);
		goto out;
	}
	attached[1] = 0;
	ret = ib_detach_mcast(r[1].qp, &mgid, 0);
	if (ret != -EINVAL) {
		pr_err(TAG "detach QP 1 again: %d, expected -EINVAL\n", ret);
		ret = -EIO;
		goto out;
	}
	ret = km_round(&ss, &s, ah, &rs, r,
		       (const char *const[3]){ "attached QP 0", "QP 1 after its detach", "the QP not attached" },
		       (const int[3]){ 2, 0, 0 }, 4, 2, grp);
	if (!ret)
		pr_info(TAG "PASS: 4 SENDs to %s reached both attached QPs and not the third, 2 more only the one still attached; attach to a unicast GID and a second detach refused\n",
			group);
out:
	if (ah)
		rdma_destroy_ah(ah, 0);
	for (i = 0; i < 2; i++)
		if (attached[i])
			ib_detach_mcast(r[i].qp, &mgid, 0);
	for (i = 0; i < 3; i++)
		km_qp_fini(&r[i]);
	km_qp_fini(&s);
	if (rs.pd)
		ib_dealloc_pd(rs.pd);
	if (ss.pd)
		ib_dealloc_pd(ss.pd);
	return ret;
}

static int km_add(struct ib_device *ibdev)
{
	if (!strcmp(dev_name(&ibdev->dev), dev_s))
		km_found_s = ibdev;
	if (!strcmp(dev_name(&ibdev->dev), dev_r))
		km_found_r = ibdev;
	return 0;
}

static void km_remove(struct ib_device *ibdev, void *client_data)
{
	if (ibdev == km_found_s)
		km_found_s = NULL;
	if (ibdev == km_found_r)
		km_found_r = NULL;
}

static struct ib_client km_client = {
	.name = "rxe_kmcast_test",
	.add = km_add,
	.remove = km_remove,
};

static int __init km_init(void)
{
	int ret = ib_register_client(&km_client);

	if (ret)
		return ret;
	if (!km_found_s || !km_found_r) {
		pr_err(TAG "no device %s or %s\n", dev_s, dev_r);
		ret = -ENODEV;
	} else {
		ret = km_run();
	}
	/* The test's verdict is its load's result; nothing stays loaded. */
	ib_unregister_client(&km_client);
	return ret;
}

static void __exit km_exit(void)
{
}

module_init(km_init);
module_exit(km_exit);
MODULE_DESCRIPTION("rxe-rs test: UD multicast through kernel verbs");
MODULE_LICENSE("GPL");
