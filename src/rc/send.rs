// SPDX-License-Identifier: GPL-2.0

//! The send side of an RC QP: the doorbell takes new WQEs out of the SQ
//! ring (each copied and validated once, into kernel memory), hands them to
//! the requester, and carries out what the requester asks: packets built
//! from the private WQE copies, READ data placed, completions posted.

use super::{
    memory, wc_status,
    wire::{lend_payload, BuildFailure, Outbox, Path},
    RcState, SQ_WINDOW,
};
use crate::{
    abi::{
        cqe::Completion as Cqe,
        send_wqe::{Origin, SendLimits, SendOp, SendWqe as PostedWqe},
        values::{send_flags, QpType as AbiQpType, WcStatus, WrOpcode},
    },
    counters::Counter,
    device::RxeDevice,
    proto::{
        access::{AccessError, Invalidation},
        headers::{Ieth, ImmDt},
        opcode::Transport,
        packet::ExtHeaders,
        qp_attr::{QpState, QpType},
        replay::SendWqe as RequesterWqe,
        requester::{GoBackCause, Requester, RequesterAction, RequesterCounters, RequesterEvent},
        transport::CompletionStatus,
        window::{BindRequest, WindowUser},
        work_request::{requester_wqe, NotTransport},
    },
    qp::{QpInner, RxeQp},
    sys::{net::NetDevice, trace},
};
use core::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use kernel::prelude::*;

/// Packets the requester may emit per step.
const TX_BUDGET: u32 = 32;

/// Most actions one requester step produces: every WQE completing plus
/// timers, or a transmit budget's packets.
pub(crate) const ACTIONS_MAX: usize = 2 * SQ_WINDOW + TX_BUDGET as usize + 8;

/// Doorbells that sent an RC QP's request packets from the CPU that
/// posted them, not the QP's transmit CPU ([`may_send_here`];
/// `rdma_rxe/sent_from_posting_cpu` in debugfs).
pub(crate) static SENT_FROM_POSTING_CPU: AtomicU64 = AtomicU64::new(0);

/// Doorbells on a user RC QP's transmit CPU that left a stream's posts to
/// its transmit work ([`stream_post`]; `rdma_rxe/stream_posts_deferred`
/// in debugfs).
pub(crate) static STREAM_POSTS_DEFERRED: AtomicU64 = AtomicU64::new(0);

/// `post_send` of a user QP (librxe's doorbell): process what the SQ ring
/// holds. `EINVAL` before RTS, as rxe.
///
/// Bottom halves stay off from taking the QP lock until the packets built
/// under it have left: on the QP's transmit CPU nothing else of the QP's
/// (a softirq, its transmit work) can send in between, and the caller
/// cannot migrate away, so the QP's packets leave in PSN order.
pub(crate) fn doorbell(rxe: &RxeDevice, qp: &RxeQp) -> Result {
    let ndev = rxe.ib.netdev().ok_or(ENODEV)?;
    crate::sys::work::with_bh_off(|_| ring(rxe, qp, &ndev))
}

/// The doorbell's work, with bottom halves off.
///
/// An RC or UC QP whose lock another CPU holds (its receive path taking
/// ACKs and sending the next packets, typically) is not waited for: the
/// QP's transmit work takes the new WQEs once the lock is free, and the
/// poster goes back to its own work instead of spinning, unless it may
/// likely send from here ([`may_wait_to_send_here`]). Only a QP that
/// could take WQEs is left to it; otherwise (before RTS, or an unknown
/// state) the doorbell waits for the lock and answers as always.
fn ring(rxe: &RxeDevice, qp: &RxeQp, ndev: &NetDevice) -> Result {
    let mut out = Outbox::new();
    let result = {
        let mut guard = match qp.body.state.try_lock() {
            Some(guard) => guard,
            // Likely to send from here once the lock is free: wait for it.
            None if may_wait_to_send_here(qp) => qp.body.state.lock(),
            None if !qp.body.qp_type.is_datagram()
                && matches!(
                    qp.body.post_state(),
                    Some(QpState::Rts | QpState::Sqd | QpState::Sqe | QpState::Err)
                ) =>
            {
                super::kick(qp);
                return Ok(());
            }
            None => qp.body.state.lock(),
        };
        let inner = &mut *guard;
        match inner.attrs.state {
            QpState::Err => {
                super::complete::flush_sq(rxe, qp, inner);
                Ok(())
            }
            QpState::Rts | QpState::Sqd | QpState::Sqe if qp.body.qp_type.is_datagram() => {
                // UD sends here, on whatever CPU rang: datagrams keep no
                // order a second CPU could break, and a process may
                // destroy the AH (or the QP) its SENDs name right after
                // posting them (rdma_cm's mckey sender does), which a
                // send left to the transmit work would then fail.
                super::datagram::pump(rxe, qp, inner, ndev, &mut out);
                Ok(())
            }
            QpState::Rts | QpState::Sqd | QpState::Sqe => {
                inner.rc.pingpong_taken = false;
                if inner.rc.sending {
                    take_wqes(rxe, qp, inner);
                }
                let tx_cpu = qp.body.tx_cpu();
                if may_send_here(qp, inner) {
                    SENT_FROM_POSTING_CPU.fetch_add(1, Relaxed);
                    pump(rxe, qp, inner, ndev, &mut out);
                } else if stream_post(qp, inner, tx_cpu) {
                    STREAM_POSTS_DEFERRED.fetch_add(1, Relaxed);
                    out.queue_tx_work(tx_cpu);
                } else {
                    super::transmit_or_kick(rxe, qp, inner, ndev, &mut out, false, tx_cpu);
                }
                Ok(())
            }
            _ => Err(EINVAL),
        }
    };
    out.send(rxe, qp);
    result
}

/// Most request packets a doorbell sends from the posting CPU
/// ([`may_send_here`]): a ping-pong's message of up to 16 KiB at path MTU
/// 1024.
const POST_CPU_MAX_PACKETS: u32 = 16;

/// Whether the doorbell may send an RC QP's request packets on this CPU
/// although it is not the QP's transmit CPU: every request packet sent
/// so far is acknowledged, so the responder has processed them all and
/// none waits in another CPU's backlog for the new ones to overtake, and
/// all the packets the posted WQEs need go out in this call (at most
/// [`POST_CPU_MAX_PACKETS`], within the flight cap and the in-host
/// bound), so that none is left for the transmit CPU to send while
/// these may still wait in this CPU's backlog. A READ or an atomic too,
/// unless `recv_cpu_reply` is off: a local responder then sends its
/// reply from the CPU the request reached it on, this one, where before
/// it hopped to its transmit CPU (a READ ping-pong measured slower with
/// the hop than from the transmit CPU). The QP's own replies, another
/// PSN space, follow `respond::may_reply_here`. A ping-pong's next
/// message then leaves at once, from the CPU that posted it, instead of
/// waking the transmit work on a CPU that may be busy with the peer's
/// poller; a stream mostly has packets in flight and keeps to its
/// transmit CPU. A user QP's post must be a ping-pong's too
/// (`RcState::pingpong_taken`): a stream whose every message is sent,
/// acknowledged and completed within the system call that posted it
/// (small messages between two namespaces are) finds everything
/// acknowledged at each post, and would so run on the poster's CPU alone
/// (see [`stream_post`]). Off with the `post_cpu_send` parameter.
fn may_send_here(qp: &RxeQp, inner: &QpInner) -> bool {
    let requester = &inner.rc.requester;
    if !inner.rc.sending
        || !off_transmit_cpu(qp)
        || (qp.ibqp.is_user() && !inner.rc.pingpong_taken && stream_defer())
        || !all_acked(requester)
        || (requester.unsent_awaits_reply() && !crate::module_parameters::recv_cpu_reply.value())
    {
        return false;
    }
    let room = qp
        .body
        .tx_inflight_high()
        .saturating_sub(qp.body.tx_inflight.load(SeqCst));
    let unsent = requester.unsent_packets();
    unsent > 0 && unsent <= POST_CPU_MAX_PACKETS.min(requester.flight_cap()).min(room)
}

/// Whether a doorbell that found the QP lock taken should wait for it
/// rather than leave the new WQEs to the transmit work: on an RC QP
/// whose requester had everything acknowledged after its last step, on
/// another CPU than the QP's transmit CPU, [`may_send_here`] will likely
/// let it send at once. In a ping-pong the lock is typically held by the
/// receive path finishing the message whose completion the poster just
/// saw. Only a user QP's doorbell waits: it is a system call, never
/// inside the driver, while a kernel ULP may post from a callback the data
/// path makes with this very lock held on this CPU. (Today the one such
/// callback that posts, a CQ's completion handler, runs with interrupts
/// off under the CQ's lock, so `post::post_send_wrs` leaves the doorbell
/// to the transmit work; this keeps a callback that ran with interrupts
/// on from spinning on its own CPU's lock.)
fn may_wait_to_send_here(qp: &RxeQp) -> bool {
    qp.ibqp.is_user() && qp.body.all_acked.load(Relaxed) && off_transmit_cpu(qp)
}

/// Whether a user RC QP's doorbell on its transmit CPU leaves what it
/// posted to the QP's transmit work there, rather than sending it within
/// the system call: the posts are a stream (no WQE this doorbell took
/// answers a message the peer sent, or follows the poster's wait for the
/// last completion: `RcState::pingpong_taken`). Sent within the call, a
/// stream's every message, its ACK and its completion (a veth and the
/// loopback path deliver on the sending CPU) would be handled on the
/// poster's CPU before the next post, the other CPU idle; left to the
/// work, the poster runs on beside it (the scheduler moves it to the idle
/// CPU). Off with the `stream_defer` parameter.
fn stream_post(qp: &RxeQp, inner: &QpInner, tx_cpu: u32) -> bool {
    stream_defer()
        && inner.rc.sending
        && !inner.rc.pingpong_taken
        && qp.body.qp_type == QpType::Rc
        && qp.ibqp.is_user()
        && crate::sys::work::this_cpu() == tx_cpu
}

/// The `stream_defer` parameter.
fn stream_defer() -> bool {
    crate::module_parameters::stream_defer.value()
}

/// What both of the above first ask: an RC QP, `post_cpu_send` on, and
/// this CPU not the QP's transmit CPU.
fn off_transmit_cpu(qp: &RxeQp) -> bool {
    qp.body.qp_type == QpType::Rc
        && crate::module_parameters::post_cpu_send.value()
        && crate::sys::work::this_cpu() != qp.body.tx_cpu()
}

/// Every request packet the requester sent is acknowledged, and it is
/// neither waiting out an RNR NAK nor failed (`QpBody::all_acked` holds
/// this after each step).
fn all_acked(requester: &Requester<SQ_WINDOW>) -> bool {
    !requester.has_unacked() && !requester.waiting_for_rnr() && !requester.is_error()
}

/// Takes new WQEs and lets the requester transmit until it stops.
pub(crate) fn pump(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
) {
    if qp.body.qp_type.is_datagram() {
        return super::datagram::pump(rxe, qp, inner, ndev, out);
    }
    if !inner.rc.sending {
        return;
    }
    take_wqes(rxe, qp, inner);
    if inner.rc.requester.may_transmit() {
        // Room for what the posted WQEs need, as far as the QP may put in
        // flight now.
        let unsent = inner.rc.requester.unsent_packets();
        out.reserve(unsent.min(room_now(qp, out)) as usize);
    }
    // Each round emits at most TX_BUDGET packets; stop when a round emits
    // none (window closed, nothing left) or the QP failed, or before a
    // round that could emit none: such a step changes nothing, and would
    // still read the clock (a clock read was three quarters of a step's
    // time in a 2-byte ping-pong's profile on the benchmark kernel) and
    // walk an empty action list. A doorbell that sent its message and a
    // receive path with nothing to send so skip it.
    loop {
        if !inner.rc.requester.may_transmit() {
            break;
        }
        let budget = tx_room(qp, out).min(TX_BUDGET);
        if budget == 0 {
            break;
        }
        let sent = step(
            rxe,
            qp,
            inner,
            ndev,
            out,
            RequesterEvent::Transmit { budget },
            None,
        );
        if sent == 0 || !inner.rc.sending {
            break;
        }
        take_wqes(rxe, qp, inner);
    }
}

/// [`tx_room`] as it stands, without marking the QP blocked at none.
fn room_now(qp: &RxeQp, out: &Outbox) -> u32 {
    let queued = u32::try_from(out.len()).unwrap_or(u32::MAX);
    let in_flight = qp.body.tx_inflight.load(SeqCst).saturating_add(queued);
    qp.body.tx_inflight_high().saturating_sub(in_flight)
}

/// How many more packets the QP may put in flight (counting those in `out`,
/// about to be sent). At none the requester stops and marks itself
/// blocked; the packet whose release brings the count below
/// [`QpBody::tx_inflight_low`](crate::qp::QpBody::tx_inflight_low)
/// restarts it.
pub(super) fn tx_room(qp: &RxeQp, out: &Outbox) -> u32 {
    let body = &qp.body;
    let queued = u32::try_from(out.len()).unwrap_or(u32::MAX);
    let used = |inflight: u32| inflight.saturating_add(queued);
    let high = body.tx_inflight_high();
    let room = room_now(qp, out);
    if room > 0 {
        return room;
    }
    body.tx_blocked.store(true, SeqCst);
    // Packets freed between the load and the store saw no blocked flag:
    // look again, and take the restart back if they already drained.
    if used(body.tx_inflight.load(SeqCst)) < high / 4 && body.tx_blocked.swap(false, SeqCst) {
        return high.saturating_sub(used(body.tx_inflight.load(SeqCst)));
    }
    0
}

/// What a send WQE of `qp` is validated against.
pub(super) fn send_limits(qp: &RxeQp, inner: &QpInner) -> SendLimits {
    let body = &qp.body;
    SendLimits {
        qp_type: match body.qp_type {
            QpType::Rc => AbiQpType::Rc,
            QpType::Uc => AbiQpType::Uc,
            QpType::Ud => AbiQpType::Ud,
            QpType::Gsi => AbiQpType::Gsi,
        },
        max_sge: body.caps.max_send_sge,
        max_inline: body.caps.max_inline_data,
        slot_size: inner.sq.geometry().elem_size(),
        origin: if qp.ibqp.is_user() {
            Origin::User
        } else {
            Origin::Kernel
        },
    }
}

/// Copies new WQEs from the SQ ring to the requester while it has room. A
/// WQE that is malformed, names memory the QP may not use, or asks for an
/// operation RC does not carry completes with an error once everything
/// before it has completed, and moves the QP to ERROR (as rxe).
fn take_wqes(rxe: &RxeDevice, qp: &RxeQp, inner: &mut QpInner) {
    let limits = send_limits(qp, inner);
    let pd = qp.ibqp.pd_id();
    if inner.sq.checked_producer(&qp.body.sq_buf).is_err() {
        // The producer index went back over WQEs already taken: a bad
        // doorbell. Their slots are never read again; the QP fails.
        super::complete::enter_error(rxe, qp, inner);
        return;
    }
    while inner.rc.sending && inner.rc.requester.outstanding_wqes() < SQ_WINDOW {
        let Some(off) = inner.sq.peek_nth(&qp.body.sq_buf, inner.rc.taken) else {
            return;
        };
        let id = inner.rc.next_id;
        let index = (id % SQ_WINDOW as u64) as usize;
        let held = inner.rc.requester.outstanding_wqes();
        // The WQE (592 bytes) is read once, straight into the slot it
        // keeps while the requester holds it, and only borrowed from there:
        // under TCG each copy of it costs about a microsecond.
        let Some(slot) = inner.rc.posted.get_mut(index) else {
            return;
        };
        if slot.live {
            // Cannot be: fewer than SQ_WINDOW WQEs are held.
            return;
        }
        if let Err(e) = PostedWqe::read_into(&qp.body.sq_buf, off, &limits, &mut slot.wqe) {
            let wr_id = qp.body.sq_slot_wr_id(off);
            return refuse(rxe, qp, inner, wr_id, WrOpcode::Send, e.wc_status());
        }
        let Some(w) = slot.wqe.as_ref() else {
            return;
        };
        let (wr_id, opcode, signaled) = (w.wr_id, w.opcode, w.signaled(qp.body.sq_sig_all));
        let rw = match check_taken(rxe, pd, id, w) {
            Err(status) => return refuse(rxe, qp, inner, wr_id, opcode, status),
            Ok(Some(rw)) => rw,
            Ok(None) => {
                if held > 0 {
                    // A local operation runs once everything before it has
                    // completed: the local invalidate fence (IBA 10.6.5.1)
                    // that rxe makes mandatory, here for REG_MR too, so
                    // no earlier request's retransmission can see its
                    // effect and completions stay in order.
                    return;
                }
                let status = local_operation(rxe, qp.key_user(), w);
                // Not taken: the slot is the ring's oldest.
                inner.sq.advance(&qp.body.sq_buf);
                if status != WcStatus::Success || signaled {
                    let cqe = Cqe::send(wr_id, qp.body.qpn, status, opcode, 0);
                    super::post_send_cqe(rxe, qp, &cqe);
                }
                if status != WcStatus::Success {
                    super::complete::enter_error(rxe, qp, inner);
                    return;
                }
                continue;
            }
        };
        if w.fenced() && held > 0 {
            // IB_SEND_FENCE (IBA 10.8.3.3): wait for earlier READ and
            // atomic requests; here for all earlier requests.
            return;
        }
        // Buffers in an on-demand-paging region whose pages are out: the
        // WQE waits in the ring until the fault work has brought them in
        // and kicks the QP (see `crate::odp`).
        match memory::wqe_resident(rxe, pd, w, writes_payload(w), qp.body.qpn) {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => return refuse(rxe, qp, inner, wr_id, opcode, WcStatus::LocProtErr),
        }
        let rc = &mut *inner.rc;
        let mut dropped = false;
        if rc
            .requester
            .post(rw, &mut |_a: RequesterAction| dropped = true)
            .is_err()
        {
            return;
        }
        if let Some(slot) = rc.posted.get_mut(index) {
            slot.live = true;
        }
        rc.next_id += 1;
        rc.taken += 1;
        let answers = matches!(
            opcode,
            WrOpcode::Send
                | WrOpcode::SendWithImm
                | WrOpcode::SendWithInv
                | WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
        );
        // Posted once every earlier WQE completed and its completion was
        // polled, with a completion to wait for: the poster waited.
        let waited = signaled && held == 0 && !qp.ibqp.send_cq().holds_unpolled();
        // A post that answers the peer's last message (taking the mark,
        // whether or not the poster also waited), or that follows the
        // poster's wait for the last completion: a ping-pong's.
        if (answers && qp.body.answer_due.swap(false, Relaxed)) || waited {
            rc.pingpong_taken = true;
        }
        if answers || (opcode == WrOpcode::RdmaRead && waited) {
            // The QP answers what it received with a message of its own,
            // or asks for the next READ once the last one has completed
            // and its completion was polled, with a completion to wait
            // for: a ping-pong, whose latency receive spreading must not
            // lengthen (see `crate::recv`). A READ taken while others are
            // outstanding is a stream of them, whose replies are spread;
            // so is one posted without polling the completions before it,
            // or an unsignaled one (nobody waits for it), though the last
            // READ has completed: a client on the CPU that answers its
            // READs finishes each before it posts the next.
            qp.body
                .rx_run
                .store(0, core::sync::atomic::Ordering::Relaxed);
        }
        if dropped {
            // `post` only acts when the requester is in ERROR.
            return;
        }
    }
}

/// Completes a WQE [`take_wqes`] refused (`wr_id`, `opcode`) with `status`
/// once every WQE before it has completed, and moves the QP to ERROR.
fn refuse(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    wr_id: u64,
    opcode: WrOpcode,
    status: WcStatus,
) {
    if inner.rc.requester.outstanding_wqes() > 0 {
        // Completions stay in order: wait for the ones before.
        return;
    }
    let cqe = Cqe::send(wr_id, qp.body.qpn, status, opcode, 0);
    // The slot is free before its completion can be seen (see
    // `RequesterAction::Complete`).
    inner.sq.advance(&qp.body.sq_buf);
    super::post_send_cqe(rxe, qp, &cqe);
    super::complete::enter_error(rxe, qp, inner);
}

/// Checks a WQE read from the send queue: its scatter/gather list against
/// the key table (`pd`'s keys, with local write access when the operation
/// writes into it) and its operation against what RC carries. The
/// requester's form of it (`id` its number), `None` for a local operation
/// (no packet), or the status it is refused with.
fn check_taken(
    rxe: &RxeDevice,
    pd: usize,
    id: u64,
    w: &PostedWqe,
) -> Result<Option<RequesterWqe>, WcStatus> {
    if memory::check_sges(rxe, pd, w, writes_payload(w)).is_err() {
        return Err(WcStatus::LocProtErr);
    }
    match requester_wqe(id, w) {
        Ok(rw) => Ok(Some(rw)),
        Err(NotTransport::Local) => Ok(None),
        Err(NotTransport::Unsupported) => Err(WcStatus::LocQpOpErr),
    }
}

/// Whether the operation writes into its scatter/gather list (READ and
/// atomic responses land there) rather than reading it.
fn writes_payload(w: &PostedWqe) -> bool {
    matches!(
        w.opcode,
        WrOpcode::RdmaRead | WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd
    )
}

/// Carries out a local operation of the QP `user` (no packet):
/// IB_WR_REG_MR and IB_WR_LOCAL_INV on fast-registration regions,
/// IB_WR_BIND_MW and LOCAL_INV of memory windows. Returns the status of
/// its completion (rxe's: `MW_BIND_ERR` for a failed bind,
/// `LOC_QP_OP_ERR` for the others).
fn local_operation(rxe: &RxeDevice, user: WindowUser, wqe: &PostedWqe) -> WcStatus {
    let done = match wqe.op {
        SendOp::RegMr {
            mr_index,
            iova,
            key,
            access,
        } => crate::mr::reg_mr(rxe, user.pd, mr_index, iova, key, access),
        SendOp::LocalInv { rkey } => crate::mr::invalidate(rxe, user, rkey),
        SendOp::BindMw {
            addr,
            length,
            mr_lkey,
            mw_rkey,
            new_rkey,
            access,
        } => {
            let req = BindRequest {
                addr,
                length,
                mr_lkey,
                mw_rkey,
                new_rkey,
                access,
            };
            return match crate::mw::bind(rxe, user, &req) {
                Ok(()) => WcStatus::Success,
                Err(_) => WcStatus::MwBindErr,
            };
        }
        _ => return WcStatus::LocQpOpErr,
    };
    match done {
        Ok(()) => WcStatus::Success,
        Err(e) => e.wc_status(Invalidation::Local),
    }
}

/// Steps the requester with `event` and carries out its actions.
/// `payload` is the payload of the response packet being processed.
/// Returns the number of packets the requester asked to transmit.
pub(crate) fn step(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    event: RequesterEvent,
    payload: Option<&[u8]>,
) -> usize {
    // Never `None` here (steps do not nest); an empty list would make the
    // step overflow and fail the QP, as it should if they ever did.
    let mut actions = inner.rc.actions.take().unwrap_or_default();
    actions.clear();
    let mut overflow = false;
    let before = *inner.rc.requester.counters();
    let now_ns = u64::try_from(inner.rc.epoch.elapsed().as_nanos()).unwrap_or(0);
    inner.rc.requester.step_at(now_ns, event, &mut |a| {
        if actions.push_within_capacity(a).is_err() {
            overflow = true;
        }
    });
    count(rxe, &before, inner.rc.requester.counters());
    qp.body
        .all_acked
        .store(all_acked(&inner.rc.requester), Relaxed);
    if overflow {
        // Lost actions would leave WQEs that never complete: fail the QP.
        pr_warn!("QP {:#x}: requester actions overflow\n", qp.body.qpn);
    }
    let mut transmits = 0;
    let mut unbuilt = false;
    for a in actions.iter() {
        if matches!(a, RequesterAction::Transmit(_)) {
            // After a packet that could not be built (no memory, no
            // route) the rest of this step's packets are not tried: they
            // would only reach the responder past a gap, and each failure
            // is one more allocation with bottom halves off. The requester
            // counts them sent; its retry timer resends from the first.
            if unbuilt {
                continue;
            }
            transmits += 1;
        }
        if run(rxe, qp, inner, ndev, out, a, payload) == Built::No {
            unbuilt = true;
        }
    }
    actions.clear();
    inner.rc.actions = Some(actions);
    if overflow {
        super::complete::enter_error(rxe, qp, inner);
    }
    // A step that could not build a packet ends the transmit round.
    if unbuilt {
        0
    } else {
        transmits
    }
}

/// Whether [`run`] built the packet a transmit action asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Built {
    /// Built and queued, or the action was not a transmit.
    Yes,
    /// Not built for lack of memory or a route: lost, as on the wire.
    No,
}

/// Adds what a requester step counted to the device's counters.
fn count(rxe: &RxeDevice, before: &RequesterCounters, after: &RequesterCounters) {
    let c = &rxe.counters;
    c.add(
        Counter::RcvdSeqErr,
        after.rcvd_seq_err.wrapping_sub(before.rcvd_seq_err),
    );
    c.add(
        Counter::RcvdRnrErr,
        after.rcvd_rnr_err.wrapping_sub(before.rcvd_rnr_err),
    );
    c.add(
        Counter::CompleterRetryErr,
        after
            .completer_retry_err
            .wrapping_sub(before.completer_retry_err),
    );
    c.add(
        Counter::RetryExceededErr,
        after
            .retry_exceeded_err
            .wrapping_sub(before.retry_exceeded_err),
    );
    c.add(
        Counter::RetryRnrExceededErr,
        after
            .retry_rnr_exceeded_err
            .wrapping_sub(before.retry_rnr_exceeded_err),
    );
}

/// Carries out one requester action; says whether a transmit's packet
/// was built.
fn run(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    action: &RequesterAction,
    payload: Option<&[u8]>,
) -> Built {
    let pd = qp.ibqp.pd_id();
    match *action {
        RequesterAction::Transmit(tx) => {
            // Borrowed, not copied: a WQE is 592 bytes, and a copy per
            // packet cost as much copying as half the payload of a
            // full-MTU packet.
            let Some(wqe) = inner.rc.posted(tx.wqe_id) else {
                return Built::Yes;
            };
            let h = &tx.header;
            let transport = if qp.body.qp_type == QpType::Uc {
                Transport::Uc
            } else {
                Transport::Rc
            };
            let Some(opcode) = h.opcode_on(transport) else {
                return Built::Yes;
            };
            // The SE bit goes on the last packet of a solicited SEND or
            // WRITE with immediate.
            let solicited_op = wqe.send_flags & send_flags::SOLICITED != 0
                && matches!(
                    wqe.opcode,
                    WrOpcode::Send
                        | WrOpcode::SendWithImm
                        | WrOpcode::SendWithInv
                        | WrOpcode::RdmaWriteWithImm
                );
            let path = Path::new(ndev, &inner.attrs, inner.src_port, inner.routes.as_ref());
            let bth = path.bth(opcode, h.psn, h.ack_req, solicited_op && h.position.ends());
            let ext = ExtHeaders {
                reth: h.reth_header(),
                atomic_eth: h.atomic_header(),
                feth: h.flush_header(),
                immdt: h.imm.map(|imm| ImmDt { imm }),
                ieth: h.invalidate_rkey.map(|rkey| Ieth { rkey }),
                ..ExtHeaders::default()
            };
            let len = h.payload_len as usize;
            let mut paged_out = false;
            let lent = lend_payload(len)
                .then(|| memory::gather_page(rxe, pd, wqe, tx.payload_offset, len))
                .flatten();
            let sent = match lent {
                Some(span) => path.emit_page(rxe, out, &bth, &ext, span),
                None => path.emit(rxe, out, &bth, &ext, len, |buf| {
                    memory::gather(rxe, pd, wqe, tx.payload_offset, buf)
                        .map_err(|e| paged_out = e == AccessError::NotResident)
                }),
            };
            match sent {
                Ok(()) => trace::req_tx(qp.body.qpn, h.psn.get(), opcode.as_u8(), tx.retransmit),
                Err(BuildFailure::Payload) if paged_out => {
                    // An on-demand-paging buffer lost its pages after the
                    // WQE was taken (the process's mappings changed): the
                    // packet is not sent, as if lost, and the retry timer
                    // sends it again once the fault work has them back.
                    rxe.counters.inc(Counter::SendErr);
                }
                Err(BuildFailure::Payload) => {
                    // The memory went away after the WQE was checked.
                    super::complete::enter_error(rxe, qp, inner);
                }
                Err(BuildFailure::Dropped) => return Built::No,
            }
        }
        RequesterAction::PlaceReadData {
            wqe_id,
            offset,
            len,
        } => {
            let Some(wqe) = inner.rc.posted(wqe_id) else {
                return Built::Yes;
            };
            let data = payload.and_then(|p| p.get(..len as usize));
            let placed = match (&wqe.payload, data) {
                (crate::abi::send_wqe::Payload::Sges(sges), Some(data)) => {
                    memory::scatter(rxe, pd, sges, offset, data).is_ok()
                }
                _ => false,
            };
            if !placed {
                super::complete::enter_error(rxe, qp, inner);
            }
        }
        RequesterAction::Complete(c) => {
            let rc: &mut RcState = &mut inner.rc;
            let slot = (c.wqe_id % SQ_WINDOW as u64) as usize;
            let Some(posted) = rc.posted.get_mut(slot) else {
                return Built::Yes;
            };
            // What the completion needs, read in place; the slot is then
            // emptied without moving the WQE out.
            let Some(wqe) = posted.wqe() else {
                return Built::Yes;
            };
            let (wr_id, opcode, flags) = (wqe.wr_id, wqe.opcode, wqe.send_flags);
            if let (Some(orig), crate::abi::send_wqe::Payload::Sges(sges)) =
                (c.atomic_orig, &wqe.payload)
            {
                let _ = memory::scatter(rxe, pd, sges, 0, &orig.to_ne_bytes());
            }
            posted.live = false;
            rc.taken = rc.taken.saturating_sub(1);
            let signaled = qp.body.sq_sig_all
                || flags & send_flags::SIGNALED != 0
                || c.status != crate::proto::transport::CompletionStatus::Success;
            let success = c.status == crate::proto::transport::CompletionStatus::Success;
            if success
                && matches!(
                    opcode,
                    WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv
                )
            {
                rxe.counters.inc(Counter::RdmaSends);
            }
            // The SQ slot is released before the completion is posted: a
            // process that polls the completion and posts again at once
            // must find the slot free (librxe checks the consumer index;
            // with one WR in the SQ, as `ib_read_lat` has, it saw the queue
            // full and failed the post). The WQE was taken, so its slot is
            // released whatever the producer index says now; one moved back
            // over it is a bad doorbell.
            let rewound = inner.sq.checked_producer(&qp.body.sq_buf).is_err();
            inner.sq.release_taken(&qp.body.sq_buf);
            if signaled {
                let cqe = Cqe::send(wr_id, qp.body.qpn, wc_status(c.status), opcode, c.byte_len);
                super::post_send_cqe(rxe, qp, &cqe);
            }
            if rewound {
                super::complete::enter_error(rxe, qp, inner);
            }
        }
        RequesterAction::ArmRetryTimer { usecs } => out.arm_retry_timer(usecs),
        RequesterAction::DisarmRetryTimer => out.disarm_retry_timer(),
        RequesterAction::ArmRnrTimer { usecs } => out.arm_rnr_timer(usecs),
        RequesterAction::DropResponse { .. } => {}
        RequesterAction::GoBack { from, cause } => {
            let cause = match cause {
                GoBackCause::Nak => trace::GoBackCause::Nak,
                GoBackCause::Timeout => trace::GoBackCause::Timeout,
                GoBackCause::Rnr => trace::GoBackCause::Rnr,
                GoBackCause::Probe => trace::GoBackCause::Probe,
                GoBackCause::RttTimeout => trace::GoBackCause::RttTimeout,
            };
            trace::req_go_back(qp.body.qpn, from.get(), cause);
        }
        RequesterAction::EnterError { status } => {
            match status {
                CompletionStatus::RetryExceededError => trace::retry_exhausted(qp.body.qpn, false),
                CompletionStatus::RnrRetryExceededError => {
                    trace::retry_exhausted(qp.body.qpn, true)
                }
                _ => {}
            }
            super::complete::enter_error(rxe, qp, inner)
        }
    }
    Built::Yes
}
