// SPDX-License-Identifier: GPL-2.0

//! Outgoing packets of a QP: headers written by the protocol core straight
//! into an skb, payload gathered in place, the IP and UDP headers from the
//! QP's path, the ICRC over all of it; and the [`Outbox`] that holds them
//! until the QP lock is released.

use crate::{
    counters::Counter,
    device::RxeDevice,
    fault::FaultInjector,
    proto::{
        admission::DEFAULT_PKEY,
        fault::{Direction, FaultAction},
        headers::Bth,
        icrc::{IpHeader, ICRC_LEN},
        opcode::Opcode,
        packet::{fill_icrc_with, icrc_of_pieces, packet_len, pad_len, write_headers, ExtHeaders},
        psn::Psn,
        qp_attr::{AddressVector, Network, QpAttrs},
    },
    qp::RxeQp,
    sys::{
        net::NetDevice,
        skb::{Route, RouteCache, TxChain, TxSkb, IPV6_HDR_LEN},
        umem::PageSpan,
    },
};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::prelude::*;

/// Packets built with their payload lent from the application's pages
/// instead of copied (module-wide, `rdma_rxe/sent_zero_copy`).
pub(crate) static SENT_ZERO_COPY: AtomicU64 = AtomicU64::new(0);

/// Smallest payload sent without a copy: below it the copy costs less
/// than the page reference and the trailer fragment, and the receiver's
/// single buffer is cheaper to read.
const ZERO_COPY_MIN: usize = 256;

/// Whether a payload of `len` bytes is to be lent rather than copied
/// (the `tx_zero_copy` parameter allowing).
pub(crate) fn lend_payload(len: usize) -> bool {
    len >= ZERO_COPY_MIN && crate::module_parameters::tx_zero_copy.value()
}

/// Why a packet was not built.
#[derive(Debug)]
pub(crate) enum BuildFailure {
    /// No memory, no route, or the headers did not fit (counted, dropped).
    Dropped,
    /// The payload could not be gathered: the WQE's memory is not
    /// accessible (its MR went away after the WQE was checked).
    Payload,
}

/// A change to a requester timer, applied after the packets are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerChange {
    Arm(u32),
    Disarm,
}

/// Packets an outbox makes room for once it holds more than one.
const OUTBOX_FIRST_ROOM: usize = 16;

/// Packets built under a QP lock, sent once it is released, and the
/// requester's timer changes, applied once the packets are out: a timer
/// armed before a long burst is sent could expire during it and start the
/// next burst at once, and under a slow CPU the retransmissions would then
/// never leave the CPU to anything else.
pub(crate) struct Outbox {
    /// The first packet, kept here: most outboxes hold one (an ACK, a
    /// one-packet READ response or message), and one skb handle is not
    /// worth an allocation and its free for every packet received.
    first: Option<TxSkb>,
    /// The packets after the first, in order; `None` until there is a
    /// second (even an empty `KVec` calls the allocator's free when
    /// dropped).
    packets: Option<KVec<TxSkb>>,
    /// Packets that could not be queued (no memory).
    lost: u32,
    retry_timer: Option<TimerChange>,
    rnr_timer: Option<u32>,
    /// The CPU to queue the QP's reply work on once the QP lock is free.
    reply_work_on: Option<u32>,
    /// The CPU to queue the QP's transmit work on once the QP lock is free.
    tx_work_on: Option<u32>,
}

impl Outbox {
    /// An empty outbox.
    pub(crate) fn new() -> Outbox {
        Outbox {
            first: None,
            packets: None,
            lost: 0,
            retry_timer: None,
            rnr_timer: None,
            reply_work_on: None,
            tx_work_on: None,
        }
    }

    /// Queues the QP's reply work on `cpu` after the packets are sent:
    /// queued under the QP lock, it could start on `cpu` at once and spin
    /// there on the lock until this CPU let it go (the spin was 70% of
    /// the reply work's samples in a 64 KiB `ib_write_bw`, on the busier
    /// CPU).
    pub(crate) fn queue_reply_work(&mut self, cpu: u32) {
        self.reply_work_on = Some(cpu);
    }

    /// Queues the QP's transmit work on `cpu` after the packets are sent,
    /// for the same reason.
    pub(crate) fn queue_tx_work(&mut self, cpu: u32) {
        self.tx_work_on = Some(cpu);
    }

    /// Arms the QP's retry timer for `usecs` once the packets are sent.
    pub(crate) fn arm_retry_timer(&mut self, usecs: u32) {
        self.retry_timer = Some(TimerChange::Arm(usecs));
    }

    /// Stops the QP's retry timer (after the packets are sent).
    pub(crate) fn disarm_retry_timer(&mut self) {
        self.retry_timer = Some(TimerChange::Disarm);
    }

    /// Arms the QP's RNR timer for `usecs` once the packets are sent.
    pub(crate) fn arm_rnr_timer(&mut self, usecs: u32) {
        self.rnr_timer = Some(usecs);
    }

    /// Packets waiting to be sent.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.packets.as_ref().map_or(0, |p| p.len())
    }

    /// Makes room for `more` packets beyond those held, at once: a burst
    /// the requester is about to build then grows the list by one
    /// allocation, not by doubling from [`OUTBOX_FIRST_ROOM`] (each
    /// doubling a `krealloc` that copies the list: 1.4% of the receive
    /// path's samples in a 64 KiB `ib_write_bw`). A burst of one packet
    /// fits in `first` and allocates nothing. On failure `push` grows the
    /// list the usual way.
    pub(crate) fn reserve(&mut self, more: usize) {
        let in_list = if self.first.is_none() {
            more.saturating_sub(1)
        } else {
            more
        };
        if in_list == 0 {
            return;
        }
        match &mut self.packets {
            Some(packets) => {
                let _ = packets.reserve(in_list, GFP_ATOMIC);
            }
            None => {
                self.packets = KVec::with_capacity(in_list.max(OUTBOX_FIRST_ROOM), GFP_ATOMIC).ok();
            }
        }
    }

    /// Moves every packet `from` holds behind those held here, in order
    /// (`from` keeps its timer changes and work to queue).
    pub(crate) fn take_packets(&mut self, from: &mut Outbox) {
        self.lost += core::mem::take(&mut from.lost);
        let first = from.first.take();
        let rest = from.packets.take();
        for skb in Iterator::chain(first.into_iter(), rest.into_iter().flatten()) {
            self.push(skb);
        }
    }

    fn push(&mut self, skb: TxSkb) {
        if self.first.is_none() {
            // Nothing queued yet (`packets` fills only after `first`).
            self.first = Some(skb);
            return;
        }
        let packets = self.packets.get_or_insert_with(|| {
            // Room for a typical burst at once, instead of growing by
            // doubling from one (four reallocations before the sixteenth
            // packet); an outbox of one packet allocates nothing. On
            // failure the push below tries the usual way.
            KVec::with_capacity(OUTBOX_FIRST_ROOM, GFP_ATOMIC).unwrap_or_default()
        });
        if packets.push(skb, GFP_ATOMIC).is_err() {
            self.lost += 1;
        }
    }

    /// Hands every packet to the IP stack, in order, and counts them (the
    /// device's fault rules may drop or duplicate one first); then applies
    /// the timer changes to `qp`.
    pub(crate) fn send(self, rxe: &RxeDevice, qp: &RxeQp) {
        let (retry, rnr) = (self.retry_timer, self.rnr_timer);
        let (reply_work_on, tx_work_on) = (self.reply_work_on, self.tx_work_on);
        let mut lost = self.lost;
        let any = self.first.is_some();
        let faults = rxe.active_faults();
        let mut chain = None;
        let rest = self.packets.into_iter().flatten();
        for mut skb in Iterator::chain(self.first.into_iter(), rest) {
            let action = faults.and_then(|f| f.decide(Direction::Tx, skb.packet()));
            match action {
                // Lost on the wire: counted as sent, never handed over.
                Some(FaultAction::Drop) => {
                    rxe.counters.inc(Counter::SentPkts);
                    rxe.counters.add(Counter::SentBytes, skb.ip_len() as u64);
                }
                Some(FaultAction::Duplicate) => {
                    match skb.try_clone() {
                        Ok(copy) => queue(rxe, qp, &mut chain, copy, &mut lost),
                        Err(_) => lost += 1,
                    }
                    queue(rxe, qp, &mut chain, skb, &mut lost);
                }
                // `delay` is refused for transmit by the rules' parser;
                // `decide` never answers `nomem` (asked while building).
                Some(FaultAction::Delay(_) | FaultAction::NoMem) | None => {
                    queue(rxe, qp, &mut chain, skb, &mut lost)
                }
            }
        }
        if let Some(chain) = chain {
            hand_over(rxe, qp, chain, &mut lost);
        }
        // Packets to this host were only queued: received here, an answer
        // could make the QP send again before the rest of this burst. An
        // empty outbox (most received packets') queued nothing to hand
        // over; whoever queued what this CPU holds flushes it.
        if any {
            crate::sys::skb::flush_loopback();
        }
        if lost > 0 {
            rxe.counters.add(Counter::SendErr, u64::from(lost));
        }
        match retry {
            Some(TimerChange::Arm(usecs)) => qp.body.retry_timer.arm_usecs(usecs),
            Some(TimerChange::Disarm) => qp.body.retry_timer.cancel(),
            None => {}
        }
        if let Some(usecs) = rnr {
            qp.body.rnr_timer.arm_usecs(usecs);
        }
        if let Some(cpu) = reply_work_on {
            qp.body.reply_work.queue_on_highpri(cpu);
        }
        if let Some(cpu) = tx_work_on {
            qp.body.tx_work.queue_on(cpu);
        }
    }
}

/// Adds `skb` to the packet chain being filled, if it may go with it
/// (and the `packet_chains` parameter allows chains); else sends that
/// chain and starts the next with `skb`. Only a connected QP's packets
/// are chained: a datagram QP's messages are one packet each, seldom many
/// to one destination at once, and MADs stay single skbs for captures.
fn queue(rxe: &RxeDevice, qp: &RxeQp, chain: &mut Option<TxChain>, skb: TxSkb, lost: &mut u32) {
    let skb = match chain {
        Some(open)
            if !qp.body.qp_type.is_datagram()
                && crate::module_parameters::packet_chains.value() =>
        {
            match open.push(skb) {
                Ok(()) => return,
                Err(skb) => skb,
            }
        }
        _ => skb,
    };
    if let Some(full) = chain.replace(TxChain::new(skb)) {
        hand_over(rxe, qp, full, lost);
    }
}

/// Sends a chain of packets (often one) for `qp` and counts them
/// (`sent_bytes` counts IP packets, as rxe), or counts them in `lost`.
fn hand_over(rxe: &RxeDevice, qp: &RxeQp, chain: TxChain, lost: &mut u32) {
    let (packets, bytes) = (chain.packets(), chain.ip_bytes());
    let to_host = chain.to_host();
    if qp.body.tx_to_host.load(Relaxed) != to_host {
        qp.body.tx_to_host.store(to_host, Relaxed);
    }
    if chain.send(qp.tx_hold()).is_err() {
        *lost += packets;
    } else {
        rxe.counters.add(Counter::SentPkts, u64::from(packets));
        rxe.counters.add(Counter::SentBytes, bytes as u64);
    }
}

/// What every packet of a QP shares: its path and the peer's QP number.
pub(crate) struct Path<'a> {
    route: Route<'a>,
    dest_qp: u32,
}

impl<'a> Path<'a> {
    /// The connected QP's primary path out of `ndev`, its routes cached
    /// in `routes` (if it has a cache).
    pub(crate) fn new(
        ndev: &'a NetDevice,
        attrs: &'a QpAttrs,
        src_port: u16,
        routes: Option<&'a RouteCache>,
    ) -> Path<'a> {
        let mut path = Path::to(ndev, &attrs.av, src_port, attrs.dest_qpn);
        path.route.cache = routes;
        path
    }

    /// A path to QP `dest_qp` at `av` (an address handle's, for UD).
    pub(crate) fn to(
        ndev: &'a NetDevice,
        av: &'a AddressVector,
        src_port: u16,
        dest_qp: u32,
    ) -> Path<'a> {
        Path {
            route: Route {
                ndev,
                ipv6: av.network == Network::Ipv6,
                sgid: &av.sgid,
                dgid: &av.dgid,
                traffic_class: av.traffic_class,
                hop_limit: av.hop_limit,
                src_port,
                cache: None,
            },
            dest_qp,
        }
    }

    /// A BTH to the peer with `opcode` and `psn`.
    pub(crate) fn bth(&self, opcode: Opcode, psn: Psn, ack_req: bool, se: bool) -> Bth {
        Bth {
            opcode: opcode.as_u8(),
            se,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: self.dest_qp,
            ack_req,
            psn,
        }
    }

    /// Builds a packet with `payload_len` bytes of payload, which `fill`
    /// writes, and queues it in `out`. Returns the payload length.
    pub(crate) fn emit(
        &self,
        rxe: &RxeDevice,
        out: &mut Outbox,
        bth: &Bth,
        ext: &ExtHeaders,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), ()>,
    ) -> core::result::Result<(), BuildFailure> {
        let result = self.build(rxe.active_faults(), bth, ext, payload_len, fill);
        match result {
            Ok(skb) => {
                out.push(skb);
                Ok(())
            }
            Err(e) => {
                rxe.counters.inc(Counter::SendErr);
                Err(e)
            }
        }
    }

    /// Builds a packet whose payload is `span`, lent without a copy (see
    /// [`TxSkb::attach_page`]), and queues it in `out`.
    pub(crate) fn emit_page(
        &self,
        rxe: &RxeDevice,
        out: &mut Outbox,
        bth: &Bth,
        ext: &ExtHeaders,
        span: PageSpan,
    ) -> core::result::Result<(), BuildFailure> {
        match self.build_page(rxe.active_faults(), bth, ext, span) {
            Ok(skb) => {
                SENT_ZERO_COPY.fetch_add(1, Relaxed);
                out.push(skb);
                Ok(())
            }
            Err(e) => {
                rxe.counters.inc(Counter::SendErr);
                Err(e)
            }
        }
    }

    fn build_page(
        &self,
        faults: Option<&FaultInjector>,
        bth: &Bth,
        ext: &ExtHeaders,
        span: PageSpan,
    ) -> core::result::Result<TxSkb, BuildFailure> {
        let opcode = Opcode::from_u8(bth.opcode).ok_or(BuildFailure::Dropped)?;
        let payload_len = span.len();
        let mut skb = TxSkb::new(self.route.ndev, self.route.ipv6, opcode.header_len())
            .map_err(|_| BuildFailure::Dropped)?;
        write_headers(skb.packet(), bth, ext, payload_len).map_err(|_| BuildFailure::Dropped)?;
        if faults.is_some_and(|f| f.fails_build(skb.packet())) {
            return Err(BuildFailure::Dropped);
        }
        let pad = usize::from(pad_len(payload_len));
        skb.attach_page(span, pad + ICRC_LEN)
            .map_err(|_| BuildFailure::Dropped)?;
        let routed = self.route(&mut skb)?;
        if omit_icrc(&mut skb) {
            // The trailer, pad and ICRC field, was zeroed when attached.
            return Ok(skb);
        }
        let (iph, udp) = routed.headers()?;
        // The ICRC covers the payload as it is now (an application that
        // rewrites it before the completion sends undefined data, as with
        // any RDMA device; a receiver drops what no longer matches).
        let icrc = icrc_of_pieces::<KernelCrc32>(iph, udp, skb.headers(), skb.lent_payload())
            .map_err(|_| BuildFailure::Dropped)?;
        skb.trailer()
            .get_mut(pad..)
            .ok_or(BuildFailure::Dropped)?
            .copy_from_slice(&icrc.to_le_bytes());
        Ok(skb)
    }

    fn build(
        &self,
        faults: Option<&FaultInjector>,
        bth: &Bth,
        ext: &ExtHeaders,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), ()>,
    ) -> core::result::Result<TxSkb, BuildFailure> {
        let opcode = Opcode::from_u8(bth.opcode).ok_or(BuildFailure::Dropped)?;
        let total = packet_len(opcode, payload_len).ok_or(BuildFailure::Dropped)?;
        let mut skb = TxSkb::new(self.route.ndev, self.route.ipv6, total)
            .map_err(|_| BuildFailure::Dropped)?;
        let pkt = skb.packet();
        let hdr_len =
            write_headers(pkt, bth, ext, payload_len).map_err(|_| BuildFailure::Dropped)?;
        // A `nomem` fault rule: the packet is lost as if its buffer could
        // not be allocated (the skb is freed on return).
        if faults.is_some_and(|f| f.fails_build(pkt)) {
            return Err(BuildFailure::Dropped);
        }
        let (payload, trailer) = pkt
            .get_mut(hdr_len..)
            .and_then(|rest| rest.split_at_mut_checked(payload_len))
            .ok_or(BuildFailure::Dropped)?;
        fill(payload).map_err(|()| BuildFailure::Payload)?;
        // Pad and the ICRC placeholder.
        trailer.fill(0);
        let routed = self.route(&mut skb)?;
        if omit_icrc(&mut skb) {
            // The ICRC field stays zero, as filled above.
            return Ok(skb);
        }
        let (iph, udp) = routed.headers()?;
        fill_icrc_with::<KernelCrc32>(iph, udp, skb.packet()).map_err(|_| BuildFailure::Dropped)?;
        Ok(skb)
    }

    /// Routes `skb` on this path, which writes its IP and UDP headers, and
    /// returns a copy of them for the ICRC.
    fn route(&self, skb: &mut TxSkb) -> core::result::Result<RoutedHeaders, BuildFailure> {
        let (iph, udp) = skb.route(&self.route).map_err(|_| BuildFailure::Dropped)?;
        let mut ip = [0u8; IPV6_HDR_LEN];
        let ip_len = iph.len().min(IPV6_HDR_LEN);
        ip[..ip_len].copy_from_slice(&iph[..ip_len]);
        Ok(RoutedHeaders { ip, ip_len, udp })
    }
}

/// Whether the routed `skb` is built without its ICRC, and if so marks
/// it: a packet to this host takes the driver's loopback path, where it
/// never leaves memory and is received by this driver, which is told not
/// to check it (as the stack skips checksums on `lo`); the
/// `loopback_icrc` parameter computes and checks it there too. Every
/// packet to another host carries its ICRC.
fn omit_icrc(skb: &mut TxSkb) -> bool {
    if crate::module_parameters::loopback_icrc.value() || !skb.to_host() {
        return false;
    }
    skb.omit_icrc();
    true
}

/// A routed packet's IP and UDP headers, copied out of its skb: what the
/// ICRC covers besides the RoCE packet.
struct RoutedHeaders {
    ip: [u8; IPV6_HDR_LEN],
    ip_len: usize,
    udp: [u8; 8],
}

impl RoutedHeaders {
    /// The IP header, checked, and the UDP header.
    fn headers(&self) -> core::result::Result<(IpHeader<'_>, &[u8; 8]), BuildFailure> {
        let ip =
            IpHeader::from_slice(&self.ip[..self.ip_len]).map_err(|_| BuildFailure::Dropped)?;
        Ok((ip, &self.udp))
    }
}

/// The kernel's `crc32_le` as the protocol layer's CRC-32 routine, but
/// for short inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelCrc32 {}

/// Inputs shorter than this go through the protocol layer's table CRC (the
/// same function): x86's `crc32_le` saves the FPU state for its PCLMULQDQ
/// folding from 16 bytes up, and for the masked headers of every packet,
/// and the whole of an ACK or a small message, that save cost more than
/// the CRC (`kernel_fpu_begin_mask` 2.9% of the receive path in
/// `ib_read_lat` 2 B).
const SHORT_CRC_LEN: usize = 256;

impl crate::proto::icrc::Crc32 for KernelCrc32 {
    fn update(crc: u32, data: &[u8]) -> u32 {
        if data.len() < SHORT_CRC_LEN {
            crate::proto::icrc::crc32_update(crc, data)
        } else {
            crate::sys::crc::crc32_le(crc, data)
        }
    }
}
