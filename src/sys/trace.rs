// SPDX-License-Identifier: GPL-2.0

//! The rdma_rxe trace events (`src/rxe_trace.h`), as safe calls: the
//! responder's PSN decision, the requester going back, acknowledgements
//! received, retry counters running out. PSNs are the 24-bit values.

use super::bindings;

/// The outcome of the responder's PSN check on one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PsnVerdict {
    /// The expected PSN.
    InOrder = 0,
    /// Before it: answered again, not executed again.
    Duplicate = 1,
    /// After it: a gap (one NAK, then drops).
    OutOfSequence = 2,
}

/// What the responder sent back for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponderReply {
    /// Nothing (coalesced ACK, silent drop).
    None = 0,
    /// An ACK.
    Ack = 1,
    /// A PSN sequence error NAK.
    NakPsnSequence = 2,
    /// An RNR NAK.
    RnrNak = 3,
    /// An invalid request NAK.
    NakInvalid = 4,
    /// A remote access error NAK.
    NakAccess = 5,
    /// A remote operational error NAK.
    NakOperational = 6,
    /// READ response packets.
    ReadResponse = 7,
    /// An atomic ACK.
    AtomicAck = 8,
}

/// Why the requester went back (the `cause` of `rxe_req_go_back`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoBackCause {
    /// A NAK (or implicit NAK).
    Nak = 0,
    /// The retry timer.
    Timeout = 1,
    /// The RNR timer.
    Rnr = 2,
    /// A tail-loss probe (or a go-back-N its answer started).
    Probe = 3,
    /// The RTT-based retransmission timer, before the QP timeout.
    RttTimeout = 4,
}

/// `rxe_resp_psn`: the responder checked request `psn` of QP `qpn` against
/// `expected` and answered with `reply` (PSN `reply_psn`).
pub(crate) fn resp_psn(
    qpn: u32,
    psn: u32,
    expected: u32,
    verdict: PsnVerdict,
    reply: ResponderReply,
    reply_psn: u32,
) {
    // SAFETY: Plain values; the event may run in any context.
    unsafe {
        bindings::rxe_glue_trace_resp_psn(qpn, psn, expected, verdict as u8, reply as u8, reply_psn)
    }
}

/// `rxe_req_go_back`: QP `qpn`'s requester resends from `from`.
pub(crate) fn req_go_back(qpn: u32, from: u32, cause: GoBackCause) {
    // SAFETY: Plain values; the event may run in any context.
    unsafe { bindings::rxe_glue_trace_req_go_back(qpn, from, cause as u8) }
}

/// `rxe_req_tx`: QP `qpn`'s requester built request `psn` (`opcode`),
/// again if `retransmit`; the event records whether this ran in softirq.
pub(crate) fn req_tx(qpn: u32, psn: u32, opcode: u8, retransmit: bool) {
    // SAFETY: Plain values; the event may run in any context.
    unsafe { bindings::rxe_glue_trace_req_tx(qpn, psn, opcode, u8::from(retransmit)) }
}

/// `rxe_comp_ack`: QP `qpn`'s completer received a response `opcode` with
/// PSN `psn` and this AETH (raw syndrome byte, MSN).
pub(crate) fn comp_ack(qpn: u32, psn: u32, opcode: u8, syndrome: u8, msn: u32) {
    // SAFETY: Plain values; the event may run in any context.
    unsafe { bindings::rxe_glue_trace_comp_ack(qpn, psn, opcode, syndrome, msn) }
}

/// `rxe_retry_exhausted`: QP `qpn` ran out of retries (`rnr`: RNR retries).
pub(crate) fn retry_exhausted(qpn: u32, rnr: bool) {
    // SAFETY: Plain values; the event may run in any context.
    unsafe { bindings::rxe_glue_trace_retry_exhausted(qpn, u8::from(rnr)) }
}
