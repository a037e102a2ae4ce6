// SPDX-License-Identifier: GPL-2.0

//! Replies relayed from the receive work to the reply work: when a QP's
//! reply work (on its transmit CPU) is woken only to send the
//! responder's replies and finds the QP's receive work busy with the
//! QP's backlog on another CPU, it leaves the replies to that work
//! instead of spinning on the QP lock the work takes for each packet.
//! The receive work builds them after its current packet, under the QP
//! lock, into the QP's relay, and the reply work sends the relay without
//! the lock. Packets still leave from the transmit CPU only, in the
//! order they were built: whatever transmits under the QP lock on the
//! transmit CPU sends the relay's packets before its own
//! ([`take_relayed`]), and the reply work, with bottom halves off, runs
//! between them.
//!
//! In a 64 KiB `ib_send_bw` the spin on the lock was 38% of the reply
//! work's samples, 7% of its CPU's (Documentation/benchmarks.md).

use super::{respond, wire::Outbox};
use crate::{
    device::RxeDevice,
    qp::RxeQp,
    sys::{net::NetDevice, work::with_bh_off},
};
use core::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, SeqCst},
};

/// Times the receive work built a QP's replies for its reply work
/// (`rdma_rxe/replies_relayed` in debugfs).
pub(crate) static REPLIES_RELAYED: AtomicU64 = AtomicU64::new(0);

/// The QP's reply work, on its transmit CPU: sends what the receive work
/// relayed, then either leaves the replies to the receive work (see the
/// module documentation) or transmits as the transmit work does.
pub(crate) fn reply_work(qp: &RxeQp) {
    with_bh_off(|bh| {
        let rxe = qp.ibqp.device();
        send_relayed(rxe, qp);
        let body = &qp.body;
        // Woken for the requester too (a response let it send): that is
        // the transmit CPU's to build, lock or not.
        if !body.reply_pump_wanted.load(Relaxed)
            && crate::module_parameters::reply_relay.value()
            && body.rx_working.load(SeqCst)
        {
            // Paired with `rx_work_done`: either it sees this request,
            // or this sees the work done and takes the lock here.
            body.relay_wanted.store(true, SeqCst);
            if body.rx_working.load(SeqCst) {
                return;
            }
        }
        body.reply_pump_wanted.store(false, Relaxed);
        if let Some(ndev) = rxe.ib.netdev_bh(bh) {
            super::transmit(rxe, qp, ndev);
        }
    });
}

/// Sends the packets the receive work relayed (bottom halves off, on the
/// QP's transmit CPU), without the QP lock.
fn send_relayed(rxe: &RxeDevice, qp: &RxeQp) {
    let relayed = core::mem::replace(&mut *qp.body.relay.lock(), Outbox::new());
    if relayed.len() != 0 {
        relayed.send(rxe, qp);
    }
}

/// Moves the relayed packets into `out`, ahead of what the caller, on the
/// QP's transmit CPU under the QP lock, is about to build.
pub(crate) fn take_relayed(qp: &RxeQp, out: &mut Outbox) {
    let mut relay = qp.body.relay.lock();
    if relay.len() != 0 {
        out.take_packets(&mut relay);
    }
}

/// Whether the relay holds packets not yet sent.
pub(crate) fn relay_pending(qp: &RxeQp) -> bool {
    qp.body.relay.lock().len() != 0
}

/// The receive work starts on the QP's backlog.
pub(crate) fn rx_work_started(qp: &RxeQp) {
    qp.body.rx_working.store(true, SeqCst);
}

/// Called by the receive work after each packet it processed, bottom
/// halves off: builds the replies the reply work left to it, if it did.
pub(crate) fn after_packet(rxe: &RxeDevice, qp: &RxeQp, ndev: &NetDevice) {
    let body = &qp.body;
    if !body.relay_wanted.load(Relaxed) || !body.relay_wanted.swap(false, SeqCst) {
        return;
    }
    let relayed = {
        let mut guard = body.state.lock();
        let inner = &mut *guard;
        let mut relay = body.relay.lock();
        if inner.rc.receiving && !inner.rc.replies.is_empty() {
            // Within the QP's room in flight, the relay counted: what does
            // not fit goes when packets drain (the transmit work).
            respond::send_replies(rxe, qp, inner, ndev, &mut relay);
        }
        relay.len() != 0
    };
    // Nothing built (none owed, or no room): nothing to wake the reply
    // work for, which would only leave the replies here again.
    if relayed {
        REPLIES_RELAYED.fetch_add(1, Relaxed);
        body.reply_work.queue_on_highpri(body.tx_cpu());
    }
}

/// The receive work is done with the QP's backlog for now: a reply work
/// that left the replies to it after its last packet runs again.
pub(crate) fn rx_work_done(qp: &RxeQp) {
    let body = &qp.body;
    body.rx_working.store(false, SeqCst);
    if body.relay_wanted.swap(false, SeqCst) {
        body.reply_work.queue_on_highpri(body.tx_cpu());
    }
}

/// The QP was reset: what its relay holds belongs to its old connection.
pub(crate) fn clear(qp: &RxeQp) {
    *qp.body.relay.lock() = Outbox::new();
}
