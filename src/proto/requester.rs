// SPDX-License-Identifier: GPL-2.0

//! The RC requester and completer: one QP's send side as a deterministic
//! state machine.
//!
//! Posted WQEs wait in the [`ReplayBuffer`] until they complete. The
//! requester splits each into packets by the path MTU and gives every packet
//! a PSN; the completer matches ACKs, NAKs, READ responses and atomic ACKs
//! against the oldest WQE, completes WQEs strictly in order, and on a
//! PSN-sequence NAK, an implicit NAK or a retry timeout goes back to the
//! oldest unacknowledged PSN (go-back-N), rebuilding the packets from the
//! replay buffer.
//!
//! Timers are actions out ([`RequesterAction::ArmRetryTimer`], ...) and
//! events in ([`RequesterEvent::RetryTimerExpired`], ...). As in rxe, a
//! `retry_cnt` of 7 retries forever (IBTA defines `retry_cnt` 0..=7 as finite
//! and only `rnr_retry` 7 as infinite; we follow rxe for compatibility).

use crate::proto::aeth::{NakCode, Syndrome};
use crate::proto::opcode::Position;
use crate::proto::psn::Psn;
use crate::proto::replay::{ReplayBuffer, ReplayBufferFull, SendWqe, WqeOp};
use crate::proto::transport::{
    packet_position, ActionSink, CompletionStatus, Mtu, RemoteRange, RequestOp, RequestPacket,
};

/// A retry count that never runs out (`retry_cnt` and `rnr_retry` of 7).
pub const INFINITE_RETRY: u8 = 7;

/// Default PSN window: packets sent but not acknowledged, like rxe's 128.
pub const DEFAULT_PSN_WINDOW: u32 = 128;

/// Default number of packets after which AckReq is set even mid-message.
pub const DEFAULT_ACK_REQ_EVERY: u32 = 64;

/// Requester attributes from `modify_qp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequesterConfig {
    /// Path MTU.
    pub mtu: Mtu,
    /// First PSN to send (`sq_psn`).
    pub sq_psn: Psn,
    /// Transport retries (timeouts and sequence NAKs); 7 is infinite.
    pub retry_cnt: u8,
    /// RNR retries; 7 is infinite.
    pub rnr_retry: u8,
    /// `max_rd_atomic`: READ/atomic requests outstanding at once.
    pub max_rd_atomic: u32,
    /// Retry timeout in microseconds (4.096 µs << `timeout`); 0 disables it.
    pub timeout_usecs: u32,
    /// Most packets sent but not acknowledged.
    pub psn_window: u32,
    /// AckReq is set on a message's last packet and at least every this many
    /// packets.
    pub ack_req_every: u32,
}

impl RequesterConfig {
    /// A configuration with rxe's defaults for the window and AckReq spacing.
    pub const fn new(mtu: Mtu, sq_psn: Psn) -> Self {
        RequesterConfig {
            mtu,
            sq_psn,
            retry_cnt: INFINITE_RETRY,
            rnr_retry: INFINITE_RETRY,
            max_rd_atomic: 16,
            timeout_usecs: 16_777,
            psn_window: DEFAULT_PSN_WINDOW,
            ack_req_every: DEFAULT_ACK_REQ_EVERY,
        }
    }
}

/// The kind of a response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseOp {
    /// ACKNOWLEDGE (ACK, RNR NAK or NAK, per the AETH).
    Acknowledge,
    /// ATOMIC_ACKNOWLEDGE with the original value.
    AtomicAcknowledge {
        /// AtomicAckETH original value.
        orig: u64,
    },
    /// RDMA_READ_RESPONSE_* at this position.
    ReadResponse(Position),
}

/// An inbound response packet, reduced to what the completer decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponsePacket {
    /// BTH PSN.
    pub psn: Psn,
    /// Opcode kind.
    pub op: ResponseOp,
    /// AETH syndrome, if the packet carries an AETH.
    pub syndrome: Option<Syndrome>,
    /// Payload bytes (READ responses).
    pub payload_len: u32,
}

/// An input to the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequesterEvent {
    /// A response packet arrived.
    Response(ResponsePacket),
    /// The retry timer fired.
    RetryTimerExpired,
    /// The RNR timer fired.
    RnrTimerExpired,
    /// The caller may transmit up to `budget` packets now.
    Transmit {
        /// Most packets to emit in this step.
        budget: u32,
    },
}

/// A packet to build and transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPacket {
    /// The WQE it belongs to.
    pub wqe_id: u64,
    /// Header fields (op, position, PSN, AckReq, RETH, AtomicETH, ImmDt, IETH)
    /// and payload length.
    pub header: RequestPacket,
    /// Offset of the payload within the WQE's gathered data.
    pub payload_offset: u32,
    /// Whether this PSN was transmitted before (go-back-N resend).
    pub retransmit: bool,
}

/// A send completion, generated strictly in posting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The WQE.
    pub wqe_id: u64,
    /// Status.
    pub status: CompletionStatus,
    /// Bytes transferred (the WQE length on success).
    pub byte_len: u32,
    /// For atomics: the original remote value, to write into the local
    /// buffer.
    pub atomic_orig: Option<u64>,
}

/// Why the completer ignored a response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseDropReason {
    /// PSN before the oldest unacknowledged one, or never sent.
    Stale,
    /// A gap inside a READ response, or nothing is outstanding.
    Unexpected,
    /// Opcode, AETH or length does not fit the WQE it answers.
    Malformed,
    /// A NAK arrived while a go-back-N retry was already under way.
    RetryInProgress,
    /// The QP is in ERROR.
    QpError,
}

/// One thing the caller must do for the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequesterAction {
    /// Build and send this packet.
    Transmit(TxPacket),
    /// Copy `len` bytes from the start of the current READ response's payload
    /// to byte `offset` of the WQE's local buffers.
    PlaceReadData {
        /// The READ WQE.
        wqe_id: u64,
        /// Byte offset within the READ.
        offset: u32,
        /// Bytes.
        len: u32,
    },
    /// Post this completion.
    Complete(Completion),
    /// Start (or restart) the retry timer.
    ArmRetryTimer {
        /// Timeout in microseconds.
        usecs: u32,
    },
    /// Stop the retry timer.
    DisarmRetryTimer,
    /// Start the RNR timer.
    ArmRnrTimer {
        /// Delay in microseconds.
        usecs: u32,
    },
    /// The response packet was ignored.
    DropResponse {
        /// Why.
        reason: ResponseDropReason,
    },
    /// The QP moved to ERROR.
    EnterError {
        /// Status of the WQE that failed.
        status: CompletionStatus,
    },
    /// Go-back-N: transmission restarts at `from` (for tracing; the
    /// packets follow as `Transmit`s with `retransmit` set).
    GoBack {
        /// First PSN sent again.
        from: Psn,
        /// What made the requester go back.
        cause: GoBackCause,
    },
}

/// Why the requester went back to resend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoBackCause {
    /// A PSN sequence error NAK, or a response showing a READ or atomic
    /// response was lost (implicit NAK).
    Nak,
    /// The retry timer expired.
    Timeout,
    /// The RNR timer expired after an RNR NAK.
    Rnr,
}

/// Requester counters, named like rxe's hw counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequesterCounters {
    /// Packets transmitted (first sends and resends).
    pub sent_pkts: u64,
    /// Packets resent by go-back-N.
    pub retransmitted_pkts: u64,
    /// `rcvd_seq_err`: PSN sequence error NAKs received that moved the
    /// completer's PSN.
    pub rcvd_seq_err: u64,
    /// `rcvd_rnr_err`: RNR NAKs received.
    pub rcvd_rnr_err: u64,
    /// `completer_retry_err`: go-back-N retries started.
    pub completer_retry_err: u64,
    /// `retry_exceeded_err`.
    pub retry_exceeded_err: u64,
    /// `retry_rnr_exceeded_err`.
    pub retry_rnr_exceeded_err: u64,
    /// Retry timer expiries that found packets outstanding.
    pub timeouts: u64,
}

/// One RC QP's requester and completer. `N` bounds the send queue (the
/// replay buffer).
#[derive(Debug)]
pub struct Requester<const N: usize> {
    config: RequesterConfig,
    buffer: ReplayBuffer<N>,
    /// Next PSN to transmit (`req.psn`).
    psn: Psn,
    /// One past the highest PSN ever transmitted.
    psn_high: Psn,
    /// Oldest unacknowledged PSN (`comp.psn`).
    comp_psn: Psn,
    /// Index (from the oldest) of the WQE being transmitted.
    send_index: usize,
    /// Bytes of that WQE already transmitted.
    send_offset: u32,
    noack_pkts: u32,
    rd_atomic_outstanding: u32,
    retry_left: u8,
    rnr_retry_left: u8,
    started_retry: bool,
    wait_rnr: bool,
    retry_armed: bool,
    error: bool,
    counters: RequesterCounters,
}

impl<const N: usize> Requester<N> {
    /// A requester in RTS with the given attributes.
    pub fn new(config: RequesterConfig) -> Self {
        Requester {
            config,
            buffer: ReplayBuffer::new(),
            psn: config.sq_psn,
            psn_high: config.sq_psn,
            comp_psn: config.sq_psn,
            send_index: 0,
            send_offset: 0,
            noack_pkts: 0,
            rd_atomic_outstanding: 0,
            retry_left: config.retry_cnt,
            rnr_retry_left: config.rnr_retry,
            started_retry: false,
            wait_rnr: false,
            retry_armed: false,
            error: false,
            counters: RequesterCounters::default(),
        }
    }

    /// Starts over with `config` (RTS after RESET), in place: the replay
    /// buffer is emptied without building a new one (it is large).
    pub fn reset(&mut self, config: RequesterConfig) {
        self.buffer.clear();
        self.config = config;
        self.psn = config.sq_psn;
        self.psn_high = config.sq_psn;
        self.comp_psn = config.sq_psn;
        self.send_index = 0;
        self.send_offset = 0;
        self.noack_pkts = 0;
        self.rd_atomic_outstanding = 0;
        self.retry_left = config.retry_cnt;
        self.rnr_retry_left = config.rnr_retry;
        self.started_retry = false;
        self.wait_rnr = false;
        self.retry_armed = false;
        self.error = false;
        self.counters = RequesterCounters::default();
    }

    /// The attributes in use.
    pub fn config(&self) -> &RequesterConfig {
        &self.config
    }

    /// Next PSN to transmit.
    pub fn next_psn(&self) -> Psn {
        self.psn
    }

    /// Oldest unacknowledged PSN.
    pub fn comp_psn(&self) -> Psn {
        self.comp_psn
    }

    /// Transport retries left (stays 7 when infinite).
    pub fn retry_left(&self) -> u8 {
        self.retry_left
    }

    /// RNR retries left (stays 7 when infinite).
    pub fn rnr_retry_left(&self) -> u8 {
        self.rnr_retry_left
    }

    /// Whether the retry timer is armed.
    pub fn retry_timer_armed(&self) -> bool {
        self.retry_armed
    }

    /// Whether the requester waits for the RNR timer.
    pub fn waiting_for_rnr(&self) -> bool {
        self.wait_rnr
    }

    /// Whether the QP is in ERROR.
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// WQEs posted and not yet completed.
    pub fn outstanding_wqes(&self) -> usize {
        self.buffer.len()
    }

    /// The replay buffer.
    pub fn replay_buffer(&self) -> &ReplayBuffer<N> {
        &self.buffer
    }

    /// The counters.
    pub fn counters(&self) -> &RequesterCounters {
        &self.counters
    }

    /// Whether packets have been sent and not all acknowledged.
    pub fn has_unacked(&self) -> bool {
        self.psn_high.after(self.comp_psn)
    }

    /// Posts a WQE. In ERROR it is completed at once with a flush error.
    pub fn post(
        &mut self,
        wqe: SendWqe,
        out: &mut impl ActionSink<RequesterAction>,
    ) -> Result<(), ReplayBufferFull> {
        if self.error {
            out.push(RequesterAction::Complete(Completion {
                wqe_id: wqe.id,
                status: CompletionStatus::FlushError,
                byte_len: 0,
                atomic_orig: None,
            }));
            return Ok(());
        }
        self.buffer.push(wqe)
    }

    /// Moves the QP to ERROR from outside (modify_qp): flushes every WQE.
    pub fn set_error(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        if !self.error {
            self.flush_all(out);
            self.error = true;
            self.disarm_retry(out);
        }
    }

    /// Processes one event.
    pub fn step(&mut self, event: RequesterEvent, out: &mut impl ActionSink<RequesterAction>) {
        match event {
            RequesterEvent::Transmit { budget } => self.transmit(budget, out),
            RequesterEvent::Response(pkt) => self.on_response(&pkt, out),
            RequesterEvent::RetryTimerExpired => self.on_timeout(out),
            RequesterEvent::RnrTimerExpired => {
                if self.wait_rnr && !self.error {
                    self.wait_rnr = false;
                    self.rewind();
                    out.push(RequesterAction::GoBack {
                        from: self.psn,
                        cause: GoBackCause::Rnr,
                    });
                }
            }
        }
    }

    // ---- transmit -------------------------------------------------------

    fn transmit(&mut self, budget: u32, out: &mut impl ActionSink<RequesterAction>) {
        let mut sent = 0;
        while sent < budget {
            match self.next_packet() {
                Some(pkt) => {
                    self.counters.sent_pkts += 1;
                    if pkt.retransmit {
                        self.counters.retransmitted_pkts += 1;
                    }
                    out.push(RequesterAction::Transmit(pkt));
                    sent += 1;
                }
                None => break,
            }
        }
        if sent > 0 && !self.retry_armed && self.config.timeout_usecs > 0 {
            self.retry_armed = true;
            out.push(RequesterAction::ArmRetryTimer {
                usecs: self.config.timeout_usecs,
            });
        }
    }

    /// Builds the next packet, or `None` if nothing may be sent now.
    fn next_packet(&mut self) -> Option<TxPacket> {
        if self.error || self.wait_rnr {
            return None;
        }
        if self.psn.distance_from(self.comp_psn) >= self.config.psn_window {
            return None;
        }
        let mtu = self.config.mtu;
        let psn = self.psn;
        let retransmit = psn.before(self.psn_high);
        let offset = self.send_offset;
        let max_rd_atomic = self.config.max_rd_atomic;
        let credits_used = self.rd_atomic_outstanding;
        let entry = self.buffer.get_mut(self.send_index)?;
        let wqe = entry.wqe;
        if wqe.op.is_read_or_atomic() && !entry.holds_credit {
            if credits_used >= max_rd_atomic {
                return None;
            }
            entry.holds_credit = true;
            self.rd_atomic_outstanding += 1;
        }
        if offset == 0 {
            entry.first_psn = psn;
            entry.last_psn = psn.add(wqe.packets(mtu).saturating_sub(1));
            entry.sent = true;
        }
        let resid = wqe.length.saturating_sub(offset);
        let mut header = RequestPacket {
            psn,
            op: RequestOp::Send,
            position: Position::Only,
            ack_req: false,
            payload_len: 0,
            reth: None,
            atomic: None,
            imm: None,
            invalidate_rkey: None,
        };
        let psn_used;
        match wqe.op {
            WqeOp::Send {
                imm,
                invalidate_rkey,
            } => {
                header.position = packet_position(offset == 0, resid, mtu);
                header.payload_len = resid.min(mtu.bytes());
                if header.position.ends() {
                    header.imm = imm;
                    header.invalidate_rkey = invalidate_rkey;
                }
                psn_used = 1;
            }
            WqeOp::Write { va, rkey, imm } => {
                header.op = RequestOp::Write;
                header.position = packet_position(offset == 0, resid, mtu);
                header.payload_len = resid.min(mtu.bytes());
                if header.position.starts() {
                    header.reth = Some(RemoteRange {
                        va,
                        rkey,
                        len: wqe.length,
                    });
                }
                if header.position.ends() {
                    header.imm = imm;
                }
                psn_used = 1;
            }
            WqeOp::Read { va, rkey } => {
                // A resumed READ asks only for what has not arrived: a subset
                // of the original request the responder replays.
                header.op = RequestOp::Read;
                header.reth = Some(RemoteRange {
                    va: va.wrapping_add(u64::from(offset)),
                    rkey,
                    len: resid,
                });
                psn_used = mtu.packets(resid);
            }
            WqeOp::Atomic(args) => {
                header.op = RequestOp::Atomic;
                header.atomic = Some(args);
                psn_used = 1;
            }
        }
        self.noack_pkts += 1;
        let ends = header.position.ends();
        if ends || self.noack_pkts >= self.config.ack_req_every {
            header.ack_req = true;
            self.noack_pkts = 0;
        }
        let payload_offset = offset;
        if ends {
            self.send_index += 1;
            self.send_offset = 0;
        } else {
            self.send_offset = offset.saturating_add(header.payload_len);
        }
        self.psn = psn.add(psn_used);
        if self.psn.after(self.psn_high) {
            self.psn_high = self.psn;
        }
        Some(TxPacket {
            wqe_id: wqe.id,
            header,
            payload_offset,
            retransmit,
        })
    }

    /// Go-back-N: resume transmission at `comp_psn`, from the oldest WQE, at
    /// the byte offset that PSN maps to.
    fn rewind(&mut self) {
        self.psn = self.comp_psn;
        self.send_index = 0;
        self.send_offset = 0;
        self.noack_pkts = 0;
        let mtu = self.config.mtu;
        let comp_psn = self.comp_psn;
        if let Some(head) = self.buffer.get_mut(0) {
            if head.sent && comp_psn.within(head.first_psn, head.last_psn) {
                let k = u64::from(comp_psn.distance_from(head.first_psn));
                let offset = (k * u64::from(mtu.bytes())).min(u64::from(head.wqe.length));
                let offset = u32::try_from(offset).unwrap_or(0);
                self.send_offset = match head.wqe.op {
                    WqeOp::Atomic(_) => 0,
                    WqeOp::Read { .. } => offset.min(head.read_received),
                    _ => offset,
                };
            }
        }
    }

    // ---- completer ------------------------------------------------------

    fn drop_response(
        &self,
        reason: ResponseDropReason,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        out.push(RequesterAction::DropResponse { reason });
    }

    fn on_response(&mut self, pkt: &ResponsePacket, out: &mut impl ActionSink<RequesterAction>) {
        if self.error {
            self.drop_response(ResponseDropReason::QpError, out);
            return;
        }
        let before = self.comp_psn;
        self.handle_response(pkt, out);
        if self.error {
            return;
        }
        let progressed = self.comp_psn.after(before);
        if progressed {
            self.started_retry = false;
        }
        // Acknowledgements may have overtaken the send cursor (a late ACK
        // after a rewind): resume after what is acknowledged.
        if self.psn.before(self.comp_psn) {
            self.rewind();
        }
        self.update_retry_timer(progressed, out);
    }

    /// Restart the retry timer when progress was made and packets remain
    /// unacknowledged; stop it when nothing is outstanding.
    fn update_retry_timer(&mut self, progressed: bool, out: &mut impl ActionSink<RequesterAction>) {
        if !self.has_unacked() {
            self.disarm_retry(out);
        } else if progressed && !self.wait_rnr && self.config.timeout_usecs > 0 {
            self.retry_armed = true;
            out.push(RequesterAction::ArmRetryTimer {
                usecs: self.config.timeout_usecs,
            });
        }
    }

    fn disarm_retry(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        if self.retry_armed {
            self.retry_armed = false;
            out.push(RequesterAction::DisarmRetryTimer);
        }
    }

    fn reload_retry_counters(&mut self) {
        self.retry_left = self.config.retry_cnt;
        self.rnr_retry_left = self.config.rnr_retry;
    }

    fn handle_response(
        &mut self,
        pkt: &ResponsePacket,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        if !pkt.psn.before(self.psn_high) {
            self.drop_response(ResponseDropReason::Unexpected, out);
            return;
        }
        // Match the packet against the oldest WQE; a PSN past its end
        // acknowledges it (SEND/WRITE, coalesced ACK) or shows its response
        // was lost (READ/atomic, implicit NAK).
        loop {
            let Some(head) = self.buffer.front().copied() else {
                self.drop_response(ResponseDropReason::Unexpected, out);
                return;
            };
            if !head.sent {
                self.drop_response(ResponseDropReason::Unexpected, out);
                return;
            }
            if pkt.psn.after(head.last_psn) {
                if head.wqe.op.is_read_or_atomic() {
                    self.retry(false, out);
                    return;
                }
                self.comp_psn = head.last_psn.next();
                self.reload_retry_counters();
                self.complete_head(CompletionStatus::Success, None, out);
                continue;
            }
            if pkt.psn.before(self.comp_psn) {
                self.drop_response(ResponseDropReason::Stale, out);
                return;
            }
            if head.wqe.op.is_read_or_atomic() && pkt.psn.after(self.comp_psn) {
                self.drop_response(ResponseDropReason::Unexpected, out);
                return;
            }
            break;
        }
        match pkt.op {
            ResponseOp::ReadResponse(position) => self.on_read_response(pkt, position, out),
            ResponseOp::AtomicAcknowledge { orig } => self.on_atomic_ack(pkt, orig, out),
            ResponseOp::Acknowledge => self.on_acknowledge(pkt, out),
        }
    }

    fn on_read_response(
        &mut self,
        pkt: &ResponsePacket,
        position: Position,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        let mtu = self.config.mtu;
        let Some(head) = self.buffer.front().copied() else {
            return;
        };
        let aeth_ok = match pkt.syndrome {
            None => position == Position::Middle,
            Some(s) => s.is_ack() && position != Position::Middle,
        };
        let restart = pkt.psn == head.first_psn;
        let sequence_ok = if restart {
            position.starts()
        } else {
            !position.starts()
        };
        if !matches!(head.wqe.op, WqeOp::Read { .. }) || !aeth_ok || !sequence_ok {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        }
        let k = u64::from(pkt.psn.distance_from(head.first_psn));
        let offset = k * u64::from(mtu.bytes());
        let Some(resid) = u64::from(head.wqe.length).checked_sub(offset) else {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        };
        let len = u64::from(pkt.payload_len);
        let len_ok = if position.ends() {
            len == resid && len <= u64::from(mtu.bytes())
        } else {
            len == u64::from(mtu.bytes()) && resid > len
        };
        let (Ok(offset), Ok(len)) = (u32::try_from(offset), u32::try_from(len)) else {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        };
        if !len_ok {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        }
        if len > 0 {
            out.push(RequesterAction::PlaceReadData {
                wqe_id: head.wqe.id,
                offset,
                len,
            });
        }
        if let Some(e) = self.buffer.get_mut(0) {
            e.read_received = offset.saturating_add(len);
        }
        self.comp_psn = pkt.psn.next();
        self.reload_retry_counters();
        if position.ends() {
            self.complete_head(CompletionStatus::Success, None, out);
        }
    }

    fn on_atomic_ack(
        &mut self,
        pkt: &ResponsePacket,
        orig: u64,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        let Some(head) = self.buffer.front().copied() else {
            return;
        };
        let aeth_ok = matches!(pkt.syndrome, Some(s) if s.is_ack());
        if !matches!(head.wqe.op, WqeOp::Atomic(_)) || !aeth_ok || pkt.psn != head.first_psn {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        }
        self.comp_psn = pkt.psn.next();
        self.reload_retry_counters();
        self.complete_head(CompletionStatus::Success, Some(orig), out);
    }

    fn on_acknowledge(&mut self, pkt: &ResponsePacket, out: &mut impl ActionSink<RequesterAction>) {
        let Some(head) = self.buffer.front().copied() else {
            return;
        };
        let Some(syndrome) = pkt.syndrome else {
            self.drop_response(ResponseDropReason::Malformed, out);
            return;
        };
        match syndrome {
            Syndrome::Ack { .. } => {
                if head.wqe.op.is_read_or_atomic() {
                    // A bare ACK does not answer a READ or an atomic.
                    self.drop_response(ResponseDropReason::Malformed, out);
                    return;
                }
                self.comp_psn = pkt.psn.next();
                self.reload_retry_counters();
                if pkt.psn == head.last_psn {
                    self.complete_head(CompletionStatus::Success, None, out);
                }
            }
            Syndrome::RnrNak { timer } => {
                self.counters.rcvd_rnr_err += 1;
                if self.rnr_retry_left == 0 {
                    self.counters.retry_rnr_exceeded_err += 1;
                    self.fail(CompletionStatus::RnrRetryExceededError, out);
                    return;
                }
                if self.rnr_retry_left != INFINITE_RETRY {
                    self.rnr_retry_left -= 1;
                }
                // Everything before the RNR-NAKed packet was received.
                self.comp_psn = pkt.psn;
                self.wait_rnr = true;
                self.rewind();
                self.disarm_retry(out);
                out.push(RequesterAction::ArmRnrTimer {
                    usecs: timer.usecs(),
                });
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                if self.wait_rnr && !pkt.psn.after(self.comp_psn) {
                    // Packets that followed an RNR-NAKed one hit the gap it
                    // left; the RNR timer already rewinds to it.
                    self.drop_response(ResponseDropReason::RetryInProgress, out);
                    return;
                }
                if pkt.psn.after(self.comp_psn) {
                    // Implicit ACK of everything before the named PSN; only
                    // a NAK that moves the completer counts (as in rxe).
                    self.counters.rcvd_seq_err += 1;
                    self.comp_psn = pkt.psn;
                    self.started_retry = false;
                }
                self.retry(false, out);
            }
            Syndrome::Nak(NakCode::InvalidRequest) => {
                self.fail(CompletionStatus::RemoteInvalidRequestError, out)
            }
            Syndrome::Nak(NakCode::RemoteAccessError) => {
                self.fail(CompletionStatus::RemoteAccessError, out)
            }
            Syndrome::Nak(NakCode::RemoteOperationalError) | Syndrome::Reserved(_) => {
                self.fail(CompletionStatus::RemoteOperationError, out)
            }
        }
    }

    fn on_timeout(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        self.retry_armed = false;
        if self.error || self.wait_rnr {
            return;
        }
        if self.has_unacked() {
            self.counters.timeouts += 1;
            self.retry(true, out);
        }
    }

    /// The retry decision: go back to `comp_psn` while retries remain, else
    /// fail the oldest WQE with RETRY_EXC_ERR.
    fn retry(&mut self, timeout: bool, out: &mut impl ActionSink<RequesterAction>) {
        if !self.has_unacked() {
            return;
        }
        if self.started_retry && !timeout {
            self.drop_response(ResponseDropReason::RetryInProgress, out);
            return;
        }
        if self.retry_left == 0 {
            self.counters.retry_exceeded_err += 1;
            self.fail(CompletionStatus::RetryExceededError, out);
            return;
        }
        if self.retry_left != INFINITE_RETRY {
            self.retry_left -= 1;
        }
        self.counters.completer_retry_err += 1;
        self.started_retry = true;
        self.rewind();
        out.push(RequesterAction::GoBack {
            from: self.psn,
            cause: if timeout {
                GoBackCause::Timeout
            } else {
                GoBackCause::Nak
            },
        });
    }

    /// Completes the oldest WQE and removes it from the replay buffer.
    fn complete_head(
        &mut self,
        status: CompletionStatus,
        atomic_orig: Option<u64>,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        let Some(entry) = self.buffer.pop_front() else {
            return;
        };
        if entry.holds_credit {
            self.rd_atomic_outstanding = self.rd_atomic_outstanding.saturating_sub(1);
        }
        if self.send_index > 0 {
            self.send_index -= 1;
        } else {
            self.send_offset = 0;
        }
        let byte_len = if status == CompletionStatus::Success {
            entry.wqe.length
        } else {
            0
        };
        out.push(RequesterAction::Complete(Completion {
            wqe_id: entry.wqe.id,
            status,
            byte_len,
            atomic_orig,
        }));
    }

    /// Completes the oldest WQE with `status`, flushes the rest, enters ERROR.
    fn fail(&mut self, status: CompletionStatus, out: &mut impl ActionSink<RequesterAction>) {
        self.complete_head(status, None, out);
        self.flush_all(out);
        self.error = true;
        self.disarm_retry(out);
        out.push(RequesterAction::EnterError { status });
    }

    fn flush_all(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        while !self.buffer.is_empty() {
            self.complete_head(CompletionStatus::FlushError, None, out);
        }
        self.rd_atomic_outstanding = 0;
    }
}
