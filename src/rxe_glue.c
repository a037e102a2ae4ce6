// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers over kernel static inlines and macros for the Rust part
 * of rdma_rxe, and a few that fill a C struct or take a lock around one call.
 * The network side of the data path is in rxe_net.c. See rxe_glue.h.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/cache.h>
#include <linux/vmalloc.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/route.h>
#include <net/dst_cache.h>
#include <net/ip6_route.h>
#include <linux/inetdevice.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/cpumask.h>
#include <linux/bottom_half.h>
#include <linux/highmem.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>
#include <linux/xarray.h>
#include <linux/module.h>
#include <linux/ratelimit.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "rxe_glue.h"

void *rxe_glue_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

struct net *rxe_glue_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

struct net_device *rxe_glue_notifier_dev(void *ptr)
{
	return netdev_notifier_info_to_dev(ptr);
}

void rxe_glue_dev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rxe_glue_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

bool rxe_glue_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

bool rxe_glue_netdev_active(const struct net_device *ndev)
{
	return ib_get_curr_port_state((struct net_device *)ndev) == IB_PORT_ACTIVE;
}

bool rxe_glue_netdev_up(const struct net_device *ndev)
{
	return netif_get_flags(ndev) & IFF_UP;
}

unsigned int rxe_glue_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

unsigned int rxe_glue_netdev_hwaddr(const struct net_device *ndev, u8 *addr, unsigned int len)
{
	unsigned int n = min_t(unsigned int, ndev->addr_len, len);

	memcpy(addr, ndev->dev_addr, n);
	return n;
}

void rxe_glue_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

unsigned int rxe_glue_num_possible_cpus(void)
{
	return num_possible_cpus();
}

void rxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

struct sock *rxe_glue_socket_sk(struct socket *sock)
{
	return sock->sk;
}

void rxe_glue_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

struct sk_buff *rxe_glue_skb_copy(struct sk_buff *skb, u8 *at, u8 **copy_at)
{
	struct sk_buff *copy = skb_copy(skb, GFP_ATOMIC);

	if (copy)
		*copy_at = copy->head + (at - skb->head);
	return copy;
}

int rxe_glue_no_udata_io(struct ib_udata *udata)
{
	return ib_no_udata_io(udata);
}

void *rxe_glue_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

unsigned int rxe_glue_cache_line_size(void)
{
	return cache_line_size();
}

struct ib_udata *rxe_glue_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rxe_glue_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

int rxe_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len)
{
	return ib_copy_to_udata(udata, (void *)src, len);
}

u64 rxe_glue_mmap_get_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

void rxe_glue_cq_comp_handler(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

void rxe_glue_cq_err_event(struct ib_cq *cq)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

struct ib_umem *rxe_glue_umem_get(struct ib_device *dev, unsigned long addr,
				  size_t size, int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

size_t rxe_glue_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

size_t rxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter iter;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (n == max)
			break;
		pages[n++] = sg_page_iter_page(&iter);
	}
	return n;
}

void rxe_glue_xa_init_alloc(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC);
}

int rxe_glue_xa_reserve_cyclic(struct xarray *xa, u32 *id, u32 min, u32 max, u32 *next,
				bool atomic)
{
	unsigned long flags;
	int ret;

	if (!atomic)
		return xa_alloc_cyclic_bh(xa, id, NULL, XA_LIMIT(min, max), next, GFP_KERNEL);
	xa_lock_irqsave(xa, flags);
	ret = __xa_alloc_cyclic(xa, id, NULL, XA_LIMIT(min, max), next, GFP_ATOMIC);
	xa_unlock_irqrestore(xa, flags);
	return ret;
}

int rxe_glue_xa_publish(struct xarray *xa, unsigned long index, void *entry)
{
	unsigned long flags;
	void *old;

	xa_lock_irqsave(xa, flags);
	old = __xa_store(xa, index, entry, GFP_ATOMIC);
	xa_unlock_irqrestore(xa, flags);
	return xa_err(old);
}

void *rxe_glue_xa_erase(struct xarray *xa, unsigned long index)
{
	unsigned long flags;
	void *old;

	xa_lock_irqsave(xa, flags);
	old = __xa_erase(xa, index);
	xa_unlock_irqrestore(xa, flags);
	return old;
}

bool rxe_glue_refcount_inc_not_zero(refcount_t *r)
{
	return refcount_inc_not_zero(r);
}

unsigned long rxe_glue_rcu_gp_cookie(void)
{
	return get_state_synchronize_rcu();
}

void rxe_glue_rcu_gp_wait(unsigned long cookie)
{
	cond_synchronize_rcu(cookie);
}

unsigned long rxe_glue_xa_lock_irqsave(struct xarray *xa)
{
	unsigned long flags;

	xa_lock_irqsave(xa, flags);
	return flags;
}

void rxe_glue_xa_unlock_irqrestore(struct xarray *xa, unsigned long flags)
{
	xa_unlock_irqrestore(xa, flags);
}

void *rxe_glue_xa_find_from(struct xarray *xa, unsigned long *index)
{
	return xa_find(xa, index, ULONG_MAX, XA_PRESENT);
}

void rxe_glue_memcpy_to_page(struct page *page, size_t offset, const void *src, size_t len)
{
	memcpy_to_page(page, offset, src, len);
}

void rxe_glue_memcpy_from_page(void *dst, struct page *page, size_t offset, size_t len)
{
	memcpy_from_page(dst, page, offset, len);
}

void *rxe_glue_page_get(struct page *page)
{
	if (PageHighMem(page))
		return NULL;
	get_page(page);
	return page_address(page);
}

void *rxe_glue_kva_page_get(unsigned long va, unsigned long len, struct page **pagep)
{
	struct folio *folio;
	struct page *page;

	if (!len || offset_in_page(va) + len > PAGE_SIZE || !virt_addr_valid((void *)va))
		return NULL;
	page = virt_to_page((void *)va);
	folio = page_folio(page);
	/*
	 * Memory a page reference may hold: not slab or large kmalloc memory
	 * (get_page() refuses both, and the network stack never sends from
	 * them), nor a page with no reference (not allocated).
	 */
	if (PageHighMem(page) || folio_test_slab(folio) || folio_test_large_kmalloc(folio) ||
	    !folio_ref_count(folio))
		return NULL;
	get_page(page);
	*pagep = page;
	return page_address(page);
}

void rxe_glue_page_put(struct page *page)
{
	put_page(page);
}

int rxe_glue_gid_attr_network_type(const struct ib_gid_attr *attr)
{
	return rdma_gid_attr_network_type(attr);
}

static struct workqueue_struct *rxe_glue_tx_wq;
static struct workqueue_struct *rxe_glue_rx_wq;

int rxe_glue_tx_wq_init(void)
{
	/* Bound (per-CPU): a QP's work runs on the CPU it was queued on. */
	rxe_glue_tx_wq = alloc_workqueue("rxe_tx", WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	if (!rxe_glue_tx_wq)
		return -ENOMEM;
	/*
	 * Receive work does what the softirq it left would have done: high
	 * priority, so a task polling its CQ on that CPU does not starve it.
	 */
	rxe_glue_rx_wq = alloc_workqueue("rxe_rx", WQ_PERCPU | WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	if (!rxe_glue_rx_wq) {
		destroy_workqueue(rxe_glue_tx_wq);
		return -ENOMEM;
	}
	return 0;
}

void rxe_glue_tx_wq_exit(void)
{
	destroy_workqueue(rxe_glue_rx_wq);
	destroy_workqueue(rxe_glue_tx_wq);
}

void rxe_glue_work_init(struct work_struct *work, void (*fn)(struct work_struct *))
{
	INIT_WORK(work, fn);
}

void rxe_glue_tx_work_queue_on(int cpu, struct work_struct *work)
{
	queue_work_on(cpu, rxe_glue_tx_wq, work);
}

void rxe_glue_rx_work_queue_on(int cpu, struct work_struct *work)
{
	queue_work_on(cpu, rxe_glue_rx_wq, work);
}

void rxe_glue_work_queue_unbound(struct work_struct *work)
{
	queue_work(system_unbound_wq, work);
}

void rxe_glue_work_disable_sync(struct work_struct *work)
{
	disable_work_sync(work);
}

int rxe_glue_tx_cpu(u32 key)
{
	unsigned int n = num_online_cpus();
	unsigned int cpu;

	/* Every CPU number below nr_cpu_ids online: the nth online CPU is CPU
	 * n, no mask walk (which the receive path paid for every packet). */
	if (n == nr_cpu_ids)
		return key % n;
	cpu = cpumask_nth(key % (n ? n : 1), cpu_online_mask);

	return cpu < nr_cpu_ids ? cpu : raw_smp_processor_id();
}

void rxe_glue_timer_setup(struct timer_list *timer, void (*fn)(struct timer_list *))
{
	timer_setup(timer, fn, 0);
}

void rxe_glue_timer_arm_usecs(struct timer_list *timer, unsigned int usecs)
{
	mod_timer(timer, jiffies + usecs_to_jiffies(usecs));
}

void rxe_glue_timer_cancel(struct timer_list *timer)
{
	timer_delete(timer);
}

void rxe_glue_timer_shutdown(struct timer_list *timer)
{
	timer_shutdown_sync(timer);
}

void rxe_glue_local_bh_disable(void)
{
	local_bh_disable();
}

void rxe_glue_local_bh_enable(void)
{
	local_bh_enable();
}

void rxe_glue_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void rxe_glue_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

int rxe_glue_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

void rxe_glue_qp_event(struct ib_qp *qp, unsigned int event)
{
	struct ib_event ev = {
		.device = qp->device,
		.element.qp = qp,
		.event = event,
	};

	if (qp->event_handler)
		qp->event_handler(&ev, qp->qp_context);
}

void rxe_glue_srq_limit_event(struct ib_srq *srq)
{
	struct ib_event ev = {
		.device = srq->device,
		.element.srq = srq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

struct net_device *rxe_glue_ib_netdev_rcu(struct ib_device *dev)
{
	if (!dev->port_data)
		return NULL;
	return rcu_dereference_bh(dev->port_data[1].netdev);
}

bool rxe_glue_kva_range_valid(unsigned long addr, unsigned long len)
{
	unsigned long page, last;

	if (!len)
		return true;
	if (addr + len - 1 < addr)
		return false;
	last = (addr + len - 1) & PAGE_MASK;
	for (page = addr & PAGE_MASK; ; page += PAGE_SIZE) {
		if (!virt_addr_valid((void *)page))
			return false;
		if (page == last)
			return true;
	}
}

bool rxe_glue_irqs_off(void)
{
	return irqs_disabled() || in_hardirq();
}

void rxe_glue_warn_bad_icrc(void)
{
	pr_warn_ratelimited("rdma_rxe: bad ICRC from a peer, packet dropped\n");
}

void rxe_glue_set_node_desc(struct ib_device *ib, const char *desc)
{
	memcpy(ib->node_desc, desc, sizeof(ib->node_desc));
}

void rxe_glue_ib_device_get(struct ib_device *dev)
{
	refcount_inc(&dev->refcount);
}
