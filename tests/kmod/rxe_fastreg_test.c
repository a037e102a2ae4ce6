// SPDX-License-Identifier: GPL-2.0
/*
 * Fast registration on an rxe device, the way NVMe over RDMA, iSER and
 * NFS/RDMA use it: ib_alloc_mr(IB_MR_TYPE_MEM_REG), ib_map_mr_sg() over the
 * pages of a kmalloc'd buffer (the region starting inside its first page
 * and ending inside its last), IB_WR_REG_MR with a new consumer key, then
 * a peer's RDMA WRITE and READ through that rkey with every byte checked
 * (and the bytes around the region untouched). A SEND_WITH_INV from the
 * peer must invalidate the region (receive completion flagged
 * IB_WC_WITH_INVALIDATE with the key; a new REG_MR, legal only on a Free
 * region, then succeeds). After IB_WR_LOCAL_INV a WRITE with the old key
 * must fail with IB_WC_REM_ACCESS_ERR. With the QPs reconnected, REG_MR of
 * a region that is already Valid must complete with IB_WC_LOC_QP_OP_ERR;
 * reconnected again, a WRITE with the region's previous consumer key (the
 * index right, the key byte stale) must fail with IB_WC_REM_ACCESS_ERR;
 * reconnected again, a SEND_WITH_INV naming a stale key must fail the
 * receive with IB_WC_REM_INV_REQ_ERR and leave the region Valid.
 *
 * Two RC QPs of one device connected to each other: `a` is the initiator
 * (a ULP's host side), `b` owns the region (the target side). The test
 * runs when the module loads; loading fails if it fails, with the reason
 * in the kernel log ("rxe_fastreg_test: ...").
 *
 *   insmod rxe_fastreg_test.ko dev=rxe0 gid_index=1 [pages=4]
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/scatterlist.h>
#include <linux/etherdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test");
static int gid_index = 1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "GID index of the port's RoCEv2 IPv4 GID");
static int pages = 4;
module_param(pages, int, 0444);
MODULE_PARM_DESC(pages, "pages of the registered buffer (2 .. 64)");
static bool failed_wr_flushed;
module_param(failed_wr_flushed, bool, 0444);
MODULE_PARM_DESC(failed_wr_flushed,
		 "accept WR_FLUSH_ERR for the REG_MR that fails (the C driver's known difference)");

#define TAG "rxe_fastreg_test: "
#define POLL_MS 60000
#define MAX_PAGES 64
/* The region starts HEAD bytes into the first page, ends TAIL before the last page's end. */
#define HEAD 100
#define TAIL 50
#define GUARD 0xa5

struct fr_test {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b;
	struct ib_mr *mr;
	union ib_gid gid;
	u8 dmac[ETH_ALEN];
	/* b's buffer, behind the fast-registration region. */
	u8 *tbuf;
	size_t tsize;
	struct scatterlist sgl[MAX_PAGES];
	int nents;
	bool sg_mapped;
	/* a's buffer (under the PD's DMA lkey) and a receive buffer of b. */
	u8 *abuf;
	u64 adma;
	u8 *rbuf;
	u64 rdma;
	u32 len;
	/* Both QPs' first PSN, new for every connection. */
	u32 psn;
};

static int fr_result = -ENODEV;

/* Completions taken from the CQ while waiting for another one. */
struct fr_seen {
	struct ib_wc wc[8];
	int n;
};

/*
 * Waits for the completion of wr_id and returns it in *out. Others that
 * come first are kept in `seen` for a later call.
 */
static int fr_wait(struct fr_test *t, struct fr_seen *seen, u64 wr_id, struct ib_wc *out)
{
	struct ib_wc wc;
	int waited, n, i;

	for (i = 0; i < seen->n; i++) {
		if (seen->wc[i].wr_id == wr_id) {
			*out = seen->wc[i];
			seen->wc[i] = seen->wc[--seen->n];
			return 0;
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
		if (wc.wr_id == wr_id) {
			*out = wc;
			return 0;
		}
		if (seen->n == ARRAY_SIZE(seen->wc)) {
			pr_err(TAG "unexpected completion of wr %llu (status %d)\n",
			       wc.wr_id, wc.status);
			return -EIO;
		}
		seen->wc[seen->n++] = wc;
	}
	pr_err(TAG "wr %llu: no completion in %d ms\n", wr_id, POLL_MS);
	return -ETIMEDOUT;
}

/* Waits for wr_id, which must complete with `status` (and on success `opcode`). */
static int fr_expect(struct fr_test *t, struct fr_seen *seen, const char *what, u64 wr_id,
		     enum ib_wc_status status, enum ib_wc_opcode opcode, struct ib_wc *out)
{
	struct ib_wc wc;
	int ret;

	ret = fr_wait(t, seen, wr_id, &wc);
	if (ret)
		return ret;
	if (wc.status != status) {
		pr_err(TAG "%s: status %s (%d), expected %s (%d)\n", what,
		       ib_wc_status_msg(wc.status), wc.status,
		       ib_wc_status_msg(status), status);
		return -EIO;
	}
	if (status == IB_WC_SUCCESS && wc.opcode != opcode) {
		pr_err(TAG "%s: opcode %d, expected %d\n", what, wc.opcode, opcode);
		return -EIO;
	}
	if (out)
		*out = wc;
	return 0;
}

/* Takes every completion left (flushed requests) off the CQ. */
static void fr_drain_cq(struct fr_test *t)
{
	struct ib_wc wc;
	int quiet;

	for (quiet = 0; quiet < 100; ) {
		if (ib_poll_cq(t->cq, 1, &wc) > 0)
			quiet = 0;
		else {
			msleep(1);
			quiet++;
		}
	}
}

static void fr_fill(u8 *p, size_t n, u8 seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (u8)(seed + i * 7 + (i >> 8));
}

/* The region's bytes equal `want`; the bytes around it still hold GUARD. */
static int fr_check_region(struct fr_test *t, const char *what, const u8 *want)
{
	size_t i;

	if (memcmp(t->tbuf + HEAD, want, t->len)) {
		for (i = 0; i < t->len && t->tbuf[HEAD + i] == want[i]; i++)
			;
		pr_err(TAG "%s: region byte %zu is %#x, expected %#x\n", what, i,
		       t->tbuf[HEAD + i], want[i]);
		return -EIO;
	}
	for (i = 0; i < HEAD; i++)
		if (t->tbuf[i] != GUARD)
			goto guard;
	for (i = HEAD + t->len; i < t->tsize; i++)
		if (t->tbuf[i] != GUARD)
			goto guard;
	return 0;
guard:
	pr_err(TAG "%s: byte %zu outside the region changed\n", what, i);
	return -EIO;
}

static int fr_modify(struct fr_test *t, struct ib_qp *qp, u32 dest_qpn)
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
	attr.rq_psn = t->psn;
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
	attr.sq_psn = t->psn;
	attr.timeout = 14;
	/* A NAK (remote access error) is final whatever the retry count. */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static int fr_reset(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };

	return ib_modify_qp(qp, &attr, IB_QP_STATE);
}

/*
 * Connects a and b to each other; with `reset`, from whatever state they
 * are in: both are reset first and the wire given time to empty, and
 * every connection starts at a new PSN, so that a packet of the last one
 * still under way is not taken for the new one's (c/t_fastreg once
 * failed that way: a late NAK of the last connection failed the new one
 * and the C driver refused b's next modify with EINVAL).
 */
static int fr_connect_once(struct fr_test *t, bool reset)
{
	int ret = 0;

	if (reset) {
		ret = fr_reset(t->a);
		ret = ret ?: fr_reset(t->b);
		msleep(200);
		fr_drain_cq(t);
	}
	t->psn = (t->psn + 0x1000) & 0xffffff;
	ret = ret ?: fr_modify(t, t->a, t->b->qp_num);
	ret = ret ?: fr_modify(t, t->b, t->a->qp_num);
	return ret;
}

/*
 * The C driver can move a QP to ERROR on its own after the QP was reset
 * (its responder still finishing the request that failed), and then
 * refuses INIT with EINVAL: one more try, reported as "connect retried",
 * which t_fastreg.sh accepts only from the C driver.
 */
static int fr_connect(struct fr_test *t, bool reset)
{
	int ret = fr_connect_once(t, reset);

	if (ret == -EINVAL && reset) {
		pr_info(TAG "connect retried after %d\n", ret);
		ret = fr_connect_once(t, true);
	}
	if (ret)
		pr_err(TAG "connect: %d\n", ret);
	fr_drain_cq(t);
	return ret;
}

static struct ib_qp *fr_create_qp(struct fr_test *t)
{
	struct ib_qp_init_attr init = {
		.send_cq = t->cq,
		.recv_cq = t->cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(t->pd, &init);
}

/* IB_WR_REG_MR of t->mr on b with a new consumer key. */
static int fr_post_reg(struct fr_test *t, u64 wr_id, bool new_key)
{
	struct ib_reg_wr wr = {
		.wr = { .wr_id = wr_id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = t->mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ,
	};
	int ret;

	if (new_key)
		ib_update_fast_reg_key(t->mr, ib_inc_rkey(t->mr->rkey));
	wr.key = t->mr->rkey;
	ret = ib_post_send(t->b, &wr.wr, NULL);
	if (ret)
		pr_err(TAG "post_send REG_MR: %d\n", ret);
	return ret;
}

static int fr_reg(struct fr_test *t, struct fr_seen *seen, u64 wr_id)
{
	int ret = fr_post_reg(t, wr_id, true);

	return ret ?: fr_expect(t, seen, "REG_MR", wr_id, IB_WC_SUCCESS, IB_WC_REG_MR, NULL);
}

/* An RDMA WRITE or READ by a of `len` bytes at region offset `off`, through `rkey`. */
static int fr_post_rdma(struct fr_test *t, u64 wr_id, enum ib_wr_opcode op, u32 rkey,
			u32 off, u32 len)
{
	struct ib_sge sge = {
		.addr = t->adma + off, .length = len, .lkey = t->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = t->mr->iova + off,
		.rkey = rkey,
	};
	int ret = ib_post_send(t->a, &wr.wr, NULL);

	if (ret)
		pr_err(TAG "post_send %s: %d\n", op == IB_WR_RDMA_READ ? "READ" : "WRITE", ret);
	return ret;
}

/* Phase 1: REG_MR, then WRITE and READ through the new rkey. */
static int fr_write_read(struct fr_test *t)
{
	struct fr_seen seen = {};
	u8 *want;
	int ret;

	want = kmalloc(t->len, GFP_KERNEL);
	if (!want)
		return -ENOMEM;
	ret = fr_reg(t, &seen, 10);
	if (ret)
		goto out;

	/* The whole region, then a few bytes across a page boundary. */
	memset(t->tbuf, GUARD, t->tsize);
	fr_fill(t->abuf, t->len, 1);
	memcpy(want, t->abuf, t->len);
	ret = fr_post_rdma(t, 11, IB_WR_RDMA_WRITE, t->mr->rkey, 0, t->len);
	ret = ret ?: fr_expect(t, &seen, "WRITE", 11, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL);
	ret = ret ?: fr_check_region(t, "WRITE", want);
	if (ret)
		goto out;
	fr_fill(t->abuf + PAGE_SIZE - HEAD - 7, 20, 9);
	memcpy(want + PAGE_SIZE - HEAD - 7, t->abuf + PAGE_SIZE - HEAD - 7, 20);
	ret = fr_post_rdma(t, 12, IB_WR_RDMA_WRITE, t->mr->rkey, PAGE_SIZE - HEAD - 7, 20);
	ret = ret ?: fr_expect(t, &seen, "WRITE across a page", 12, IB_WC_SUCCESS,
			       IB_WC_RDMA_WRITE, NULL);
	ret = ret ?: fr_check_region(t, "WRITE across a page", want);
	if (ret)
		goto out;

	fr_fill(t->tbuf + HEAD, t->len, 3);
	memcpy(want, t->tbuf + HEAD, t->len);
	memset(t->abuf, 0, t->len);
	ret = fr_post_rdma(t, 13, IB_WR_RDMA_READ, t->mr->rkey, 0, t->len);
	ret = ret ?: fr_expect(t, &seen, "READ", 13, IB_WC_SUCCESS, IB_WC_RDMA_READ, NULL);
	if (!ret && memcmp(t->abuf, want, t->len)) {
		pr_err(TAG "READ: data differs\n");
		ret = -EIO;
	}
out:
	kfree(want);
	return ret;
}

/* Phase 2: a SEND_WITH_INV from a invalidates b's region. */
static int fr_send_with_inv(struct fr_test *t)
{
	struct ib_sge rsge = { .addr = t->rdma, .length = 64, .lkey = t->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 21, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge ssge = { .addr = t->adma, .length = 64, .lkey = t->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.wr_id = 20, .sg_list = &ssge, .num_sge = 1, .opcode = IB_WR_SEND_WITH_INV,
		.send_flags = IB_SEND_SIGNALED, .ex.invalidate_rkey = t->mr->rkey,
	};
	struct fr_seen seen = {};
	struct ib_wc wc;
	int ret;

	fr_fill(t->abuf, 64, 5);
	memset(t->rbuf, 0, 64);
	ret = ib_post_recv(t->b, &rwr, NULL);
	if (ret) {
		pr_err(TAG "post_recv: %d\n", ret);
		return ret;
	}
	ret = ib_post_send(t->a, &swr, NULL);
	if (ret) {
		pr_err(TAG "post_send SEND_WITH_INV: %d\n", ret);
		return ret;
	}
	ret = fr_expect(t, &seen, "SEND_WITH_INV", 20, IB_WC_SUCCESS, IB_WC_SEND, NULL);
	ret = ret ?: fr_expect(t, &seen, "receive of SEND_WITH_INV", 21, IB_WC_SUCCESS,
			       IB_WC_RECV, &wc);
	if (ret)
		return ret;
	if (!(wc.wc_flags & IB_WC_WITH_INVALIDATE) || wc.ex.invalidate_rkey != t->mr->rkey) {
		pr_err(TAG "receive of SEND_WITH_INV: wc_flags %#x, invalidate_rkey %#x, expected WITH_INVALIDATE and %#x\n",
		       wc.wc_flags, wc.ex.invalidate_rkey, t->mr->rkey);
		return -EIO;
	}
	if (wc.byte_len != 64 || memcmp(t->rbuf, t->abuf, 64)) {
		pr_err(TAG "receive of SEND_WITH_INV: %u bytes or data differ\n", wc.byte_len);
		return -EIO;
	}
	/* Free again: REG_MR (which needs a Free region) succeeds, and the new key works. */
	ret = fr_reg(t, &seen, 22);
	if (ret)
		return ret;
	memset(t->tbuf, GUARD, t->tsize);
	fr_fill(t->abuf, t->len, 6);
	ret = fr_post_rdma(t, 23, IB_WR_RDMA_WRITE, t->mr->rkey, 0, t->len);
	ret = ret ?: fr_expect(t, &seen, "WRITE after re-registration", 23, IB_WC_SUCCESS,
			       IB_WC_RDMA_WRITE, NULL);
	return ret ?: fr_check_region(t, "WRITE after re-registration", t->abuf);
}

/* Phase 3: LOCAL_INV, then a WRITE with the old key fails. */
static int fr_local_inv(struct fr_test *t)
{
	struct ib_send_wr wr = {
		.wr_id = 30, .opcode = IB_WR_LOCAL_INV, .send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = t->mr->rkey,
	};
	struct fr_seen seen = {};
	int ret;

	ret = ib_post_send(t->b, &wr, NULL);
	if (ret) {
		pr_err(TAG "post_send LOCAL_INV: %d\n", ret);
		return ret;
	}
	ret = fr_expect(t, &seen, "LOCAL_INV", 30, IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL);
	if (ret)
		return ret;
	memset(t->tbuf, GUARD, t->tsize);
	ret = fr_post_rdma(t, 31, IB_WR_RDMA_WRITE, t->mr->rkey, 0, 16);
	ret = ret ?: fr_expect(t, &seen, "WRITE with an invalidated key", 31,
			       IB_WC_REM_ACCESS_ERR, 0, NULL);
	if (!ret && t->tbuf[HEAD] != GUARD) {
		pr_err(TAG "WRITE with an invalidated key changed the region\n");
		ret = -EIO;
	}
	return ret;
}

/* Phase 4: REG_MR of a Valid region fails. */
static int fr_reg_valid(struct fr_test *t)
{
	struct fr_seen seen = {};
	u32 valid_key;
	int ret;

	ret = fr_reg(t, &seen, 40);
	if (ret)
		return ret;
	valid_key = t->mr->rkey;
	ret = fr_post_reg(t, 41, true);
	/*
	 * The WR that fails carries the error (IBTA 10.8.3.3: the first WR in
	 * error completes with its own status, the ones after it are flushed).
	 * The C driver moves the QP to ERROR before completing the WQE, so its
	 * completer flushes it: accepted only when asked (failed_wr_flushed).
	 */
	ret = ret ?: fr_expect(t, &seen, "REG_MR of a Valid region", 41,
			       failed_wr_flushed ? IB_WC_WR_FLUSH_ERR : IB_WC_LOC_QP_OP_ERR,
			       0, NULL);
	if (!ret && failed_wr_flushed)
		pr_info(TAG "known difference: REG_MR of a Valid region completed WR_FLUSH_ERR\n");
	/* The failed REG_MR left the region's key as it was. */
	ib_update_fast_reg_key(t->mr, valid_key & 0xff);
	return ret;
}

/*
 * Phase 5: the region Valid under a new consumer key; a WRITE with the
 * previous one (same index) fails.
 */
static int fr_stale_key(struct fr_test *t)
{
	struct fr_seen seen = {};
	u32 old;
	int ret;

	/* Valid from phase 4; invalidate it, register under the next key. */
	struct ib_send_wr inv = {
		.wr_id = 50, .opcode = IB_WR_LOCAL_INV, .send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = t->mr->rkey,
	};

	ret = ib_post_send(t->b, &inv, NULL);
	ret = ret ?: fr_expect(t, &seen, "LOCAL_INV", 50, IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL);
	if (ret)
		return ret;
	old = t->mr->rkey;
	ret = fr_reg(t, &seen, 51);
	if (ret)
		return ret;
	if ((old & ~0xffu) != (t->mr->rkey & ~0xffu) || old == t->mr->rkey) {
		pr_err(TAG "keys %#x and %#x: not one index, two consumer keys\n", old,
		       t->mr->rkey);
		return -EIO;
	}
	memset(t->tbuf, GUARD, t->tsize);
	ret = fr_post_rdma(t, 52, IB_WR_RDMA_WRITE, old, 0, 16);
	ret = ret ?: fr_expect(t, &seen, "WRITE with a stale consumer key", 52,
			       IB_WC_REM_ACCESS_ERR, 0, NULL);
	if (!ret && t->tbuf[HEAD] != GUARD) {
		pr_err(TAG "WRITE with a stale consumer key changed the region\n");
		ret = -EIO;
	}
	return ret;
}

/*
 * Phase 6: a SEND_WITH_INV naming a stale key fails the receive with
 * REM_INV_REQ_ERR (the sender's SEND may still succeed: rxe ACKs it); the
 * region stays Valid, as a WRITE after reconnecting shows.
 */
static int fr_bad_send_with_inv(struct fr_test *t)
{
	struct ib_sge rsge = { .addr = t->rdma, .length = 64, .lkey = t->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 61, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge ssge = { .addr = t->adma, .length = 64, .lkey = t->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.wr_id = 60, .sg_list = &ssge, .num_sge = 1, .opcode = IB_WR_SEND_WITH_INV,
		.send_flags = IB_SEND_SIGNALED, .ex.invalidate_rkey = t->mr->rkey ^ 0x80,
	};
	struct fr_seen seen = {};
	struct ib_wc wc;
	int ret;

	ret = ib_post_recv(t->b, &rwr, NULL);
	ret = ret ?: ib_post_send(t->a, &swr, NULL);
	if (ret) {
		pr_err(TAG "post SEND_WITH_INV with a stale key: %d\n", ret);
		return ret;
	}
	ret = fr_expect(t, &seen, "receive of SEND_WITH_INV with a stale key", 61,
			IB_WC_REM_INV_REQ_ERR, 0, NULL);
	ret = ret ?: fr_wait(t, &seen, 60, &wc);
	if (ret)
		return ret;
	pr_info(TAG "SEND_WITH_INV with a stale key: sender's status %s\n",
		ib_wc_status_msg(wc.status));
	ret = fr_connect(t, true);
	if (ret)
		return ret;
	memset(t->tbuf, GUARD, t->tsize);
	fr_fill(t->abuf, t->len, 8);
	ret = fr_post_rdma(t, 62, IB_WR_RDMA_WRITE, t->mr->rkey, 0, t->len);
	ret = ret ?: fr_expect(t, &seen, "WRITE after a failed remote invalidation", 62,
			       IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL);
	return ret ?: fr_check_region(t, "WRITE after a failed remote invalidation", t->abuf);
}

/* The region's scatterlist: one entry per page, HEAD in, TAIL short of the end. */
static int fr_map(struct fr_test *t)
{
	int i, n;

	t->tsize = (size_t)pages * PAGE_SIZE;
	t->tbuf = kmalloc(t->tsize, GFP_KERNEL);
	if (!t->tbuf)
		return -ENOMEM;
	if (!PAGE_ALIGNED(t->tbuf)) {
		pr_err(TAG "kmalloc(%zu) is not page aligned\n", t->tsize);
		return -EINVAL;
	}
	t->len = t->tsize - HEAD - TAIL;
	sg_init_table(t->sgl, pages);
	for (i = 0; i < pages; i++) {
		unsigned int off = i == 0 ? HEAD : 0;
		unsigned int end = i == pages - 1 ? PAGE_SIZE - TAIL : PAGE_SIZE;

		sg_set_page(&t->sgl[i], virt_to_page(t->tbuf + i * PAGE_SIZE), end - off, off);
	}
	t->nents = ib_dma_map_sg(t->ibdev, t->sgl, pages, DMA_BIDIRECTIONAL);
	if (t->nents <= 0) {
		pr_err(TAG "dma_map_sg: %d\n", t->nents);
		return -ENOMEM;
	}
	t->sg_mapped = true;

	t->mr = ib_alloc_mr(t->pd, IB_MR_TYPE_MEM_REG, pages);
	if (IS_ERR(t->mr)) {
		int ret = PTR_ERR(t->mr);

		t->mr = NULL;
		pr_err(TAG "alloc_mr(%d): %d\n", pages, ret);
		return ret;
	}
	n = ib_map_mr_sg(t->mr, t->sgl, t->nents, NULL, PAGE_SIZE);
	if (n != t->nents) {
		pr_err(TAG "map_mr_sg: %d of %d entries\n", n, t->nents);
		return n < 0 ? n : -EIO;
	}
	if (t->mr->length != t->len || t->mr->iova != (u64)(uintptr_t)(t->tbuf + HEAD)) {
		pr_err(TAG "map_mr_sg: iova %#llx length %llu, expected %p and %u\n",
		       t->mr->iova, t->mr->length, t->tbuf + HEAD, t->len);
		return -EIO;
	}
	return 0;
}

static int fr_run_test(struct fr_test *t)
{
	struct ib_device *ibdev = t->ibdev;
	const struct ib_gid_attr *gid_attr;
	struct net_device *ndev;
	int ret;

	gid_attr = rdma_get_gid_attr(ibdev, 1, gid_index);
	if (IS_ERR(gid_attr)) {
		pr_err(TAG "no GID %d\n", gid_index);
		return PTR_ERR(gid_attr);
	}
	t->gid = gid_attr->gid;
	rdma_put_gid_attr(gid_attr);
	ndev = ib_device_get_netdev(ibdev, 1);
	if (!ndev)
		return -ENODEV;
	memcpy(t->dmac, ndev->dev_addr, ETH_ALEN);
	dev_put(ndev);

	t->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(t->pd)) {
		pr_err(TAG "alloc_pd: %ld\n", PTR_ERR(t->pd));
		return PTR_ERR(t->pd);
	}
	t->cq = ib_alloc_cq(ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(t->cq)) {
		ret = PTR_ERR(t->cq);
		pr_err(TAG "alloc_cq: %d\n", ret);
		t->cq = NULL;
		goto out;
	}
	ret = fr_map(t);
	if (ret)
		goto out;
	t->abuf = kzalloc(t->tsize, GFP_KERNEL);
	t->rbuf = kzalloc(64, GFP_KERNEL);
	if (!t->abuf || !t->rbuf) {
		ret = -ENOMEM;
		goto out;
	}
	t->adma = ib_dma_map_single(ibdev, t->abuf, t->tsize, DMA_BIDIRECTIONAL);
	t->rdma = ib_dma_map_single(ibdev, t->rbuf, 64, DMA_BIDIRECTIONAL);
	t->a = fr_create_qp(t);
	if (IS_ERR(t->a)) {
		ret = PTR_ERR(t->a);
		t->a = NULL;
		pr_err(TAG "create_qp: %d\n", ret);
		goto out;
	}
	t->b = fr_create_qp(t);
	if (IS_ERR(t->b)) {
		ret = PTR_ERR(t->b);
		t->b = NULL;
		pr_err(TAG "create_qp: %d\n", ret);
		goto out;
	}
	ret = fr_connect(t, false);
	ret = ret ?: fr_write_read(t);
	ret = ret ?: fr_send_with_inv(t);
	ret = ret ?: fr_local_inv(t);
	/* The failed WRITE moved both QPs to ERROR: start them again. */
	ret = ret ?: fr_connect(t, true);
	ret = ret ?: fr_reg_valid(t);
	ret = ret ?: fr_connect(t, true);
	ret = ret ?: fr_stale_key(t);
	ret = ret ?: fr_connect(t, true);
	ret = ret ?: fr_bad_send_with_inv(t);
	if (!ret)
		pr_info(TAG "PASS: %d-page region (%u bytes) on %s: REG_MR, WRITE, READ, SEND_WITH_INV, LOCAL_INV, REG_MR of a Valid region, stale key, SEND_WITH_INV of a stale key\n",
			pages, t->len, dev_name(&ibdev->dev));
out:
	if (t->a)
		ib_destroy_qp(t->a);
	if (t->b)
		ib_destroy_qp(t->b);
	if (t->mr)
		ib_dereg_mr(t->mr);
	if (t->sg_mapped)
		ib_dma_unmap_sg(ibdev, t->sgl, pages, DMA_BIDIRECTIONAL);
	if (t->abuf && t->adma)
		ib_dma_unmap_single(ibdev, t->adma, t->tsize, DMA_BIDIRECTIONAL);
	if (t->rbuf && t->rdma)
		ib_dma_unmap_single(ibdev, t->rdma, 64, DMA_BIDIRECTIONAL);
	kfree(t->abuf);
	kfree(t->rbuf);
	kfree(t->tbuf);
	if (t->cq)
		ib_free_cq(t->cq);
	ib_dealloc_pd(t->pd);
	return ret;
}

static int fr_run(struct ib_device *ibdev)
{
	struct fr_test *t;
	int ret;

	/* The scatterlist makes it too big for the stack. */
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->ibdev = ibdev;
	ret = fr_run_test(t);
	kfree(t);
	return ret;
}

static int fr_add(struct ib_device *ibdev)
{
	if (strcmp(dev_name(&ibdev->dev), dev))
		return -EOPNOTSUPP;	/* not ours to test: no client data */
	fr_result = fr_run(ibdev);
	return 0;
}

static void fr_remove(struct ib_device *ibdev, void *client_data)
{
}

static struct ib_client fr_client = {
	.name = "rxe_fastreg_test",
	.add = fr_add,
	.remove = fr_remove,
};

static int __init fr_init(void)
{
	int ret;

	if (pages < 2 || pages > MAX_PAGES)
		return -EINVAL;
	ret = ib_register_client(&fr_client);
	if (ret)
		return ret;
	ib_unregister_client(&fr_client);
	if (fr_result == -ENODEV)
		pr_err(TAG "no device %s\n", dev);
	return fr_result;
}

static void __exit fr_exit(void)
{
}

module_init(fr_init);
module_exit(fr_exit);
MODULE_DESCRIPTION("Fast-registration (REG_MR, LOCAL_INV, SEND_WITH_INV) test for rxe devices");
MODULE_LICENSE("GPL");
