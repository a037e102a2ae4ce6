// SPDX-License-Identifier: GPL-2.0

//! Socket buffers on the RoCE data path: an outgoing packet built in place
//! and sent through the IP stack ([`TxSkb`]), and a received UDP datagram
//! borrowed by the encapsulation callback ([`RxDatagram`]), or kept in a
//! QP's backlog to be processed on another CPU ([`RxBacklog`]).

use super::{bindings, net::NetDevice, umem::PageSpan};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
    types::Opaque,
};

/// The sender of packets, told when the stack frees each of them.
pub(crate) trait TxOwner: Sync {
    /// The stack freed one of the owner's packets. Runs in any context but
    /// hard IRQ (the stack frees packets wherever it is, possibly inside
    /// [`TxSkb::send`]), under the link's lock.
    fn packet_freed(&self);
}

/// What an owner's packets in flight point at instead of the owner: the
/// owner while it lives, nothing after it detached. Reference counted: the
/// owner holds one reference, each packet in flight another, so a packet
/// that a qdisc holds for longer than the owner lives frees only this.
///
/// # Invariants
///
/// While `owner` is `Some`, it points to a live owner that has not yet
/// returned from [`TxLink::detach`], and its function is
/// `packet_freed_of::<T>` for that owner's type `T`.
#[pin_data]
pub(crate) struct TxLink {
    #[pin]
    owner: SpinLockIrq<Option<OwnerPtr>>,
}

/// A type-erased owner and its `packet_freed`.
struct OwnerPtr(NonNull<()>, unsafe fn(NonNull<()>));

// SAFETY: The owner is `Sync` (`TxOwner`); the pointer is only followed
// under the link's lock.
unsafe impl Send for OwnerPtr {}

/// Calls `packet_freed` of a `T`.
///
/// # Safety
///
/// `owner` points to a live `T`.
unsafe fn packet_freed_of<T: TxOwner>(owner: NonNull<()>) {
    // SAFETY: By the caller's promise.
    unsafe { owner.cast::<T>().as_ref() }.packet_freed();
}

impl TxLink {
    /// A link pointing at nothing yet.
    pub(crate) fn new() -> Result<Arc<TxLink>> {
        Arc::pin_init(
            pin_init!(TxLink { owner <- new_spinlock_irq!(None, "TxLink::owner") }),
            GFP_KERNEL,
        )
    }

    /// Points the link at `owner`.
    ///
    /// # Safety
    ///
    /// `owner` stays live until [`TxLink::detach`] has returned.
    pub(crate) unsafe fn attach<T: TxOwner>(&self, owner: &T) {
        // INVARIANT: Live until `detach` by the caller's promise; the
        // function matches the type.
        *self.owner.lock() = Some(OwnerPtr(NonNull::from(owner).cast(), packet_freed_of::<T>));
    }

    /// Points the link at nothing: packets freed from now on touch only
    /// the link. Waits for a destructor that is telling the owner.
    pub(crate) fn detach(&self) {
        *self.owner.lock() = None;
    }

    /// The stack freed a packet: tells the owner if it still lives.
    fn packet_freed(&self) {
        let guard = self.owner.lock();
        if let Some(OwnerPtr(owner, freed)) = &*guard {
            // SAFETY: Attached, so live until `detach`, which waits for the
            // lock we hold; the function is the owner's (type invariant).
            unsafe { freed(*owner) };
        }
    }
}

/// Length of an IPv4 header without options.
pub(crate) const IPV4_HDR_LEN: usize = 20;
/// Length of an IPv6 header.
pub(crate) const IPV6_HDR_LEN: usize = 40;

/// Where an outgoing packet goes and how its IP header is filled.
pub(crate) struct Route<'a> {
    /// The netdev of the rxe port (the route's output interface).
    pub(crate) ndev: &'a NetDevice,
    /// IPv6 (else IPv4; addresses are then the last four bytes of the GIDs).
    pub(crate) ipv6: bool,
    /// Source GID.
    pub(crate) sgid: &'a [u8; 16],
    /// Destination GID.
    pub(crate) dgid: &'a [u8; 16],
    /// TOS / traffic class.
    pub(crate) traffic_class: u8,
    /// TTL / hop limit.
    pub(crate) hop_limit: u8,
    /// UDP source port.
    pub(crate) src_port: u16,
    /// The connected QP's cached routes (`None`: look the route up).
    pub(crate) cache: Option<&'a RouteCache>,
}

/// A connected QP's routes, cached per CPU (a kernel `struct dst_cache`,
/// as UDP tunnels keep theirs): a packet reuses its CPU's cached route
/// while it is valid (the kernel invalidates it when routes change) and
/// from the same source address, instead of a route lookup per packet.
///
/// # Invariants
///
/// `cache` came from `rxe_net_route_cache_new` and is freed once, on
/// drop; it is used by one context at a time with bottom halves off: the
/// owner keeps it under the QP's lock.
pub(crate) struct RouteCache {
    cache: NonNull<bindings::dst_cache>,
}

// SAFETY: A `dst_cache` may be used from any CPU (it keeps an entry per
// CPU); its owner serialises its users (type invariant).
unsafe impl Send for RouteCache {}

impl RouteCache {
    /// An empty cache (`ENOMEM` if its per-CPU entries cannot be allocated).
    pub(crate) fn new() -> Result<RouteCache> {
        // SAFETY: No requirements; process context (it allocates with
        // GFP_KERNEL), as `create_qp` is.
        let cache = unsafe { bindings::rxe_net_route_cache_new() };
        // INVARIANT: From `rxe_net_route_cache_new`, freed by `drop`.
        Ok(RouteCache {
            cache: NonNull::new(cache).ok_or(ENOMEM)?,
        })
    }

    /// Forgets the cached routes (the QP's path changed). `&mut`: no
    /// packet of the QP is being routed meanwhile.
    pub(crate) fn reset(&mut self) {
        // SAFETY: A live cache (type invariant), not in use (`&mut self`).
        unsafe { bindings::rxe_net_route_cache_reset(self.cache.as_ptr()) };
    }

    fn as_ptr(&self) -> *mut bindings::dst_cache {
        self.cache.as_ptr()
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: Allocated by `new`, freed once, here (type invariant).
        unsafe { bindings::rxe_net_route_cache_free(self.cache.as_ptr()) };
    }
}

/// An outgoing packet: an skb whose data is the RoCE packet (BTH through
/// ICRC) until [`TxSkb::route`] adds the UDP and IP headers; or, for a
/// packet whose payload is sent without a copy ([`TxSkb::attach_page`]),
/// whose data is the RoCE headers, followed by two page fragments: the
/// payload and the trailer (pad and ICRC).
///
/// # Invariants
///
/// `skb` is owned; `data` points at `len` bytes of its linear data, which
/// stay in place until the skb is sent or freed. If `trailer` is set, the
/// skb's page fragments hold `paged` more bytes of the packet: first
/// `paged - trailer_len` bytes at `lent` (a page the skb holds a reference
/// on), then `trailer_len` bytes at `trailer`, a fragment of the skb's own
/// that nothing else writes; else `paged` is 0.
pub(crate) struct TxSkb {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
    paged: usize,
    lent: NonNull<u8>,
    trailer: Option<NonNull<u8>>,
    trailer_len: usize,
    ipv6: bool,
}

// SAFETY: An skb being built belongs to one context at a time.
unsafe impl Send for TxSkb {}

impl TxSkb {
    /// An skb with `len` bytes of packet room and headroom for the headers
    /// (atomic allocation: this runs in softirq and under spinlocks).
    pub(crate) fn new(ndev: &NetDevice, ipv6: bool, len: usize) -> Result<TxSkb> {
        let len32 = u32::try_from(len).map_err(|_| EINVAL)?;
        let mut data: *mut u8 = core::ptr::null_mut();
        // SAFETY: `ndev` is valid; `data` is a valid out-pointer.
        let skb = unsafe { bindings::rxe_net_tx_alloc(ndev.as_ptr(), ipv6, len32, &mut data) };
        let skb = NonNull::new(skb).ok_or(ENOMEM)?;
        let data = NonNull::new(data).ok_or(ENOMEM)?;
        // INVARIANT: A fresh skb with `len` bytes put at `data`, no
        // fragments.
        Ok(TxSkb {
            skb,
            data,
            len,
            paged: 0,
            lent: NonNull::dangling(),
            trailer: None,
            trailer_len: 0,
            ipv6,
        })
    }

    /// The RoCE packet bytes in the skb's linear data: all of the packet,
    /// or, with a page attached, its headers.
    pub(crate) fn packet(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant `data` holds `len` bytes we own.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Makes `span` the packet's payload, without a copy, after the
    /// headers that fill the linear data, and a fresh fragment of
    /// `trailer_len` zero bytes its trailer (pad and ICRC, see
    /// [`TxSkb::trailer`]). Once only, before the packet is routed.
    pub(crate) fn attach_page(&mut self, span: PageSpan, trailer_len: usize) -> Result {
        if self.trailer.is_some() {
            return Err(EINVAL);
        }
        let paged = span.len().checked_add(trailer_len).ok_or(EINVAL)?;
        let (len32, trailer32) = (
            u32::try_from(span.len()).map_err(|_| EINVAL)?,
            u32::try_from(trailer_len).map_err(|_| EINVAL)?,
        );
        let lent = NonNull::from(span.bytes()).cast::<u8>();
        let (page, offset, _) = span.into_raw();
        let mut trailer: *mut u8 = core::ptr::null_mut();
        // SAFETY: We own the skb, which has no fragments yet (`trailer`
        // unset: nothing was attached) and is not routed; the page
        // reference is handed to the glue, which gives it to the skb or
        // drops it; the range lies within the page (`PageSpan`
        // invariant); `trailer` is a valid out-pointer.
        let err = unsafe {
            bindings::rxe_net_tx_add_page(
                self.skb.as_ptr(),
                page.as_ptr(),
                offset as u32,
                len32,
                trailer32,
                &mut trailer,
            )
        };
        kernel::error::to_result(err)?;
        // INVARIANT: The glue added the payload and a trailer fragment of
        // `trailer_len` bytes at `trailer`, which only this skb holds.
        self.trailer = Some(NonNull::new(trailer).ok_or(ENOMEM)?);
        self.trailer_len = trailer_len;
        self.paged = paged;
        self.lent = lent;
        Ok(())
    }

    /// The RoCE bytes in the skb's linear data, as [`TxSkb::packet`].
    pub(crate) fn headers(&self) -> &[u8] {
        // SAFETY: By the type invariant `data` holds `len` bytes we own.
        unsafe { core::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// The payload lent by [`TxSkb::attach_page`] (empty if none was):
    /// user memory, read once (see [`PageSpan::bytes`]).
    pub(crate) fn lent_payload(&self) -> &[u8] {
        let len = self.paged - self.trailer_len;
        if len == 0 {
            return &[];
        }
        // SAFETY: The skb holds a reference on the page of the `len`
        // bytes at `lent` (invariant), so they stay mapped while we own
        // it.
        unsafe { core::slice::from_raw_parts(self.lent.as_ptr(), len) }
    }

    /// The trailer of a packet whose payload is a page (see
    /// [`TxSkb::attach_page`]); empty for any other.
    pub(crate) fn trailer(&mut self) -> &mut [u8] {
        match self.trailer {
            // SAFETY: The skb owns the `trailer_len` bytes at `trailer`,
            // which nothing else writes (invariant); we own the skb.
            Some(t) => unsafe { core::slice::from_raw_parts_mut(t.as_ptr(), self.trailer_len) },
            None => &mut [],
        }
    }

    /// Marks the routed packet, which goes to this host ([`TxSkb::to_host`]),
    /// as built without its ICRC: the loopback path's receive side does
    /// not check it ([`RxPayload::icrc_omitted`]).
    pub(crate) fn omit_icrc(&mut self) {
        // SAFETY: We own the skb; the glue writes one byte of its control
        // buffer, which nothing on the loopback path uses.
        unsafe { bindings::rxe_net_skb_mark_icrc_omitted(self.skb.as_ptr()) };
    }

    /// A copy of the packet, as built so far (to send it twice).
    pub(crate) fn try_clone(&self) -> Result<TxSkb> {
        let mut data: *mut u8 = core::ptr::null_mut();
        // SAFETY: We own the skb and it has no destructor yet; `data` is a
        // valid out-pointer.
        let skb = unsafe {
            bindings::rxe_glue_skb_copy(self.skb.as_ptr(), self.data.as_ptr(), &mut data)
        };
        let skb = NonNull::new(skb).ok_or(ENOMEM)?;
        let data = NonNull::new(data).ok_or(ENOMEM)?;
        // INVARIANT: A private, linear copy of our skb (`skb_copy` copies
        // the fragments' bytes into its linear data), `data` at the same
        // offset in it, so `len + paged` bytes from there are its packet.
        Ok(TxSkb {
            skb,
            data,
            len: self.len + self.paged,
            paged: 0,
            lent: NonNull::dangling(),
            trailer: None,
            trailer_len: 0,
            ipv6: self.ipv6,
        })
    }

    /// Routes the packet and writes its UDP and IP headers; returns the IP
    /// header and the UDP header, which the ICRC covers. On error the skb is
    /// freed when `self` is dropped.
    pub(crate) fn route(&mut self, route: &Route<'_>) -> Result<(&[u8], [u8; 8])> {
        let mut iph: *mut u8 = core::ptr::null_mut();
        let (saddr, daddr) = if route.ipv6 {
            (&route.sgid[..], &route.dgid[..])
        } else {
            (&route.sgid[12..], &route.dgid[12..])
        };
        let cache = route
            .cache
            .map_or(core::ptr::null_mut(), RouteCache::as_ptr);
        // SAFETY: We own the skb; the addresses hold 16 (IPv6) or 4 bytes;
        // `iph` is a valid out-pointer; `cache` is null or a live cache
        // whose owner lets only us use it now (`RouteCache` invariant; a
        // packet is routed with bottom halves off, under the QP's lock).
        let err = unsafe {
            if route.ipv6 {
                bindings::rxe_net_tx_route6(
                    self.skb.as_ptr(),
                    route.ndev.as_ptr(),
                    saddr.as_ptr(),
                    daddr.as_ptr(),
                    route.traffic_class,
                    route.hop_limit,
                    route.src_port,
                    &mut iph,
                    cache,
                )
            } else {
                bindings::rxe_net_tx_route4(
                    self.skb.as_ptr(),
                    route.ndev.as_ptr(),
                    saddr.as_ptr(),
                    daddr.as_ptr(),
                    route.traffic_class,
                    route.hop_limit,
                    route.src_port,
                    &mut iph,
                    cache,
                )
            }
        };
        kernel::error::to_result(err)?;
        let ip_len = if self.ipv6 {
            IPV6_HDR_LEN
        } else {
            IPV4_HDR_LEN
        };
        // SAFETY: The glue pushed an IP header of `ip_len` bytes followed
        // by the 8-byte UDP header right before `data`, inside the skb.
        let (ip, udp) = unsafe {
            let ip = core::slice::from_raw_parts(iph, ip_len);
            let mut udp = [0u8; 8];
            core::ptr::copy_nonoverlapping(iph.add(ip_len), udp.as_mut_ptr(), 8);
            (ip, udp)
        };
        Ok((ip, udp))
    }

    /// Length of the IP packet (headers, UDP and the RoCE packet) once
    /// routed.
    pub(crate) fn ip_len(&self) -> usize {
        self.len
            + self.paged
            + 8
            + if self.ipv6 {
                IPV6_HDR_LEN
            } else {
                IPV4_HDR_LEN
            }
    }

    /// Whether the routed packet goes to this host, over the driver's
    /// loopback path (`rxe_net_tx_send` hands such packets to the receive
    /// path itself).
    pub(crate) fn to_host(&self) -> bool {
        // SAFETY: We own the skb, routed by `new`; the glue only reads its
        // route.
        unsafe { bindings::rxe_net_skb_to_host(self.skb.as_ptr()) }
    }

    /// Hands the routed packet to the IP stack. The packet keeps `link`
    /// until the stack frees it, whether it was delivered, dropped on the
    /// way, or refused here, and then tells the link's owner; it keeps the
    /// link, not the owner, so it may outlive the owner (a qdisc may hold
    /// it for any time), and a reference on the module, so that its
    /// destructor's code does too.
    pub(crate) fn send(self, link: Arc<TxLink>) -> Result {
        let this = core::mem::ManuallyDrop::new(self);
        SENT_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        let skb = this.skb.as_ptr();
        // SAFETY: We own the skb, which has no destructor yet (built by
        // `new`, never sent). The link reference is handed to the skb; the
        // glue's destructor gives it to `tx_done` once, when the skb is
        // freed.
        unsafe { bindings::rxe_net_skb_set_tx_owner(skb, Arc::into_raw(link).cast_mut().cast()) };
        // SAFETY: We own the skb and give it away; `this` is not dropped.
        kernel::error::to_result(unsafe { bindings::rxe_net_tx_send(skb, this.ipv6) })
    }
}

/// Routed packets to one destination sent as one skb: a packet chain (UDP
/// GSO with a list of whole packets, see `rxe_net.h`), which crosses the
/// IP stack once and is cut back into the packets as they were built
/// (headers, so ICRC, included) where the stack must, by unlinking them.
/// A chain of one is the packet alone.
///
/// # Invariants
///
/// `last` is null or the last packet chained to `head`, which owns it;
/// `packets` and `ip_bytes` count the packets and their IP lengths, the
/// head's included.
pub(crate) struct TxChain {
    head: TxSkb,
    last: *mut bindings::sk_buff,
    packets: u32,
    ip_bytes: usize,
}

// SAFETY: The chained packets belong to the head, which belongs to one
// context at a time.
unsafe impl Send for TxChain {}

impl TxChain {
    /// A chain of `head` alone.
    pub(crate) fn new(head: TxSkb) -> TxChain {
        let ip_bytes = head.ip_len();
        // INVARIANT: Nothing chained yet.
        TxChain {
            head,
            last: core::ptr::null_mut(),
            packets: 1,
            ip_bytes,
        }
    }

    /// Appends `packet` if it may travel in this chain: routed as the
    /// head, with the same addresses, ports, TOS and TTL, no longer than
    /// the head, within the device's GSO limits, not to this host nor
    /// multicast. Else gives it back. A chained packet holds no link of
    /// its own: the head's, given to [`TxChain::send`], stands for the
    /// chain, which the stack queues, and the owner counts, as one skb
    /// (the unit of a backlog and a qdisc).
    pub(crate) fn push(&mut self, packet: TxSkb) -> core::result::Result<(), TxSkb> {
        let head = self.head.skb.as_ptr();
        // SAFETY: We own both skbs; the glue only reads them (it checks
        // that both were routed before it looks at their headers).
        if !unsafe { bindings::rxe_net_tx_can_chain(head, packet.skb.as_ptr(), self.head.ipv6) } {
            return Err(packet);
        }
        let bytes = packet.ip_len();
        let packet = core::mem::ManuallyDrop::new(packet);
        // SAFETY: We own the packet's skb, which has no destructor (never
        // sent) and may follow the head (checked above); the head takes
        // it, and `last` is our record of the chain's last packet;
        // `packet` is not dropped.
        unsafe {
            bindings::rxe_net_tx_chain(head, &mut self.last, packet.skb.as_ptr(), self.head.ipv6)
        };
        self.packets += 1;
        self.ip_bytes += bytes;
        Ok(())
    }

    /// Packets in the chain.
    pub(crate) fn packets(&self) -> u32 {
        self.packets
    }

    /// Sum of the IP lengths of the chain's packets.
    pub(crate) fn ip_bytes(&self) -> usize {
        self.ip_bytes
    }

    /// Whether the chain goes to this host over the driver's loopback path
    /// (a chain there is always one packet).
    pub(crate) fn to_host(&self) -> bool {
        self.head.to_host()
    }

    /// Hands the chain to the IP stack, as [`TxSkb::send`] a packet: the
    /// chain keeps `link` until the stack frees its first packet (the
    /// head; the others are freed with it or cut off before).
    pub(crate) fn send(self, link: Arc<TxLink>) -> Result {
        self.head.send(link)
    }
}

/// Hands the packets this CPU queued on the loopback path (packets to this
/// host) to the receive path, in order, unless this CPU is already doing
/// so. The sender calls it once all its packets are sent, so that none of
/// them is received, and answered, before the last is queued.
///
/// The caller holds no QP lock (the receive path takes the receiving QP's)
/// and has interrupts on.
pub(crate) fn flush_loopback() {
    // SAFETY: No requirements beyond the caller's context, documented
    // above; the glue disables bottom halves itself.
    unsafe { bindings::rxe_net_loopback_flush() }
}

/// Called by the destructor of a packet [`TxSkb::send`] sent, once, in any
/// context but hard IRQ (possibly inside `send`); the glue drops the
/// packet's module reference after it returns.
///
/// # Safety
///
/// `arg` is the `Arc<TxLink>` reference `send` gave the packet.
unsafe extern "C" fn tx_done(arg: *mut c_void) {
    // SAFETY: By our contract `arg` came from `Arc::into_raw` of an
    // `Arc<TxLink>` and is given back exactly once, here.
    let link = unsafe { Arc::<TxLink>::from_raw(arg.cast::<TxLink>().cast_const()) };
    link.packet_freed();
    drop(link);
    SENT_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
}

/// Packets sent and not yet freed, of every QP.
static SENT_IN_FLIGHT: AtomicU64 = AtomicU64::new(0);

/// Waits until every packet the driver sent has been freed, at module exit
/// after every device is gone. A packet holds a module reference, so only
/// one sent during exit itself (ib_core destroying a device's QPs) can be
/// left; its destructor must run before the module's code goes. Logs
/// while it waits (a qdisc may hold a packet for any time).
fn wait_sent_packets() {
    let mut waited_ms: u64 = 0;
    while SENT_IN_FLIGHT.load(Ordering::SeqCst) != 0 {
        if waited_ms % 10_000 == 0 && waited_ms > 0 {
            pr_warn!(
                "unload waits for {} packet(s) still queued in the network stack\n",
                SENT_IN_FLIGHT.load(Ordering::SeqCst)
            );
        }
        kernel::time::delay::fsleep(kernel::time::Delta::from_millis(10));
        waited_ms += 10;
    }
}

/// The module's transmit path while it exists: the destructor every sent
/// packet runs ([`TxSkb::send`]) and rxe's loopback path, on which a
/// packet routed to this host (to the port's own address, or another
/// port's in the same namespace) skips the IP stack and reaches the
/// [`RxHandler`] from BH work, as UDP would hand it to the
/// encapsulation callback; its sender is told once it is processed.
/// Dropping it waits for every sent packet to be freed and stops the
/// loopback path.
pub(crate) struct TxPath(());

/// Whether a [`TxPath`] exists.
static TX_PATH_UP: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

impl TxPath {
    /// Starts the transmit path, with `rcv` receiving looped-back packets.
    ///
    /// # Safety
    ///
    /// The result is dropped only after everything that sends (every
    /// device, so every QP) is gone.
    pub(crate) unsafe fn new<H: RxHandler>() -> Result<TxPath> {
        if TX_PATH_UP.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: The only transmit path (checked above), set up before
        // any packet can be sent.
        unsafe {
            bindings::rxe_net_tx_init(Some(tx_done));
            bindings::rxe_net_loopback_init(Some(loopback_rcv::<H>));
        }
        Ok(TxPath(()))
    }
}

impl Drop for TxPath {
    fn drop(&mut self) {
        // Packets sent while the devices went away hold no module
        // reference that could have kept the module: their destructors
        // must still find its code.
        wait_sent_packets();
        // SAFETY: Nothing sends any more (`new`'s contract).
        unsafe { bindings::rxe_net_loopback_exit() };
        TX_PATH_UP.store(false, Ordering::Release);
    }
}

impl Drop for TxSkb {
    fn drop(&mut self) {
        // SAFETY: We own the skb (it was not sent).
        unsafe { bindings::rxe_glue_kfree_skb(self.skb.as_ptr()) };
    }
}

/// Where received RoCE datagrams go: from the tunnel sockets
/// ([`super::net::UdpTunnelSock`]) and from the loopback path
/// ([`TxPath`]), in softirq context. `None`: a datagram that could not be
/// linearized (already freed).
pub(crate) trait RxHandler {
    /// One datagram.
    fn receive(datagram: Option<RxDatagram<'_>>);
}

/// The UDP tunnel `encap_rcv` callback. Returning 0 tells UDP the skb was
/// consumed.
///
/// # Safety
///
/// Called only by UDP as the encapsulation socket's `encap_rcv`, in an RCU
/// read section, with an skb that it hands over to us.
pub(super) unsafe extern "C" fn encap_rcv<H: RxHandler>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    // SAFETY: UDP hands the skb over, in an RCU read section (softirq).
    H::receive(unsafe { RxDatagram::take(skb, false) });
    0
}

/// The receive end of the loopback path: packets this driver sent to a
/// local address.
///
/// # Safety
///
/// Called only by the loopback path's BH work, in an RCU read section, with
/// an skb that it hands over to us.
unsafe extern "C" fn loopback_rcv<H: RxHandler>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    // SAFETY: The loopback path's BH work hands the skb over, in an RCU
    // read section (softirq).
    H::receive(unsafe { RxDatagram::take(skb, true) });
    0
}

/// A received UDP payload (the RoCE packet) where its skb holds it: in
/// the skb's linear data, or split in three as a zero-copy sender builds
/// it (see `rxe_net_rx_parts` in `rxe_net.h`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RxPayload<'a> {
    /// All of it, or, split, the part in the linear data (a BTH at least).
    pub(crate) head: &'a [u8],
    /// Split: the payload, in the skb's first page fragment, and the pad
    /// and ICRC (4 to 7 bytes), in its second.
    pub(crate) paged: Option<(&'a [u8], &'a [u8])>,
    /// A packet of the driver's loopback path built without its ICRC
    /// ([`TxSkb::omit_icrc`]): there is none to check.
    pub(crate) icrc_omitted: bool,
}

/// A received RoCE datagram, linear or split (see [`RxPayload`]), borrowed
/// from the UDP stack for the encapsulation callback.
///
/// # Invariants
///
/// The slices point into the skb's linear data and page fragments, which
/// the callback owns until it frees the skb (when this is dropped).
pub(crate) struct RxDatagram<'a> {
    skb: NonNull<bindings::sk_buff>,
    ndev: &'a NetDevice,
    ip: &'a [u8],
    udp: [u8; 8],
    payload: RxPayload<'a>,
}

impl<'a> RxDatagram<'a> {
    /// Takes over `skb` from the encapsulation callback (`loopback`
    /// false) or from the driver's loopback path (`loopback` true). `None`
    /// (and the skb is freed) if it is neither linear nor split as a
    /// zero-copy sender builds a packet and cannot be linearized. Its
    /// netdev is the one it arrived on, `lo` for a datagram a local socket
    /// sent; only the loopback path's packets find theirs by destination
    /// address.
    ///
    /// # Safety
    ///
    /// `skb` was handed to the UDP encapsulation callback, or to the
    /// loopback path's receive function if `loopback`, which runs in an RCU
    /// read section for `'a`; the caller does not touch it afterwards.
    unsafe fn take(skb: *mut bindings::sk_buff, loopback: bool) -> Option<RxDatagram<'a>> {
        let mut out = RxParts::new();
        // SAFETY: We own `skb`; the out-pointer is valid.
        let ndev = unsafe { bindings::rxe_net_rx_prepare(skb, loopback, &mut out.0) };
        if ndev.is_null() {
            // SAFETY: We own `skb` and drop it here.
            unsafe { bindings::rxe_glue_kfree_skb(skb) };
            return None;
        }
        // SAFETY: The glue filled `out` for the skb we own until the
        // datagram is dropped, which borrows for `'a`.
        let (ip, udp, payload) = unsafe { out.parts() };
        Some(RxDatagram {
            // SAFETY: `skb` is non-null: the glue returned a device for it.
            skb: unsafe { NonNull::new_unchecked(skb) },
            // SAFETY: The glue returned a netdev valid in this RCU read
            // section, which lasts for `'a`.
            ndev: unsafe { NetDevice::from_raw(ndev) },
            ip,
            udp,
            payload,
        })
    }

    /// The datagram with its bytes in the skb's linear data (copied there
    /// if it was split); `None`, and the skb freed, if that needs memory
    /// there is none of.
    pub(crate) fn linearize(self) -> Option<RxDatagram<'a>> {
        if self.payload.paged.is_none() {
            return Some(self);
        }
        let mut out = RxParts::new();
        // SAFETY: We own the skb, prepared by `take`; nothing borrows its
        // data while `self` is consumed here (the slices are replaced).
        if unsafe { bindings::rxe_net_rx_linearize(self.skb.as_ptr(), &mut out.0) } != 0 {
            return None;
        }
        // SAFETY: The glue filled `out` for the skb, which `self` keeps
        // owning for `'a`.
        let (ip, udp, payload) = unsafe { out.parts() };
        Some(RxDatagram {
            ip,
            udp,
            payload,
            ..self
        })
    }
}

/// Where the glue names a prepared datagram's IP header, UDP header and
/// payload pieces: pointers into its skb, and lengths.
struct RxParts(bindings::rxe_net_rx_parts);

impl RxParts {
    /// Nothing named yet.
    fn new() -> RxParts {
        RxParts(bindings::rxe_net_rx_parts {
            iph: core::ptr::null_mut(),
            iph_len: 0,
            udph: core::ptr::null_mut(),
            head: core::ptr::null_mut(),
            head_len: 0,
            payload: core::ptr::null_mut(),
            payload_len: 0,
            trailer: core::ptr::null_mut(),
            trailer_len: 0,
            icrc_omitted: false,
        })
    }

    /// The IP header, a copy of the UDP header and the UDP payload.
    ///
    /// # Safety
    ///
    /// `rxe_net_rx_prepare`, `rxe_net_rx_linearize` or `rxe_net_rx_parts`
    /// filled `self` for an skb (so its pointers are into that skb's
    /// linear data and page fragments, a UDP header at `udph`) that stays
    /// ours, unchanged, for `'a`.
    unsafe fn parts<'a>(&self) -> (&'a [u8], [u8; 8], RxPayload<'a>) {
        let p = &self.0;
        let mut udp = [0u8; 8];
        // SAFETY: As the caller guarantees: these pointers and lengths
        // name bytes of an skb that lives for `'a`; the payload and the
        // trailer only when the trailer is named (split).
        unsafe {
            core::ptr::copy_nonoverlapping(p.udph, udp.as_mut_ptr(), 8);
            let paged = (p.trailer_len != 0).then(|| {
                (
                    core::slice::from_raw_parts(p.payload, p.payload_len as usize),
                    core::slice::from_raw_parts(p.trailer, p.trailer_len as usize),
                )
            });
            (
                core::slice::from_raw_parts(p.iph, p.iph_len as usize),
                udp,
                RxPayload {
                    head: core::slice::from_raw_parts(p.head, p.head_len as usize),
                    paged,
                    icrc_omitted: p.icrc_omitted,
                },
            )
        }
    }
}

impl RxDatagram<'_> {
    /// The netdev of the rxe port the datagram is for.
    pub(crate) fn ndev(&self) -> &NetDevice {
        self.ndev
    }

    /// The IP header.
    pub(crate) fn ip(&self) -> &[u8] {
        self.ip
    }

    /// The UDP header.
    pub(crate) fn udp(&self) -> &[u8; 8] {
        &self.udp
    }

    /// The UDP payload: the RoCE packet.
    pub(crate) fn payload(&self) -> RxPayload<'_> {
        self.payload
    }
}

impl Drop for RxDatagram<'_> {
    fn drop(&mut self) {
        // SAFETY: We own the skb; nothing borrows its data any more.
        unsafe { bindings::rxe_glue_kfree_skb(self.skb.as_ptr()) };
    }
}

/// A QP's receive backlog: received datagrams that the QP processes later,
/// in its own work on another CPU than the one they arrived on (receive
/// spreading, `crate::recv`), in the order they were pushed. Drops what
/// it still holds when it goes.
///
/// # Invariants
///
/// `head` was set up by `rxe_net_rx_backlog_init` and holds only skbs
/// that [`RxDatagram::take`] prepared (linear or split, headers checked).
#[pin_data(PinnedDrop)]
pub(crate) struct RxBacklog {
    #[pin]
    head: Opaque<bindings::sk_buff_head>,
}

// SAFETY: `sk_buff_head` has its own lock, taken by every operation.
unsafe impl Send for RxBacklog {}
// SAFETY: As above.
unsafe impl Sync for RxBacklog {}

impl RxBacklog {
    /// An empty backlog.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(RxBacklog {
            // SAFETY: `slot` is valid memory for an sk_buff_head that is
            // never moved (pinned), set up exactly once here.
            head <- Opaque::ffi_init(|slot| unsafe { bindings::rxe_net_rx_backlog_init(slot) }),
        })
    }

    /// Queues `datagram` at the tail; the backlog owns it from now on.
    pub(crate) fn push(&self, datagram: RxDatagram<'_>) {
        let datagram = core::mem::ManuallyDrop::new(datagram);
        // SAFETY: The head is set up (invariant); the skb is ours (the
        // datagram's), prepared by `take`, and not freed by the datagram
        // (`ManuallyDrop`): the queue takes it over.
        unsafe { bindings::rxe_net_rx_backlog_push(self.head.get(), datagram.skb.as_ptr()) };
    }

    /// The oldest datagram, taken off the backlog.
    pub(crate) fn pop(&self) -> Option<RxQueued> {
        // SAFETY: The head is set up (invariant).
        let skb = NonNull::new(unsafe { bindings::rxe_net_rx_backlog_pop(self.head.get()) })?;
        Some(RxQueued { skb })
    }

    /// Frees every datagram the backlog holds; returns how many.
    pub(crate) fn purge(&self) -> u32 {
        // SAFETY: The head is set up (invariant).
        unsafe { bindings::rxe_net_rx_backlog_purge(self.head.get()) }
    }
}

#[pinned_drop]
impl PinnedDrop for RxBacklog {
    fn drop(self: Pin<&mut Self>) {
        self.purge();
    }
}

/// A datagram taken off an [`RxBacklog`], owned until dropped.
///
/// # Invariants
///
/// `skb` is an skb we own that [`RxDatagram::take`] prepared: linear or
/// split (see [`RxPayload`]), its network header before its transport
/// header, `data` at the UDP header, at least a UDP header long.
pub(crate) struct RxQueued {
    skb: NonNull<bindings::sk_buff>,
}

// SAFETY: An owned skb may be freed and read on any CPU.
unsafe impl Send for RxQueued {}

impl RxQueued {
    /// The IP header, the UDP header and the UDP payload (the RoCE packet).
    pub(crate) fn parts(&self) -> (&[u8], [u8; 8], RxPayload<'_>) {
        let mut out = RxParts::new();
        // SAFETY: We own the skb (invariant); the out-pointer is valid.
        unsafe { bindings::rxe_net_rx_parts(self.skb.as_ptr(), &mut out.0) };
        // SAFETY: The glue filled `out` for the skb we own (prepared: at
        // least a UDP header, linear or split as when prepared), which
        // lives as long as `self`.
        unsafe { out.parts() }
    }
}

impl Drop for RxQueued {
    fn drop(&mut self) {
        // SAFETY: We own the skb; nothing borrows its data any more.
        unsafe { bindings::rxe_glue_kfree_skb(self.skb.as_ptr()) };
    }
}
