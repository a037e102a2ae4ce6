// SPDX-License-Identifier: GPL-2.0

//! The completer's inputs (response packets and the retry and RNR timers)
//! and the way out of service: ERROR, with every outstanding and queued work
//! request flushed to its CQ.

use super::{memory, send, wire::Outbox, SQ_WINDOW};
use crate::{
    abi::{cqe::Completion as Cqe, send_wqe::Payload},
    device::RxeDevice,
    proto::{
        packet::Packet,
        qp_attr::QpState,
        requester::{RequesterEvent, ResponseOp, ResponsePacket},
    },
    qp::{QpInner, RxeQp},
    sys::net::NetDevice,
};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A response packet (ACK, NAK, READ response, atomic ACK) for the QP's
/// requester: completes what it acknowledges and sends what the window now
/// allows.
pub(crate) fn on_response(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    pkt: &Packet<'_>,
) {
    if !inner.rc.sending {
        return;
    }
    let Some(resp) = ResponsePacket::from_headers(
        pkt.opcode,
        &pkt.bth,
        pkt.ext.aeth,
        pkt.ext.atomic_ack_eth,
        pkt.payload.len() as u32,
    ) else {
        return;
    };
    // rxe's `ack_deferred`: response packets handed to the completer.
    rxe.counters.inc(crate::counters::Counter::AckDeferred);
    if !read_data_resident(rxe, qp, inner, &resp, pkt.payload.len()) {
        // Its READ's buffer is in an on-demand-paging region whose pages
        // went since the WQE was taken: dropped as if lost (the next
        // response re-issues the READ from here, or the retry timer
        // does), while the fault work brings the pages back.
        rxe.counters.inc(crate::counters::Counter::SendErr);
        return;
    }
    if let Some(aeth) = pkt.ext.aeth {
        crate::sys::trace::comp_ack(
            qp.body.qpn,
            resp.psn.get(),
            pkt.opcode.as_u8(),
            aeth.syndrome.to_u8(),
            aeth.msn,
        );
    }
    let could_transmit = inner.rc.requester.may_transmit();
    let held = inner.rc.requester.outstanding_wqes();
    send::step(
        rxe,
        qp,
        inner,
        ndev,
        out,
        RequesterEvent::Response(resp),
        Some(pkt.payload),
    );
    let tx_cpu = qp.body.tx_cpu();
    if crate::sys::work::this_cpu() == tx_cpu {
        super::transmit_or_kick(rxe, qp, inner, ndev, out, true, tx_cpu);
    } else if (!could_transmit && inner.rc.requester.may_transmit())
        || (held >= SQ_WINDOW && inner.rc.requester.outstanding_wqes() < held)
    {
        // Off the transmit CPU the transmit work is woken only when this
        // response let the requester send (a window slot, a READ credit,
        // an RTT that widened the flight), or completed a WQE while the
        // requester held all it can (more may wait in the send queue, to
        // be taken by the transmit work). While the requester could send
        // already, whatever let it woke the work, which sends until it
        // cannot. A READ stream's middle responses change nothing it could
        // use, and a wake-up for each of them took the QP lock on the
        // transmit CPU while this CPU placed the next one.
        RESPONSE_WAKEUPS.fetch_add(1, Relaxed);
        // The reply work must take the QP lock and pump, not leave the
        // replies to a busy receive work (`super::relay`).
        qp.body.reply_pump_wanted.store(true, Relaxed);
        super::transmit_or_kick(rxe, qp, inner, ndev, out, true, tx_cpu);
    }
}

/// Wake-ups of a QP's transmit work from the receive path after a response
/// packet, off the transmit CPU (`rdma_rxe/response_wakeups` in debugfs).
pub(crate) static RESPONSE_WAKEUPS: AtomicU64 = AtomicU64::new(0);

/// Whether a READ response's payload can be placed without waiting for
/// pages (only on-demand-paging regions can say no; a fault is then asked
/// for, which kicks the QP when done).
fn read_data_resident(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &QpInner,
    resp: &ResponsePacket,
    len: usize,
) -> bool {
    if len == 0 || !rxe.has_odp_regions() || !matches!(resp.op, ResponseOp::ReadResponse(_)) {
        return true;
    }
    let Some((wqe_id, offset)) = inner.rc.requester.read_response_target(resp.psn) else {
        return true;
    };
    let Some(Payload::Sges(sges)) = inner.rc.posted(wqe_id).map(|w| &w.payload) else {
        return true;
    };
    let pd = qp.ibqp.pd_id();
    memory::sges_resident(rxe, pd, sges, offset, len as u32, true, Some(qp.body.qpn)) != Ok(false)
}

/// Which requester timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// The retransmission timer (local ACK timeout).
    Retry,
    /// The RNR back-off timer.
    Rnr,
}

/// A QP timer fired (softirq context).
///
/// Before a retry timer expiry the requester learns how many of the QP's
/// packets have not yet left this host (still in the loopback queue, a
/// local receiver's backlog, or the device's queue: its in-flight count),
/// plus the datagrams waiting in this host's receive backlogs (a local
/// peer's ACK may be behind them): no acknowledgement can have come for
/// them, and it puts the expiry off rather than resend
/// (`RequesterEvent::LocalQueue`).
///
/// The expiry only decides (go back, probe, fail); the packets it calls
/// for are built by the QP's transmit work, in a task. Built here, a
/// window of packets per expiry would run in the timer softirq, which
/// runs every timer that expired meanwhile before it returns: with a few
/// QPs whose expiries each take longer than the others' timeouts (a slow
/// or loaded CPU, as under a debug kernel), it never would.
pub(crate) fn timer_expired(rxe: &RxeDevice, qp: &RxeQp, ndev: &NetDevice, kind: TimerKind) {
    let mut out = Outbox::new();
    {
        let mut guard = qp.body.state.lock();
        let inner = &mut *guard;
        if inner.rc.sending {
            if kind == TimerKind::Retry {
                let packets = qp
                    .body
                    .tx_inflight
                    .load(core::sync::atomic::Ordering::SeqCst)
                    .saturating_add(crate::recv::backlog_waiting());
                let event = RequesterEvent::LocalQueue { packets };
                send::step(rxe, qp, inner, ndev, &mut out, event, None);
            }
            let event = match kind {
                TimerKind::Retry => RequesterEvent::RetryTimerExpired,
                TimerKind::Rnr => RequesterEvent::RnrTimerExpired,
            };
            send::step(rxe, qp, inner, ndev, &mut out, event, None);
            super::kick(qp);
        }
    }
    out.send(rxe, qp);
}

/// Moves the QP to ERROR: the requester's WQEs, the SQ entries not yet
/// taken, the receive WQE being filled and the RQ are flushed (completions
/// with `WR_FLUSH_ERR`); an SRQ is shared and keeps its WQEs, and the QP
/// raises `IB_EVENT_QP_LAST_WQE_REACHED` instead: it will take no more of
/// them (IBTA 11.5.3; `ib_drain_qp` of a QP on an SRQ waits for it).
pub(crate) fn enter_error(rxe: &RxeDevice, qp: &RxeQp, inner: &mut QpInner) {
    inner.attrs.state = QpState::Err;
    qp.body.set_post_state(QpState::Err);
    qp.body.retry_timer.cancel();
    qp.body.rnr_timer.cancel();
    let rc = &mut *inner.rc;
    rc.sending = false;
    rc.receiving = false;
    // The requester's WQEs, oldest first: flushed here rather than through
    // its actions (it is already in ERROR when called from one of them).
    let held = rc.requester.outstanding_wqes();
    rc.requester.set_error(&mut |_a| {});
    rc.responder.set_error();
    rc.replies.clear();
    let first_id = rc.next_id.wrapping_sub(held as u64);
    for i in 0..held as u64 {
        let slot = (first_id.wrapping_add(i) % SQ_WINDOW as u64) as usize;
        if let Some(wr_id) = rc.posted.get_mut(slot).and_then(super::PostedSlot::release) {
            // Slot released before the completion is visible, as always.
            inner.sq.release_taken(&qp.body.sq_buf);
            super::post_send_cqe(rxe, qp, &Cqe::flush(wr_id, qp.body.qpn));
        }
    }
    inner.rc.taken = 0;
    flush_sq(rxe, qp, inner);
    flush_rq(rxe, qp, inner);
    if qp.ibqp.srq().is_some() && !inner.rc.last_wqe_raised {
        inner.rc.last_wqe_raised = true;
        qp.ibqp.last_wqe_reached();
    }
}

/// Flushes every SQ entry not taken by the requester (a QP in ERROR).
pub(crate) fn flush_sq(rxe: &RxeDevice, qp: &RxeQp, inner: &mut QpInner) {
    if inner.sq.checked_producer(&qp.body.sq_buf).is_err() {
        // The producer went back over entries already seen: none of the
        // slots it now shows can be trusted to be posted.
        return;
    }
    // Bounded by the ring size: user space may keep producing meanwhile.
    for _ in 0..inner.sq.geometry().slots() {
        let Some(off) = inner.sq.peek_nth(&qp.body.sq_buf, inner.rc.taken) else {
            break;
        };
        let wr_id = qp.body.sq_slot_wr_id(off);
        // Slot released before the completion is visible, as always.
        let advanced = inner.sq.advance(&qp.body.sq_buf);
        super::post_send_cqe(rxe, qp, &Cqe::flush(wr_id, qp.body.qpn));
        if !advanced {
            break;
        }
    }
}

/// Flushes the receive WQEs this QP took (the one in progress, one taken
/// ahead) and, without an SRQ, every RQ entry.
pub(crate) fn flush_rq(rxe: &RxeDevice, qp: &RxeQp, inner: &mut QpInner) {
    // The WQE being filled, then one taken for the next message: both are
    // out of their ring (an SRQ's included) and this QP's to complete.
    // A flush that finds the CQ full is lost like any other completion
    // (the CQ raised its error event once).
    for wqe in inner.rc.recv.take_both().into_iter().flatten() {
        let _ = super::post_recv_cqe(rxe, qp, &Cqe::flush(wqe.wr_id, qp.body.qpn), false, None);
    }
    inner.rc.recv_failed = None;
    let Some(rq) = inner.rq.as_mut() else {
        return;
    };
    for _ in 0..rq.ring.geometry().slots() {
        let Some(off) = rq.ring.peek(&rq.buf) else {
            break;
        };
        let mut b = [0u8; 8];
        rq.buf.read_bytes(off, &mut b);
        let advanced = rq.ring.advance(&rq.buf);
        let _ = super::post_recv_cqe(
            rxe,
            qp,
            &Cqe::flush(u64::from_ne_bytes(b), qp.body.qpn),
            false,
            None,
        );
        if !advanced {
            break;
        }
    }
}
