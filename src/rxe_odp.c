// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging for rdma_rxe: user memory registered without pinning
 * (IB_ACCESS_ON_DEMAND), whose pages ib_core's ODP code brings in when
 * asked and whose mappings the process may change at any time.
 *
 * Why C: this is a protocol with ib_core's ODP helpers and the MMU
 * interval notifier, written against their C contract (the invalidate
 * callback, umem_mutex held on return from ib_umem_odp_map_dma_and_lock,
 * the hmm pfn list and its flag bits, all static inlines and macros), not
 * driver logic; every decision about what to do when memory is not
 * resident is the Rust part's.
 *
 * The driver moves bytes where it cannot sleep (softirq, under QP locks),
 * so it never faults pages in on the data path. It copies only while the
 * pages it needs are resident, under odp->lock, which the invalidate
 * callback takes as well: an invalidation waits for a copy in progress,
 * and marks the region stale, so that no copy starts on the pfn list until
 * a fault has brought it up to date again (hmm_range_fault() fills the
 * list before ib_umem_odp_map_dma_and_lock() checks the notifier sequence,
 * so a list written during an invalidation is not trusted before that
 * check passed). Faults of one region are serialised by odp->fault_lock
 * for the same reason. Otherwise the caller asks for a fault (process
 * context, rxe_odp_fault()) and tries again later.
 */

#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/mmu_notifier.h>
#include <linux/slab.h>
#include <rdma/ib_umem_odp.h>

#include "rxe_odp.h"

struct rxe_odp {
	struct ib_umem_odp *umem;
	/* Taken by copies and by the invalidate callback, IRQs off. */
	spinlock_t lock;
	/* Under @lock: an invalidation came after the last completed fault. */
	bool stale;
	/* Serialises rxe_odp_fault(). */
	struct mutex fault_lock;
};

bool rxe_odp_supported(void)
{
	return IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING);
}

#ifdef CONFIG_INFINIBAND_ON_DEMAND_PAGING

static bool rxe_odp_invalidate(struct mmu_interval_notifier *mni,
			       const struct mmu_notifier_range *range,
			       unsigned long cur_seq)
{
	struct ib_umem_odp *umem = container_of(mni, struct ib_umem_odp, notifier);
	struct rxe_odp *odp = umem->private;
	unsigned long flags = 0;
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;

	mutex_lock(&umem->umem_mutex);
	/* Before rxe_odp_get() set it, nothing can have copied. */
	if (odp) {
		spin_lock_irqsave(&odp->lock, flags);
		odp->stale = true;
	}
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(umem), range->start);
	end = min_t(u64, ib_umem_end(umem), range->end);
	/* rxe maps no DMA: this only clears the pfn list's flags. */
	ib_umem_odp_unmap_dma_pages(umem, start, end);
	if (odp)
		spin_unlock_irqrestore(&odp->lock, flags);
	mutex_unlock(&umem->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rxe_odp_ops = {
	.invalidate = rxe_odp_invalidate,
};

struct rxe_odp *rxe_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
			    int access)
{
	struct ib_umem_odp *umem;
	struct rxe_odp *odp;

	odp = kzalloc_obj(*odp);
	if (!odp)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&odp->lock);
	mutex_init(&odp->fault_lock);
	odp->stale = true;
	umem = ib_umem_odp_get(dev, addr, len, access, &rxe_odp_ops);
	if (IS_ERR(umem)) {
		kfree(odp);
		return ERR_CAST(umem);
	}
	/* Published under the mutex the callback takes. */
	mutex_lock(&umem->umem_mutex);
	umem->private = odp;
	odp->umem = umem;
	mutex_unlock(&umem->umem_mutex);
	return odp;
}

void rxe_odp_release(struct rxe_odp *odp)
{
	/* Removes the notifier, waiting for a callback in progress. */
	ib_umem_odp_release(odp->umem);
	mutex_destroy(&odp->fault_lock);
	kfree(odp);
}

bool rxe_odp_writable(const struct rxe_odp *odp)
{
	return odp->umem->umem.writable;
}

/* The pfn flags a page needs for an access. */
static unsigned long rxe_odp_need(const struct rxe_odp *odp, bool write)
{
	return HMM_PFN_VALID | (write && odp->umem->umem.writable ? HMM_PFN_WRITE : 0);
}

int rxe_odp_fault(struct rxe_odp *odp, u64 va, u64 len, bool write)
{
	struct ib_umem_odp *umem = odp->umem;
	unsigned long flags;
	int np;

	if (!len)
		return 0;
	mutex_lock(&odp->fault_lock);
	np = ib_umem_odp_map_dma_and_lock(umem, va, len,
					  rxe_odp_need(odp, write) & HMM_PFN_WRITE, true);
	if (np >= 0) {
		/*
		 * umem_mutex is held and the notifier sequence was checked
		 * under it: the whole pfn list is current.
		 */
		spin_lock_irqsave(&odp->lock, flags);
		odp->stale = false;
		spin_unlock_irqrestore(&odp->lock, flags);
		mutex_unlock(&umem->umem_mutex);
	}
	mutex_unlock(&odp->fault_lock);
	return np < 0 ? np : 0;
}

/* Whether [@va, @va + @len) lies in the region and is resident; @lock held. */
static bool rxe_odp_resident_locked(struct rxe_odp *odp, u64 va, u64 len, bool write)
{
	struct ib_umem_odp *umem = odp->umem;
	unsigned long need = rxe_odp_need(odp, write);
	u64 start = ib_umem_start(umem), end = ib_umem_end(umem), addr;

	if (odp->stale || va < start || va > end || len > end - va)
		return false;
	/* The pfn list has an entry per PAGE_SIZE, whatever page_shift is. */
	for (addr = ALIGN_DOWN(va, PAGE_SIZE); addr < va + len; addr += PAGE_SIZE) {
		size_t idx = (addr - start) >> PAGE_SHIFT;

		if ((umem->map.pfn_list[idx] & need) != need)
			return false;
	}
	return true;
}

bool rxe_odp_resident(struct rxe_odp *odp, u64 va, u64 len, bool write)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&odp->lock, flags);
	ok = rxe_odp_resident_locked(odp, va, len, write);
	spin_unlock_irqrestore(&odp->lock, flags);
	return ok;
}

int rxe_odp_copy(struct rxe_odp *odp, u64 va, void *buf, size_t len, bool to_pages)
{
	struct ib_umem_odp *umem = odp->umem;
	u64 start = ib_umem_start(umem);
	unsigned long flags;
	u8 *p = buf;

	spin_lock_irqsave(&odp->lock, flags);
	if (!rxe_odp_resident_locked(odp, va, len, to_pages)) {
		spin_unlock_irqrestore(&odp->lock, flags);
		return -EAGAIN;
	}
	while (len) {
		size_t idx = (va - start) >> PAGE_SHIFT;
		size_t off = va & (PAGE_SIZE - 1);
		size_t n = min_t(size_t, len, PAGE_SIZE - off);
		struct page *page = hmm_pfn_to_page(umem->map.pfn_list[idx]);
		u8 *kva;

		kva = kmap_local_page(page);
		if (to_pages)
			memcpy(kva + off, p, n);
		else
			memcpy(p, kva + off, n);
		kunmap_local(kva);
		p += n;
		va += n;
		len -= n;
	}
	spin_unlock_irqrestore(&odp->lock, flags);
	return 0;
}

#else /* CONFIG_INFINIBAND_ON_DEMAND_PAGING */

struct rxe_odp *rxe_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
			    int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

void rxe_odp_release(struct rxe_odp *odp)
{
}

bool rxe_odp_writable(const struct rxe_odp *odp)
{
	return false;
}

int rxe_odp_fault(struct rxe_odp *odp, u64 va, u64 len, bool write)
{
	return -EOPNOTSUPP;
}

int rxe_odp_copy(struct rxe_odp *odp, u64 va, void *buf, size_t len, bool to_pages)
{
	return -EOPNOTSUPP;
}

bool rxe_odp_resident(struct rxe_odp *odp, u64 va, u64 len, bool write)
{
	return false;
}

#endif /* CONFIG_INFINIBAND_ON_DEMAND_PAGING */
