// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel verbs on an rxe device, the way a kernel ULP (SMC-R, NFS/RDMA,
 * RDS) uses them: a PD, a kernel CQ polled directly, and two RC QPs on the
 * same port connected to each other (the device talks to itself). It sends
 * a pattern, writes one and reads one back through the PD's DMA MR, and
 * checks every byte; with srq=1 the receiving QP takes its receive WQE
 * from a kernel SRQ. Posting before the QPs are ready must fail, and
 * ib_drain_qp() (ERROR, then a flushed request on each queue) must return.
 *
 * The test runs when the module loads; loading fails if it fails, with
 * the reason in the kernel log ("rxe_kverbs_test: ..."). A device that
 * refuses kernel QPs or SRQs makes loading fail with that error (e.g.
 * EOPNOTSUPP), which tests/vm/t_kverbs.sh tells apart from a failure.
 *
 * With handler_post=1 the receiving QP's receives complete on a CQ of
 * their own whose completion handler (called by the driver as the
 * completion is posted, in its receive path) posts a SEND on that same QP,
 * as a ULP answering a request from its handler does; the receiving QP
 * has sent and had acknowledged a message of its own first. At 1 MiB the
 * receive path processes the message on its second CPU, where the driver
 * holds the QP's lock (and the CQ's, interrupts off) when it calls the
 * handler: the post must neither wait for that lock nor be lost
 * (tests/vm/t_kverbs_handler.sh).
 *
 *   insmod rxe_kverbs_test.ko dev=rxe0 gid_index=1 [size=4096] [srq=1]
 *          [handler_post=1]
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test");
static int gid_index = 1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "GID index of the port's RoCEv2 IPv4 GID");
static int size = 4096;
module_param(size, int, 0444);
MODULE_PARM_DESC(size, "bytes per operation (1 .. 1 MiB)");
static int srq;
module_param(srq, int, 0444);
MODULE_PARM_DESC(srq, "receive through a kernel SRQ");
static int handler_post;
module_param(handler_post, int, 0444);
MODULE_PARM_DESC(handler_post, "post a SEND from the receive CQ's completion handler");

#define TAG "rxe_kverbs_test: "
#define POLL_MS 60000

struct kv_side {
	struct ib_qp *qp;
	void *buf;
	u64 dma;
};

struct kv_test {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	/* handler_post: b's receive CQ, whose handler posts on b. */
	struct ib_cq *hcq;
	atomic_t handler_calls;
	int handler_ret;
	struct ib_srq *srq;
	struct kv_side a, b;
	union ib_gid gid;
	u8 dmac[ETH_ALEN];
};

static int kv_result = -ENODEV;

/* Completions taken from the CQ while waiting for another one. */
struct kv_seen {
	struct ib_wc wc[4];
	int n;
};

static int kv_check_wc(const struct ib_wc *wc, u64 wr_id, enum ib_wc_opcode opcode, u32 *byte_len)
{
	if (wc->status != IB_WC_SUCCESS) {
		pr_err(TAG "wr %llu: status %s (%d)\n", wc->wr_id,
		       ib_wc_status_msg(wc->status), wc->status);
		return -EIO;
	}
	if (wc->opcode != opcode) {
		pr_err(TAG "wr %llu: opcode %d, expected %d\n", wr_id, wc->opcode, opcode);
		return -EIO;
	}
	if (byte_len)
		*byte_len = wc->byte_len;
	return 0;
}

/*
 * Waits for the completion of wr_id, which must succeed with the given
 * opcode. Others that come first (a SEND's and its receive's complete in
 * either order) are kept in `seen` for a later call.
 */
static int kv_poll(struct kv_test *t, struct kv_seen *seen, u64 wr_id,
		   enum ib_wc_opcode opcode, u32 *byte_len)
{
	struct ib_wc wc;
	int waited, n, i;

	for (i = 0; i < seen->n; i++) {
		if (seen->wc[i].wr_id == wr_id) {
			wc = seen->wc[i];
			seen->wc[i] = seen->wc[--seen->n];
			return kv_check_wc(&wc, wr_id, opcode, byte_len);
		}
	}
	for (waited = 0; waited < POLL_MS; ) {
		n = ib_poll_cq(t->cq, 1, &wc);
		if (n < 0) {
			pr_err(TAG "poll_cq: %d\n", n);
			return n;
		}
		if (n == 0) {
			msleep(1);
			waited++;
			continue;
		}
		if (wc.wr_id == wr_id)
			return kv_check_wc(&wc, wr_id, opcode, byte_len);
		if (seen->n == ARRAY_SIZE(seen->wc)) {
			pr_err(TAG "unexpected completion of wr %llu\n", wc.wr_id);
			return -EIO;
		}
		seen->wc[seen->n++] = wc;
	}
	pr_err(TAG "wr %llu: no completion in %d ms\n", wr_id, POLL_MS);
	return -ETIMEDOUT;
}

static void kv_fill(void *buf, u8 seed)
{
	u8 *p = buf;
	int i;

	for (i = 0; i < size; i++)
		p[i] = (u8)(seed + i * 7 + (i >> 8));
}

static int kv_check(const char *what, const void *got, const void *want)
{
	if (memcmp(got, want, size)) {
		pr_err(TAG "%s: data differs\n", what);
		return -EIO;
	}
	return 0;
}

static int kv_connect(struct kv_test *t, struct ib_qp *qp, u32 dest_qpn)
{
	struct ib_qp_attr attr = {};
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_READ;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.rq_psn = 100;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &t->gid, 0, gid_index, 64, 0);
	memcpy(attr.ah_attr.roce.dmac, t->dmac, ETH_ALEN);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 100;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static int kv_side_init(struct kv_test *t, struct kv_side *s)
{
	struct ib_qp_init_attr init = {
		.send_cq = t->cq,
		.recv_cq = s == &t->b && t->hcq ? t->hcq : t->cq,
		.srq = t->srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = t->srq ? 0 : 8,
			 .max_send_sge = 2, .max_recv_sge = t->srq ? 0 : 2 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};

	s->buf = kzalloc(size, GFP_KERNEL);
	if (!s->buf)
		return -ENOMEM;
	s->dma = ib_dma_map_single(t->ibdev, s->buf, size, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(t->ibdev, s->dma))
		return -ENOMEM;
	s->qp = ib_create_qp(t->pd, &init);
	if (IS_ERR(s->qp)) {
		int ret = PTR_ERR(s->qp);

		s->qp = NULL;
		pr_info(TAG "create_qp: %d\n", ret);
		return ret;
	}
	return 0;
}

static void kv_side_fini(struct kv_test *t, struct kv_side *s)
{
	if (s->qp)
		ib_destroy_qp(s->qp);
	if (s->buf && s->dma && !ib_dma_mapping_error(t->ibdev, s->dma))
		ib_dma_unmap_single(t->ibdev, s->dma, size, DMA_BIDIRECTIONAL);
	kfree(s->buf);
}

static int kv_post_recv(struct kv_test *t, u64 wr_id)
{
	struct ib_sge sge = {
		.addr = t->b.dma, .length = size, .lkey = t->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	if (t->srq)
		return ib_post_srq_recv(t->srq, &wr, NULL);
	return ib_post_recv(t->b.qp, &wr, NULL);
}

/* SEND with immediate a -> b, in two SGEs. */
static int kv_send(struct kv_test *t)
{
	struct ib_sge sge[2] = {
		{ .addr = t->a.dma, .length = size / 2, .lkey = t->pd->local_dma_lkey },
		{ .addr = t->a.dma + size / 2, .length = size - size / 2,
		  .lkey = t->pd->local_dma_lkey },
	};
	struct ib_send_wr wr = {
		.wr_id = 1, .sg_list = sge, .num_sge = 2,
		.opcode = IB_WR_SEND_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(0x12345678),
	};
	struct kv_seen seen = {};
	u32 len = 0;
	int ret;

	kv_fill(t->a.buf, 1);
	memset(t->b.buf, 0, size);
	ret = kv_post_recv(t, 2);
	if (ret) {
		pr_err(TAG "post_recv: %d\n", ret);
		return ret;
	}
	ret = ib_post_send(t->a.qp, &wr, NULL);
	if (ret) {
		pr_err(TAG "post_send SEND: %d\n", ret);
		return ret;
	}
	/* One CQ for both: the send and the receive complete in either order. */
	ret = kv_poll(t, &seen, 1, IB_WC_SEND, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 2, IB_WC_RECV, &len);
	if (ret)
		return ret;
	if (len != size) {
		pr_err(TAG "SEND: byte_len %u, expected %d\n", len, size);
		return -EIO;
	}
	return kv_check("SEND", t->b.buf, t->a.buf);
}

/* RDMA WRITE a -> b, then RDMA READ of b back into a, through the PD's rkey. */
static int kv_write_read(struct kv_test *t)
{
	struct ib_sge sge = { .addr = t->a.dma, .length = size, .lkey = t->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = t->b.dma,
		.rkey = t->pd->unsafe_global_rkey,
	};
	struct kv_seen seen = {};
	void *want;
	int ret;

	want = kmalloc(size, GFP_KERNEL);
	if (!want)
		return -ENOMEM;
	kv_fill(t->a.buf, 2);
	memcpy(want, t->a.buf, size);
	memset(t->b.buf, 0, size);
	ret = ib_post_send(t->a.qp, &wr.wr, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 3, IB_WC_RDMA_WRITE, NULL);
	if (!ret)
		ret = kv_check("WRITE", t->b.buf, want);
	if (ret)
		goto out;

	kv_fill(t->b.buf, 3);
	memcpy(want, t->b.buf, size);
	memset(t->a.buf, 0, size);
	wr.wr.wr_id = 4;
	wr.wr.opcode = IB_WR_RDMA_READ;
	ret = ib_post_send(t->a.qp, &wr.wr, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 4, IB_WC_RDMA_READ, NULL);
	if (!ret)
		ret = kv_check("READ", t->a.buf, want);
out:
	kfree(want);
	return ret;
}

/* Posting to a QP in RESET fails at once, naming the request. */
static int kv_not_ready(struct kv_test *t)
{
	struct ib_sge sge = { .addr = t->a.dma, .length = 1, .lkey = t->pd->local_dma_lkey };
	struct ib_send_wr swr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IB_WR_SEND };
	struct ib_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	const struct ib_send_wr *bad_swr = NULL;
	const struct ib_recv_wr *bad_rwr = NULL;
	int ret;

	ret = ib_post_send(t->a.qp, &swr, &bad_swr);
	if (ret != -EINVAL || bad_swr != &swr) {
		pr_err(TAG "post_send in RESET: %d, expected %d\n", ret, -EINVAL);
		return -EIO;
	}
	ret = ib_post_recv(t->a.qp, &rwr, &bad_rwr);
	if (ret != -EINVAL || bad_rwr != &rwr) {
		pr_err(TAG "post_recv in RESET: %d, expected %d\n", ret, -EINVAL);
		return -EIO;
	}
	return 0;
}

/* A small signaled SEND of @len bytes from @s's buffer. */
static int kv_post_small_send(struct kv_test *t, struct kv_side *s, u64 wr_id, u32 len)
{
	struct ib_sge sge = { .addr = s->dma, .length = len, .lkey = t->pd->local_dma_lkey };
	struct ib_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(s->qp, &wr, NULL);
}

/* A receive of up to @len bytes into a's buffer. */
static int kv_post_recv_a(struct kv_test *t, u64 wr_id, u32 len)
{
	struct ib_sge sge = { .addr = t->a.dma, .length = len, .lkey = t->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(t->a.qp, &wr, NULL);
}

/* b's receive completed: answer from here, once, with a SEND on b. */
static void kv_handler(struct ib_cq *cq, void *context)
{
	struct kv_test *t = context;

	if (atomic_inc_return(&t->handler_calls) == 1)
		t->handler_ret = kv_post_small_send(t, &t->b, 7, 16);
}

/*
 * handler_post: b sends 16 bytes to a (acknowledged), then a sends @size
 * bytes to b, whose receive completion makes the handler post a SEND on b.
 * Every completion must arrive.
 */
static int kv_handler_post(struct kv_test *t)
{
	struct kv_seen seen = {};
	struct ib_wc wc;
	int ret, waited, n;

	ret = kv_post_recv_a(t, 10, 16);
	if (!ret)
		ret = kv_post_small_send(t, &t->b, 11, 16);
	if (!ret)
		ret = kv_poll(t, &seen, 11, IB_WC_SEND, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 10, IB_WC_RECV, NULL);
	if (ret)
		return ret;
	ret = kv_post_recv_a(t, 8, 16);
	if (!ret)
		ret = kv_post_recv(t, 2);
	if (ret)
		return ret;
	ib_req_notify_cq(t->hcq, IB_CQ_NEXT_COMP);
	ret = kv_post_small_send(t, &t->a, 1, size);
	if (ret)
		return ret;
	for (waited = 0; waited < POLL_MS; waited++) {
		n = ib_poll_cq(t->hcq, 1, &wc);
		if (n > 0)
			break;
		msleep(1);
	}
	if (waited == POLL_MS) {
		pr_err(TAG "handler_post: no receive completion in %d ms\n", POLL_MS);
		return -ETIMEDOUT;
	}
	ret = kv_check_wc(&wc, 2, IB_WC_RECV, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 1, IB_WC_SEND, NULL);
	if (ret)
		return ret;
	if (atomic_read(&t->handler_calls) < 1) {
		pr_err(TAG "handler_post: the completion handler was not called\n");
		return -EIO;
	}
	if (t->handler_ret) {
		pr_err(TAG "handler_post: post_send from the handler: %d\n", t->handler_ret);
		return t->handler_ret;
	}
	ret = kv_poll(t, &seen, 7, IB_WC_SEND, NULL);
	if (!ret)
		ret = kv_poll(t, &seen, 8, IB_WC_RECV, NULL);
	return ret;
}

static int kv_run(struct ib_device *ibdev)
{
	struct kv_test t = { .ibdev = ibdev };
	const struct ib_gid_attr *gid_attr;
	struct net_device *ndev;
	int ret;

	gid_attr = rdma_get_gid_attr(ibdev, 1, gid_index);
	if (IS_ERR(gid_attr)) {
		pr_err(TAG "no GID %d\n", gid_index);
		return PTR_ERR(gid_attr);
	}
	t.gid = gid_attr->gid;
	rdma_put_gid_attr(gid_attr);
	ndev = ib_device_get_netdev(ibdev, 1);
	if (!ndev)
		return -ENODEV;
	memcpy(t.dmac, ndev->dev_addr, ETH_ALEN);
	dev_put(ndev);

	t.pd = ib_alloc_pd(ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(t.pd)) {
		pr_err(TAG "alloc_pd: %ld\n", PTR_ERR(t.pd));
		return PTR_ERR(t.pd);
	}
	t.cq = ib_alloc_cq(ibdev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(t.cq)) {
		ret = PTR_ERR(t.cq);
		pr_err(TAG "alloc_cq: %d\n", ret);
		t.cq = NULL;
		goto out;
	}
	if (handler_post) {
		struct ib_cq_init_attr ca = { .cqe = 32 };

		atomic_set(&t.handler_calls, 0);
		t.hcq = ib_create_cq(ibdev, kv_handler, NULL, &t, &ca);
		if (IS_ERR(t.hcq)) {
			ret = PTR_ERR(t.hcq);
			pr_err(TAG "create_cq: %d\n", ret);
			t.hcq = NULL;
			goto out;
		}
	}
	if (srq) {
		struct ib_srq_init_attr sa = {
			.attr = { .max_wr = 8, .max_sge = 1 },
			.srq_type = IB_SRQT_BASIC,
		};

		t.srq = ib_create_srq(t.pd, &sa);
		if (IS_ERR(t.srq)) {
			ret = PTR_ERR(t.srq);
			pr_info(TAG "create_srq: %d\n", ret);
			t.srq = NULL;
			goto out;
		}
	}
	ret = kv_side_init(&t, &t.a);
	if (!ret)
		ret = kv_side_init(&t, &t.b);
	if (!ret)
		ret = kv_not_ready(&t);
	if (!ret)
		ret = kv_connect(&t, t.a.qp, t.b.qp->qp_num);
	if (!ret)
		ret = kv_connect(&t, t.b.qp, t.a.qp->qp_num);
	if (ret) {
		if (ret != -EOPNOTSUPP)
			pr_err(TAG "set-up: %d\n", ret);
		goto out;
	}
	if (handler_post) {
		ret = kv_handler_post(&t);
		if (!ret)
			pr_info(TAG "PASS: a SEND posted from the completion handler of a %d-byte receive, on %s\n",
				size, dev_name(&ibdev->dev));
		goto out;
	}
	ret = kv_send(&t);
	if (!ret)
		ret = kv_write_read(&t);
	if (!ret) {
		/*
		 * ERROR with flushed completions, as ULPs tear down: each
		 * drain moves the QP to ERROR, posts a request and waits
		 * for its flush completion.
		 */
		ib_drain_qp(t.a.qp);
		ib_drain_qp(t.b.qp);
		pr_info(TAG "PASS: SEND, WRITE, READ of %d bytes%s, drain, on %s\n", size,
			t.srq ? " (receive through an SRQ)" : "", dev_name(&ibdev->dev));
	}
out:
	kv_side_fini(&t, &t.a);
	kv_side_fini(&t, &t.b);
	if (t.srq)
		ib_destroy_srq(t.srq);
	if (t.cq)
		ib_free_cq(t.cq);
	if (t.hcq)
		ib_destroy_cq(t.hcq);
	ib_dealloc_pd(t.pd);
	return ret;
}

static int kv_add(struct ib_device *ibdev)
{
	if (strcmp(dev_name(&ibdev->dev), dev))
		return -EOPNOTSUPP;	/* not ours to test: no client data */
	kv_result = kv_run(ibdev);
	return 0;
}

static void kv_remove(struct ib_device *ibdev, void *client_data)
{
}

static struct ib_client kv_client = {
	.name = "rxe_kverbs_test",
	.add = kv_add,
	.remove = kv_remove,
};

static int __init kv_init(void)
{
	int ret;

	if (size < 1 || size > (1 << 20))
		return -EINVAL;
	ret = ib_register_client(&kv_client);
	if (ret)
		return ret;
	ib_unregister_client(&kv_client);
	if (kv_result == -ENODEV)
		pr_err(TAG "no device %s\n", dev);
	return kv_result;
}

static void __exit kv_exit(void)
{
}

module_init(kv_init);
module_exit(kv_exit);
MODULE_DESCRIPTION("Kernel-verbs RC test for rxe devices");
MODULE_LICENSE("GPL");
