// SPDX-License-Identifier: GPL-2.0

//! The RC responder: one QP's receive side as a deterministic state machine.
//!
//! Each inbound request packet, already parsed and translated into a
//! [`RequestPacket`], goes through the stages of the receive pipeline:
//!
//! 1. **PSN check** against `expected_psn`: a match continues; a PSN before it
//!    is a duplicate (re-ACK for SEND/WRITE, replay from the responder
//!    resources for READ and atomics); a PSN after it is a gap, answered by
//!    one NAK (PSN sequence error) naming `expected_psn`, then silent drops
//!    until an in-order packet arrives.
//! 2. **Reassembly**: FIRST/MIDDLE/LAST legality and the length rules.
//! 3. **Resources**: a receive WQE for packets that start a receive (else RNR
//!    NAK), key-table access checks, memory that is resident (else RNR NAK:
//!    on-demand-paging regions, see [`ResponderEnv::resident`]), the
//!    READ/atomic resource ring.
//! 4. **Execute and acknowledge**: placement, completion, READ replies,
//!    atomics, ACK coalescing.
//!
//! Memory, the receive queue and the key table belong to the caller and are
//! reached through [`ResponderEnv`]; everything the caller must do is pushed
//! as a [`ResponderAction`].

pub mod replies;
pub mod resources;

use crate::proto::aeth::{NakCode, RnrTimer, Syndrome};
use crate::proto::opcode::Position;
use crate::proto::psn::Psn;
use crate::proto::transport::{
    msn_next, ActionSink, AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteAccess, RemoteRange,
    FLUSH_GLOBAL, FLUSH_MR, FLUSH_PERSISTENT, FLUSH_RANGE,
};
pub use crate::proto::transport::{RequestOp, RequestPacket};
use resources::{ReadReply, ResourceKind, ResourceRing, ResponderResource};

/// Largest DMA length a RETH may carry (2^31).
pub const MAX_RETH_LEN: u32 = 1 << 31;

/// Remote access the QP grants (`qp_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessFlags {
    /// IB_ACCESS_REMOTE_READ.
    pub remote_read: bool,
    /// IB_ACCESS_REMOTE_WRITE.
    pub remote_write: bool,
    /// IB_ACCESS_REMOTE_ATOMIC.
    pub remote_atomic: bool,
    /// IB_ACCESS_FLUSH_GLOBAL.
    pub flush_global: bool,
    /// IB_ACCESS_FLUSH_PERSISTENT.
    pub flush_persistent: bool,
}

impl AccessFlags {
    /// Every remote access allowed.
    pub const ALL: AccessFlags = AccessFlags {
        remote_read: true,
        remote_write: true,
        remote_atomic: true,
        flush_global: true,
        flush_persistent: true,
    };

    /// Whether a FLUSH of these placement type bits is allowed: each bit
    /// named needs its access, and at least one must be named.
    pub const fn allows_flush(&self, placement: u8) -> bool {
        let global = placement & FLUSH_GLOBAL != 0;
        let persistent = placement & FLUSH_PERSISTENT != 0;
        (global || persistent)
            && placement & !(FLUSH_GLOBAL | FLUSH_PERSISTENT) == 0
            && (!global || self.flush_global)
            && (!persistent || self.flush_persistent)
    }
}

/// Responder attributes from `modify_qp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Path MTU.
    pub mtu: Mtu,
    /// First PSN expected (`rq_psn`).
    pub rq_psn: Psn,
    /// RNR timer code sent in RNR NAKs.
    pub min_rnr_timer: RnrTimer,
    /// `max_dest_rd_atomic`: READ/atomic requests remembered for replay.
    pub max_dest_rd_atomic: u32,
    /// Remote access the QP grants.
    pub access: AccessFlags,
}

/// The key table refused an access (rkey unknown, no permission, out of range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError;

/// What the responder asks of the driver while deciding on a packet.
pub trait ResponderEnv {
    /// Capacity in bytes of the receive WQE at the head of the RQ/SRQ, or
    /// `None` if there is none. Does not consume it.
    fn receive_wqe(&mut self) -> Option<u32>;

    /// Whether the key table lets this QP access `range` as `access`.
    fn check_access(
        &mut self,
        range: &RemoteRange,
        access: RemoteAccess,
    ) -> Result<(), AccessError>;

    /// Executes an atomic (or an ATOMIC_WRITE's store) at `args.va` and
    /// returns the original value.
    fn execute_atomic(&mut self, args: &AtomicArgs) -> Result<u64, AccessError>;

    /// Checks that the key table lets this QP flush `range` (with `len` 0:
    /// the whole region `range.rkey` names) for the placement types in
    /// `access`, and makes every earlier write to it globally visible (and
    /// persistent, where the memory can be).
    fn flush(&mut self, range: &RemoteRange, access: RemoteAccess) -> Result<(), AccessError>;

    /// Whether the memory `target` names can be read or written now,
    /// without waiting for pages. An on-demand-paging region whose pages
    /// are not resident says no (`Ok(false)`), and the driver starts
    /// bringing them in; the responder then answers the packet with an RNR
    /// NAK and keeps its state, so the requester sends the packet again
    /// after the RNR timer (as an HCA answers a page fault). Pages that
    /// cannot be brought in (the process has no such mapping) are an error:
    /// for a registered range a remote access error; for a receive WQE's
    /// buffers the driver says yes and its placement fails as for any bad
    /// buffer. Memory that is always resident says yes; so does memory the
    /// key table would refuse (the access check reports that). Called after
    /// the access check and, for a SEND, after the receive WQE was taken.
    fn resident(&mut self, target: &MemoryTarget) -> Result<bool, AccessError> {
        let _ = target;
        Ok(true)
    }
}

/// Memory a request packet is about to touch (see
/// [`ResponderEnv::resident`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryTarget {
    /// Bytes `[offset, offset + len)` of the current receive WQE's buffers
    /// (the one just taken, for a message's first packet).
    Receive {
        /// Byte offset within the message.
        offset: u32,
        /// Bytes.
        len: u32,
    },
    /// A range of registered memory (a WRITE packet's payload, a READ's
    /// whole range, an atomic's 8 bytes).
    Remote {
        /// The range.
        range: RemoteRange,
        /// Whether it is written (WRITE, atomics), not only read (READ).
        write: bool,
    },
}

/// Where a payload is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceTarget {
    /// Into the current receive WQE's buffers, at this byte offset.
    Receive {
        /// Byte offset within the message.
        offset: u32,
    },
    /// Into registered memory at `va` under `rkey`.
    Memory {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
    },
}

/// Why the responder dropped a packet; names follow the rxe counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// A PSN before `expected_psn` (counter `duplicate_request`).
    DuplicateRequest,
    /// A PSN after `expected_psn` (counter `out_of_seq_request` on the NAK).
    OutOfSeqRequest,
    /// No receive WQE: answered with an RNR NAK (counter `send_rnr_err`).
    ReceiverNotReady,
    /// The memory the packet touches is not resident (on-demand paging):
    /// answered with an RNR NAK (counter `send_rnr_err`), or on UC dropped
    /// with its message.
    NotResident,
    /// A duplicate READ/atomic with no matching responder resource, or a
    /// READ that is not a subset of the original.
    NoResource,
    /// The QP is in ERROR.
    QpError,
    /// The packet caused a NAK that moved the QP to ERROR.
    Invalid,
}

/// One thing the caller must do for the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponderAction {
    /// Take the receive WQE at the head of the RQ/SRQ for the message now
    /// starting; it is completed by a later `CompleteReceive`.
    ConsumeReceiveWqe,
    /// Copy `len` bytes of the packet's payload, from `payload_offset`, to
    /// `target`.
    Place {
        /// Destination.
        target: PlaceTarget,
        /// Bytes to copy.
        len: u32,
        /// Offset in the packet's payload.
        payload_offset: u32,
    },
    /// Complete the consumed receive WQE.
    CompleteReceive {
        /// Message length.
        len: u32,
        /// Immediate data, if any.
        imm: Option<u32>,
        /// Rkey to invalidate (SEND_WITH_INVALIDATE), if any.
        invalidate_rkey: Option<u32>,
        /// Whether this completes an RDMA WRITE with immediate.
        write_with_imm: bool,
        /// Completion status.
        status: CompletionStatus,
    },
    /// Send an ACKNOWLEDGE packet.
    SendAck {
        /// BTH PSN.
        psn: Psn,
        /// AETH syndrome.
        syndrome: Syndrome,
        /// AETH MSN.
        msn: u32,
    },
    /// Send an ATOMIC_ACKNOWLEDGE carrying the original value.
    SendAtomicAck {
        /// BTH PSN (the request's).
        psn: Psn,
        /// Original value at the target.
        orig: u64,
        /// AETH MSN.
        msn: u32,
    },
    /// Send every packet of this READ reply, in order, before answering the
    /// next request.
    SendReadResponses(ReadReply),
    /// The packet was dropped (after any ACK/NAK listed before this action).
    Drop {
        /// Why.
        reason: DropReason,
    },
    /// Move the QP to ERROR; `status` is the completion status of the error.
    EnterError {
        /// Status describing the error.
        status: CompletionStatus,
    },
}

/// Responder counters, named like rxe's hw counters where one exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponderCounters {
    /// `duplicate_request`.
    pub duplicate_request: u64,
    /// `out_of_seq_request`: gaps answered with a NAK.
    pub out_of_seq_request: u64,
    /// Packets dropped silently after the gap NAK was sent (no rxe counter).
    pub out_of_seq_dropped: u64,
    /// `send_rnr_err`: RNR NAKs sent.
    pub send_rnr_err: u64,
    /// Messages completed.
    pub messages: u64,
}

/// The responder's message-reassembly state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Message {
    /// Between messages.
    Idle,
    /// Inside a multi-packet SEND; `offset` bytes received so far.
    Send { offset: u32, capacity: u32 },
    /// Inside a multi-packet WRITE.
    Write {
        va: u64,
        rkey: u32,
        resid: u32,
        total: u32,
    },
}

/// The ACK coalescing policy: acknowledge a SEND/WRITE packet only when its
/// AckReq bit is set (rxe's policy; the requester sets it on the last packet
/// of each message and every so many packets).
pub fn should_ack(pkt: &RequestPacket) -> bool {
    pkt.ack_req
}

/// A failure that NAKs the packet and moves the QP to ERROR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fatal {
    nak: NakCode,
    status: CompletionStatus,
}

const INVALID: Fatal = Fatal {
    nak: NakCode::InvalidRequest,
    status: CompletionStatus::RemoteInvalidRequestError,
};

const ACCESS: Fatal = Fatal {
    nak: NakCode::RemoteAccessError,
    status: CompletionStatus::RemoteAccessError,
};

/// One RC or UC QP's responder. `R` bounds the responder-resource ring.
///
/// A UC responder ([`Responder::new_unreliable`]) runs the same reassembly,
/// checks and placement, but never answers: no ACK, NAK or RNR NAK. A PSN
/// other than the expected one, or any packet after one was dropped, drops
/// the rest of the message until a FIRST or ONLY packet starts a new one at
/// the PSN it carries (IBTA 9.7.5.1.5, as rxe); an error drops the message
/// and the QP stays usable; a receive WQE taken by a SEND dropped half way
/// is filled again by the next message that needs one.
#[derive(Debug)]
pub struct Responder<const R: usize> {
    config: ResponderConfig,
    /// UC: nothing is ever sent back.
    unreliable: bool,
    /// UC: drop packets until a FIRST or ONLY starts a message.
    drop_message: bool,
    /// UC: the capacity of a receive WQE taken by a SEND that was dropped
    /// half way, not completed, to be filled by the next message.
    held_receive: Option<u32>,
    expected_psn: Psn,
    ack_psn: Psn,
    msn: u32,
    sent_psn_nak: bool,
    message: Message,
    resources: ResourceRing<R>,
    error: bool,
    counters: ResponderCounters,
}

impl<const R: usize> Responder<R> {
    /// A responder in RTR with the given attributes.
    pub fn new(config: ResponderConfig) -> Self {
        Responder {
            config,
            unreliable: false,
            drop_message: false,
            held_receive: None,
            expected_psn: config.rq_psn,
            ack_psn: config.rq_psn,
            msn: 0,
            sent_psn_nak: false,
            message: Message::Idle,
            resources: ResourceRing::new(config.max_dest_rd_atomic),
            error: false,
            counters: ResponderCounters::default(),
        }
    }

    /// A UC QP's responder in RTR with the given attributes.
    pub fn new_unreliable(config: ResponderConfig) -> Self {
        let mut responder = Self::new(config);
        responder.make_unreliable();
        responder
    }

    /// Makes this responder a UC QP's, in place.
    pub fn make_unreliable(&mut self) {
        self.unreliable = true;
    }

    /// Starts over with `config` (RTR after RESET), in place; a UC
    /// responder stays one.
    pub fn reset(&mut self, config: ResponderConfig) {
        self.config = config;
        self.drop_message = false;
        self.held_receive = None;
        self.expected_psn = config.rq_psn;
        self.ack_psn = config.rq_psn;
        self.msn = 0;
        self.sent_psn_nak = false;
        self.message = Message::Idle;
        self.resources.reset(config.max_dest_rd_atomic);
        self.error = false;
        self.counters = ResponderCounters::default();
    }

    /// The attributes in use.
    pub fn config(&self) -> &ResponderConfig {
        &self.config
    }

    /// The PSN the responder expects next (`resp.psn`).
    pub fn expected_psn(&self) -> Psn {
        self.expected_psn
    }

    /// PSN after the last executed SEND, WRITE or atomic (`resp.ack_psn`;
    /// READs do not move it).
    pub fn ack_psn(&self) -> Psn {
        self.ack_psn
    }

    /// The message sequence number (24 bits).
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Whether a gap NAK was sent since the last in-order packet.
    pub fn sent_psn_nak(&self) -> bool {
        self.sent_psn_nak
    }

    /// Whether the QP is in ERROR.
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// Whether a multi-packet message is half received.
    pub fn in_message(&self) -> bool {
        self.message != Message::Idle
    }

    /// The counters.
    pub fn counters(&self) -> &ResponderCounters {
        &self.counters
    }

    /// Moves the QP to ERROR from outside (modify_qp); nothing is sent.
    pub fn set_error(&mut self) {
        self.error = true;
    }

    /// Processes one request packet.
    pub fn step(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) {
        if self.error {
            out.push(ResponderAction::Drop {
                reason: DropReason::QpError,
            });
            return;
        }
        if self.unreliable {
            self.step_unreliable(pkt, env, out);
            return;
        }
        // Stage 1: the three-way PSN check.
        let diff = pkt.psn.diff(self.expected_psn);
        if diff > 0 {
            self.gap(out);
            return;
        }
        if diff < 0 {
            self.duplicate(pkt, env, out);
            return;
        }
        self.sent_psn_nak = false;
        if let Err(fatal) = self.in_order(pkt, env, out) {
            self.fail(pkt.psn, fatal, out);
        }
    }

    /// A UC packet: the PSN check resynchronises on a message start, and
    /// any failure drops the message instead of answering.
    fn step_unreliable(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) {
        if pkt.psn != self.expected_psn || self.drop_message {
            self.abandon_message();
            if !pkt.position.starts() {
                self.drop_message = true;
                self.counters.out_of_seq_dropped += 1;
                out.push(ResponderAction::Drop {
                    reason: DropReason::OutOfSeqRequest,
                });
                return;
            }
            self.drop_message = false;
            self.expected_psn = pkt.psn;
        }
        let mut dropped = false;
        let result = self.in_order(pkt, env, &mut |a: ResponderAction| {
            dropped |= matches!(a, ResponderAction::Drop { .. });
            out.push(a);
        });
        if result.is_err() {
            out.push(ResponderAction::Drop {
                reason: DropReason::Invalid,
            });
            dropped = true;
        }
        if dropped {
            self.abandon_message();
            self.drop_message = true;
        }
    }

    /// UC: forgets the message in progress; a receive WQE it took is kept
    /// for the next message.
    fn abandon_message(&mut self) {
        if let Message::Send { capacity, .. } = self.message {
            self.held_receive = Some(capacity);
        }
        self.message = Message::Idle;
    }

    /// A PSN after the expected one: one NAK naming `expected_psn`, then drops.
    fn gap(&mut self, out: &mut impl ActionSink<ResponderAction>) {
        if !self.sent_psn_nak {
            self.sent_psn_nak = true;
            self.counters.out_of_seq_request += 1;
            out.push(ResponderAction::SendAck {
                psn: self.expected_psn,
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                msn: self.msn,
            });
        } else {
            self.counters.out_of_seq_dropped += 1;
        }
        out.push(ResponderAction::Drop {
            reason: DropReason::OutOfSeqRequest,
        });
    }

    /// A PSN before the expected one: answer again without executing again.
    fn duplicate(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) {
        self.counters.duplicate_request += 1;
        match pkt.op {
            RequestOp::Send | RequestOp::Write => {
                out.push(ResponderAction::SendAck {
                    psn: self.ack_psn.sub(1),
                    syndrome: Syndrome::ACK,
                    msn: self.msn,
                });
            }
            RequestOp::Read => {
                match self.replay_read(pkt, env) {
                    Some(Ok(reply)) => out.push(ResponderAction::SendReadResponses(reply)),
                    // The memory it names is no longer readable: answered
                    // with a NAK, as a first READ would be.
                    Some(Err(fatal)) => self.fail(pkt.psn, fatal, out),
                    None => out.push(ResponderAction::Drop {
                        reason: DropReason::NoResource,
                    }),
                }
                return;
            }
            RequestOp::Atomic => {
                if let Some(res) = self.resources.find(pkt.psn) {
                    if let ResourceKind::Atomic { orig } = res.kind {
                        if res.first_psn == pkt.psn {
                            out.push(ResponderAction::SendAtomicAck {
                                psn: pkt.psn,
                                orig,
                                msn: self.msn,
                            });
                            return;
                        }
                    }
                }
                out.push(ResponderAction::Drop {
                    reason: DropReason::NoResource,
                });
                return;
            }
            RequestOp::AtomicWrite | RequestOp::Flush { .. } => {
                // Answered again from its resource, not executed again.
                let kept = self.resources.find(pkt.psn).filter(|res| {
                    res.first_psn == pkt.psn && res.kind == ResourceKind::EmptyReadResponse
                });
                if kept.is_some() {
                    out.push(ResponderAction::SendReadResponses(empty_read_response(
                        pkt,
                        self.config.mtu,
                        self.msn,
                    )));
                } else {
                    out.push(ResponderAction::Drop {
                        reason: DropReason::NoResource,
                    });
                }
                return;
            }
            RequestOp::Unsupported => {}
        }
        out.push(ResponderAction::Drop {
            reason: DropReason::DuplicateRequest,
        });
    }

    /// The reply to a duplicate READ, if its resource is still remembered and
    /// the request is a subset of the original (`None`: dropped); an error
    /// if the key table no longer allows the read.
    fn replay_read(
        &self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
    ) -> Option<Result<ReadReply, Fatal>> {
        let res = self.resources.find(pkt.psn)?;
        let ResourceKind::Read { range: orig } = res.kind else {
            return None;
        };
        let range = pkt.reth?;
        if !orig.contains(&range) {
            return None;
        }
        // The replay must fit the PSNs the original request reserved.
        let slots = res.last_psn.distance_from(pkt.psn).checked_add(1)?;
        if self.config.mtu.packets(range.len) > slots {
            return None;
        }
        if range.len != 0 && env.check_access(&range, RemoteAccess::Read).is_err() {
            return Some(Err(ACCESS));
        }
        let replay = pkt.psn != res.first_psn;
        Some(Ok(ReadReply::new(
            pkt.psn,
            range,
            self.config.mtu,
            replay,
            self.msn,
        )))
    }

    /// Stages 2-4 for an in-order packet.
    fn in_order(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        self.check_sequence(pkt)?;
        self.check_length(pkt)?;
        match pkt.op {
            RequestOp::Send => self.execute_send(pkt, env, out),
            RequestOp::Write => self.execute_write(pkt, env, out),
            RequestOp::Read => self.execute_read(pkt, env, out),
            RequestOp::Atomic => self.execute_atomic(pkt, env, out),
            RequestOp::AtomicWrite => self.execute_atomic_write(pkt, env, out),
            RequestOp::Flush { .. } => self.execute_flush(pkt, env, out),
            RequestOp::Unsupported => Err(INVALID),
        }
    }

    /// Stage 2: FIRST/MIDDLE/LAST legality against the message in progress,
    /// and the QP's access flags.
    fn check_sequence(&self, pkt: &RequestPacket) -> Result<(), Fatal> {
        let legal = match (self.message, pkt.op) {
            (Message::Idle, _) => pkt.position.starts(),
            (Message::Send { .. }, RequestOp::Send) | (Message::Write { .. }, RequestOp::Write) => {
                !pkt.position.starts()
            }
            _ => false,
        };
        if !legal {
            return Err(INVALID);
        }
        let access = self.config.access;
        let allowed = match pkt.op {
            RequestOp::Send => true,
            RequestOp::Write => access.remote_write,
            RequestOp::Read => access.remote_read && self.resources.size() > 0,
            RequestOp::Atomic => access.remote_atomic && self.resources.size() > 0,
            RequestOp::AtomicWrite => access.remote_write && self.resources.size() > 0,
            // rxe answers a FLUSH whatever `max_dest_rd_atomic` is; without
            // a resource to remember it, a duplicate is dropped.
            RequestOp::Flush { placement, .. } => access.allows_flush(placement),
            RequestOp::Unsupported => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(INVALID)
        }
    }

    /// Stage 2: the payload length rules.
    fn check_length(&self, pkt: &RequestPacket) -> Result<(), Fatal> {
        let mtu = self.config.mtu.bytes();
        let len = pkt.payload_len;
        let ok = match pkt.op {
            RequestOp::Send | RequestOp::Write => match pkt.position {
                Position::First | Position::Middle => len == mtu,
                Position::Last => len >= 1 && len <= mtu,
                Position::Only => len <= mtu,
            },
            RequestOp::AtomicWrite => len == 8,
            RequestOp::Read
            | RequestOp::Atomic
            | RequestOp::Flush { .. }
            | RequestOp::Unsupported => len == 0,
        };
        if !ok {
            return Err(INVALID);
        }
        match pkt.reth {
            Some(reth) if reth.len > MAX_RETH_LEN => Err(INVALID),
            _ => Ok(()),
        }
    }

    /// Takes a receive WQE for the message starting (the one a dropped UC
    /// message left, else the head of the RQ, consumed); `None` means there
    /// is none: an RNR NAK was sent (RC) or the message is dropped (UC).
    fn take_receive_wqe(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Option<u32> {
        if let Some(capacity) = self.held_receive.take() {
            return Some(capacity);
        }
        match env.receive_wqe() {
            Some(capacity) => {
                out.push(ResponderAction::ConsumeReceiveWqe);
                Some(capacity)
            }
            None if self.unreliable => {
                out.push(ResponderAction::Drop {
                    reason: DropReason::ReceiverNotReady,
                });
                None
            }
            None => {
                self.rnr_nak(pkt.psn, out);
                out.push(ResponderAction::Drop {
                    reason: DropReason::ReceiverNotReady,
                });
                None
            }
        }
    }

    fn execute_send(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let (offset, capacity) = match self.message {
            Message::Send { offset, capacity } => (offset, capacity),
            _ => {
                let Some(capacity) = self.take_receive_wqe(pkt, env, out) else {
                    return Ok(());
                };
                self.message = Message::Send {
                    offset: 0,
                    capacity,
                };
                (0, capacity)
            }
        };
        let end = offset.checked_add(pkt.payload_len).ok_or(INVALID)?;
        if end > capacity {
            return Err(Fatal {
                nak: NakCode::InvalidRequest,
                status: CompletionStatus::LocalLengthError,
            });
        }
        let target = MemoryTarget::Receive {
            offset,
            len: pkt.payload_len,
        };
        if pkt.payload_len > 0 && !env.resident(&target).map_err(|_| ACCESS)? {
            if offset == 0 {
                // The WQE taken stays with the message: its first packet,
                // sent again, finds it here.
                self.held_receive = Some(capacity);
                self.message = Message::Idle;
            }
            self.not_resident(pkt, out);
            return Ok(());
        }
        if pkt.payload_len > 0 {
            out.push(ResponderAction::Place {
                target: PlaceTarget::Receive { offset },
                len: pkt.payload_len,
                payload_offset: 0,
            });
        }
        if pkt.position.ends() {
            self.message = Message::Idle;
            out.push(ResponderAction::CompleteReceive {
                len: end,
                imm: pkt.imm,
                invalidate_rkey: pkt.invalidate_rkey,
                write_with_imm: false,
                status: CompletionStatus::Success,
            });
            self.end_message();
        } else {
            self.message = Message::Send {
                offset: end,
                capacity,
            };
        }
        self.advance(pkt, out);
        Ok(())
    }

    fn execute_write(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let (va, rkey, resid, total) = match self.message {
            Message::Write {
                va,
                rkey,
                resid,
                total,
            } => (va, rkey, resid, total),
            _ => {
                let reth = pkt.reth.ok_or(INVALID)?;
                if reth.len > 0 && env.check_access(&reth, RemoteAccess::Write).is_err() {
                    return Err(ACCESS);
                }
                (reth.va, reth.rkey, reth.len, reth.len)
            }
        };
        // While more than one MTU remains the packet carries exactly an MTU
        // and is not the last; then exactly the residue, in a LAST/ONLY.
        let mtu = self.config.mtu.bytes();
        let fits = if resid > mtu {
            pkt.payload_len == mtu && !pkt.position.ends()
        } else {
            pkt.payload_len == resid && pkt.position.ends()
        };
        if !fits {
            return Err(INVALID);
        }
        let target = MemoryTarget::Remote {
            range: RemoteRange {
                va,
                rkey,
                len: pkt.payload_len,
            },
            write: true,
        };
        if pkt.payload_len > 0 && !env.resident(&target).map_err(|_| ACCESS)? {
            self.not_resident(pkt, out);
            return Ok(());
        }
        if pkt.position.ends() && pkt.imm.is_some() {
            // WRITE_WITH_IMMEDIATE consumes a receive WQE at its last packet.
            if self.take_receive_wqe(pkt, env, out).is_none() {
                return Ok(());
            }
        }
        if pkt.payload_len > 0 {
            out.push(ResponderAction::Place {
                target: PlaceTarget::Memory { va, rkey },
                len: pkt.payload_len,
                payload_offset: 0,
            });
        }
        if pkt.position.ends() {
            self.message = Message::Idle;
            if pkt.imm.is_some() {
                out.push(ResponderAction::CompleteReceive {
                    len: total,
                    imm: pkt.imm,
                    invalidate_rkey: None,
                    write_with_imm: true,
                    status: CompletionStatus::Success,
                });
            }
            self.end_message();
        } else {
            self.message = Message::Write {
                va: va.wrapping_add(u64::from(pkt.payload_len)),
                rkey,
                resid: resid - pkt.payload_len,
                total,
            };
        }
        self.advance(pkt, out);
        Ok(())
    }

    fn execute_read(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let range = pkt.reth.ok_or(INVALID)?;
        if range.len > 0 && env.check_access(&range, RemoteAccess::Read).is_err() {
            return Err(ACCESS);
        }
        if range.len > 0
            && !env
                .resident(&MemoryTarget::Remote {
                    range,
                    write: false,
                })
                .map_err(|_| ACCESS)?
        {
            self.not_resident(pkt, out);
            return Ok(());
        }
        self.msn = msn_next(self.msn);
        self.counters.messages += 1;
        let reply = ReadReply::new(pkt.psn, range, self.config.mtu, false, self.msn);
        let end = reply.end_psn();
        self.resources.insert(ResponderResource {
            first_psn: pkt.psn,
            last_psn: end.sub(1),
            kind: ResourceKind::Read { range },
        });
        // The ACK PSN stays at the last SEND/WRITE/atomic: duplicates of
        // those are re-ACKed with it, and a requester (rxe's) takes a plain
        // ACK reaching a READ's PSNs as that READ's completion.
        self.expected_psn = end;
        out.push(ResponderAction::SendReadResponses(reply));
        Ok(())
    }

    fn execute_atomic(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let args = pkt.atomic.ok_or(INVALID)?;
        check_atomic_target(&args, RemoteAccess::Atomic, env)?;
        if !env.resident(&atomic_target(&args)).map_err(|_| ACCESS)? {
            self.not_resident(pkt, out);
            return Ok(());
        }
        let orig = env.execute_atomic(&args).map_err(|_| ACCESS)?;
        self.resources.insert(ResponderResource {
            first_psn: pkt.psn,
            last_psn: pkt.psn,
            kind: ResourceKind::Atomic { orig },
        });
        self.end_message();
        self.expected_psn = pkt.psn.next();
        self.ack_psn = self.expected_psn;
        out.push(ResponderAction::SendAtomicAck {
            psn: pkt.psn,
            orig,
            msn: self.msn,
        });
        Ok(())
    }

    /// ATOMIC_WRITE: the 8 bytes stored at once, answered with an empty
    /// READ RESPONSE ONLY that a duplicate gets again.
    fn execute_atomic_write(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let args = pkt.atomic.ok_or(INVALID)?;
        if !matches!(args.op, AtomicOp::Write { .. }) {
            return Err(INVALID);
        }
        check_atomic_target(&args, RemoteAccess::Write, env)?;
        if !env.resident(&atomic_target(&args)).map_err(|_| ACCESS)? {
            self.not_resident(pkt, out);
            return Ok(());
        }
        env.execute_atomic(&args).map_err(|_| ACCESS)?;
        self.answer_with_empty_read_response(pkt, out);
        Ok(())
    }

    /// FLUSH: the range (or, at the region level, just the key) checked for
    /// the placement types asked, the flush done, answered with an empty
    /// READ RESPONSE ONLY that a duplicate gets again.
    fn execute_flush(
        &mut self,
        pkt: &RequestPacket,
        env: &mut impl ResponderEnv,
        out: &mut impl ActionSink<ResponderAction>,
    ) -> Result<(), Fatal> {
        let RequestOp::Flush {
            placement,
            selectivity,
        } = pkt.op
        else {
            return Err(INVALID);
        };
        let mut range = pkt.reth.ok_or(INVALID)?;
        match selectivity {
            FLUSH_RANGE => {}
            // The whole region: its key and access, not the RETH's range.
            FLUSH_MR => range.len = 0,
            _ => return Err(INVALID),
        }
        let want = RemoteAccess::Flush {
            global: placement & FLUSH_GLOBAL != 0,
            persistent: placement & FLUSH_PERSISTENT != 0,
        };
        env.flush(&range, want).map_err(|_| ACCESS)?;
        self.answer_with_empty_read_response(pkt, out);
        Ok(())
    }

    /// Remembers an executed ATOMIC_WRITE or FLUSH and answers it.
    fn answer_with_empty_read_response(
        &mut self,
        pkt: &RequestPacket,
        out: &mut impl ActionSink<ResponderAction>,
    ) {
        self.resources.insert(ResponderResource {
            first_psn: pkt.psn,
            last_psn: pkt.psn,
            kind: ResourceKind::EmptyReadResponse,
        });
        self.end_message();
        self.expected_psn = pkt.psn.next();
        self.ack_psn = self.expected_psn;
        out.push(ResponderAction::SendReadResponses(empty_read_response(
            pkt,
            self.config.mtu,
            self.msn,
        )));
    }

    /// The memory `pkt` touches is not resident: RC answers with an RNR
    /// NAK at its PSN, with nothing else changed (the requester sends it
    /// again after the timer, by when the pages are in); UC drops the
    /// message (the drop makes [`Self::step_unreliable`] abandon it).
    fn not_resident(&mut self, pkt: &RequestPacket, out: &mut impl ActionSink<ResponderAction>) {
        if !self.unreliable {
            self.rnr_nak(pkt.psn, out);
        }
        out.push(ResponderAction::Drop {
            reason: DropReason::NotResident,
        });
    }

    /// Answers the packet at `psn` with an RNR NAK (counted `send_rnr_err`):
    /// the requester sends it again after the QP's minimum RNR timer.
    fn rnr_nak(&mut self, psn: Psn, out: &mut impl ActionSink<ResponderAction>) {
        self.counters.send_rnr_err += 1;
        out.push(ResponderAction::SendAck {
            psn,
            syndrome: Syndrome::RnrNak {
                timer: self.config.min_rnr_timer,
            },
            msn: self.msn,
        });
    }

    fn end_message(&mut self) {
        self.msn = msn_next(self.msn);
        self.counters.messages += 1;
    }

    /// After a SEND/WRITE packet executed: move the PSNs on and ACK if asked.
    fn advance(&mut self, pkt: &RequestPacket, out: &mut impl ActionSink<ResponderAction>) {
        self.expected_psn = pkt.psn.next();
        self.ack_psn = self.expected_psn;
        if !self.unreliable && should_ack(pkt) {
            out.push(ResponderAction::SendAck {
                psn: pkt.psn,
                syndrome: Syndrome::ACK,
                msn: self.msn,
            });
        }
    }

    /// NAK `psn` with the failure's code, complete any half-received receive
    /// WQE with its status, and move to ERROR.
    fn fail(&mut self, psn: Psn, fatal: Fatal, out: &mut impl ActionSink<ResponderAction>) {
        out.push(ResponderAction::SendAck {
            psn,
            syndrome: Syndrome::Nak(fatal.nak),
            msn: self.msn,
        });
        if let Message::Send { offset, .. } = self.message {
            out.push(ResponderAction::CompleteReceive {
                len: offset,
                imm: None,
                invalidate_rkey: None,
                write_with_imm: false,
                status: fatal.status,
            });
        }
        self.message = Message::Idle;
        self.error = true;
        out.push(ResponderAction::Drop {
            reason: DropReason::Invalid,
        });
        out.push(ResponderAction::EnterError {
            status: fatal.status,
        });
    }
}

/// The 8-byte target of an atomic or ATOMIC_WRITE: aligned (else an
/// invalid request) and allowed `access` by the key table (else a remote
/// access error).
fn check_atomic_target(
    args: &AtomicArgs,
    access: RemoteAccess,
    env: &mut impl ResponderEnv,
) -> Result<(), Fatal> {
    if !args.va.is_multiple_of(8) {
        return Err(INVALID);
    }
    let range = RemoteRange {
        va: args.va,
        rkey: args.rkey,
        len: 8,
    };
    env.check_access(&range, access).map_err(|_| ACCESS)
}

/// The 8 bytes an atomic or ATOMIC_WRITE touches.
fn atomic_target(args: &AtomicArgs) -> MemoryTarget {
    MemoryTarget::Remote {
        range: RemoteRange {
            va: args.va,
            rkey: args.rkey,
            len: 8,
        },
        write: true,
    }
}

/// The empty READ RESPONSE ONLY that answers an ATOMIC_WRITE or a FLUSH at
/// `pkt`'s PSN.
fn empty_read_response(pkt: &RequestPacket, mtu: Mtu, msn: u32) -> ReadReply {
    let range = RemoteRange {
        va: 0,
        rkey: 0,
        len: 0,
    };
    ReadReply::new(pkt.psn, range, mtu, false, msn)
}
