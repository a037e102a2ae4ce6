// SPDX-License-Identifier: GPL-2.0
/*
 * The network side of rdma_rxe's data path, in C: the UDP tunnel sockets,
 * building, routing and sending a RoCE packet (route lookup with a per-QP
 * dst_cache, UDP and IP headers, ip_local_out), packet chains (a run of
 * routed packets sent as one UDP GSO skb), the driver's loopback path
 * for packets to this host, the destructor of sent packets, and preparing
 * a received datagram. See rxe_net.h.
 *
 * Why C: every step is the kernel's networking API in the form of static
 * inlines and macros (ip_route_output_key, dst_cache_*, skb_push and the
 * header helpers, iptunnel/udp helpers, __ip_select_ident, skb_dst_set),
 * used together on each packet under the same RCU and BH rules as the C
 * driver's rxe_net.c. In Rust each would be a separate C wrapper called
 * across the language boundary per packet, with the routing logic split
 * between both; the Rust side (src/sys/skb.rs) wraps these few entry
 * points instead, and everything above the IP header is Rust.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/module.h>
#include <linux/workqueue.h>
#include <linux/inetdevice.h>
#include <net/udp_tunnel.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/route.h>
#include <net/dst_cache.h>
#include <net/ip6_route.h>

#include <rdma/ib_verbs.h>

#include "rxe_glue.h"
#include "rxe_net.h"

/* A BTH, the least a split packet's linear data holds after the UDP header. */
#define RXE_NET_BTH_LEN 12
/* The ICRC, the least a split packet's trailer holds. */
#define RXE_NET_ICRC_LEN 4

int rxe_net_udp_sock_create(struct net *net, bool ipv6, u16 port, struct socket **sockp)
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

struct sk_buff *rxe_net_tx_alloc(struct net_device *ndev, bool ipv6, unsigned int len, u8 **data)
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

int rxe_net_tx_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
			unsigned int len, unsigned int trailer_len, u8 **trailer)
{
	u8 *t = netdev_alloc_frag(trailer_len);
	struct page *tp;

	if (!t) {
		put_page(page);
		return -ENOMEM;
	}
	tp = virt_to_head_page(t);
	memset(t, 0, trailer_len);
	skb_fill_page_desc(skb, 0, page, off, len);
	skb_fill_page_desc(skb, 1, tp, t - (u8 *)page_address(tp), trailer_len);
	skb->len += len + trailer_len;
	skb->data_len += len + trailer_len;
	skb->truesize += len + trailer_len;
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	*trailer = t;
	return 0;
}

static void rxe_net_push_udp(struct sk_buff *skb, u16 sport)
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

struct dst_cache *rxe_net_route_cache_new(void)
{
	struct dst_cache *cache = kzalloc(sizeof(*cache), GFP_KERNEL);

	if (cache && dst_cache_init(cache, GFP_KERNEL)) {
		kfree(cache);
		cache = NULL;
	}
	return cache;
}

void rxe_net_route_cache_reset(struct dst_cache *cache)
{
	dst_cache_reset(cache);
}

void rxe_net_route_cache_free(struct dst_cache *cache)
{
	dst_cache_destroy(cache);
	kfree(cache);
}

int rxe_net_tx_route4(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
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
	rxe_net_push_udp(skb, sport);
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

int rxe_net_tx_route6(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
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
	rxe_net_push_udp(skb, sport);
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

static void (*rxe_net_tx_done)(void *arg);

void rxe_net_tx_init(void (*done)(void *arg))
{
	rxe_net_tx_done = done;
}

static void rxe_net_tx_dtor(struct sk_buff *skb)
{
	rxe_net_tx_done(skb_shinfo(skb)->destructor_arg);
	/* Last: the module may go once no sent packet holds it. */
	module_put(THIS_MODULE);
}

void rxe_net_skb_set_tx_owner(struct sk_buff *skb, void *arg)
{
	/* As SCTP does: the owner of a fresh, non-zerocopy skb keeps its
	 * argument in destructor_arg until the destructor runs. */
	__module_get(THIS_MODULE);
	skb_shinfo(skb)->destructor_arg = arg;
	skb->destructor = rxe_net_tx_dtor;
}

/*
 * Packet chains (UDP GSO with a list of whole packets, SKB_GSO_FRAGLIST,
 * the form UDP GRO builds): a run of a QP's packets to one destination
 * crosses the IP output path, netfilter, the device and the receiver's
 * IP and UDP input once, as one skb; the stack cuts it into the original
 * packets where it must (at a device that cannot carry it, or before the
 * receiving UDP socket, which takes no GSO), by unlinking them, no copy.
 * Each packet keeps its own IP ID (SKB_GSO_TCP_FIXEDID, for IPv4), and
 * its headers are rewritten to exactly what it was built with, so its
 * ICRC, computed over them, holds; on the wire the packets are the ones
 * sent one by one.
 */

/* IP length of a chain at most: the 16-bit IP length, the device's GSO limit. */
static unsigned int rxe_net_chain_max_len(const struct net_device *dev)
{
	unsigned int max = min_t(unsigned int, READ_ONCE(dev->gso_max_size), 65535);
	unsigned int ll = LL_RESERVED_SPACE(dev);

	return max > ll + 1 ? max - ll - 1 : 0;
}

static unsigned int rxe_net_udp_payload_len(const struct sk_buff *skb)
{
	return skb->len - skb_transport_offset(skb) - sizeof(struct udphdr);
}

bool rxe_net_tx_can_chain(struct sk_buff *head, struct sk_buff *seg, bool ipv6)
{
	struct dst_entry *dst = skb_dst(head);
	const struct udphdr *hu, *su;
	unsigned int seg_len;

	/* Routed (so with headers) both, the same way, not to this host. */
	if (!dst || dst != skb_dst(seg) || (dst->dev->flags & IFF_LOOPBACK))
		return false;
	hu = udp_hdr(head);
	su = udp_hdr(seg);
	/*
	 * A packet may hold its payload in page fragments (zero-copy): the
	 * stack cuts a chain into packets with their fragments as they are.
	 * Its headers, which the chain drops, are in its linear data.
	 */
	if (skb_has_frag_list(seg) ||
	    skb_headlen(seg) < skb_transport_offset(seg) + sizeof(struct udphdr) ||
	    hu->source != su->source || hu->dest != su->dest)
		return false;
	seg_len = rxe_net_udp_payload_len(seg);
	if (ipv6) {
		const struct ipv6hdr *h = ipv6_hdr(head), *s = ipv6_hdr(seg);

		if (ipv6_addr_is_multicast(&h->daddr) || ip6_flowinfo(h) != ip6_flowinfo(s) ||
		    h->hop_limit != s->hop_limit || !ipv6_addr_equal(&h->saddr, &s->saddr) ||
		    !ipv6_addr_equal(&h->daddr, &s->daddr))
			return false;
	} else {
		const struct iphdr *h = ip_hdr(head), *s = ip_hdr(seg);

		if (ipv4_is_multicast(h->daddr) || ipv4_is_lbcast(h->daddr) || h->tos != s->tos ||
		    h->ttl != s->ttl || h->saddr != s->saddr || h->daddr != s->daddr)
			return false;
	}
	/* The segment size is the first packet's: no later one is longer. */
	if (seg_len > (skb_has_frag_list(head) ? skb_shinfo(head)->gso_size :
						 rxe_net_udp_payload_len(head)))
		return false;
	if (skb_shinfo(head)->gso_segs + 1 > READ_ONCE(dst->dev->gso_max_segs))
		return false;
	return head->len + seg_len <= rxe_net_chain_max_len(dst->dev);
}

void rxe_net_tx_chain(struct sk_buff *head, struct sk_buff **last, struct sk_buff *seg, bool ipv6)
{
	struct skb_shared_info *shinfo = skb_shinfo(head);

	if (!skb_has_frag_list(head)) {
		shinfo->gso_size = rxe_net_udp_payload_len(head);
		shinfo->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST |
				   (ipv6 ? 0 : SKB_GSO_TCP_FIXEDID);
		shinfo->gso_segs = 1;
		/* UDP checksum 0: nothing to compute, so no device needs to cut the chain for it. */
		head->ip_summed = CHECKSUM_UNNECESSARY;
		*last = NULL;
	}
	/* A segment keeps only its bytes: the head carries the route. */
	skb_dst_drop(seg);
	__skb_pull(seg, skb_transport_offset(seg) + sizeof(struct udphdr));
	seg->next = NULL;
	if (*last)
		(*last)->next = seg;
	else
		shinfo->frag_list = seg;
	*last = seg;
	head->len += seg->len;
	head->data_len += seg->len;
	head->truesize += seg->truesize;
	shinfo->gso_segs++;
}

/* Packets one CPU's loopback queue holds at most; more are dropped (send errors). */
#define RXE_GLUE_LOOPBACK_MAX 8192
/*
 * Packets one drain of a loopback queue hands over before it leaves the
 * rest to the queue's BH work. Each may make its QP transmit up to a
 * window of packets in the same context, so the batch bounds the longest
 * stretch with bottom halves off; between runs of the work the BH
 * worker's time limit hands the rest to ksoftirqd, where RCU and the
 * scheduler get their turn.
 */
#define RXE_GLUE_LOOPBACK_BATCH 16

/*
 * One CPU's loopback queue. A QP transmits from one CPU at a time (its
 * transmit CPU; a datagram QP keeps no order), so a queue per CPU, drained
 * in order, keeps each QP's packets in order. @draining is only touched
 * on its own CPU with bottom halves off: a packet sent while its CPU
 * drains (a reply to the packet being handed over) is queued behind the
 * others instead of nesting the receiver's work in the sender's.
 */
struct rxe_net_loopback_cpu {
	struct sk_buff_head queue;
	struct work_struct work;
	bool draining;
};

static DEFINE_PER_CPU(struct rxe_net_loopback_cpu, rxe_net_loopback_cpus);
static int (*rxe_net_loopback_rcv)(struct sock *sk, struct sk_buff *skb);

/* Hands over up to a batch of @lc's packets, then leaves the rest to its work. */
static void rxe_net_loopback_drain(struct rxe_net_loopback_cpu *lc, int cpu)
{
	struct sk_buff *skb;
	int n = 0;

	lc->draining = true;
	/* Softirq context or bottom halves off, as the UDP encapsulation callback. */
	rcu_read_lock();
	while (n++ < RXE_GLUE_LOOPBACK_BATCH && (skb = skb_dequeue(&lc->queue)))
		rxe_net_loopback_rcv(NULL, skb);
	rcu_read_unlock();
	lc->draining = false;
	if (!skb_queue_empty_lockless(&lc->queue))
		queue_work_on(cpu, system_bh_highpri_wq, &lc->work);
}

static void rxe_net_loopback_fn(struct work_struct *work)
{
	struct rxe_net_loopback_cpu *lc = container_of(work, struct rxe_net_loopback_cpu, work);

	/*
	 * BH work runs on the CPU it was queued on. After that CPU went
	 * offline it may run elsewhere, when nothing queues on it any more;
	 * should the CPU come back while it runs, both would hand the queue
	 * over at once and could reorder it (a sequence NAK and go-back-N
	 * then recover; not reached by the tests).
	 */
	rxe_net_loopback_drain(lc, smp_processor_id());
}

void rxe_net_loopback_init(int (*rcv)(struct sock *sk, struct sk_buff *skb))
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct rxe_net_loopback_cpu *lc = per_cpu_ptr(&rxe_net_loopback_cpus, cpu);

		skb_queue_head_init(&lc->queue);
		INIT_WORK(&lc->work, rxe_net_loopback_fn);
		lc->draining = false;
	}
	rxe_net_loopback_rcv = rcv;
}

void rxe_net_loopback_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct rxe_net_loopback_cpu *lc = per_cpu_ptr(&rxe_net_loopback_cpus, cpu);

		disable_work_sync(&lc->work);
		skb_queue_purge(&lc->queue);
	}
}

/*
 * Makes @skb look as UDP hands a datagram to the encapsulation callback
 * (data at the UDP header, the network header before it, dev the loopback
 * device, so the receive side finds the port by destination address) and
 * queues it on this CPU, for rxe_net_loopback_flush() to hand over.
 */
static int rxe_net_loopback_send(struct sk_buff *skb)
{
	struct rxe_net_loopback_cpu *lc;

	skb->dev = skb_dst(skb)->dev;
	__skb_pull(skb, skb_transport_offset(skb));
	skb->pkt_type = PACKET_HOST;
	local_bh_disable();
	lc = this_cpu_ptr(&rxe_net_loopback_cpus);
	if (skb_queue_len_lockless(&lc->queue) >= RXE_GLUE_LOOPBACK_MAX) {
		local_bh_enable();
		kfree_skb(skb);
		return -ENOBUFS;
	}
	skb_queue_tail(&lc->queue, skb);
	local_bh_enable();
	return 0;
}

void rxe_net_loopback_flush(void)
{
	struct rxe_net_loopback_cpu *lc;

	local_bh_disable();
	lc = this_cpu_ptr(&rxe_net_loopback_cpus);
	if (!lc->draining && !skb_queue_empty_lockless(&lc->queue))
		rxe_net_loopback_drain(lc, smp_processor_id());
	local_bh_enable();
}

bool rxe_net_skb_to_host(const struct sk_buff *skb)
{
	return skb_dst(skb) && (skb_dst(skb)->dev->flags & IFF_LOOPBACK);
}

/* Where rxe_net_skb_mark_icrc_omitted() marks a packet: the last byte of skb->cb. */
#define RXE_NET_CB_ICRC_OMITTED (sizeof_field(struct sk_buff, cb) - 1)
#define RXE_NET_ICRC_OMITTED_MARK 0xa5

void rxe_net_skb_mark_icrc_omitted(struct sk_buff *skb)
{
	skb->cb[RXE_NET_CB_ICRC_OMITTED] = RXE_NET_ICRC_OMITTED_MARK;
}

int rxe_net_tx_send(struct sk_buff *skb, bool ipv6)
{
	struct net *net = dev_net(skb_dst(skb)->dev);
	int err;

	if (rxe_net_skb_to_host(skb))
		return rxe_net_loopback_send(skb);
	/* A chain's UDP length is the whole chain's, as UDP GSO's. */
	if (skb_is_gso(skb))
		udp_hdr(skb)->len = htons(skb->len - skb_transport_offset(skb));
	if (ipv6)
		err = ip6_local_out(net, NULL, skb);
	else
		err = ip_local_out(net, NULL, skb);
	err = net_xmit_eval(err);
	return err > 0 ? -ENOBUFS : err;
}

void rxe_net_rx_backlog_init(struct sk_buff_head *backlog)
{
	skb_queue_head_init(backlog);
}

void rxe_net_rx_backlog_push(struct sk_buff_head *backlog, struct sk_buff *skb)
{
	skb_queue_tail(backlog, skb);
}

struct sk_buff *rxe_net_rx_backlog_pop(struct sk_buff_head *backlog)
{
	return skb_dequeue(backlog);
}

unsigned int rxe_net_rx_backlog_purge(struct sk_buff_head *backlog)
{
	unsigned int n = 0;
	struct sk_buff *skb;

	while ((skb = skb_dequeue(backlog))) {
		kfree_skb(skb);
		n++;
	}
	return n;
}

/* The lowmem, readable page of fragment @f, or NULL. */
static struct page *rxe_net_rx_frag_page(const skb_frag_t *f)
{
	struct page *page = skb_frag_page(f);

	return page && !PageHighMem(page) ? page : NULL;
}

/*
 * Fills @p for @skb (data at the UDP header) if it is linear, or split as
 * a zero-copy sender builds a packet: the RoCE headers (a BTH at least)
 * after the UDP header in the linear data, then two page fragments, the
 * payload and 4 to 7 bytes of pad and ICRC. False otherwise.
 */
static bool rxe_net_rx_fill(struct sk_buff *skb, struct rxe_net_rx_parts *p)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	const skb_frag_t *payload, *trailer;

	if (skb_headlen(skb) < sizeof(struct udphdr))
		return false;
	p->iph = skb_network_header(skb);
	p->iph_len = skb_transport_header(skb) - skb_network_header(skb);
	p->udph = skb->data;
	p->head = skb->data + sizeof(struct udphdr);
	p->head_len = skb_headlen(skb) - sizeof(struct udphdr);
	p->payload = NULL;
	p->payload_len = 0;
	p->trailer = NULL;
	p->trailer_len = 0;
	p->icrc_omitted = skb->cb[RXE_NET_CB_ICRC_OMITTED] == RXE_NET_ICRC_OMITTED_MARK;
	if (!skb_is_nonlinear(skb))
		return true;
	if (skb_has_frag_list(skb) || !skb_frags_readable(skb) || sh->nr_frags != 2 ||
	    p->head_len < RXE_NET_BTH_LEN)
		return false;
	payload = &sh->frags[0];
	trailer = &sh->frags[1];
	if (!rxe_net_rx_frag_page(payload) || !rxe_net_rx_frag_page(trailer) ||
	    skb_frag_size(trailer) < RXE_NET_ICRC_LEN || skb_frag_size(trailer) > RXE_NET_ICRC_LEN + 3)
		return false;
	p->payload = skb_frag_address(payload);
	p->payload_len = skb_frag_size(payload);
	p->trailer = skb_frag_address(trailer);
	p->trailer_len = skb_frag_size(trailer);
	return true;
}

void rxe_net_rx_parts(struct sk_buff *skb, struct rxe_net_rx_parts *parts)
{
	rxe_net_rx_fill(skb, parts);
}

int rxe_net_rx_linearize(struct sk_buff *skb, struct rxe_net_rx_parts *parts)
{
	if (skb_linearize(skb) || !rxe_net_rx_fill(skb, parts))
		return -ENOMEM;
	return 0;
}

struct net_device *rxe_net_rx_prepare(struct sk_buff *skb, bool loopback,
				       struct rxe_net_rx_parts *parts)
{
	struct net_device *ndev = skb->dev;
	struct net *net;

	if (!ndev)
		return NULL;
	/* Only the driver's own loopback path marks its packets. */
	if (!loopback)
		skb->cb[RXE_NET_CB_ICRC_OMITTED] = 0;
	if (!rxe_net_rx_fill(skb, parts) && rxe_net_rx_linearize(skb, parts))
		return NULL;
	if (skb_transport_header(skb) != skb->data ||
	    skb_network_header(skb) >= skb_transport_header(skb))
		return NULL;
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
