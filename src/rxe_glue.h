/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One-line C wrappers over kernel static inlines and macros that the Rust
 * part of rdma_rxe calls. Nothing here makes a decision; each function does
 * exactly what the inline it wraps does.
 */
#ifndef RXE_GLUE_H
#define RXE_GLUE_H

#include <linux/types.h>
#include <linux/spinlock_types.h>
#include <linux/refcount_types.h>

struct net;
struct net_device;
struct notifier_block;
struct socket;
struct sock;
struct ib_device;
struct module;
struct ib_udata;
struct sk_buff;
struct ib_cq;
struct ib_ucontext;
struct uverbs_attr_bundle;
struct rdma_user_mmap_entry;
struct ib_umem;
struct page;
struct xarray;
struct work_struct;

/* net_generic(): the per-namespace area registered with pernet_operations. */
void *rxe_glue_net_generic(const struct net *net, unsigned int id);
/* dev_net(). */
struct net *rxe_glue_dev_net(const struct net_device *ndev);
/* netdev_notifier_info_to_dev(). */
struct net_device *rxe_glue_notifier_dev(void *ptr);
/* dev_put(). */
void rxe_glue_dev_hold(struct net_device *ndev);
void rxe_glue_dev_put(struct net_device *ndev);
/* is_vlan_dev(). */
bool rxe_glue_is_vlan_dev(const struct net_device *ndev);
/* netif_running() && netif_carrier_ok(), as ib_get_curr_port_state(). */
bool rxe_glue_netdev_active(const struct net_device *ndev);
/* The IFF_UP flag of the device. */
bool rxe_glue_netdev_up(const struct net_device *ndev);
/* ndev->mtu, ndev->addr_len and ndev->dev_addr. */
unsigned int rxe_glue_netdev_mtu(const struct net_device *ndev);
unsigned int rxe_glue_netdev_hwaddr(const struct net_device *ndev, u8 *addr, unsigned int len);
/* eth_random_addr(). */
void rxe_glue_eth_random_addr(u8 *addr);
/* num_possible_cpus(). */
unsigned int rxe_glue_num_possible_cpus(void);
/* ib_mark_name_assigned_by_user(). */
void rxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev);
/* sock->sk. */
struct sock *rxe_glue_socket_sk(struct socket *sock);
/* ib_no_udata_io(): deny input data, zero the response buffer. */
int rxe_glue_no_udata_io(struct ib_udata *udata);
/* kfree_skb(). */
void rxe_glue_kfree_skb(struct sk_buff *skb);
/* A private copy of skb (atomic allocation); *copy_at is where `at`, a
 * pointer into skb's data, lies in the copy. */
struct sk_buff *rxe_glue_skb_copy(struct sk_buff *skb, u8 *at, u8 **copy_at);

/* vmalloc_user(): zeroed, page-aligned, mappable to user space. */
void *rxe_glue_vmalloc_user(unsigned long size);
/* cache_line_size(). */
unsigned int rxe_glue_cache_line_size(void);
/* &attrs->driver_udata, or NULL for a kernel caller (attrs == NULL). */
struct ib_udata *rxe_glue_attrs_udata(struct uverbs_attr_bundle *attrs);
/* rdma_udata_to_drv_context(): the user context a udata belongs to. */
struct ib_ucontext *rxe_glue_udata_ucontext(struct ib_udata *udata);
/* ib_copy_to_udata(). */
int rxe_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len);
/* rdma_user_mmap_get_offset(). */
u64 rxe_glue_mmap_get_offset(const struct rdma_user_mmap_entry *entry);
/* cq->comp_handler(cq, cq->cq_context), if there is a handler. */
void rxe_glue_cq_comp_handler(struct ib_cq *cq);
/* cq->event_handler() with IB_EVENT_CQ_ERR, if there is a handler. */
void rxe_glue_cq_err_event(struct ib_cq *cq);


/* ib_umem_get_va(): pin [addr, addr + size) of the calling process. */
struct ib_umem *rxe_glue_umem_get(struct ib_device *dev, unsigned long addr,
				  size_t size, int access);
/* ib_umem_num_pages(). */
size_t rxe_glue_umem_num_pages(struct ib_umem *umem);
/* The umem's pages in order (for_each_sgtable_page), at most @max; returns the count. */
size_t rxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max);
/* xa_init_flags(xa, XA_FLAGS_ALLOC). */
void rxe_glue_xa_init_alloc(struct xarray *xa);
/*
 * Reserves a NULL entry in [min, max], cyclically: xa_alloc_cyclic_bh()
 * with GFP_KERNEL, or, when @atomic (a caller that may not sleep, perhaps
 * with interrupts off), under xa_lock_irqsave() with GFP_ATOMIC.
 */
int rxe_glue_xa_reserve_cyclic(struct xarray *xa, u32 *id, u32 min, u32 max, u32 *next,
				bool atomic);
/*
 * Stores into a reserved slot (no allocation), under xa_lock_irqsave(): any
 * context but hardirq, interrupts on or off.
 */
int rxe_glue_xa_publish(struct xarray *xa, unsigned long index, void *entry);
/* __xa_erase() under xa_lock_irqsave(), as rxe_glue_xa_publish(). */
void *rxe_glue_xa_erase(struct xarray *xa, unsigned long index);
/*
 * refcount_inc_not_zero(): takes a use of a table object found under RCU
 * unless its last use is gone (it is being destroyed).
 */
bool rxe_glue_refcount_inc_not_zero(refcount_t *r);
/*
 * get_state_synchronize_rcu() / cond_synchronize_rcu(): a removed table
 * object is freed only after a grace period from its removal, so that a
 * lookup that found it just before is done reading it.
 */
unsigned long rxe_glue_rcu_gp_cookie(void);
void rxe_glue_rcu_gp_wait(unsigned long cookie);
/*
 * xa_lock_irqsave() / xa_unlock_irqrestore(): lookups run in softirq and
 * under the data path's IRQ-disabling locks, where a _bh unlock is not
 * allowed. (Writers use the _bh variants; the lock is never taken in
 * hardirq context.)
 */
unsigned long rxe_glue_xa_lock_irqsave(struct xarray *xa);
void rxe_glue_xa_unlock_irqrestore(struct xarray *xa, unsigned long flags);
/*
 * The first entry at or after *index (reserved slots skipped), its index
 * in *index; NULL if none. The caller holds the xarray's lock.
 */
void *rxe_glue_xa_find_from(struct xarray *xa, unsigned long *index);
/* memcpy_to_page() / memcpy_from_page(): @offset + @len within the page. */
void rxe_glue_memcpy_to_page(struct page *page, size_t offset, const void *src, size_t len);
void rxe_glue_memcpy_from_page(void *dst, struct page *page, size_t offset, size_t len);
/*
 * get_page() on @page, a page with a kernel address (not highmem), and
 * that address; NULL, no reference taken, for a highmem page.
 */
void *rxe_glue_page_get(struct page *page);
/*
 * For @len bytes at kernel virtual address @va within one page of the
 * linear map, of page-allocator memory (not slab nor large kmalloc memory,
 * which get_page() refuses): get_page() on that page, stored in @pagep,
 * and the page's address. NULL, no reference taken, for any other range.
 */
void *rxe_glue_kva_page_get(unsigned long va, unsigned long len, struct page **pagep);
/* put_page(). */
void rxe_glue_page_put(struct page *page);
/* rdma_gid_attr_network_type(). */
struct ib_gid_attr;
int rxe_glue_gid_attr_network_type(const struct ib_gid_attr *attr);

/* pr_warn_ratelimited() of the bad-ICRC message. */
void rxe_glue_warn_bad_icrc(void);

/* timer_setup(), mod_timer(jiffies + usecs_to_jiffies()), timer_delete_sync(). */
void rxe_glue_timer_setup(struct timer_list *timer, void (*fn)(struct timer_list *));
void rxe_glue_timer_arm_usecs(struct timer_list *timer, unsigned int usecs);
void rxe_glue_timer_cancel(struct timer_list *timer);
void rxe_glue_timer_shutdown(struct timer_list *timer);
/* local_bh_disable() / local_bh_enable(). */
void rxe_glue_local_bh_disable(void);
void rxe_glue_local_bh_enable(void);

/* queue_work(system_unbound_wq, @work). */
void rxe_glue_work_queue_unbound(struct work_struct *work);
/*
 * The driver's transmit workqueue: per-CPU, normal priority, process
 * context (as rxe's rxe_wq), so that a long reply shares its CPU with the
 * tasks there instead of running in softirq; and its receive workqueue,
 * per-CPU and high priority, for what the receive softirq hands to another
 * CPU. Both created at module init, destroyed at exit once no work item
 * can be queued.
 */
int rxe_glue_tx_wq_init(void);
void rxe_glue_tx_wq_exit(void);
void rxe_glue_work_init(struct work_struct *work, void (*fn)(struct work_struct *));
void rxe_glue_tx_work_queue_on(int cpu, struct work_struct *work);
void rxe_glue_rx_work_queue_on(int cpu, struct work_struct *work);
void rxe_glue_work_disable_sync(struct work_struct *work);
/* The online CPU a QP with this key transmits from; the current CPU. */
int rxe_glue_tx_cpu(u32 key);

/* spin_lock_bh() / spin_unlock_bh() / spin_trylock_bh(), for sys::lock. */
void rxe_glue_spin_lock_bh(spinlock_t *lock);
void rxe_glue_spin_unlock_bh(spinlock_t *lock);
int rxe_glue_spin_trylock_bh(spinlock_t *lock);

/* qp->event_handler() with @event (an ib_event_type), if there is a handler. */
void rxe_glue_qp_event(struct ib_qp *qp, unsigned int event);
/* srq->event_handler() with IB_EVENT_SRQ_LIMIT_REACHED, if there is a handler. */
void rxe_glue_srq_limit_event(struct ib_srq *srq);

/*
 * The netdev of port 1, read under RCU-bh without a reference (for softirq
 * callers: ib_device_get_netdev() takes a lock that must not be taken
 * there). Valid until the caller's RCU read section ends.
 */
struct net_device *rxe_glue_ib_netdev_rcu(struct ib_device *dev);
void rxe_glue_ib_device_get(struct ib_device *dev);

/*
 * Whether [addr, addr + len) is all in the kernel's linear map
 * (virt_addr_valid() for each page): the addresses a kernel ULP hands a
 * virtual-DMA device (ib_dma_map_single(), sg_virt()).
 */
bool rxe_glue_kva_range_valid(unsigned long addr, unsigned long len);

/* Whether the caller runs with hard interrupts off (or in a hard IRQ). */
bool rxe_glue_irqs_off(void);

/* The rdma_rxe trace events (rxe_trace.h, rxe_trace.c). */
void rxe_glue_trace_resp_psn(u32 qpn, u32 psn, u32 expected_psn, u8 verdict, u8 reply,
			     u32 reply_psn);
void rxe_glue_trace_req_go_back(u32 qpn, u32 from_psn, u8 cause);
void rxe_glue_trace_req_tx(u32 qpn, u32 psn, u8 opcode, u8 retransmit);
void rxe_glue_trace_comp_ack(u32 qpn, u32 psn, u8 opcode, u8 syndrome, u32 msn);
void rxe_glue_trace_retry_exhausted(u32 qpn, u8 rnr);

/*
 * Copies a new node description into @ib (IB_DEVICE_NODE_DESC_MAX bytes,
 * as rxe: sysfs readers see it without a lock, as they do rxe's).
 */
void rxe_glue_set_node_desc(struct ib_device *ib, const char *desc);

#endif /* RXE_GLUE_H */
