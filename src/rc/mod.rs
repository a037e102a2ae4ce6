// SPDX-License-Identifier: GPL-2.0

//! The data path of one QP: for RC, the requester and responder machines
//! of [`crate::proto`] bound to the QP's rings, memory, CQs and the
//! network; UD and GSI QPs take the simpler path of [`datagram`].
//!
//! Every entry point (the doorbell in [`send`], a packet in
//! [`respond`]/[`complete`], a timer) takes the QP's state lock, steps a
//! machine, and carries out what it asks for under the lock: WQEs are copied
//! out of the rings, payload is gathered and placed, completions are posted.
//! Packets are built under the lock into an [`wire::Outbox`] and handed to
//! the IP stack after it is released (transmitting with interrupts off is
//! not allowed).

pub(crate) mod complete;
pub(crate) mod datagram;
pub(crate) mod memory;
pub(crate) mod post;
pub(crate) mod relay;
pub(crate) mod respond;
pub(crate) mod send;
pub(crate) mod wire;

use crate::{
    abi::values::access,
    abi::{
        cq::KernelWcExtra, cqe::Completion as Cqe, send_wqe::SendWqe as PostedWqe, values::WcStatus,
    },
    counters::Counter,
    device::RxeDevice,
    proto::{
        admission::{admit, Direction, QpView},
        aeth::RnrTimer,
        packet::Packet,
        psn::Psn,
        qp_attr::{Network, QpAttrs, QpState, QpType},
        requester::{Requester, RequesterConfig, RequesterCounters},
        responder::{replies::ReplyQueue, AccessFlags, Responder, ResponderConfig},
        transport::{CompletionStatus, Mtu},
    },
    qp::{QpInner, RxeQp},
    sys::bindings,
};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::prelude::*;
use kernel::str::CStr;

/// WQEs the requester holds at once; further WQEs wait in the SQ ring.
pub(crate) const SQ_WINDOW: usize = 64;

/// The requester counters summed over destroyed QPs, each with its name
/// under debugfs (`rdma_rxe/requester_<name>`): the device's counters say
/// how many packets went again, these say which timer sent them, so a
/// benchmark that resends what nobody lost can tell. Each counter is named
/// here once; [`REQUESTER_TOTALS`] holds the sums in this order.
pub(crate) const REQUESTER_TOTAL_FIELDS: [(&CStr, RequesterField); 6] = [
    // Packets resent by go-back-N.
    (c"requester_retransmitted_pkts", |c| c.retransmitted_pkts),
    // Tail-loss probes.
    (c"requester_probes", |c| c.probes),
    // Go-back-N started by the RTT-based timer.
    (c"requester_rtt_timeouts", |c| c.rtt_timeouts),
    // Expiries of the QP's Local ACK Timeout with packets outstanding.
    (c"requester_timeouts", |c| c.timeouts),
    // Probes and RTT-based go-backs the peer showed to be needless.
    (c"requester_spurious_resends", |c| c.spurious_resends),
    // Retry timer expiries put off for packets still queued in this host.
    (c"requester_local_queue_deferrals", |c| {
        c.local_queue_deferrals
    }),
];

/// Reads one counter of a requester.
pub(crate) type RequesterField = fn(&RequesterCounters) -> u64;

/// The sums of [`REQUESTER_TOTAL_FIELDS`], in its order.
pub(crate) static REQUESTER_TOTALS: [AtomicU64; REQUESTER_TOTAL_FIELDS.len()] =
    [const { AtomicU64::new(0) }; REQUESTER_TOTAL_FIELDS.len()];

/// Adds the counters of `qp`'s requester to [`REQUESTER_TOTALS`] (the QP
/// is being destroyed).
pub(crate) fn add_requester_totals(qp: &RxeQp) {
    let inner = qp.body.state.lock();
    let c = inner.rc.requester.counters();
    for (total, (_, field)) in REQUESTER_TOTALS.iter().zip(REQUESTER_TOTAL_FIELDS) {
        total.fetch_add(field(c), Relaxed);
    }
}

/// READ/atomic requests the responder remembers for replay: as many as the
/// device advertises, so no `max_dest_rd_atomic` is cut short.
pub(crate) const RD_ATOMIC_RESOURCES: usize =
    crate::proto::responder::resources::MAX_RESPONDER_RESOURCES;

/// Responder replies waiting for room in flight: a READ reply or atomic
/// ACK per resource and an ACK between each two, with room to spare.
pub(crate) const REPLY_QUEUE: usize = 2 * RD_ATOMIC_RESOURCES + 4;

/// The data-path state of an RC QP (in [`QpInner`], under its lock).
pub(crate) struct RcState {
    /// Send side.
    pub(crate) requester: KBox<Requester<SQ_WINDOW>>,
    /// Receive side.
    pub(crate) responder: KBox<Responder<RD_ATOMIC_RESOURCES>>,
    /// The responder's replies not yet sent, in order.
    pub(crate) replies: KBox<ReplyQueue<REPLY_QUEUE>>,
    /// Private copies of the WQEs the requester holds, by `id % SQ_WINDOW`.
    pub(crate) posted: KVVec<PostedSlot>,
    /// Id of the next WQE taken from the SQ (ids count WQEs taken).
    pub(crate) next_id: u64,
    /// SQ entries taken beyond the ring's consumer index.
    pub(crate) taken: u32,
    /// The receive WQEs the responder holds out of the RQ/SRQ: the one a
    /// SEND (or WRITE with immediate) is filling, and the one its
    /// look-ahead took for the message about to start (consumed in the
    /// same step; if the QP fails first, it is this QP's to flush: no
    /// other QP can take it).
    pub(crate) recv: respond::RecvSlots,
    /// Placement into `recv` failed: it completes with this status.
    pub(crate) recv_failed: Option<WcStatus>,
    /// The request being handled failed the QP once its replies (its ACK)
    /// are out: a SEND_WITH_INV whose key could not be invalidated (rxe's
    /// class J). Set and cleared within one request.
    pub(crate) fail_after_replies: bool,
    /// Reused list of requester actions (capacity [`send::ACTIONS_MAX`]:
    /// steps never allocate), taken out during a step. An `Option` so that
    /// taking it leaves nothing to drop: an empty `KVec` put in its place
    /// would, once dropped, still call the allocator's free.
    pub(crate) actions: Option<KVec<crate::proto::requester::RequesterAction>>,
    /// A WQE the current doorbell took answers a message of the peer
    /// (`QpBody::answer_due`) or was posted after the poster's wait for
    /// the last completion: the posts are a ping-pong's, not a stream's
    /// (see `send::stream_post`).
    pub(crate) pingpong_taken: bool,
    /// Whether the requester runs (RTS and later).
    pub(crate) sending: bool,
    /// Whether the responder runs (RTR and later).
    pub(crate) receiving: bool,
    /// The PSN of a UD QP's next packet.
    pub(crate) datagram_psn: Psn,
    /// `IB_EVENT_QP_LAST_WQE_REACHED` was raised for this stay in ERROR
    /// (a QP on an SRQ raises it once per entry; RESET re-arms it).
    pub(crate) last_wqe_raised: bool,
    /// The requester's clock starts here (it takes nanoseconds since).
    pub(crate) epoch: kernel::time::Instant<kernel::time::Monotonic>,
}

/// A requester, idle until RTS, boxed (see [`RcState::new`]).
#[inline(never)]
fn boxed_requester() -> Result<KBox<Requester<SQ_WINDOW>>> {
    let config = RequesterConfig::new(Mtu::MTU_256, Psn::new(0));
    Ok(KBox::new(Requester::new(config), GFP_KERNEL)?)
}

/// A responder, idle until RTR, boxed (see [`RcState::new`]).
#[inline(never)]
fn boxed_responder() -> Result<KBox<Responder<RD_ATOMIC_RESOURCES>>> {
    let config = responder_config(&QpAttrs::default());
    Ok(KBox::new(Responder::new(config), GFP_KERNEL)?)
}

/// An empty reply queue, boxed (see [`RcState::new`]): copied into its
/// box from a constant, not built on the stack first (built there, it took
/// an 8 KB frame, which with the device registration's frames above it and
/// a timer interrupt below overflowed the production kernel's 16 KB stack
/// while `rdma link add` created the GSI QP).
#[inline(never)]
fn boxed_reply_queue() -> Result<KBox<ReplyQueue<REPLY_QUEUE>>> {
    const EMPTY: ReplyQueue<REPLY_QUEUE> = ReplyQueue::new();
    Ok(KBox::new(EMPTY, GFP_KERNEL)?)
}

impl RcState {
    /// Allocates the machines (idle until RTR/RTS).
    ///
    /// Each machine is built and boxed in its own function: a value is
    /// built on the stack before it is copied into its box, and built in
    /// one frame the three took 18 KB of a kernel stack that has 16 KB
    /// without KASAN (the benchmark kernel double-faulted at the first RC
    /// QP). `scripts/check-stack.sh` bounds the frames.
    ///
    /// A UC QP's machines never acknowledge nor wait for acknowledgements.
    pub(crate) fn new(qp_type: QpType) -> Result<KBox<RcState>> {
        let mut requester = boxed_requester()?;
        let mut responder = boxed_responder()?;
        if qp_type == QpType::Uc {
            requester.make_unreliable();
            responder.make_unreliable();
        }
        let mut posted = KVVec::with_capacity(SQ_WINDOW, GFP_KERNEL)?;
        for _ in 0..SQ_WINDOW {
            posted.push(
                PostedSlot {
                    wqe: None,
                    live: false,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(KBox::new(
            RcState {
                requester,
                responder,
                replies: boxed_reply_queue()?,
                posted,
                actions: Some(KVec::with_capacity(send::ACTIONS_MAX, GFP_KERNEL)?),
                next_id: 0,
                taken: 0,
                recv: respond::RecvSlots::new(),
                recv_failed: None,
                fail_after_replies: false,
                pingpong_taken: false,
                sending: false,
                receiving: false,
                datagram_psn: Psn::new(0),
                last_wqe_raised: false,
                epoch: kernel::time::Instant::now(),
            },
            GFP_KERNEL,
        )?)
    }

    /// The private copy of WQE `id`.
    pub(crate) fn posted(&self, id: u64) -> Option<&PostedWqe> {
        self.posted.get((id % SQ_WINDOW as u64) as usize)?.wqe()
    }
}

/// A slot of [`RcState::posted`]: the private copy of a WQE the requester
/// holds while `live`. A completed WQE's storage stays for the next one to
/// be read into in place ([`PostedWqe::read_into`]): a WQE is about 600
/// bytes, and moving one into its slot cost a microsecond or more under
/// TCG, in the doorbell's path.
pub(crate) struct PostedSlot {
    /// The WQE last read into the slot.
    pub(crate) wqe: Option<PostedWqe>,
    /// Whether `wqe` is a WQE the requester holds.
    pub(crate) live: bool,
}

impl PostedSlot {
    /// The WQE the requester holds in this slot, if any.
    pub(crate) fn wqe(&self) -> Option<&PostedWqe> {
        if self.live {
            self.wqe.as_ref()
        } else {
            None
        }
    }

    /// Ends the held WQE's life (completed or flushed); returns its
    /// `wr_id`.
    pub(crate) fn release(&mut self) -> Option<u64> {
        let wr_id = self.wqe()?.wr_id;
        self.live = false;
        Some(wr_id)
    }
}

/// The path MTU of `attrs` (256 until set).
pub(crate) fn path_mtu(attrs: &QpAttrs) -> Mtu {
    match attrs.path_mtu {
        1..=5 => Mtu::new(128 << attrs.path_mtu).unwrap_or(Mtu::MTU_256),
        _ => Mtu::MTU_256,
    }
}

/// The local ACK timeout in microseconds (4.096 µs << timeout; 0 is none).
fn timeout_usecs(timeout: u8) -> u32 {
    if timeout == 0 {
        0
    } else {
        let ns = 4096u64 << timeout.min(31);
        (ns / 1000).min(u64::from(u32::MAX)) as u32
    }
}

fn requester_config(attrs: &QpAttrs) -> RequesterConfig {
    let mut cfg = RequesterConfig::new(path_mtu(attrs), attrs.sq_psn);
    cfg.retry_cnt = attrs.retry_cnt;
    cfg.rnr_retry = attrs.rnr_retry;
    cfg.max_rd_atomic = attrs.max_rd_atomic;
    cfg.timeout_usecs = timeout_usecs(attrs.timeout);
    // At most TX_INFLIGHT_HIGH packets are in flight (twice that to this
    // host): ask for an ACK twice per such window, so progress (which
    // restarts the retry timer) arrives while the rest are still being
    // received, instead of once per window, by which time a slow receiver
    // has let the timer expire. Four times per window (every 16) cost an
    // ACK per 16 packets to build, send, receive and complete on, and
    // more needless probes than it saved (write_bw 64 KiB, one boot each:
    // 326-774 packets resent needlessly at 16, 68 at 32).
    cfg.ack_req_every = crate::qp::TX_INFLIGHT_HIGH / 2;
    cfg.coalesce_ack_req = crate::module_parameters::ack_req_coalesce.value();
    // The retry timer runs on jiffies: nothing shorter than a tick, and an
    // expiry up to a tick early is on time.
    let tick = 1_000_000 / kernel::bindings::CONFIG_HZ.max(1);
    cfg.probe_floor_usecs = cfg.probe_floor_usecs.max(tick);
    cfg.timer_tick_usecs = tick;
    cfg
}

fn responder_config(attrs: &QpAttrs) -> ResponderConfig {
    ResponderConfig {
        mtu: path_mtu(attrs),
        rq_psn: attrs.rq_psn,
        min_rnr_timer: RnrTimer::new(attrs.min_rnr_timer),
        max_dest_rd_atomic: attrs.max_dest_rd_atomic,
        access: AccessFlags {
            remote_read: attrs.access & access::REMOTE_READ != 0,
            remote_write: attrs.access & access::REMOTE_WRITE != 0,
            remote_atomic: attrs.access & access::REMOTE_ATOMIC != 0,
            flush_global: attrs.access & access::FLUSH_GLOBAL != 0,
            flush_persistent: attrs.access & access::FLUSH_PERSISTENT != 0,
        },
    }
}

/// The work-completion status of a protocol completion status (same
/// numbering).
pub(crate) fn wc_status(s: CompletionStatus) -> WcStatus {
    WcStatus::from_u32(s as u32).unwrap_or(WcStatus::GeneralErr)
}

/// Follows a `modify_qp` that changed the state from `old`: starts the
/// responder at RTR and the requester at RTS with the attributes just set,
/// stops both at RESET, flushes at ERROR. Runs under the QP lock.
pub(crate) fn state_changed(rxe: &RxeDevice, qp: &RxeQp, inner: &mut QpInner, old: QpState) {
    let new = inner.attrs.state;
    if new == old {
        return;
    }
    match new {
        QpState::Reset => {
            let rc = &mut inner.rc;
            rc.sending = false;
            rc.receiving = false;
            rc.last_wqe_raised = false;
            rc.taken = 0;
            rc.next_id = 0;
            rc.recv.clear();
            rc.recv_failed = None;
            rc.replies.clear();
            relay::clear(qp);
            for slot in rc.posted.iter_mut() {
                slot.live = false;
            }
        }
        QpState::Rtr => {
            let cfg = responder_config(&inner.attrs);
            inner.rc.responder.reset(cfg);
            inner.rc.replies.clear();
            inner.rc.receiving = true;
        }
        QpState::Rts if old == QpState::Rtr => {
            let cfg = requester_config(&inner.attrs);
            inner.rc.requester.reset(cfg);
            inner.rc.datagram_psn = inner.attrs.sq_psn;
            inner.rc.sending = true;
        }
        QpState::Err => complete::enter_error(rxe, qp, inner),
        _ => {}
    }
}

/// Transmits what the QP has to send (responder replies, then requester
/// packets) if this is the QP's transmit CPU, `tx_cpu` (the caller's
/// lookup of [`crate::qp::QpBody::tx_cpu`]); else has `out` queue the
/// QP's transmit work there once sent, the QP lock let go. Every packet
/// of a QP thus leaves from one CPU, in order: packets sent from two
/// CPUs at once reach a local receiver through two per-CPU backlogs and
/// arrive out of order, which RC answers with go-back-N. (The one
/// exception, the doorbell of an RC QP with nothing unacknowledged, is
/// `send::may_send_here`'s.)
///
/// `received`: called on the receive path (softirq, or the QP's receive
/// work), whose replies and window updates a softirq on the transmit CPU
/// would have sent at once: they go to the QP's reply work, which runs at
/// high priority, instead of its transmit work, which shares the CPU
/// with the tasks there (a task polling its CQ would delay them by a
/// scheduler tick, and with them the peer's window).
pub(crate) fn transmit_or_kick(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &crate::sys::net::NetDevice,
    out: &mut wire::Outbox,
    received: bool,
    tx_cpu: u32,
) {
    if crate::sys::work::this_cpu() == tx_cpu {
        relay::take_relayed(qp, out);
        respond::send_replies(rxe, qp, inner, ndev, out);
        send::pump(rxe, qp, inner, ndev, out);
    } else if received {
        out.queue_reply_work(tx_cpu);
    } else {
        out.queue_tx_work(tx_cpu);
    }
}

/// Queues the QP's transmit work on its transmit CPU.
pub(crate) fn kick(qp: &RxeQp) {
    qp.body.tx_work.queue_on(qp.body.tx_cpu());
}

/// Kicks the QP numbered `qpn`, if it still exists (an on-demand-paging
/// fault it waited for is done).
pub(crate) fn kick_qpn(rxe: &RxeDevice, qpn: u32) {
    if let Some(qp) = rxe.qps.lookup(qpn) {
        kick(&qp);
    }
}

/// Kicks every QP of the device (more QPs waited for an on-demand-paging
/// fault than its region could name).
pub(crate) fn kick_all(rxe: &RxeDevice) {
    let mut at = 0;
    while let Some((qpn, qp)) = rxe.qps.next_from(at) {
        kick(&qp);
        let Some(next) = qpn.checked_add(1) else {
            break;
        };
        at = next;
    }
}

/// The QP's transmit work: responder replies, then the requester; in
/// ERROR, flushes what a kernel ULP posted since (with interrupts off, so
/// the post could not flush it itself).
pub(crate) fn transmit(rxe: &RxeDevice, qp: &RxeQp, ndev: &crate::sys::net::NetDevice) {
    let mut out = wire::Outbox::new();
    {
        let mut guard = qp.body.state.lock();
        let inner = &mut *guard;
        if inner.attrs.state == QpState::Err {
            complete::flush_sq(rxe, qp, inner);
        } else {
            relay::take_relayed(qp, &mut out);
            respond::send_replies(rxe, qp, inner, ndev, &mut out);
            send::pump(rxe, qp, inner, ndev, &mut out);
        }
    }
    out.send(rxe, qp);
}

/// The QP is being destroyed, its transmit work disabled and no packet
/// reaching it any more: sends the ACKs, NAKs and atomic ACKs its responder
/// still has queued and abandons the READ replies. A process sees its last
/// receive completion before the ACK of that message leaves (from the
/// transmit work, when the packet arrived on another CPU) and may destroy
/// the QP at once; the requester on the other side would otherwise resend
/// to a QP that is gone until its retries run out.
pub(crate) fn send_owed_acks(rxe: &RxeDevice, qp: &RxeQp) {
    let Some(ndev) = rxe.ib.netdev() else {
        return;
    };
    crate::sys::work::with_bh_off(|_| {
        let mut out = wire::Outbox::new();
        {
            let mut guard = qp.body.state.lock();
            let inner = &mut *guard;
            if inner.rc.receiving {
                respond::send_final_replies(rxe, qp, inner, &ndev, &mut out);
            }
            inner.rc.replies.clear();
        }
        out.send(rxe, qp);
    });
}

/// A datagram QP (UD, GSI) being destroyed, its transmit work disabled:
/// what its send queue still holds goes out now, as an HCA's send queue
/// would have sent it before the destroy reached it. A user doorbell
/// sends a UD QP's WQEs itself (`send::ring`), but what it left because
/// too many packets were in flight, and what a kernel ULP posted, wait
/// for the transmit work, which the destroy disabled.
pub(crate) fn send_posted_datagrams(rxe: &RxeDevice, qp: &RxeQp) {
    if !qp.body.qp_type.is_datagram() {
        return;
    }
    let Some(ndev) = rxe.ib.netdev() else {
        return;
    };
    crate::sys::work::with_bh_off(|_| {
        let mut out = wire::Outbox::new();
        {
            let mut guard = qp.body.state.lock();
            datagram::pump(rxe, qp, &mut guard, &ndev, &mut out);
        }
        out.send(rxe, qp);
    });
}

/// Posts a receive-side completion, counting an overflow. `network` is
/// the packets' network for a message received (a kernel CQ reports it,
/// as rxe does), `None` for a flushed WQE. Returns `false` if the CQ was
/// full (the CQ raised its error event): a message's completion lost that
/// way moves the QP to ERROR (the caller's part), as in rxe.
#[must_use]
pub(crate) fn post_recv_cqe(
    rxe: &RxeDevice,
    qp: &RxeQp,
    cqe: &Cqe,
    solicited: bool,
    network: Option<Network>,
) -> bool {
    let extra = KernelWcExtra {
        qp: qp.ibqp.cookie(),
        network_hdr_type: match network {
            None => 0,
            Some(Network::Ipv4) => bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8,
            Some(Network::Ipv6) => bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8,
        },
        ..Default::default()
    };
    if qp.ibqp.recv_cq().post(cqe, &extra, solicited).is_err() {
        rxe.counters.inc(Counter::SendErr);
        return false;
    }
    true
}

/// Posts a send-side completion, counting an overflow (the CQ raises its
/// error event; the QP goes on, as in rxe).
pub(crate) fn post_send_cqe(rxe: &RxeDevice, qp: &RxeQp, cqe: &Cqe) {
    let extra = KernelWcExtra {
        qp: qp.ibqp.cookie(),
        ..Default::default()
    };
    if qp.ibqp.send_cq().post(cqe, &extra, false).is_err() {
        rxe.counters.inc(Counter::SendErr);
    }
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init before first use.
    unsafe(uninit) static ATOMIC_LOCK: SpinLock<()> = ();
}

/// Prepares the data path.
///
/// # Safety
///
/// Called once, from module init, before any device exists.
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { ATOMIC_LOCK.init() };
}

/// Where a received packet came from: its IP header, and the IP
/// addresses as GIDs (IPv4 mapped).
pub(crate) struct Arrival<'a> {
    /// The IP header as received.
    pub(crate) ip: &'a [u8],
    /// IPv4 or IPv6.
    pub(crate) network: Network,
    /// Source address.
    pub(crate) src: [u8; 16],
    /// Destination address.
    pub(crate) dst: [u8; 16],
}

/// A packet for `qp`, in softirq: admission (transport, state, peer,
/// P_Key, Q_Key), then the responder or the completer, or for a UD or GSI
/// QP the datagram path.
pub(crate) fn receive(
    rxe: &RxeDevice,
    qp: &RxeQp,
    ndev: &crate::sys::net::NetDevice,
    pkt: &Packet<'_>,
    from: &Arrival<'_>,
) {
    let (src, dst) = (&from.src, &from.dst);
    let mut out = wire::Outbox::new();
    {
        let mut guard = qp.body.state.lock();
        let inner = &mut *guard;
        let view = QpView {
            qp_type: qp.body.qp_type,
            state: inner.attrs.state,
            qkey: inner.attrs.qkey,
            path_remote: inner.attrs.av.dgid,
            path_local: inner.attrs.av.sgid,
        };
        match admit(pkt, &view, src, dst) {
            Ok(Direction::Request) if qp.body.qp_type.is_datagram() => {
                datagram::on_request(rxe, qp, inner, pkt, from.ip, from.network)
            }
            Ok(Direction::Request) => respond::on_request(rxe, qp, inner, ndev, &mut out, pkt),
            Ok(Direction::Response) => complete::on_response(rxe, qp, inner, ndev, &mut out, pkt),
            Err(_) => {}
        }
    }
    out.send(rxe, qp);
}
