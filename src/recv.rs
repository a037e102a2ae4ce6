// SPDX-License-Identifier: GPL-2.0

//! The receive entry point: every UDP datagram to port 4791 in a namespace
//! with an rxe device arrives here, in softirq context. It is parsed and
//! checked (framing, ICRC), its device and QP are found, and the QP's data
//! path decides on it before this returns. Fault rules (crate::fault) may
//! drop, duplicate or hold it back first.

use crate::{
    counters::Counter,
    device::RxeDevice,
    proto::{
        fault::{Direction, FaultAction},
        icrc::IpHeader,
        multicast::MULTICAST_QPN,
        packet::Packet,
        qp_attr::Network,
    },
    rc::wire::KernelCrc32,
    sys::{
        net::NetDevice,
        skb::{RxDatagram, RxHandler},
    },
};
use core::sync::atomic::{AtomicU64, Ordering};

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
}

/// The receive path's drop counters.
pub(crate) static DROPS: Drops = Drops {
    no_port: AtomicU64::new(0),
    no_qp: AtomicU64::new(0),
    bad_icrc: AtomicU64::new(0),
    malformed: AtomicU64::new(0),
    not_resident: AtomicU64::new(0),
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
        Some(datagram) => receive(&datagram),
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

fn receive(d: &RxDatagram<'_>) {
    let Some(rxe) = crate::ib::Device::<crate::driver::Rxe>::of_netdev(d.ndev()) else {
        count(&DROPS.no_port);
        return;
    };
    let (ip, udp, roce) = (d.ip(), d.udp(), d.payload());
    let Some(faults) = rxe.active_faults() else {
        deliver(&rxe, d.ndev(), ip, udp, roce);
        return;
    };
    match faults.decide(Direction::Rx, roce) {
        Some(FaultAction::Drop) => {}
        Some(FaultAction::Duplicate) => {
            deliver(&rxe, d.ndev(), ip, udp, roce);
            deliver(&rxe, d.ndev(), ip, udp, roce);
        }
        Some(FaultAction::Delay(packets)) => {
            if faults.hold(ip, udp, roce, packets) {
                // Held: it has not passed yet, so it moves nothing on.
                return;
            }
            deliver(&rxe, d.ndev(), ip, udp, roce);
        }
        // `decide` never answers `nomem` (a build-time rule, dir=tx only).
        Some(FaultAction::NoMem) | None => deliver(&rxe, d.ndev(), ip, udp, roce),
    }
    faults.received_one(|held| {
        if let Some((ip, udp, roce)) = held.parts() {
            deliver(&rxe, d.ndev(), ip, udp, roce);
        }
    });
}

/// Checks and processes one RoCE packet received on `ndev`, the port of
/// `rxe`: its IP header, UDP header and the packet itself.
fn deliver(rxe: &RxeDevice, ndev: &NetDevice, ip: &[u8], udp: &[u8; 8], roce: &[u8]) {
    let (Ok(pkt), Ok(iph)) = (Packet::parse(roce), IpHeader::from_slice(ip)) else {
        count(&DROPS.malformed);
        return;
    };
    if pkt.verify_icrc_with::<KernelCrc32>(iph, udp).is_err() {
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
    let Some(qp) = rxe.qps.lookup(pkt.dest_qp()) else {
        count(&DROPS.no_qp);
        return;
    };
    rxe.counters.inc(Counter::RcvdPkts);
    rxe.counters.add(Counter::RcvdBytes, bytes);
    crate::rc::receive(rxe, &qp, ndev, &pkt, &from);
}

/// Number of datagrams received and dropped, for any reason.
pub(crate) fn dropped() -> u64 {
    [
        &DROPS.no_port,
        &DROPS.no_qp,
        &DROPS.bad_icrc,
        &DROPS.malformed,
        &DROPS.not_resident,
    ]
    .iter()
    .map(|c| c.load(Ordering::Relaxed))
    .sum()
}
