// SPDX-License-Identifier: GPL-2.0

//! The receive side of an RC QP, in softirq: a request packet goes through
//! the responder (PSN check, reassembly, access checks), and what it decides
//! is carried out at once: payload placed into the receive WQE's buffers or
//! the rkey's region, receive completions posted, ACKs, NAKs and READ or
//! atomic responses built.

use super::{
    memory, wc_status,
    wire::{lend_payload, Outbox, Path},
    RcState,
};
use crate::proto::transport::RequestPacket;
use crate::{
    abi::{
        cqe::{Completion as Cqe, CqeEx},
        recv_wqe::{RecvLimits, RecvWqe},
        values::{access, WcStatus},
    },
    counters::Counter,
    device::RxeDevice,
    proto::{
        access::Invalidation,
        aeth::{Aeth, NakCode, Syndrome},
        headers::AtomicAckEth,
        opcode::Position,
        opcode::{OpFamily, Opcode},
        packet::{ExtHeaders, Packet},
        psn::Psn,
        qp_attr::QpType,
        responder::{
            replies::{OnePacket, Reply, ReplyPacket},
            AccessError, MemoryTarget, PlaceTarget, ResponderAction, ResponderEnv,
        },
        translate::RequestHeaders,
        transport::{AtomicArgs, AtomicOp, CompletionStatus, RemoteAccess, RemoteRange},
    },
    qp::{QpInner, RxeQp, WorkQueue},
    sys::{
        net::NetDevice,
        trace::{self, PsnVerdict, ResponderReply},
    },
};
use core::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use kernel::prelude::*;

/// Most actions the responder produces for one packet.
const ACTIONS_MAX: usize = 8;

/// What the responder asks of the driver while deciding on one packet.
struct Env<'a> {
    rxe: &'a RxeDevice,
    qp: &'a RxeQp,
    rq: &'a mut Option<WorkQueue>,
    next: &'a mut Option<RecvWqe>,
    /// The receive WQE of the message in progress (`RcState::recv`).
    current: Option<&'a RecvWqe>,
}

impl ResponderEnv for Env<'_> {
    /// The look-ahead takes the WQE out of its ring (see [`take_recv`]):
    /// the responder consumes it in the same step whenever it finds one, and
    /// once taken no other QP on the same SRQ can have it too.
    fn receive_wqe(&mut self) -> Option<u32> {
        if self.next.is_none() {
            take_recv(self.qp, self.rq, self.next);
        }
        self.next.as_ref().map(|w| w.total_len)
    }

    fn check_access(&mut self, range: &RemoteRange, want: RemoteAccess) -> Result<(), AccessError> {
        let need = access_bits(want);
        memory::check_remote(
            self.rxe,
            self.qp.key_user(),
            range.rkey,
            need,
            range.va,
            u64::from(range.len),
        )
        .map_err(|_| AccessError)
    }

    fn execute_atomic(&mut self, args: &AtomicArgs) -> Result<u64, AccessError> {
        let op = args.op;
        let need = match op {
            AtomicOp::Write { .. } => access::REMOTE_WRITE,
            _ => access::REMOTE_ATOMIC,
        };
        memory::remote_atomic(
            self.rxe,
            self.qp.key_user(),
            args.rkey,
            need,
            args.va,
            move |orig| match op {
                AtomicOp::CompareSwap { compare, swap } => {
                    if orig == compare {
                        swap
                    } else {
                        orig
                    }
                }
                AtomicOp::FetchAdd { add } => orig.wrapping_add(add),
                AtomicOp::Write { value } => value,
            },
        )
        .map_err(|_| AccessError)
    }

    fn flush(&mut self, range: &RemoteRange, want: RemoteAccess) -> Result<(), AccessError> {
        memory::remote_flush(
            self.rxe,
            self.qp.key_user(),
            range.rkey,
            access_bits(want),
            range.va,
            u64::from(range.len),
        )
        .map_err(|_| AccessError)
    }

    /// On-demand-paging regions (see [`crate::odp`]): a SEND's bytes of
    /// the receive WQE (the one just taken, else the message's), a WRITE's
    /// or READ's range, an atomic's word.
    fn resident(&mut self, target: &MemoryTarget) -> Result<bool, AccessError> {
        match *target {
            MemoryTarget::Receive { offset, len } => {
                let Some(wqe) = self.next.as_ref().or(self.current) else {
                    return Ok(true);
                };
                let pd = self.qp.ibqp.pd_id();
                // Buffers that cannot come in fail their placement, as any
                // bad receive buffer does.
                Ok(
                    memory::sges_resident(self.rxe, pd, &wqe.sges, offset, len, true, None)
                        .unwrap_or(true),
                )
            }
            MemoryTarget::Remote { range, write } => memory::remote_resident(
                self.rxe,
                self.qp.key_user(),
                range.rkey,
                range.va,
                u64::from(range.len),
                write,
            )
            .map_err(|_| AccessError),
        }
    }
}

/// The region access bits a remote operation needs.
fn access_bits(want: RemoteAccess) -> u32 {
    match want {
        RemoteAccess::Read => access::REMOTE_READ,
        RemoteAccess::Write => access::REMOTE_WRITE,
        RemoteAccess::Atomic => access::REMOTE_ATOMIC,
        RemoteAccess::Flush { global, persistent } => {
            (if global { access::FLUSH_GLOBAL } else { 0 })
                | (if persistent {
                    access::FLUSH_PERSISTENT
                } else {
                    0
                })
        }
    }
}

/// Takes the receive WQE at the head of the QP's RQ or SRQ out of its ring:
/// the slot is copied and the consumer index advanced in one step under the
/// ring's lock (the QP's lock, held by the caller, for an RQ; the SRQ's own
/// for an SRQ, which QPs on other CPUs consume from at the same time), so
/// no two messages ever land in one WQE. A WQE the ring holds but that does
/// not validate gets no room, so the message completes with a length error
/// instead of stalling the QP. Raises the SRQ limit event when an armed SRQ
/// falls below its limit.
///
/// The WQE is read straight into `dst` (over 500 bytes: each move of it
/// costs about a microsecond under TCG), which is `None` if the ring is
/// empty.
pub(super) fn take_recv(qp: &RxeQp, rq: &mut Option<WorkQueue>, dst: &mut Option<RecvWqe>) {
    let (read, limit_reached) = match (rq.as_mut(), qp.ibqp.srq()) {
        (Some(rq), _) => {
            let Some(off) = rq.ring.peek(&rq.buf) else {
                *dst = None;
                return;
            };
            let limits = RecvLimits {
                max_sge: qp.body.caps.max_recv_sge,
                slot_size: rq.ring.geometry().elem_size(),
            };
            let read = RecvWqe::read_into(&rq.buf, off, &limits, dst)
                .map_err(|_| slot_wr_id(&rq.buf, off));
            rq.ring.advance(&rq.buf);
            (read, false)
        }
        (None, Some(srq)) => {
            let mut guard = srq.body.state.lock();
            let st = &mut *guard;
            let Some(off) = st.ring.peek(&st.buf) else {
                *dst = None;
                return;
            };
            let limits = RecvLimits {
                max_sge: srq.body.max_sge,
                slot_size: st.ring.geometry().elem_size(),
            };
            let read = RecvWqe::read_into(&st.buf, off, &limits, dst)
                .map_err(|_| slot_wr_id(&st.buf, off));
            st.ring.advance(&st.buf);
            let reached = st.limit != 0 && st.ring.count(&st.buf) < st.limit;
            if reached {
                st.limit = 0;
            }
            (read, reached)
        }
        (None, None) => {
            *dst = None;
            return;
        }
    };
    if limit_reached {
        if let Some(srq) = qp.ibqp.srq() {
            srq.ibsrq.limit_reached();
        }
    }
    if let Err(wr_id) = read {
        *dst = Some(RecvWqe {
            wr_id,
            sges: Default::default(),
            total_len: 0,
        });
    }
}

fn slot_wr_id<B: crate::abi::queue::SharedBuf + ?Sized>(buf: &B, off: usize) -> u64 {
    let mut b = [0u8; 8];
    buf.read_bytes(off, &mut b);
    u64::from_ne_bytes(b)
}

/// The receive WQEs an RC or UD QP's responder holds out of its RQ or
/// SRQ: the one the message in progress fills (the current one) and the
/// one the look-ahead took for the next message.
///
/// A WQE is over 500 bytes, and each move of one cost about a
/// microsecond under TCG (`memcpy` of 536 bytes four times per received
/// SEND in `rc::receive`, in a profile of `ib_send_lat` 2 B): the two
/// stay where [`take_recv`] read them, and a message that starts makes
/// the look-ahead's WQE current by flipping which slot is which.
///
/// # Invariants
///
/// `current` is 0 or 1; `slots[current]` is the current WQE,
/// `slots[1 - current]` the look-ahead's.
pub(crate) struct RecvSlots {
    slots: [Option<RecvWqe>; 2],
    current: usize,
}

impl RecvSlots {
    /// Neither WQE taken.
    pub(crate) const fn new() -> Self {
        RecvSlots {
            slots: [None, None],
            current: 0,
        }
    }

    /// The WQE the message in progress fills.
    pub(crate) fn current(&self) -> Option<&RecvWqe> {
        self.slots[self.current].as_ref()
    }

    /// The look-ahead's slot, to read a WQE into, and the current WQE.
    fn next_slot_and_current(&mut self) -> (&mut Option<RecvWqe>, Option<&RecvWqe>) {
        let [a, b] = &mut self.slots;
        if self.current == 0 {
            (b, a.as_ref())
        } else {
            (a, b.as_ref())
        }
    }

    /// The current WQE's slot, to read a WQE into when the look-ahead
    /// took none.
    fn current_slot(&mut self) -> &mut Option<RecvWqe> {
        &mut self.slots[self.current]
    }

    /// The message in progress is done with its WQE.
    pub(crate) fn finish_current(&mut self) {
        self.slots[self.current] = None;
    }

    /// A message starts: the look-ahead's WQE, if it took one, becomes the
    /// current one (the old current slot, empty by then, is the
    /// look-ahead's now). Returns whether it had one.
    fn start_from_next(&mut self) -> bool {
        let next = 1 - self.current;
        if self.slots[next].is_none() {
            return false;
        }
        self.slots[self.current] = None;
        self.current = next;
        true
    }

    /// Puts back a WQE taken for the next message but not used (a UD
    /// datagram dropped before its placement).
    pub(crate) fn put_back_next(&mut self, wqe: RecvWqe) {
        self.slots[1 - self.current] = Some(wqe);
    }

    /// Both WQEs, the current one first, taken out to be flushed.
    pub(crate) fn take_both(&mut self) -> [Option<RecvWqe>; 2] {
        let current = self.slots[self.current].take();
        [current, self.slots[1 - self.current].take()]
    }

    /// Forgets both (QP reset).
    pub(crate) fn clear(&mut self) {
        self.slots = [None, None];
        self.current = 0;
    }
}

/// The receive WQE for the next message (a UD datagram, which needs it for
/// this packet only): the one the look-ahead took, else the next one
/// taken from the RQ/SRQ.
pub(super) fn next_recv(qp: &RxeQp, inner: &mut QpInner) -> Option<RecvWqe> {
    let QpInner { rq, rc, .. } = inner;
    let (next, _) = rc.recv.next_slot_and_current();
    if next.is_none() {
        take_recv(qp, rq, next);
    }
    next.take()
}

/// Makes the receive WQE for the message now starting (the look-ahead's)
/// the one it fills, taken straight into place when the look-ahead has
/// none.
fn start_recv(qp: &RxeQp, inner: &mut QpInner) {
    let QpInner { rq, rc, .. } = inner;
    let rc = &mut **rc;
    if !rc.recv.start_from_next() {
        take_recv(qp, rq, rc.recv.current_slot());
    }
}

/// A request packet for the QP's responder.
pub(crate) fn on_request(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    pkt: &Packet<'_>,
) {
    if !inner.rc.receiving {
        return;
    }
    let headers = RequestHeaders {
        reth: pkt.ext.reth,
        atomic: pkt.ext.atomic_eth,
        imm: pkt.ext.immdt,
        ieth: pkt.ext.ieth,
        feth: pkt.ext.feth,
        // ATOMIC_WRITE's value is its payload, stored as its bytes are.
        atomic_write: pkt
            .payload
            .get(..8)
            .filter(|_| pkt.opcode.family() == OpFamily::AtomicWrite)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes),
    };
    let Some(req) =
        RequestPacket::from_headers(pkt.opcode, &pkt.bth, &headers, pkt.payload.len() as u32)
    else {
        return;
    };
    let mut actions: [Option<ResponderAction>; ACTIONS_MAX] = [None; ACTIONS_MAX];
    let mut n = 0;
    let before = *inner.rc.responder.counters();
    let expected_psn = inner.rc.responder.expected_psn();
    {
        let QpInner { rq, rc, .. } = inner;
        let RcState {
            responder, recv, ..
        } = &mut **rc;
        let (next, current) = recv.next_slot_and_current();
        let mut env = Env {
            rxe,
            qp,
            rq,
            next,
            current,
        };
        responder.step(&req, &mut env, &mut |a| {
            if let Some(slot) = actions.get_mut(n) {
                *slot = Some(a);
            }
            n += 1;
        });
    }
    if req.psn == expected_psn
        && pkt.opcode.ends_message()
        && matches!(pkt.opcode.family(), OpFamily::Send | OpFamily::Write)
    {
        // A message of the peer's, whole: a post now answers it.
        qp.body.answer_due.store(true, Relaxed);
    }
    let after = inner.rc.responder.counters();
    let duplicate = after.duplicate_request != before.duplicate_request;
    let c = &rxe.counters;
    c.add(
        Counter::DuplicateRequest,
        after
            .duplicate_request
            .wrapping_sub(before.duplicate_request),
    );
    c.add(
        Counter::OutOfSeqRequest,
        after
            .out_of_seq_request
            .wrapping_sub(before.out_of_seq_request),
    );
    c.add(
        Counter::SendRnrErr,
        after.send_rnr_err.wrapping_sub(before.send_rnr_err),
    );
    trace_psn_decision(qp.body.qpn, &req, expected_psn, &actions);
    if n > ACTIONS_MAX {
        pr_warn!("QP {:#x}: responder actions overflow\n", qp.body.qpn);
        super::complete::enter_error(rxe, qp, inner);
        return;
    }
    for a in actions.iter().flatten() {
        if !inner.rc.receiving {
            // An action failed the QP (a lost completion): nothing after it
            // (an ACK above all) may happen.
            break;
        }
        match a {
            ResponderAction::SendReadResponses(reply) if duplicate => {
                if !inner.rc.replies.push_replay(*reply) {
                    rxe.counters.inc(Counter::SendErr);
                }
            }
            _ => run(rxe, qp, inner, ndev, out, pkt, a),
        }
    }
    if core::mem::take(&mut inner.rc.fail_after_replies) && inner.rc.receiving {
        send_final_replies(rxe, qp, inner, ndev, out);
        super::complete::enter_error(rxe, qp, inner);
        return;
    }
    if !inner.rc.replies.is_empty() {
        let tx_cpu = qp.body.tx_cpu();
        if may_reply_here(qp, inner, out, tx_cpu) {
            REPLIES_FROM_RECEIVE_CPU.fetch_add(1, Relaxed);
            send_replies(rxe, qp, inner, ndev, out);
        } else {
            super::transmit_or_kick(rxe, qp, inner, ndev, out, true, tx_cpu);
        }
    }
}

/// Most reply packets the receive path sends from its own CPU
/// ([`may_reply_here`]): a READ response of up to 16 KiB at path MTU 1024.
const RECV_CPU_REPLY_MAX_PACKETS: u32 = 16;

/// Replies sent from the CPU that received the request, not the QP's
/// transmit CPU ([`may_reply_here`]; `rdma_rxe/replies_from_receive_cpu`
/// in debugfs).
pub(crate) static REPLIES_FROM_RECEIVE_CPU: AtomicU64 = AtomicU64::new(0);

/// Whether the replies the QP owes may leave from this CPU, the one that
/// received the request, although it is not the QP's transmit CPU
/// (`tx_cpu`): none of the QP's packets is in flight (every one it handed
/// to the stack was freed, so none waits in a backlog for these to
/// overtake), and all of them fit in this call (at most
/// [`RECV_CPU_REPLY_MAX_PACKETS`], within the in-host bound), so none is
/// left for the transmit CPU to send while these may still wait here;
/// and the QP's receive backlog is empty: a request its receive work
/// processes (see `crate::recv`) is part of a stream spread over two
/// CPUs, whose ACKs sent from there would bring their requester's
/// processing of them to that CPU too, against its transmit work (64 KiB
/// `ib_write_bw` and `ib_send_bw` measured 0.83x and 0.76x of the
/// same boot's runs with `recv_cpu_reply=0` before this condition).
/// Else they hop to the QP's reply work on its transmit CPU: a wake-up
/// and a context switch there, on a CPU that in a ping-pong is busy with
/// a poller, and in the profile of a 2-byte `ib_send_lat` (the ACK of
/// every other message) the receive path's largest cost after the clock.
///
/// The requester's packets, another PSN space that the peer's responder
/// orders on its own, keep their rules (`send::may_send_here`). Off
/// with the `recv_cpu_reply` parameter.
fn may_reply_here(qp: &RxeQp, inner: &QpInner, out: &Outbox, tx_cpu: u32) -> bool {
    if !crate::module_parameters::recv_cpu_reply.value()
        || qp.body.qp_type != QpType::Rc
        || crate::sys::work::this_cpu() == tx_cpu
        || out.len() != 0
        || qp.body.tx_inflight.load(SeqCst) != 0
        || qp.body.rx_pending.load(SeqCst) != 0
        || super::relay::relay_pending(qp)
    {
        return false;
    }
    let packets = inner.rc.replies.packets();
    packets <= RECV_CPU_REPLY_MAX_PACKETS && packets <= super::send::tx_room(qp, out)
}

/// The `rxe_resp_psn` event for request `req`, checked against
/// `expected_psn`, from what the responder answered (`actions`).
fn trace_psn_decision(
    qpn: u32,
    req: &RequestPacket,
    expected_psn: Psn,
    actions: &[Option<ResponderAction>],
) {
    let diff = req.psn.diff(expected_psn);
    let verdict = match diff {
        0 => PsnVerdict::InOrder,
        d if d < 0 => PsnVerdict::Duplicate,
        _ => PsnVerdict::OutOfSequence,
    };
    let reply = actions.iter().flatten().find_map(|a| match *a {
        ResponderAction::SendAck { psn, syndrome, .. } => Some((
            match syndrome {
                Syndrome::Ack { .. } => ResponderReply::Ack,
                Syndrome::RnrNak { .. } => ResponderReply::RnrNak,
                Syndrome::Nak(NakCode::PsnSequenceError) => ResponderReply::NakPsnSequence,
                Syndrome::Nak(NakCode::InvalidRequest) => ResponderReply::NakInvalid,
                Syndrome::Nak(NakCode::RemoteAccessError) => ResponderReply::NakAccess,
                Syndrome::Nak(_) | Syndrome::Reserved(_) => ResponderReply::NakOperational,
            },
            psn,
        )),
        ResponderAction::SendReadResponses(r) => Some((ResponderReply::ReadResponse, r.next_psn())),
        ResponderAction::SendAtomicAck { psn, .. } => Some((ResponderReply::AtomicAck, psn)),
        _ => None,
    });
    let (reply, reply_psn) = reply.unwrap_or((ResponderReply::None, req.psn));
    trace::resp_psn(
        qpn,
        req.psn.get(),
        expected_psn.get(),
        verdict,
        reply,
        reply_psn.get(),
    );
}

/// Sends the responder's queued replies while the QP's packets in flight
/// allow; the rest go when they drain (the QP's transmit work).
pub(crate) fn send_replies(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
) {
    while !inner.rc.replies.is_empty() && super::send::tx_room(qp, out) > 0 {
        if !send_one_reply(rxe, qp, inner, ndev, out) {
            break;
        }
    }
}

/// The QP is about to enter ERROR, or is being destroyed: sends the queued ACKs, NAKs and atomic
/// ACKs now, room or not (the last of them is the NAK that tells the
/// requester why), and abandons the READ replies, as rxe drops its reply in
/// progress when its QP fails: a QP in ERROR owes no data, and a READ of
/// gigabytes must not be built here, with bottom halves off and the QP lock
/// held. One packet at most per queued reply, so bounded by the queue.
/// Behind what the receive work relayed (`super::relay`), in order.
pub(super) fn send_final_replies(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
) {
    super::relay::take_relayed(qp, out);
    while let Some(packet) = inner.rc.replies.next_packet() {
        match packet {
            ReplyPacket::One(one) => emit_one(rxe, inner, ndev, out, one),
            ReplyPacket::ReadResponse(p) => {
                // `next_packet` keeps a READ reply at the front until its
                // last packet: drop the rest of it.
                if p.position != Position::Last && p.position != Position::Only {
                    inner.rc.replies.pop_front();
                }
            }
        }
    }
}

/// Builds an ACK, NAK or atomic ACK into `out`.
fn emit_one(rxe: &RxeDevice, inner: &QpInner, ndev: &NetDevice, out: &mut Outbox, one: OnePacket) {
    let path = Path::new(ndev, &inner.attrs, inner.src_port, inner.routes.as_ref());
    match one {
        OnePacket::Ack { psn, syndrome, msn } => {
            let bth = path.bth(Opcode::RcAcknowledge, psn, false, false);
            let ext = ExtHeaders {
                aeth: Some(Aeth { syndrome, msn }),
                ..ExtHeaders::default()
            };
            let _ = path.emit(rxe, out, &bth, &ext, 0, |_| Ok(()));
        }
        OnePacket::AtomicAck { psn, orig, msn } => {
            let bth = path.bth(Opcode::RcAtomicAcknowledge, psn, false, false);
            let ext = ExtHeaders {
                aeth: Some(Aeth::ack(msn)),
                atomic_ack_eth: Some(AtomicAckEth { orig }),
                ..ExtHeaders::default()
            };
            let _ = path.emit(rxe, out, &bth, &ext, 0, |_| Ok(()));
        }
    }
}

/// Builds the next queued reply packet into `out`; `false` when the queue
/// is empty.
fn send_one_reply(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
) -> bool {
    let Some(packet) = inner.rc.replies.next_packet() else {
        return false;
    };
    match packet {
        ReplyPacket::One(one) => emit_one(rxe, inner, ndev, out, one),
        ReplyPacket::ReadResponse(p) => {
            let path = Path::new(ndev, &inner.attrs, inner.src_port, inner.routes.as_ref());
            let bth = path.bth(p.opcode(), p.psn, false, false);
            let ext = ExtHeaders {
                aeth: p.aeth_msn.map(Aeth::ack),
                ..ExtHeaders::default()
            };
            let r = p.range;
            let len = r.len as usize;
            let lent = lend_payload(len)
                .then(|| memory::remote_read_page(rxe, qp.key_user(), r.rkey, r.va, len))
                .flatten();
            let sent = match lent {
                Some(span) => path.emit_page(rxe, out, &bth, &ext, span),
                None => path.emit(rxe, out, &bth, &ext, len, |buf| {
                    memory::remote_read(rxe, qp.key_user(), r.rkey, r.va, buf).map_err(|_| ())
                }),
            };
            if sent.is_err() {
                // The rest of this reply is useless without this packet;
                // the requester's timer asks for it again.
                if p.position != Position::Last && p.position != Position::Only {
                    inner.rc.replies.pop_front();
                }
            }
        }
    }
    true
}

/// Queues a reply behind the others; a full queue drops it (counted), and
/// the requester's retry recovers.
fn queue_reply(rxe: &RxeDevice, inner: &mut QpInner, reply: Reply) {
    if !inner.rc.replies.push(reply) {
        rxe.counters.inc(Counter::SendErr);
    }
}

/// Carries out one responder action for `pkt`.
fn run(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    pkt: &Packet<'_>,
    action: &ResponderAction,
) {
    let pd = qp.ibqp.pd_id();
    match *action {
        ResponderAction::ConsumeReceiveWqe => {
            start_recv(qp, inner);
            inner.rc.recv_failed = None;
        }
        ResponderAction::Place {
            target,
            len,
            payload_offset,
        } => {
            let start = payload_offset as usize;
            let Some(data) = pkt.payload.get(start..start + len as usize) else {
                return;
            };
            match target {
                PlaceTarget::Receive { offset } => {
                    let placed = match inner.rc.recv.current() {
                        Some(wqe) => memory::scatter(rxe, pd, &wqe.sges, offset, data).is_ok(),
                        None => false,
                    };
                    if !placed && inner.rc.recv_failed.is_none() {
                        inner.rc.recv_failed = Some(WcStatus::LocProtErr);
                    }
                }
                PlaceTarget::Memory { va, rkey } => {
                    // Checked when the message started; fails only if the
                    // region was deregistered since.
                    if memory::remote_write(rxe, qp.key_user(), rkey, va, data).is_err() {
                        rxe.counters.inc(Counter::SendErr);
                    }
                }
            }
        }
        ResponderAction::CompleteReceive {
            len,
            imm,
            invalidate_rkey,
            write_with_imm,
            status,
        } => {
            // Only the id is needed: the 536-byte WQE is not moved out.
            let Some(wr_id) = inner.rc.recv.current().map(|w| w.wr_id) else {
                return;
            };
            inner.rc.recv.finish_current();
            let mut failed = inner.rc.recv_failed.take();
            // SEND_WITH_INV: the named region is invalidated once the
            // message is placed, before its completion (rxe's `execute`).
            // A key that cannot be invalidated fails the receive with
            // REM_INV_REQ_ERR; the message is still ACKed, then the QP
            // fails (rxe's class J).
            if let (Some(rkey), CompletionStatus::Success, None) = (invalidate_rkey, status, failed)
            {
                if let Err(e) = crate::mr::invalidate(rxe, qp.key_user(), rkey) {
                    failed = Some(e.wc_status(Invalidation::Remote));
                    inner.rc.fail_after_replies = true;
                }
            }
            let cqe = match (status, failed) {
                (CompletionStatus::Success, None) => {
                    let ex = match (imm, invalidate_rkey) {
                        (Some(imm), _) => CqeEx::Imm(imm.to_be_bytes()),
                        (None, Some(rkey)) => CqeEx::InvalidateRkey(rkey),
                        (None, None) => CqeEx::None,
                    };
                    rxe.counters.inc(Counter::RdmaRecvs);
                    Cqe::recv(wr_id, qp.body.qpn, write_with_imm, len, ex, 0, 1)
                }
                (CompletionStatus::Success, Some(f)) => Cqe::recv_error(wr_id, qp.body.qpn, f),
                (s, _) => Cqe::recv_error(wr_id, qp.body.qpn, wc_status(s)),
            };
            if !super::post_recv_cqe(rxe, qp, &cqe, pkt.bth.se, Some(inner.attrs.av.network)) {
                // The completion is lost: the QP fails without ACKing the
                // message (the actions after this one are not run), as
                // rxe's responder does (class G).
                super::complete::enter_error(rxe, qp, inner);
            }
        }
        ResponderAction::SendAck { psn, syndrome, msn } => {
            queue_reply(
                rxe,
                inner,
                Reply::One(OnePacket::Ack { psn, syndrome, msn }),
            );
        }
        ResponderAction::SendAtomicAck { psn, orig, msn } => {
            queue_reply(
                rxe,
                inner,
                Reply::One(OnePacket::AtomicAck { psn, orig, msn }),
            );
        }
        ResponderAction::SendReadResponses(reply) => queue_reply(rxe, inner, Reply::Read(reply)),
        // Counted from the responder's counters in `on_request`.
        ResponderAction::Drop { .. } => {}
        ResponderAction::EnterError { .. } => {
            send_final_replies(rxe, qp, inner, ndev, out);
            super::complete::enter_error(rxe, qp, inner);
        }
    }
}
