// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers over kernel static inlines and macros for the Rust part
 * of rdma_rxe. See rxe_glue.h.
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

int rxe_glue_udp_sock_create(struct net *net, bool ipv6, u16 port, struct socket **sockp)
{
	struct udp_port_cfg cfg = {};

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
	}
	cfg.local_udp_port = htons(port);
	return udp_sock_create(net, &cfg, sockp);
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

int rxe_glue_gid_attr_network_type(const struct ib_gid_attr *attr)
{
	return rdma_gid_attr_network_type(attr);
}

struct sk_buff *rxe_glue_tx_alloc(struct net_device *ndev, bool ipv6, unsigned int len, u8 **data)
{
	unsigned int hdrs = (ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
			    sizeof(struct udphdr);
	unsigned int head = LL_RESERVED_SPACE(ndev) + hdrs;
	struct sk_buff *skb = alloc_skb(head + len, GFP_ATOMIC);

	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	*data = skb_put(skb, len);
	return skb;
}

static void rxe_glue_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *uh;

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = htons(sport);
	uh->dest = htons(ROCE_V2_UDP_DPORT);
	uh->len = htons(skb->len);
	uh->check = 0;
}

struct dst_cache *rxe_glue_route_cache_new(void)
{
	struct dst_cache *cache = kzalloc(sizeof(*cache), GFP_KERNEL);

	if (cache && dst_cache_init(cache, GFP_KERNEL)) {
		kfree(cache);
		cache = NULL;
	}
	return cache;
}

void rxe_glue_route_cache_reset(struct dst_cache *cache)
{
	dst_cache_reset(cache);
}

void rxe_glue_route_cache_free(struct dst_cache *cache)
{
	dst_cache_destroy(cache);
	kfree(cache);
}

int rxe_glue_tx_route4(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
		       const u8 *daddr, u8 tos, u8 ttl, u16 sport, u8 **iphp,
		       struct dst_cache *cache)
{
	struct net *net = dev_net(ndev);
	struct flowi4 fl = {
		.flowi4_oif = ndev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
	};
	struct rtable *rt = NULL;
	struct iphdr *iph;

	memcpy(&fl.daddr, daddr, 4);
	memcpy(&fl.saddr, saddr, 4);
	if (cache) {
		__be32 cached_saddr;

		rt = dst_cache_get_ip4(cache, &cached_saddr);
		if (rt && cached_saddr != fl.saddr) {
			ip_rt_put(rt);
			rt = NULL;
		}
	}
	if (!rt) {
		rt = ip_route_output_key(net, &fl);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		if (cache)
			dst_cache_set_ip4(cache, &rt->dst, fl.saddr);
	}
	skb_dst_set(skb, &rt->dst);
	rxe_glue_push_udp(skb, sport);
	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = tos;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = fl.saddr;
	iph->daddr = fl.daddr;
	__ip_select_ident(net, iph, 1);
	ip_send_check(iph);
	skb->protocol = htons(ETH_P_IP);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	*iphp = (u8 *)iph;
	return 0;
}

int rxe_glue_tx_route6(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
		       const u8 *daddr, u8 tclass, u8 hop_limit, u16 sport, u8 **iphp,
		       struct dst_cache *cache)
{
	struct net *net = dev_net(ndev);
	struct flowi6 fl6 = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst = NULL;
	struct ipv6hdr *ip6h;

	memcpy(&fl6.daddr, daddr, 16);
	memcpy(&fl6.saddr, saddr, 16);
	if (cache) {
		struct in6_addr cached_saddr;

		dst = dst_cache_get_ip6(cache, &cached_saddr);
		if (dst && !ipv6_addr_equal(&cached_saddr, &fl6.saddr)) {
			dst_release(dst);
			dst = NULL;
		}
	}
	if (!dst) {
		dst = ip6_dst_lookup_flow(net, NULL, &fl6, NULL);
		if (IS_ERR(dst))
			return PTR_ERR(dst);
		if (cache)
			dst_cache_set_ip6(cache, dst, &fl6.saddr);
	}
	skb_dst_set(skb, dst);
	rxe_glue_push_udp(skb, sport);
	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, tclass, 0);
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = hop_limit;
	ip6h->saddr = fl6.saddr;
	ip6h->daddr = fl6.daddr;
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	*iphp = (u8 *)ip6h;
	return 0;
}

static void (*rxe_glue_tx_done)(void *arg);

void rxe_glue_tx_init(void (*done)(void *arg))
{
	rxe_glue_tx_done = done;
}

static void rxe_glue_tx_dtor(struct sk_buff *skb)
{
	rxe_glue_tx_done(skb_shinfo(skb)->destructor_arg);
	/* Last: the module may go once no sent packet holds it. */
	module_put(THIS_MODULE);
}

void rxe_glue_skb_set_tx_owner(struct sk_buff *skb, void *arg)
{
	/* As SCTP does: the owner of a fresh, non-zerocopy skb keeps its
	 * argument in destructor_arg until the destructor runs. */
	__module_get(THIS_MODULE);
	skb_shinfo(skb)->destructor_arg = arg;
	skb->destructor = rxe_glue_tx_dtor;
}

/* Packets the loopback path holds at most; more are dropped (send errors). */
#define RXE_GLUE_LOOPBACK_MAX 8192
/*
 * Packets one run of the loopback work hands over before it yields. Each
 * may make its QP transmit up to a window of packets in the same softirq,
 * so the batch bounds the longest stretch with bottom halves off; between
 * runs the BH worker's time limit hands the rest to ksoftirqd, where RCU
 * and the scheduler get their turn.
 */
#define RXE_GLUE_LOOPBACK_BATCH 16

static struct sk_buff_head rxe_glue_loopback_queue;
static struct work_struct rxe_glue_loopback_work;
static int (*rxe_glue_loopback_rcv)(struct sock *sk, struct sk_buff *skb);

static void rxe_glue_loopback_fn(struct work_struct *work)
{
	struct sk_buff *skb;
	int n = 0;

	/* BH work: softirq context, as the UDP encapsulation callback. */
	rcu_read_lock();
	while (n++ < RXE_GLUE_LOOPBACK_BATCH &&
	       (skb = skb_dequeue(&rxe_glue_loopback_queue)))
		rxe_glue_loopback_rcv(NULL, skb);
	rcu_read_unlock();
	if (!skb_queue_empty_lockless(&rxe_glue_loopback_queue))
		queue_work(system_bh_highpri_wq, &rxe_glue_loopback_work);
}

void rxe_glue_loopback_init(int (*rcv)(struct sock *sk, struct sk_buff *skb))
{
	skb_queue_head_init(&rxe_glue_loopback_queue);
	INIT_WORK(&rxe_glue_loopback_work, rxe_glue_loopback_fn);
	rxe_glue_loopback_rcv = rcv;
}

void rxe_glue_loopback_exit(void)
{
	disable_work_sync(&rxe_glue_loopback_work);
	skb_queue_purge(&rxe_glue_loopback_queue);
}

/*
 * Makes @skb look as UDP hands a datagram to the encapsulation callback
 * (data at the UDP header, the network header before it, dev the loopback
 * device, so the receive side finds the port by destination address) and
 * queues it.
 */
static int rxe_glue_loopback_send(struct sk_buff *skb)
{
	if (skb_queue_len_lockless(&rxe_glue_loopback_queue) >= RXE_GLUE_LOOPBACK_MAX) {
		kfree_skb(skb);
		return -ENOBUFS;
	}
	skb->dev = skb_dst(skb)->dev;
	__skb_pull(skb, skb_transport_offset(skb));
	skb->pkt_type = PACKET_HOST;
	skb_queue_tail(&rxe_glue_loopback_queue, skb);
	queue_work(system_bh_highpri_wq, &rxe_glue_loopback_work);
	return 0;
}

int rxe_glue_tx_send(struct sk_buff *skb, bool ipv6)
{
	struct net *net = dev_net(skb_dst(skb)->dev);
	int err;

	if (skb_dst(skb)->dev->flags & IFF_LOOPBACK)
		return rxe_glue_loopback_send(skb);
	if (ipv6)
		err = ip6_local_out(net, NULL, skb);
	else
		err = ip_local_out(net, NULL, skb);
	err = net_xmit_eval(err);
	return err > 0 ? -ENOBUFS : err;
}

struct net_device *rxe_glue_rx_prepare(struct sk_buff *skb, bool loopback, u8 **iph,
				       unsigned int *iph_len, u8 **udph, u8 **payload,
				       unsigned int *payload_len)
{
	struct net_device *ndev = skb->dev;
	struct net *net;

	if (!ndev || skb_linearize(skb))
		return NULL;
	if (skb->len < sizeof(struct udphdr) ||
	    skb_transport_header(skb) != skb->data ||
	    skb_network_header(skb) >= skb_transport_header(skb))
		return NULL;
	*iph = skb_network_header(skb);
	*iph_len = skb_transport_header(skb) - skb_network_header(skb);
	*udph = skb->data;
	*payload = skb->data + sizeof(struct udphdr);
	*payload_len = skb->len - sizeof(struct udphdr);
	/*
	 * Only the driver's own loopback path may name a port by destination
	 * address. A datagram UDP received on lo was sent by a local socket,
	 * which any user may open: as rxe, it belongs to lo's port, if any.
	 */
	if (!loopback || !(ndev->flags & IFF_LOOPBACK))
		return ndev;
	net = dev_net(ndev);
	if (skb->protocol == htons(ETH_P_IP))
		return __ip_dev_find(net, ip_hdr(skb)->daddr, false);
	if (skb->protocol == htons(ETH_P_IPV6))
		return ipv6_dev_find(net, &ipv6_hdr(skb)->daddr, NULL);
	return NULL;
}

static struct workqueue_struct *rxe_glue_tx_wq;

int rxe_glue_tx_wq_init(void)
{
	/* Bound (per-CPU): a QP's work runs on the CPU it was queued on. */
	rxe_glue_tx_wq = alloc_workqueue("rxe_tx", WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	return rxe_glue_tx_wq ? 0 : -ENOMEM;
}

void rxe_glue_tx_wq_exit(void)
{
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
	unsigned int cpu = cpumask_nth(key % (n ? n : 1), cpu_online_mask);

	return cpu < nr_cpu_ids ? cpu : raw_smp_processor_id();
}

int rxe_glue_this_cpu(void)
{
	return raw_smp_processor_id();
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
