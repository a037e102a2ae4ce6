// SPDX-License-Identifier: GPL-2.0

//! The receive entry point: every UDP datagram to port 4791 in a namespace
//! with an rxe device arrives here, in softirq context. It is parsed and
//! checked (framing, ICRC), its device and QP are found, and the QP's data
//! path decides on it before this returns. Fault rules (crate::fault) may
//! drop, duplicate or hold it back first.
//!
//! Receive spreading: a connected QP's packets all leave from its transmit
//! CPU, and a local peer's are received there too (a veth delivers on the
//! sending CPU, the driver's loopback path drains each CPU's packets
//! there), so one stream would build, check and place every byte on one
//! CPU. A datagram that carries payload to an RC or UC QP, arriving
//! on another CPU than the QP's receive CPU, is instead left in the QP's
//! backlog for its receive work there, which checks and places it; once
//! one is, the QP's later datagrams queue behind it until the backlog is
//! empty, so the QP sees them in the order they arrived. Small packets
//! (ACKs, requests without payload) and the first packets a QP receives
//! after it sent a message of its own, to a QP with an empty backlog,
//! stay here: moving them would only add a hop to a ping-pong's latency.

use crate::{
    counters::Counter,
    device::RxeDevice,
    proto::{
        fault::{Direction, FaultAction},
        icrc::IpHeader,
        multicast::MULTICAST_QPN,
        opcode::{Opcode, Transport},
        packet::{header_len_of, Packet, RoceBytes},
        qp_attr::Network,
    },
    qp::RxeQp,
    rc::{relay, wire::KernelCrc32},
    sys::{
        net::NetDevice,
        skb::{RxDatagram, RxHandler, RxPayload},
        table::TableRef,
        work::{rx_cpu, this_cpu, with_bh_off},
    },
};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Smallest RoCE packet (headers, payload and ICRC) that receive spreading
/// moves to the QP's receive CPU while its backlog is empty: a data packet
/// whose check and copy outweigh the hop.
const SPREAD_MIN_BYTES: usize = 512;

/// Payload packets a QP takes here since it last sent a message of its
/// own (a SEND or WRITE it was posted, or a signaled READ with none
/// outstanding and its send CQ polled empty: see `crate::rc::send`)
/// before spreading moves the rest (and, while its backlog is not empty,
/// whatever follows): a ping-pong of messages (or of READs) up to this
/// many packets (64 KiB at path MTU 1024) is never spread, so its
/// latency pays no hop; a QP that keeps receiving (a stream of WRITEs or
/// SENDs to it, the replies to its stream of READs) is worth a second
/// CPU.
const SPREAD_AFTER_PACKETS: u32 = 64;

/// Most datagrams a QP's backlog holds; one more is dropped (counted) and
/// recovered by its sender as a loss, as a full network backlog would be.
const BACKLOG_MAX: u32 = 1024;

/// Most datagrams the receive work processes in one run before it queues
/// itself again, letting the CPU's other work in.
const BACKLOG_BUDGET: u32 = 64;

/// Datagrams left to a QP's receive work on another CPU (module-wide,
/// `rdma_rxe/rcvd_spread` in debugfs).
pub(crate) static SPREAD: AtomicU64 = AtomicU64::new(0);

/// Times the receive path queued a QP's receive work for a datagram it
/// left in the backlog (module-wide, `rdma_rxe/rcvd_spread_wakeups`): only
/// a datagram with none ahead of it does; the others find the work
/// queued or running.
pub(crate) static SPREAD_WAKEUPS: AtomicU64 = AtomicU64::new(0);

/// Datagrams received split as a zero-copy sender builds a packet (RoCE
/// headers in the skb's linear data, payload and trailer in two page
/// fragments), whose payload was read where it lay (module-wide,
/// `rdma_rxe/rcvd_split`).
pub(crate) static SPLIT: AtomicU64 = AtomicU64::new(0);

/// Packets of the driver's loopback path received without an ICRC to
/// check (module-wide, `rdma_rxe/rcvd_icrc_omitted`; see
/// `crate::rc::wire`'s `omit_icrc` and the `loopback_icrc` parameter).
pub(crate) static ICRC_OMITTED: AtomicU64 = AtomicU64::new(0);

/// Datagrams received in two page fragments that were copied into one
/// piece: their linear part was not exactly the RoCE headers (module-wide,
/// `rdma_rxe/rcvd_split_linearized`).
pub(crate) static SPLIT_LINEARIZED: AtomicU64 = AtomicU64::new(0);

/// Datagrams in receive backlogs, all QPs together, not yet processed.
static BACKLOG_WAITING: AtomicU32 = AtomicU32::new(0);

/// How many received datagrams wait in this host's receive backlogs. A
/// requester whose retry timer expires counts them among its packets not
/// yet through this host: the ACK a local peer owes may be behind them.
pub(crate) fn backlog_waiting() -> u32 {
    BACKLOG_WAITING.load(Ordering::SeqCst)
}

/// `n` datagrams left a backlog (processed or purged).
pub(crate) fn backlog_done(qp: &RxeQp, n: u32) {
    qp.body.rx_pending.fetch_sub(n, Ordering::SeqCst);
    BACKLOG_WAITING.fetch_sub(n, Ordering::SeqCst);
}

/// Counts `n` datagrams a destroyed QP's backlog held unprocessed, as
/// datagrams for no QP (they arrived for one that is gone now).
pub(crate) fn dropped_for_gone_qp(n: u32) {
    DROPS.no_qp.fetch_add(u64::from(n), Ordering::Relaxed);
}

/// Datagrams dropped on receive, by reason (module-wide, shown by
/// crate::debugfs as `rdma_rxe/rcvd_drop_*`; the device's 17 counters are
/// the C driver's and have no place for them).
pub(crate) struct Drops {
    /// No rxe port on the netdev the datagram arrived on: among them any
    /// datagram a local socket sent through `lo`.
    pub(crate) no_port: AtomicU64,
    /// No queue pair with the destination QP number (for a multicast
    /// packet: no QP attached to its group).
    pub(crate) no_qp: AtomicU64,
    /// The ICRC did not match.
    pub(crate) bad_icrc: AtomicU64,
    /// Not a RoCE packet (unusable skb, headers unreadable or truncated).
    pub(crate) malformed: AtomicU64,
    /// A UD datagram whose receive buffer is in an on-demand-paging region
    /// whose pages were out (see `crate::odp`).
    pub(crate) not_resident: AtomicU64,
    /// A datagram for a QP whose receive backlog was full.
    pub(crate) backlog_full: AtomicU64,
}

/// The receive path's drop counters.
pub(crate) static DROPS: Drops = Drops {
    no_port: AtomicU64::new(0),
    no_qp: AtomicU64::new(0),
    bad_icrc: AtomicU64::new(0),
    malformed: AtomicU64::new(0),
    not_resident: AtomicU64::new(0),
    backlog_full: AtomicU64::new(0),
};

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The receive entry point of the tunnel sockets and the loopback path.
pub(crate) struct Receiver;

impl RxHandler for Receiver {
    fn receive(datagram: Option<RxDatagram<'_>>) {
        take(datagram);
    }
}

fn take(datagram: Option<RxDatagram<'_>>) {
    match datagram {
        Some(datagram) => receive(datagram),
        None => count(&DROPS.malformed),
    }
}

/// The IP source and destination of a header, as GIDs (IPv4 mapped).
fn addresses(ip: &IpHeader<'_>) -> ([u8; 16], [u8; 16]) {
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    match ip {
        IpHeader::V4(h) => {
            src[10] = 0xff;
            src[11] = 0xff;
            dst[10] = 0xff;
            dst[11] = 0xff;
            src[12..].copy_from_slice(&h[12..16]);
            dst[12..].copy_from_slice(&h[16..20]);
        }
        IpHeader::V6(h) => {
            src.copy_from_slice(&h[8..24]);
            dst.copy_from_slice(&h[24..40]);
        }
    }
    (src, dst)
}

/// The RoCE packet a datagram holds, for the parser: in one piece, or
/// split as a zero-copy sender builds it (see [`readable`]).
fn roce_bytes(payload: RxPayload<'_>) -> RoceBytes<'_> {
    match payload.paged {
        None => RoceBytes::contiguous(payload.head),
        // The glue names only trailers of 4 bytes and more: never `None`;
        // if it were, nothing parses.
        Some((data, trailer)) => {
            RoceBytes::split(payload.head, data, trailer).unwrap_or(RoceBytes::contiguous(&[]))
        }
    }
}

/// `d`, kept split only where its linear part is exactly the RoCE headers
/// (as a zero-copy sender builds a packet, so that its payload is read
/// where it lies); any other split is copied into one piece. `None` (the
/// datagram freed) if that needs memory there is none of.
fn readable(d: RxDatagram<'_>) -> Option<RxDatagram<'_>> {
    let payload = d.payload();
    match payload.paged {
        Some(_) if header_len_of(payload.head) != Some(payload.head.len()) => {
            count(&SPLIT_LINEARIZED);
            d.linearize()
        }
        Some(_) => {
            count(&SPLIT);
            Some(d)
        }
        None => Some(d),
    }
}

fn receive(d: RxDatagram<'_>) {
    let Some(d) = readable(d) else {
        count(&DROPS.malformed);
        return;
    };
    let Some(rxe) = crate::ib::Device::<crate::driver::Rxe>::of_netdev(d.ndev()) else {
        count(&DROPS.no_port);
        return;
    };
    let Some(faults) = rxe.active_faults() else {
        if let Some((d, qp)) = spread(&rxe, d) {
            let roce = roce_bytes(d.payload());
            let omitted = d.payload().icrc_omitted;
            deliver(
                &rxe,
                d.ndev(),
                d.ip(),
                d.udp(),
                roce,
                omitted,
                qp.as_deref(),
            );
        }
        return;
    };
    let (ip, udp, roce) = (d.ip(), d.udp(), roce_bytes(d.payload()));
    let omitted = d.payload().icrc_omitted;
    match faults.decide(Direction::Rx, roce.head()) {
        Some(FaultAction::Drop) => {}
        Some(FaultAction::Duplicate) => {
            deliver(&rxe, d.ndev(), ip, udp, roce, omitted, None);
            deliver(&rxe, d.ndev(), ip, udp, roce, omitted, None);
        }
        Some(FaultAction::Delay(packets)) => {
            if faults.hold(ip, udp, roce, omitted, packets) {
                // Held: it has not passed yet, so it moves nothing on.
                return;
            }
            deliver(&rxe, d.ndev(), ip, udp, roce, omitted, None);
        }
        // `decide` never answers `nomem` (a build-time rule, dir=tx only).
        Some(FaultAction::NoMem) | None => deliver(&rxe, d.ndev(), ip, udp, roce, omitted, None),
    }
    faults.received_one(|held| {
        if let Some((ip, udp, roce)) = held.parts() {
            let roce = RoceBytes::contiguous(roce);
            deliver(&rxe, d.ndev(), ip, udp, roce, held.icrc_omitted(), None);
        }
    });
}

/// Leaves `d` to its QP's receive work, on the QP's receive CPU, if it
/// carries payload to an RC or UC QP and arrived elsewhere, or if the QP's
/// backlog holds datagrams still (see the module's comment); else gives it
/// back, to be processed here, with its QP if this found it. Off with the
/// `rx_spread` parameter.
fn spread<'a>(
    rxe: &RxeDevice,
    d: RxDatagram<'a>,
) -> Option<(RxDatagram<'a>, Option<TableRef<RxeQp>>)> {
    if !crate::module_parameters::rx_spread.value() {
        return Some((d, None));
    }
    let roce = roce_bytes(d.payload());
    // The BTH's opcode and destination QP; anything but RC or UC is the
    // normal path's to judge, as is a packet too short for a BTH.
    let (Some(op), Some(&[q0, q1, q2])) = (
        roce.head().first().and_then(|&b| Opcode::from_u8(b)),
        roce.head().get(5..8),
    ) else {
        return Some((d, None));
    };
    if !matches!(op.transport(), Transport::Rc | Transport::Uc) {
        return Some((d, None));
    }
    let Some(qp) = rxe.qps.lookup(u32::from_be_bytes([0, q0, q1, q2])) else {
        return Some((d, None));
    };
    let body = &qp.body;
    if !body.qp_type.is_connected() {
        return Some((d, Some(qp)));
    }
    let cpu = rx_cpu(body.tx_key());
    let pending = body.rx_pending.load(Ordering::SeqCst);
    if pending == 0 {
        if !op.has_payload() || roce.len() < SPREAD_MIN_BYTES {
            return Some((d, Some(qp)));
        }
        let run = body.rx_run.load(Ordering::Relaxed).saturating_add(1);
        body.rx_run.store(run, Ordering::Relaxed);
        if run <= SPREAD_AFTER_PACKETS || cpu == this_cpu() {
            return Some((d, Some(qp)));
        }
    }
    if pending >= BACKLOG_MAX {
        count(&DROPS.backlog_full);
        return None;
    }
    let ahead = body.rx_pending.fetch_add(1, Ordering::SeqCst);
    BACKLOG_WAITING.fetch_add(1, Ordering::SeqCst);
    body.rx_backlog.push(d);
    count(&SPREAD);
    // With datagrams ahead of this one, the receive work is queued or
    // running, and does not end while any is pending (see
    // `process_backlog`): queueing it again would only cost a wake-up.
    if ahead == 0 {
        count(&SPREAD_WAKEUPS);
        body.rx_work.queue_on_highpri(cpu);
    }
    None
}

/// The QP's receive work: processes what its backlog holds, oldest first,
/// each datagram with bottom halves off as in the softirq it came from.
pub(crate) fn process_backlog(qp: &RxeQp) {
    let rxe = qp.ibqp.device();
    relay::rx_work_started(qp);
    for _ in 0..BACKLOG_BUDGET {
        let Some(queued) = qp.body.rx_backlog.pop() else {
            relay::rx_work_done(qp);
            // A datagram counted and not yet pushed (its receive path,
            // with bottom halves off on another CPU, is between the two),
            // which did not queue this work: run again for it.
            if qp.body.rx_pending.load(Ordering::SeqCst) > 0 {
                qp.body.rx_work.queue_on_highpri(this_cpu());
            }
            return;
        };
        with_bh_off(|bh| {
            if let Some(ndev) = rxe.ib.netdev_bh(bh) {
                let (ip, udp, roce) = queued.parts();
                let omitted = roce.icrc_omitted;
                deliver(rxe, ndev, ip, &udp, roce_bytes(roce), omitted, Some(qp));
                // The replies the reply work left to this work, if it did.
                relay::after_packet(rxe, qp, ndev);
            }
        });
        drop(queued);
        // Only now may the QP's next datagram be processed elsewhere.
        backlog_done(qp, 1);
    }
    relay::rx_work_done(qp);
    // A budget's worth done: the rest, if any, in the next run (a
    // datagram pushed while this one ran has queued the work already).
    if qp.body.rx_pending.load(Ordering::SeqCst) > 0 {
        qp.body.rx_work.queue_on_highpri(this_cpu());
    }
}

/// Checks and processes one RoCE packet received on `ndev`, the port of
/// `rxe`: its IP header, UDP header and the packet itself. `icrc_omitted`:
/// a packet of the driver's loopback path built without its ICRC (see
/// [`RxPayload::icrc_omitted`]), which is not checked. `known` is the
/// QP its destination QP number names, if the caller found it already.
fn deliver(
    rxe: &RxeDevice,
    ndev: &NetDevice,
    ip: &[u8],
    udp: &[u8; 8],
    roce: RoceBytes<'_>,
    icrc_omitted: bool,
    known: Option<&RxeQp>,
) {
    let (Ok(pkt), Ok(iph)) = (Packet::parse_bytes(roce), IpHeader::from_slice(ip)) else {
        count(&DROPS.malformed);
        return;
    };
    if icrc_omitted {
        count(&ICRC_OMITTED);
    } else if pkt.verify_icrc_with::<KernelCrc32>(iph, udp).is_err() {
        // A remote host decides how many of these arrive: count each, log
        // a few.
        count(&DROPS.bad_icrc);
        crate::sys::warn_bad_icrc();
        return;
    }
    let (src, dst) = addresses(&iph);
    let network = match iph {
        IpHeader::V4(_) => Network::Ipv4,
        IpHeader::V6(_) => Network::Ipv6,
    };
    let from = crate::rc::Arrival {
        ip,
        network,
        src,
        dst,
    };
    // The IP packet, as rxe counts it.
    let bytes = (ip.len() + udp.len() + roce.len()) as u64;
    if pkt.dest_qp() == MULTICAST_QPN {
        // A UD multicast packet: every QP attached to the group its IP
        // destination names gets it; each QP's own checks (UD, state,
        // Q_Key) decide as for a unicast packet.
        let Some(members) = rxe.multicast.get().and_then(|g| g.members(&dst)) else {
            count(&DROPS.no_qp);
            return;
        };
        rxe.counters.inc(Counter::RcvdPkts);
        rxe.counters.add(Counter::RcvdBytes, bytes);
        for &qpn in members.qpns() {
            if let Some(qp) = rxe.qps.lookup(qpn) {
                crate::rc::receive(rxe, &qp, ndev, &pkt, &from);
            }
        }
        return;
    }
    let found;
    let qp = match known {
        Some(qp) => qp,
        None => {
            let Some(qp) = rxe.qps.lookup(pkt.dest_qp()) else {
                count(&DROPS.no_qp);
                return;
            };
            found = qp;
            &*found
        }
    };
    rxe.counters.inc(Counter::RcvdPkts);
    rxe.counters.add(Counter::RcvdBytes, bytes);
    crate::rc::receive(rxe, qp, ndev, &pkt, &from);
}

/// Number of datagrams received and dropped, for any reason.
pub(crate) fn dropped() -> u64 {
    [
        &DROPS.no_port,
        &DROPS.no_qp,
        &DROPS.bad_icrc,
        &DROPS.malformed,
        &DROPS.not_resident,
        &DROPS.backlog_full,
    ]
    .iter()
    .map(|c| c.load(Ordering::Relaxed))
    .sum()
}
