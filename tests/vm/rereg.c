/*
 * rereg: rereg_user_mr as the C driver supports it (a new access, a new
 * protection domain, in place; a new translation refused), driven through
 * the uverbs REREG_MR command. Debian's librxe has no rereg_mr (libibverbs
 * answers ibv_rereg_mr with EOPNOTSUPP before the kernel sees it), so this
 * issues the command the way a provider does, with libibverbs'
 * ibv_cmd_rereg_mr. tests/vm/t_rereg.sh builds and runs it in the guest.
 *
 *   rereg DEV GID_INDEX
 *
 * A requester QP in one PD writes into a region of another PD through a
 * responder QP of the region's PD, both QPs on DEV and connected to each
 * other (a fresh pair for each step, since an access error fails both):
 *  1. the region registered without remote write: REM_ACCESS_ERR;
 *  2. rereg adding remote write (lkey and rkey kept): the WRITE lands;
 *  3. rereg to a third PD: refused through a responder of the old PD,
 *     lands through one of the new PD;
 *  4. rereg with a new translation: EOPNOTSUPP;
 *  5. rereg adding write access to a region pinned read-only: EACCES.
 * One "ok:" line per step; exit 0 if all pass, 1 on the first failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* rdma-core 44: libibverbs/driver.h (not installed by Debian). */
struct mirror_verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type; /* enum ibv_mr_type */
	int access;
};

/* rdma-core 44: libibverbs/kern-abi.h's struct ibv_rereg_mr. */
struct rereg_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_rereg_mr core;
};

int ibv_cmd_rereg_mr(struct mirror_verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct rereg_cmd *cmd, size_t cmd_sz,
		     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);

#define SIZE 8192
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)

static struct ibv_context *ctx;
static int gid_index;
static union ibv_gid gid;

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); printf("\n"); exit(1); } while (0)

/* The uverbs REREG_MR command on `mr`; 0 or the errno. */
static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, int access)
{
	struct rereg_cmd cmd;
	struct ib_uverbs_rereg_mr_resp resp;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	return ibv_cmd_rereg_mr((struct mirror_verbs_mr *)mr, flags, mr->addr,
				mr->length, (uintptr_t)mr->addr, access, pd,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
}

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *req, *resp;
	struct ibv_mr *src;
	char *buf;
};

static void to_rts(struct ibv_qp *qp, uint32_t dest, uint32_t psn_local, uint32_t psn_remote)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = RW;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		FAIL("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = psn_remote;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		FAIL("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn_local;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		FAIL("RTS");
}

/* A requester QP in `req_pd` connected to a responder QP in `resp_pd`. */
static struct pair pair(struct ibv_pd *req_pd, struct ibv_pd *resp_pd)
{
	struct ibv_qp_init_attr init;
	struct pair p;

	p.cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!p.cq)
		FAIL("create_cq");
	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = p.cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	p.req = ibv_create_qp(req_pd, &init);
	p.resp = ibv_create_qp(resp_pd, &init);
	if (!p.req || !p.resp)
		FAIL("create_qp");
	p.buf = calloc(1, SIZE);
	p.src = ibv_reg_mr(req_pd, p.buf, SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!p.buf || !p.src)
		FAIL("source region");
	to_rts(p.req, p.resp->qp_num, 100, 200);
	to_rts(p.resp, p.req->qp_num, 200, 100);
	return p;
}

static void unpair(struct pair *p)
{
	ibv_destroy_qp(p->req);
	ibv_destroy_qp(p->resp);
	ibv_dereg_mr(p->src);
	ibv_destroy_cq(p->cq);
	free(p->buf);
}

/* The requester WRITEs `n` bytes of pattern `seed` at `addr` under `rkey`;
 * returns the completion status. */
static enum ibv_wc_status write_through(struct pair *p, uint32_t rkey, void *addr,
					size_t n, int seed)
{
	struct ibv_sge sge = { (uintptr_t)p->buf, n, p->src->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	time_t end = time(NULL) + 60;
	int got;

	for (size_t i = 0; i < n; i++)
		p->buf[i] = (char)(seed + i * 7);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(p->req, &wr, &bad))
		FAIL("post_send");
	while ((got = ibv_poll_cq(p->cq, 1, &wc)) == 0)
		if (time(NULL) > end)
			FAIL("no completion in 60 s");
	if (got < 0)
		FAIL("poll_cq");
	return wc.status;
}

static void expect_write(struct ibv_pd *req_pd, struct ibv_pd *resp_pd, struct ibv_mr *mr,
			 enum ibv_wc_status want, const char *what, int seed)
{
	struct pair p = pair(req_pd, resp_pd);
	enum ibv_wc_status got = write_through(&p, mr->rkey, mr->addr, SIZE, seed);

	if (got != want)
		FAIL("%s: status %s, wanted %s", what, ibv_wc_status_str(got),
		     ibv_wc_status_str(want));
	if (want == IBV_WC_SUCCESS && memcmp(mr->addr, p.buf, SIZE))
		FAIL("%s: the bytes differ", what);
	if (want != IBV_WC_SUCCESS) {
		for (size_t i = 0; i < SIZE; i++)
			if (((char *)mr->addr)[i] != 0)
				FAIL("%s: stored into the region", what);
	}
	unpair(&p);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_pd *req_pd, *pd_b, *pd_c;
	struct ibv_mr *mr, *ro;
	uint32_t lkey, rkey;
	char *region, *pinned_ro;
	int n, ret;

	if (argc != 3) {
		fprintf(stderr, "usage: rereg DEV GID_INDEX\n");
		return 2;
	}
	gid_index = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid))
		FAIL("open %s", argv[1]);
	req_pd = ibv_alloc_pd(ctx);
	pd_b = ibv_alloc_pd(ctx);
	pd_c = ibv_alloc_pd(ctx);
	region = aligned_alloc(4096, SIZE);
	pinned_ro = aligned_alloc(4096, SIZE);
	if (!req_pd || !pd_b || !pd_c || !region || !pinned_ro)
		FAIL("set-up");
	memset(region, 0, SIZE);

	mr = ibv_reg_mr(pd_b, region, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		FAIL("reg_mr");
	lkey = mr->lkey;
	rkey = mr->rkey;
	expect_write(req_pd, pd_b, mr, IBV_WC_REM_ACCESS_ERR, "WRITE without remote write", 1);
	printf("ok: a region without remote write: REM_ACCESS_ERR, nothing stored\n");

	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, RW);
	if (ret)
		FAIL("rereg adding remote write: %s", strerror(ret));
	if (mr->lkey != lkey || mr->rkey != rkey)
		FAIL("keys changed: %#x/%#x -> %#x/%#x", lkey, rkey, mr->lkey, mr->rkey);
	expect_write(req_pd, pd_b, mr, IBV_WC_SUCCESS, "WRITE after adding remote write", 2);
	printf("ok: rereg adding remote write, keys kept: %d bytes written\n", SIZE);

	ret = rereg(mr, IBV_REREG_MR_CHANGE_PD, pd_c, 0);
	if (ret)
		FAIL("rereg to another PD: %s", strerror(ret));
	memset(region, 0, SIZE);
	expect_write(req_pd, pd_b, mr, IBV_WC_REM_ACCESS_ERR, "WRITE through the old PD", 3);
	expect_write(req_pd, pd_c, mr, IBV_WC_SUCCESS, "WRITE through the new PD", 4);
	printf("ok: rereg to another PD: refused through the old PD, written through the new\n");

	ret = rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, 0);
	if (ret != EOPNOTSUPP)
		FAIL("rereg with a new translation: %s, wanted EOPNOTSUPP", strerror(ret));
	printf("ok: a new translation: EOPNOTSUPP\n");

	ro = ibv_reg_mr(pd_b, pinned_ro, SIZE, IBV_ACCESS_REMOTE_READ);
	if (!ro)
		FAIL("reg_mr read-only");
	ret = rereg(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, RW);
	if (ret != EACCES)
		FAIL("write access to pages pinned read-only: %s, wanted EACCES", strerror(ret));
	printf("ok: write access for a region pinned read-only: EACCES\n");

	ibv_dereg_mr(ro);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd_c);
	ibv_dealloc_pd(pd_b);
	ibv_dealloc_pd(req_pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
