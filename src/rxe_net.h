/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network side of rdma_rxe's data path (rxe_net.c): tunnel sockets,
 * transmit, the loopback path, receive.
 */
#ifndef RXE_NET_H
#define RXE_NET_H

#include <linux/types.h>

struct net;
struct net_device;
struct sk_buff;
struct page;
struct sock;
struct socket;

/*
 * udp_sock_create() for a UDP tunnel socket bound to @port (host order) on
 * the wildcard address, IPv6-only when @ipv6.
 */
int rxe_net_udp_sock_create(struct net *net, bool ipv6, u16 port, struct socket **sockp);
/*
 * Transmit. A RoCE packet (BTH through ICRC) is built in place in the skb
 * that rxe_net_tx_alloc() returns, then routed and given its UDP and IP
 * headers by rxe_net_tx_route4/6() (which point @iph at the IP header, for
 * the ICRC), then sent by rxe_net_tx_send(). Until it is sent the caller
 * owns the skb and frees it with rxe_glue_kfree_skb().
 */
struct sk_buff *rxe_net_tx_alloc(struct net_device *ndev, bool ipv6, unsigned int len, u8 **data);
/*
 * Zero-copy transmit: after the RoCE headers that rxe_net_tx_alloc() made
 * room for, the packet's payload is @len bytes at @off of @page (whose
 * reference the caller hands over), as the skb's first page fragment, and
 * its pad and ICRC a second, fresh fragment of @trailer_len zero bytes,
 * returned in @trailer for the ICRC. The fragments are marked shared: a
 * layer that would write into them in place (IPsec) copies them first.
 * -ENOMEM, the page reference dropped, if no trailer could be allocated.
 */
int rxe_net_tx_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
			unsigned int len, unsigned int trailer_len, u8 **trailer);
/*
 * A connected QP's routes, one per CPU (struct dst_cache, as UDP tunnels
 * keep theirs): NULL if out of memory. Used with bottom halves off, by one
 * context at a time (the QP's lock); reset when the QP's path changes.
 */
struct dst_cache;
struct dst_cache *rxe_net_route_cache_new(void);
void rxe_net_route_cache_reset(struct dst_cache *cache);
void rxe_net_route_cache_free(struct dst_cache *cache);
/*
 * Routes @skb out of @ndev and pushes UDP (checksum 0) and IPv4 headers (DF,
 * ID chosen). With a @cache (NULL for none), a route cached there for the
 * same source address and still valid is used, and a new one is cached.
 */
int rxe_net_tx_route4(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
		       const u8 *daddr, u8 tos, u8 ttl, u16 sport, u8 **iph,
		       struct dst_cache *cache);
/* Same for IPv6 (flow label 0). */
int rxe_net_tx_route6(struct sk_buff *skb, struct net_device *ndev, const u8 *saddr,
		       const u8 *daddr, u8 tclass, u8 hop_limit, u16 sport, u8 **iph,
		       struct dst_cache *cache);
/*
 * Sends @skb and consumes it. A packet whose route ends in this host (its
 * dst device is the loopback device: to the port's own address, or another
 * port's in the same namespace) takes rxe's loopback path: it skips the IP
 * stack and the backlog, is queued on this CPU for
 * rxe_net_loopback_flush() to hand to the receive callback given to
 * rxe_net_loopback_init(); the packet's destructor runs once it is
 * processed. Any other packet goes to ip_local_out() / ip6_local_out().
 * Returns 0 or a negative errno.
 */
int rxe_net_tx_send(struct sk_buff *skb, bool ipv6);
/* Whether routed @skb goes to this host: rxe_net_tx_send() queues it on the driver's loopback path. */
bool rxe_net_skb_to_host(const struct sk_buff *skb);
/*
 * Marks a packet of the driver's loopback path built without its ICRC
 * (its ICRC field left zero): the receive side, which finds the mark in
 * the packet's rxe_net_rx_parts (@icrc_omitted), does not check it. The
 * mark lives in skb->cb, which nothing on the loopback path uses; a
 * datagram UDP hands over has it cleared by rxe_net_rx_prepare().
 */
void rxe_net_skb_mark_icrc_omitted(struct sk_buff *skb);
/*
 * Packet chains: one routed packet (the head) carries later routed packets
 * of the same route, addresses, ports, TOS and TTL, no longer than the
 * head's UDP payload, as one UDP GSO skb with a list of whole packets,
 * which the stack cuts back into those packets, headers as built (IPv4 ID
 * included). rxe_net_tx_can_chain() says whether @seg may follow; then
 * rxe_net_tx_chain() appends it, consuming it (the head owns it, freed
 * with it or cut off; @seg has no destructor: the head's stands for the
 * chain); @last
 * is the caller's record of the last segment, which the first chaining
 * sets. Never for the loopback path or multicast.
 */
bool rxe_net_tx_can_chain(struct sk_buff *head, struct sk_buff *seg, bool ipv6);
void rxe_net_tx_chain(struct sk_buff *head, struct sk_buff **last, struct sk_buff *seg, bool ipv6);
/*
 * Hands the packets this CPU's loopback queue holds to the receive
 * callback, in order, in the caller's context (as rxe's loopback calls its
 * receive path), a batch at a time, the rest from BH work; nothing if this
 * CPU is already handing them over (a reply sent by the receiver waits
 * behind the others, so receivers never nest). Called once a sender has
 * queued all its packets (a QP's burst goes out whole before any packet
 * of it is received, so the receiver's answers, and the sender's reaction
 * to them, come after the burst), holding no QP lock, interrupts on.
 */
void rxe_net_loopback_flush(void);
/* Sets the receive function of the loopback path (module init, once). */
void rxe_net_loopback_init(int (*rcv)(struct sock *sk, struct sk_buff *skb));
/* Stops the loopback path and frees what it holds (module exit, after every device is gone). */
void rxe_net_loopback_exit(void);

/*
 * Receive. Where a prepared datagram's parts are: its IP header, its UDP
 * header and the UDP payload (the RoCE packet). The payload is all in the
 * skb's linear data (@trailer_len 0: @head, @head_len), or, as a zero-copy
 * sender's packet arrives, in three pieces: @head in the linear data,
 * @payload in the skb's first page fragment, @trailer (pad and ICRC, 4 to
 * 7 bytes) in its second. The caller keeps a split packet only where
 * @head is exactly the RoCE headers (rxe_net_rx_linearize() otherwise).
 */
struct rxe_net_rx_parts {
	u8 *iph;
	unsigned int iph_len;
	u8 *udph;
	u8 *head;
	unsigned int head_len;
	u8 *payload;
	unsigned int payload_len;
	u8 *trailer;
	unsigned int trailer_len;
	bool icrc_omitted;
};

/*
 * Prepares a datagram handed to the UDP encapsulation callback (skb->data
 * at the UDP header): linearizes it unless it has the split form above,
 * and fills @parts. Returns the netdev of the rxe port it arrived for:
 * skb->dev (for a datagram UDP received on lo, lo: a local socket sent it,
 * which any user may open), or, for a packet of the driver's loopback path
 * (@loopback), the device owning its destination address. No reference is
 * taken (the caller is in an RCU read section, as the UDP receive path
 * is). NULL if the datagram is unusable.
 */
struct net_device *rxe_net_rx_prepare(struct sk_buff *skb, bool loopback,
				       struct rxe_net_rx_parts *parts);
/* Linearizes a prepared datagram and fills @parts again; -ENOMEM if it cannot. */
int rxe_net_rx_linearize(struct sk_buff *skb, struct rxe_net_rx_parts *parts);

/*
 * A QP's receive backlog: datagrams rxe_net_rx_prepare() accepted that the
 * QP processes later, from work on another CPU (receive spreading). The
 * queue owns them; rxe_net_rx_parts() finds a queued datagram's headers
 * again (it is linear, as prepared). Any context but hard IRQ.
 */
void rxe_net_rx_backlog_init(struct sk_buff_head *backlog);
void rxe_net_rx_backlog_push(struct sk_buff_head *backlog, struct sk_buff *skb);
struct sk_buff *rxe_net_rx_backlog_pop(struct sk_buff_head *backlog);
unsigned int rxe_net_rx_backlog_purge(struct sk_buff_head *backlog);
void rxe_net_rx_parts(struct sk_buff *skb, struct rxe_net_rx_parts *parts);

/*
 * Sent packets: rxe_net_skb_set_tx_owner() takes a reference on this
 * module and makes the skb's destructor call @done (set once, at module
 * init, by rxe_net_tx_init()) with @arg, then drop the reference: the
 * destructor's code stays while a qdisc holds a packet, and the module
 * cannot be removed until every packet it sent is freed.
 */
void rxe_net_tx_init(void (*done)(void *arg));
void rxe_net_skb_set_tx_owner(struct sk_buff *skb, void *arg);

#endif /* RXE_NET_H */
