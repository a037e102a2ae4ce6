/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-demand-paging memory (see rxe_odp.c): what the Rust part of rdma_rxe
 * calls. A struct rxe_odp is owned by one memory region.
 */
#ifndef RXE_ODP_H
#define RXE_ODP_H

#include <linux/types.h>

struct ib_device;
struct rxe_odp;

/* Whether the kernel has CONFIG_INFINIBAND_ON_DEMAND_PAGING. */
bool rxe_odp_supported(void);
/*
 * Registers [@addr, @addr + @len) of the calling process for on-demand
 * paging with @access (IB_ACCESS_*); no page is brought in. ERR_PTR on
 * failure (-EOPNOTSUPP without ODP support). Process context.
 */
struct rxe_odp *rxe_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
			    int access);
/* Releases what rxe_odp_get() returned. Process context. */
void rxe_odp_release(struct rxe_odp *odp);
/* Whether the pages are writable (the region has local or remote write). */
bool rxe_odp_writable(const struct rxe_odp *odp);
/*
 * Brings [@va, @va + @len) in (user addresses), for writing if @write and
 * the pages are writable. 0 or a negative errno (-EFAULT: not mapped).
 * Sleeps.
 */
int rxe_odp_fault(struct rxe_odp *odp, u64 va, u64 len, bool write);
/*
 * Copies @len bytes between @buf and user address @va, into the pages if
 * @to_pages, if every page is resident (for writing if @to_pages): 0, or
 * -EAGAIN with nothing copied. Any context.
 */
int rxe_odp_copy(struct rxe_odp *odp, u64 va, void *buf, size_t len, bool to_pages);
/* Whether rxe_odp_copy() of [@va, @va + @len) would copy now. Any context. */
bool rxe_odp_resident(struct rxe_odp *odp, u64 va, u64 len, bool write);

#endif /* RXE_ODP_H */
