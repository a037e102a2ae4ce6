/*
 * advise: advise_mr (ibv_advise_mr's prefetch) on an on-demand-paging
 * region, driven through the uverbs ADVISE_MR method. Debian's librxe has
 * no advise_mr (libibverbs answers ibv_advise_mr with EOPNOTSUPP before
 * the kernel sees it), so this issues the command the way a provider does,
 * with libibverbs' ibv_cmd_advise_mr. tests/vm/t_odp.sh runs it.
 *
 *   advise DRIVER DEV
 *
 * On a region registered on demand over fresh anonymous memory:
 *  1. PREFETCH_WRITE with the flush flag (synchronous), PREFETCH, and
 *     PREFETCH_NO_FAULT over parts of it: 0;
 *  2. (ours) PREFETCH of a region registered without write access: 0;
 *     PREFETCH_WRITE of it: EPERM; a range outside the region: EINVAL; a
 *     pinned region: EINVAL. Not asked of the C driver, which looks every
 *     region up for local write (EINVAL for any read-only one), checks no
 *     range, and takes a pinned region's umem for an ODP one.
 * One "ok:" line per step; exit 0 if all pass, 1 on the first failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

/* rdma-core: libibverbs/driver.h (not installed by Debian). */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge);

#define LEN (64 * 4096)

static int failed;

static void check(const char *what, int got, int want)
{
	/* ibv_cmd_* return a positive errno. */
	if (got < 0)
		got = -got;
	if (got == want) {
		printf("ok: %s: %s\n", what, want ? strerror(want) : "0");
	} else {
		printf("FAILED: %s: %s, wanted %s\n", what, got ? strerror(got) : "0",
		       want ? strerror(want) : "0");
		failed = 1;
	}
}

static int advise(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_mr *mr, uint64_t addr, uint32_t len)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = mr->lkey };

	return ibv_cmd_advise_mr(pd, advice, flags, &sge, 1);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_mr *mr, *ro, *pinned;
	char *buf, *rbuf, *pbuf;
	int i, n, ours;

	if (argc != 3) {
		fprintf(stderr, "usage: advise DRIVER DEV\n");
		return 2;
	}
	ours = !strcmp(argv[1], "rust");
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[2]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "no device %s\n", argv[2]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rbuf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pbuf = malloc(LEN);
	if (!pd || buf == MAP_FAILED || rbuf == MAP_FAILED || !pbuf) {
		perror("set-up");
		return 1;
	}
	mr = ibv_reg_mr(pd, buf, LEN,
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ro = ibv_reg_mr(pd, rbuf, LEN, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ);
	pinned = ibv_reg_mr(pd, pbuf, LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !ro || !pinned) {
		perror("ibv_reg_mr");
		return 1;
	}

	check("PREFETCH_WRITE, flush, 64 pages",
	      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, mr,
		     (uintptr_t)buf, LEN), 0);
	check("PREFETCH, 8 pages at an offset",
	      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, mr, (uintptr_t)buf + 4096 + 7,
		     8 * 4096), 0);
	check("PREFETCH_NO_FAULT", advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, mr,
					  (uintptr_t)buf, 4096), 0);
	if (ours) {
		check("PREFETCH on a read-only region",
		      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, ro,
			     (uintptr_t)rbuf, LEN), 0);
		check("PREFETCH past the region's end",
		      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, mr,
			     (uintptr_t)buf + LEN - 4096, 2 * 4096), EINVAL);
		check("PREFETCH_WRITE on a read-only region",
		      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			     ro, (uintptr_t)rbuf, 4096), EPERM);
		check("PREFETCH on a pinned region",
		      advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, pinned,
			     (uintptr_t)pbuf, 4096), EINVAL);
	}
	ibv_dereg_mr(pinned);
	ibv_dereg_mr(ro);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failed;
}
