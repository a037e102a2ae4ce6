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
//!
//! Loss recovery in about a round trip. Given the caller's clock
//! ([`Requester::step_at`]), the requester keeps a round-trip estimate
//! ([`RttEstimate`]) from ACKs of packets sent once with AckReq, and its one
//! retry timer then serves three deadlines, all counted from the last
//! progress (an acknowledgement that moved `comp_psn`):
//!
//! - after max(2 x SRTT, a floor), a *tail-loss probe*: the last packet sent
//!   is sent again with AckReq. It draws the cumulative ACK a lost ACK did
//!   not bring, or the NAK a lost tail packet did not; if a go-back-N is
//!   already under way (the responder NAKed and now drops everything after
//!   the gap in silence) the probe is a go-back-N instead;
//! - then after each RTO (SRTT + 4 RTTVAR, doubling), a go-back-N from
//!   `comp_psn`: a NAK or a retransmission that was lost again;
//! - after the QP's Local ACK Timeout, the timeout `modify_qp` asked for:
//!   only this one consumes `retry_cnt`, so a QP whose peer is gone fails
//!   after (`retry_cnt` + 1) x timeout, as before. It resends the oldest
//!   packet alone, with AckReq, and the answer decides the rest: an ACK of
//!   that packet only, a loss, and the go-back-N goes on from there; an
//!   ACK beyond it, a responder slower than the timeout (the C driver on
//!   a busy host), and transmission goes on with what was never sent.
//!
//! Once a Local ACK Timeout expires with no response at all, the peer is
//! gone or the path is down: until any response arrives, only the QP
//! timeout resends (no probes, no RTT-based go-back-N), and with
//! `retry_cnt` 7 each such expiry doubles the interval, up to
//! [`BACKOFF_CAP_NS`]. A QP retrying for ever to a vanished peer then sends
//! its window about once a second instead of several times per timeout.
//!
//! Everything sent early is a duplicate a standard responder already
//! handles (it re-ACKs it), so the wire does not change. Packets in flight
//! are capped near twice the measured bandwidth-delay product, so a
//! go-back-N resends about one round trip's worth, not the whole window.
//! Without a clock (plain [`Requester::step`]) none of this runs: the timer
//! is the QP timeout and every expiry a retry, as in rxe.

use crate::proto::aeth::{NakCode, Syndrome};
use crate::proto::opcode::Position;
use crate::proto::psn::Psn;
use crate::proto::replay::{ReplayBuffer, ReplayBufferFull, SendWqe, WqeOp};
use crate::proto::rtt::RttEstimate;
use crate::proto::transport::{
    packet_position, ActionSink, AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteRange,
    RequestOp, RequestPacket,
};

/// A retry count that never runs out (`retry_cnt` and `rnr_retry` of 7).
pub const INFINITE_RETRY: u8 = 7;

/// Default PSN window: packets sent but not acknowledged. rxe's is 128,
/// two 64 KiB messages at a 1 KiB path MTU: a stream then waits on the
/// round trip of its ACKs with both CPUs partly idle. At 512 `ib_write_bw`
/// 64 KiB ran 9-14% faster in each of three boots and `ib_send_bw` 0-27%
/// (medians of three or five rounds, `Documentation/benchmarks.md`).
/// Where a go-back-N would resend much, the window is
/// [`DEFAULT_NARROW_PSN_WINDOW`].
pub const DEFAULT_PSN_WINDOW: u32 = 512;

/// Default narrow PSN window, rxe's, for what a go-back-N makes costly at
/// a wide window: sending a READ or atomic request (its replies come back
/// as one stream, and a lost reply packet makes the requester ask again
/// for everything after it, the replies of every READ behind it too), and
/// the flight after a go-back-N for a loss until a whole PSN window past
/// it is acknowledged. With 512 for those too `ib_read_bw` 64 KiB at 1%
/// netem loss ran a third slower (65-67 MB/s against 97-104).
pub const DEFAULT_NARROW_PSN_WINDOW: u32 = 128;

/// Default number of packets after which AckReq is set even mid-message.
pub const DEFAULT_ACK_REQ_EVERY: u32 = 64;

/// Default shortest tail-loss probe and RTO, in microseconds.
pub const DEFAULT_PROBE_FLOOR_USECS: u32 = 200;

/// Fewest packets in flight the bandwidth-delay cap allows.
pub const MIN_FLIGHT: u32 = 16;

/// Most times in a row the retry timer is put off because the QP's packets
/// are still queued in the caller's host (a bound, should a queue never
/// drain).
pub const LOCAL_QUEUE_DEFERRALS_MAX: u32 = 64;

/// Longest interval, in nanoseconds, the back-off of a requester that
/// retries for ever (`retry_cnt` 7) stretches an unanswered QP timeout to.
pub const BACKOFF_CAP_NS: u64 = 1_000_000_000;

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
    /// Most packets sent but not acknowledged when a READ or atomic
    /// request is sent (counting the reply packets the READs outstanding
    /// ask for), and in all after a go-back-N for a loss until
    /// `psn_window` PSNs past it are acknowledged; `psn_window` if larger.
    pub narrow_psn_window: u32,
    /// AckReq is set on a message's last packet and at least every this many
    /// packets.
    pub ack_req_every: u32,
    /// A SEND or WRITE whose last packet a later packet follows in the same
    /// transmit step goes without AckReq on it (unless `ack_req_every` or
    /// a full window asks): the ACK the step's last AckReq draws
    /// acknowledges it too, and a stream of small messages draws an ACK
    /// per step, not per message. The step's last packet always asks.
    pub coalesce_ack_req: bool,
    /// Shortest tail-loss probe and RTO, in microseconds (the caller's timer
    /// resolution is a good value).
    pub probe_floor_usecs: u32,
    /// How early the caller's timer may fire (its tick: a jiffy); a probe or
    /// RTT-based go-back-N that is due within a tick is taken.
    pub timer_tick_usecs: u32,
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
            narrow_psn_window: DEFAULT_NARROW_PSN_WINDOW,
            ack_req_every: DEFAULT_ACK_REQ_EVERY,
            coalesce_ack_req: false,
            probe_floor_usecs: DEFAULT_PROBE_FLOOR_USECS,
            timer_tick_usecs: 0,
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
    /// How many of this QP's packets are still queued in the caller's host
    /// (not yet on the wire). Given before [`RequesterEvent::RetryTimerExpired`]:
    /// while packets have not left, no answer can have come for them, and
    /// the expiry is put off instead of resending (at most
    /// [`LOCAL_QUEUE_DEFERRALS_MAX`] times in a row).
    LocalQueue {
        /// Packets queued locally.
        packets: u32,
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
    /// A tail-loss probe: one packet sent again with AckReq (`from` is its
    /// PSN); `retry_cnt` is not consumed.
    Probe,
    /// The RTT-based timer expired before the QP timeout (a NAK or a
    /// retransmission lost); `retry_cnt` is not consumed.
    RttTimeout,
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
    /// Expiries of the QP's Local ACK Timeout that found packets
    /// outstanding (each consumes `retry_cnt`).
    pub timeouts: u64,
    /// Tail-loss probes sent.
    pub probes: u64,
    /// Go-back-N started by the RTT-based timer.
    pub rtt_timeouts: u64,
    /// Retry timer expiries put off for packets queued in this host.
    pub local_queue_deferrals: u64,
    /// Probes and RTT-based go-backs the peer showed to be needless: it
    /// acknowledged again what it had acknowledged (its answer to a
    /// duplicate) after one.
    pub spurious_resends: u64,
    /// QP timeouts found spurious: the one packet resent after the timeout
    /// drew an ACK beyond it.
    pub spurious_timeouts: u64,
}

/// Largest factor by which needless resends stretch the probe and
/// RTT-based timers (never past the QP timeout).
pub const RESEND_BACKOFF_MAX: u64 = 64;

/// What tells a needless probe or RTT-based resend: the peer answers each
/// duplicate with an ACK of the newest PSN it executed (rxe does, AckReq or
/// not), so if it had every packet sent before the resend (its first ACK
/// late, not lost), the last of them is acknowledged once more than
/// packets were resent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ResendWatch {
    /// The first PSN resent (`comp_psn` then).
    from: Psn,
    /// The last PSN sent before the resend.
    last: Psn,
    /// Packets resent since the resend began.
    asked: u32,
    /// ACKs of `last` received since.
    acks: u32,
}

/// A packet whose ACK will be an RTT sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TimedPacket {
    psn: Psn,
    sent_at: u64,
    delivered: u64,
    /// A NAK named a PSN before it: the responder dropped it, so its resend
    /// times afresh instead of ending the sample.
    dropped: bool,
}

/// One RC or UC QP's requester and completer. `N` bounds the send queue
/// (the replay buffer).
///
/// A UC requester ([`Requester::new_unreliable`]) numbers and splits
/// SEND and WRITE WQEs as on RC, but nothing answers it: a WQE completes
/// once its last packet is handed to the network (as in rxe), no AckReq
/// is set, no timer runs, the PSN window does not hold it back, and
/// responses are ignored. READ, atomics and SEND with invalidate do not
/// exist on UC: one fails the QP with `LOC_QP_OP_ERR`, as in rxe.
#[derive(Debug)]
pub struct Requester<const N: usize> {
    config: RequesterConfig,
    /// UC: no acknowledgement, retransmission or timer.
    unreliable: bool,
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
    /// The packet `next_packet` built last asks for an ACK only because it
    /// ends its message: the packets counted towards `ack_req_every` then
    /// (see `coalesce_ack_req`). Taken by `transmit`.
    end_only_ask: Option<u32>,
    rd_atomic_outstanding: u32,
    retry_left: u8,
    rnr_retry_left: u8,
    started_retry: bool,
    wait_rnr: bool,
    retry_armed: bool,
    error: bool,
    counters: RequesterCounters,
    /// The caller's clock in ns (from `step_at`); `clocked` once given.
    now: u64,
    clocked: bool,
    rtt: RttEstimate,
    timed: Option<TimedPacket>,
    /// Packets acknowledged in all.
    delivered: u64,
    /// When the QP timeout started counting (last progress or expiry).
    stall_since: u64,
    /// When the probe/RTO schedule's last step happened.
    probe_base: u64,
    /// Steps of the schedule since progress: 0 = next is the probe.
    stall_step: u32,
    /// When the last go-back-N started.
    rewound_at: u64,
    local_queued: u32,
    deferrals: u32,
    /// Building a probe: no window, AckReq set.
    probing: bool,
    /// The last PSN a tail-loss probe sent, until progress or a go-back.
    probed: Option<Psn>,
    /// QP timeouts in a row that expired with no response at all: from
    /// the first, the peer is gone or the path is down, and only the QP
    /// timeout resends (backing off when retries never run out).
    unanswered: u32,
    /// The probe or RTT-based go-back last sent, until responses show
    /// whether it was needed.
    resend_unjudged: Option<ResendWatch>,
    /// Factor (1..=[`RESEND_BACKOFF_MAX`]) on the probe and RTT-based
    /// timers: doubled each time the peer shows a resend was needless (a
    /// peer whose ACKs come later than the RTT estimate says, and whose
    /// late ACKs cannot be samples once the packet was resent: Karn),
    /// halved when a probe finds a real loss.
    resend_backoff: u64,
    /// After a QP timeout (with a clock): one packet in flight, the oldest
    /// with AckReq, until the responder answers. A responder slower than
    /// the timeout has every packet still queued; resending the window
    /// would only add as many duplicates to its queue, each one costing it
    /// as much as a new packet and each drawing an ACK.
    restarting: bool,
    /// Set by a go-back-N for a loss: [`Self::paced`] until `comp_psn`
    /// reaches it.
    paced_until: Option<Psn>,
    /// Set by a go-back-N for a loss: [`Self::narrowed`] until `comp_psn`
    /// reaches it.
    narrowed_until: Option<Psn>,
    /// WQEs completed since the backoff last changed: every
    /// [`BACKOFF_DECAY_COMPLETIONS`] of them without a needless resend
    /// halve it (a needless resend now and then, from a late ACK, must not
    /// slow the recovery of real losses for long).
    clean_completions: u32,
}

/// See `Requester::clean_completions`.
const BACKOFF_DECAY_COMPLETIONS: u32 = 8;

impl<const N: usize> Requester<N> {
    /// A requester in RTS with the given attributes.
    pub fn new(config: RequesterConfig) -> Self {
        Requester {
            config,
            unreliable: false,
            buffer: ReplayBuffer::new(),
            psn: config.sq_psn,
            psn_high: config.sq_psn,
            comp_psn: config.sq_psn,
            send_index: 0,
            send_offset: 0,
            noack_pkts: 0,
            end_only_ask: None,
            rd_atomic_outstanding: 0,
            retry_left: config.retry_cnt,
            rnr_retry_left: config.rnr_retry,
            started_retry: false,
            wait_rnr: false,
            retry_armed: false,
            error: false,
            counters: RequesterCounters::default(),
            now: 0,
            clocked: false,
            rtt: RttEstimate::new(),
            timed: None,
            delivered: 0,
            stall_since: 0,
            probe_base: 0,
            stall_step: 0,
            rewound_at: 0,
            local_queued: 0,
            deferrals: 0,
            probing: false,
            probed: None,
            unanswered: 0,
            resend_unjudged: None,
            resend_backoff: 1,
            restarting: false,
            paced_until: None,
            narrowed_until: None,
            clean_completions: 0,
        }
    }

    /// A UC QP's requester in RTS with the given attributes.
    pub fn new_unreliable(config: RequesterConfig) -> Self {
        let mut requester = Self::new(config);
        requester.make_unreliable();
        requester
    }

    /// Makes this requester a UC QP's, in place (it may be large).
    pub fn make_unreliable(&mut self) {
        self.unreliable = true;
    }

    /// Starts over with `config` (RTS after RESET), in place: the replay
    /// buffer is emptied without building a new one (it is large). A UC
    /// requester stays one.
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
        self.rtt = RttEstimate::new();
        self.timed = None;
        self.delivered = 0;
        self.stall_since = self.now;
        self.probe_base = self.now;
        self.stall_step = 0;
        self.rewound_at = 0;
        self.local_queued = 0;
        self.deferrals = 0;
        self.probing = false;
        self.probed = None;
        self.unanswered = 0;
        self.resend_unjudged = None;
        self.resend_backoff = 1;
        self.restarting = false;
        self.paced_until = None;
        self.narrowed_until = None;
        self.clean_completions = 0;
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

    /// Where a READ response at `psn` would be placed, if it answers the
    /// oldest WQE, a READ: that WQE's id and the byte offset in its local
    /// buffers. For a driver that must know before the response is taken
    /// whether the memory there can be written (on-demand paging): the
    /// response itself is checked when it is taken.
    pub fn read_response_target(&self, psn: Psn) -> Option<(u64, u32)> {
        let head = self.buffer.front()?;
        if !matches!(head.wqe.op, WqeOp::Read { .. })
            || psn.before(head.first_psn)
            || psn.after(head.last_psn)
        {
            return None;
        }
        let offset =
            u64::from(psn.distance_from(head.first_psn)) * u64::from(self.config.mtu.bytes());
        Some((head.wqe.id, u32::try_from(offset).ok()?))
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

    /// The round-trip estimate.
    pub fn rtt(&self) -> &RttEstimate {
        &self.rtt
    }

    /// Most packets allowed in flight now: twice the measured
    /// bandwidth-delay product, at least [`MIN_FLIGHT`], and, unless a loss
    /// was recovered from within the last narrow window ([`Self::paced`]),
    /// at least what the measured delivery rate serves in half the QP
    /// timeout; at most the PSN window (the PSN window until measured), or
    /// the narrow window within a PSN window of a loss
    /// ([`Self::narrowed`]); one after a QP timeout until the responder
    /// answers.
    ///
    /// Without loss the cap only keeps a slow responder's queue shorter
    /// than the QP timeout, so that the timeout does not fire on packets
    /// merely queued and resend them into the same queue. Twice the
    /// product alone was too tight where the responder is the hosts' own
    /// processing (a veth to a local peer): the round trip grows with what
    /// is queued, the product stays at the quietest round trip's, and the
    /// sender waited on 16 packets per round trip while both CPUs idled
    /// (`ib_write_bw` 64 KiB about a third slower, with needless probes).
    /// After a loss it is the tight cap again: a go-back-N then resends
    /// less, and less is lost again.
    pub fn flight_cap(&self) -> u32 {
        if self.restarting && self.clocked {
            return 1;
        }
        let window = if self.narrowed() {
            self.narrow_window()
        } else {
            self.config.psn_window.max(1)
        };
        let Some(bdp) = self.rtt.bdp_packets().filter(|_| self.clocked) else {
            return window;
        };
        let timeout = self.timeout_ns();
        let min_rtt = self.rtt.min_rtt();
        let served = if self.paced() {
            0
        } else if timeout == 0 || min_rtt == 0 {
            u32::MAX
        } else {
            let n = u64::from(bdp).saturating_mul(timeout / 2) / min_rtt;
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        bdp.saturating_mul(2)
            .max(MIN_FLIGHT)
            .max(served)
            .min(window)
    }

    /// Whether a go-back-N for a loss happened within the last narrow
    /// window (until `comp_psn` passes the PSN it set): the flight is then
    /// held to twice the bandwidth-delay product.
    pub fn paced(&self) -> bool {
        self.paced_until.is_some_and(|p| self.comp_psn.before(p))
    }

    /// Whether a go-back-N for a loss happened within the last PSN window
    /// (until `comp_psn` passes the PSN it set): the flight is then at
    /// most the narrow window.
    pub fn narrowed(&self) -> bool {
        self.narrowed_until.is_some_and(|p| self.comp_psn.before(p))
    }

    /// The narrow PSN window, never wider than the PSN window.
    fn narrow_window(&self) -> u32 {
        self.config
            .narrow_psn_window
            .min(self.config.psn_window)
            .max(1)
    }

    /// Whether packets have been sent and not all acknowledged.
    pub fn has_unacked(&self) -> bool {
        self.psn_high.after(self.comp_psn)
    }

    /// Whether the packets outstanding fill the flight cap `cap` (the
    /// caller's [`Requester::flight_cap`]), or, for a READ or atomic
    /// request (`asks_reply`), the narrow window. Neither holds back an
    /// unreliable QP (nothing is acknowledged) or a probe.
    fn flight_full(&self, cap: u32, asks_reply: bool) -> bool {
        if self.unreliable || self.probing {
            return false;
        }
        let outstanding = self.psn.distance_from(self.comp_psn);
        outstanding >= cap || (asks_reply && outstanding >= self.narrow_window())
    }

    /// Whether a transmit step now would send a packet (the packets the
    /// driver has in flight aside): not in ERROR nor waiting out an RNR
    /// NAK, a WQE with packets left to send, room in the flight cap (or a
    /// probe due), and a READ or atomic credit for a request that needs
    /// one. The receive path wakes the transmit work when a response turns
    /// this from false to true; while it is true a wake-up is under way
    /// already (whatever made it true woke the work, which sends until it
    /// turns false or the driver's own flight bound stops it).
    pub fn may_transmit(&self) -> bool {
        if self.error || self.wait_rnr {
            return false;
        }
        let Some(entry) = self.buffer.get(self.send_index) else {
            return false;
        };
        let asks_reply = entry.wqe.op.is_read_or_atomic();
        if self.unreliable && asks_reply {
            // UC has no READ or atomic: the transmit step fails it (a UC
            // QP has no READ credits, which would otherwise say no).
            return true;
        }
        if self.flight_full(self.flight_cap(), asks_reply) {
            return false;
        }
        !(asks_reply
            && !entry.holds_credit
            && self.rd_atomic_outstanding >= self.config.max_rd_atomic)
    }

    /// Whether a WQE not yet begun is a READ, an atomic or a FLUSH: a
    /// request whose answer the responder sends back as a reply.
    pub fn unsent_awaits_reply(&self) -> bool {
        (0..self.buffer.len())
            .filter_map(|i| self.buffer.get(i))
            .any(|entry| !entry.sent && entry.wqe.op.is_read_or_atomic())
    }

    /// Request packets the posted WQEs still need transmitted: every
    /// packet of a WQE not yet begun (one for a READ, an atomic or a
    /// FLUSH) and, of those begun, what lies at or after the next PSN
    /// (after a go-back-N, what is to be sent again).
    pub fn unsent_packets(&self) -> u32 {
        let mtu = self.config.mtu;
        let next = self.psn;
        (0..self.buffer.len())
            .filter_map(|i| self.buffer.get(i))
            .map(|entry| {
                let one_request = entry.wqe.op.is_read_or_atomic();
                if !entry.sent {
                    if one_request {
                        1
                    } else {
                        entry.wqe.packets(mtu)
                    }
                } else if next.after(entry.last_psn) {
                    0
                } else if one_request {
                    1
                } else if next.before(entry.first_psn) {
                    entry.last_psn.distance_from(entry.first_psn) + 1
                } else {
                    entry.last_psn.distance_from(next) + 1
                }
            })
            .fold(0, u32::saturating_add)
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

    /// Processes one event at time `now_ns` of the caller's monotonic clock
    /// (nanoseconds; it must not go back). With a clock the requester
    /// estimates the round trip and recovers from loss in about one; see
    /// the module documentation.
    pub fn step_at(
        &mut self,
        now_ns: u64,
        event: RequesterEvent,
        out: &mut impl ActionSink<RequesterAction>,
    ) {
        if !self.clocked {
            self.clocked = true;
            self.stall_since = now_ns;
            self.probe_base = now_ns;
        }
        self.now = self.now.max(now_ns);
        self.step(event, out);
    }

    /// Processes one event (at the time last given to
    /// [`Requester::step_at`], if ever).
    pub fn step(&mut self, event: RequesterEvent, out: &mut impl ActionSink<RequesterAction>) {
        if self.unreliable {
            match event {
                RequesterEvent::Transmit { budget } => self.transmit_unreliable(budget, out),
                RequesterEvent::Response(_) => out.push(RequesterAction::DropResponse {
                    reason: ResponseDropReason::Unexpected,
                }),
                _ => {}
            }
            return;
        }
        match event {
            RequesterEvent::LocalQueue { packets } => self.local_queued = packets,
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
        // The packet built last, emitted once it is known whether another
        // follows it in this step (`coalesce_ack_req`).
        let mut held: Option<(TxPacket, Option<u32>)> = None;
        while sent < budget {
            let Some(mut pkt) = self.next_packet() else {
                break;
            };
            let mut end_only = self.end_only_ask.take();
            if let Some((mut prev, prev_end_only)) = held.take() {
                if let Some(counted) = prev_end_only {
                    end_only = self.coalesce_ack_req(&mut prev, counted, &mut pkt, end_only);
                }
                self.emit(prev, out);
            }
            held = Some((pkt, end_only));
            sent += 1;
        }
        if let Some((last, _)) = held {
            self.emit(last, out);
        }
        if sent > 0 && !self.retry_armed {
            self.start_stall();
            self.arm_retry(out);
        }
    }

    /// With `coalesce_ack_req`, takes AckReq off `prev`, the last packet of a
    /// SEND or WRITE that `next` follows in the same step, which asked only
    /// because it ends its message (`counted`: the packets counted towards
    /// `ack_req_every` when it did, itself included). Those go on counting:
    /// into `next`'s count if it too asks only for its end
    /// (`next_end_only`), else into the requester's. Either may reach
    /// `ack_req_every` and make `next` ask for good. Returns `next`'s
    /// end-only count, as `next_end_only` is.
    fn coalesce_ack_req(
        &mut self,
        prev: &mut TxPacket,
        counted: u32,
        next: &mut TxPacket,
        next_end_only: Option<u32>,
    ) -> Option<u32> {
        if !self.config.coalesce_ack_req
            || !matches!(prev.header.op, RequestOp::Send | RequestOp::Write)
        {
            return next_end_only;
        }
        prev.header.ack_req = false;
        let every = self.ack_req_spacing(self.flight_cap());
        match next_end_only {
            Some(own) => {
                let total = own.saturating_add(counted);
                (total < every).then_some(total)
            }
            // `next` asks for another reason, which restarted the count.
            None if next.header.ack_req => None,
            None => {
                self.noack_pkts = self.noack_pkts.saturating_add(counted);
                if self.noack_pkts >= every {
                    next.header.ack_req = true;
                    self.noack_pkts = 0;
                }
                None
            }
        }
    }

    /// Packets after which AckReq is set even mid-message, with the flight
    /// capped at `cap`: every half cap at most, so that ACKs keep the
    /// window moving.
    fn ack_req_spacing(&self, cap: u32) -> u32 {
        self.config.ack_req_every.min((cap / 2).max(1))
    }

    /// UC: sends up to `budget` packets; a WQE completes after its last.
    fn transmit_unreliable(&mut self, budget: u32, out: &mut impl ActionSink<RequesterAction>) {
        let mut sent = 0;
        while sent < budget && !self.error {
            let Some(head) = self.buffer.get(self.send_index) else {
                break;
            };
            // UC has no READ, atomic or SEND with invalidate on the wire.
            let uc_op = match head.wqe.op {
                WqeOp::Send {
                    invalidate_rkey, ..
                } => invalidate_rkey.is_none(),
                WqeOp::Write { .. } => true,
                WqeOp::Read { .. } | WqeOp::Atomic(_) | WqeOp::Flush { .. } => false,
            };
            if !uc_op {
                self.fail(CompletionStatus::LocalQpOperationError, out);
                break;
            }
            let Some(pkt) = self.next_packet() else {
                break;
            };
            let ends = pkt.header.position.ends();
            self.emit(pkt, out);
            sent += 1;
            if ends {
                // Nothing acknowledges it: done once handed to the network.
                self.comp_psn = self.psn;
                self.complete_head(CompletionStatus::Success, None, out);
            }
        }
    }

    /// Counts and sends `pkt`; a first transmission with AckReq becomes the
    /// next RTT sample if none is being taken.
    fn emit(&mut self, pkt: TxPacket, out: &mut impl ActionSink<RequesterAction>) {
        self.counters.sent_pkts += 1;
        if let Some(w) = self.resend_unjudged.as_mut() {
            if pkt.retransmit {
                w.asked += 1;
            }
        }
        if pkt.retransmit {
            self.counters.retransmitted_pkts += 1;
            // Karn: an ACK for a packet sent twice could answer either
            // copy, unless the responder is known to have dropped the
            // first (it drops whatever follows a gap it NAKed).
            if let Some(t) = self.timed.as_mut() {
                if t.psn == pkt.header.psn {
                    if t.dropped {
                        t.sent_at = self.now;
                        t.delivered = self.delivered;
                        t.dropped = false;
                    } else {
                        self.timed = None;
                    }
                }
            }
        } else if pkt.header.ack_req && self.clocked && self.timed.is_none() {
            self.timed = Some(TimedPacket {
                psn: pkt.header.psn,
                sent_at: self.now,
                delivered: self.delivered,
                dropped: false,
            });
        }
        out.push(RequesterAction::Transmit(pkt));
    }

    /// Builds the next packet, or `None` if nothing may be sent now.
    fn next_packet(&mut self) -> Option<TxPacket> {
        if self.error || self.wait_rnr {
            return None;
        }
        let asks_reply = self
            .buffer
            .get(self.send_index)
            .is_some_and(|entry| entry.wqe.op.is_read_or_atomic());
        let cap = self.flight_cap();
        if self.flight_full(cap, asks_reply) {
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
            WqeOp::Atomic(
                args @ AtomicArgs {
                    op: AtomicOp::Write { .. },
                    ..
                },
            ) => {
                // The value goes as the 8-byte payload, the target in a RETH.
                header.op = RequestOp::AtomicWrite;
                header.atomic = Some(args);
                header.reth = Some(RemoteRange {
                    va: args.va,
                    rkey: args.rkey,
                    len: 8,
                });
                header.payload_len = 8;
                psn_used = 1;
            }
            WqeOp::Atomic(args) => {
                header.op = RequestOp::Atomic;
                header.atomic = Some(args);
                psn_used = 1;
            }
            WqeOp::Flush {
                va,
                rkey,
                len,
                placement,
                selectivity,
            } => {
                header.op = RequestOp::Flush {
                    placement,
                    selectivity,
                };
                header.reth = Some(RemoteRange { va, rkey, len });
                psn_used = 1;
            }
        }
        self.noack_pkts += 1;
        let ends = header.position.ends();
        // With the flight capped, ask for an ACK every half cap and on the
        // packet that fills it, so that ACKs keep the window moving.
        let every = self.ack_req_spacing(cap);
        let fills = self.clocked && psn.add(psn_used).distance_from(self.comp_psn) >= cap;
        self.end_only_ask = None;
        if !self.unreliable && (ends || self.noack_pkts >= every || fills || self.probing) {
            header.ack_req = true;
            let forced = self.noack_pkts >= every || fills || self.probing;
            self.end_only_ask = (!forced).then_some(self.noack_pkts);
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
                    WqeOp::Atomic(_) | WqeOp::Flush { .. } => 0,
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
        // Any response shows the peer is there.
        self.unanswered = 0;
        let needless = match self.resend_unjudged.as_mut() {
            Some(w)
                if pkt.psn == w.last
                    && pkt.op == ResponseOp::Acknowledge
                    && pkt.syndrome.is_some_and(|s| s.is_ack()) =>
            {
                w.acks += 1;
                w.acks > w.asked
            }
            // A READ response for a PSN the resend asked for again, already
            // received: the responder restarted its reply from there (as a
            // duplicate READ makes it), and the original reply had got
            // through. The reply was slower than the estimate, not lost.
            Some(w) => {
                matches!(pkt.op, ResponseOp::ReadResponse(_))
                    && pkt.psn.before(self.comp_psn)
                    && pkt.psn.within(w.from, w.last)
            }
            _ => false,
        };
        if needless {
            // The peer acknowledged the last packet sent before the probe
            // or RTT-based resend once more than the resend asked: once
            // for the packet itself, late, not lost. Its ACKs come later
            // than the estimate says (and a late ACK of a resent packet
            // cannot be a sample: Karn), so the timers wait longer.
            self.resend_unjudged = None;
            self.counters.spurious_resends += 1;
            self.resend_backoff = (self.resend_backoff * 2).min(RESEND_BACKOFF_MAX);
            self.clean_completions = 0;
        }
        let before = self.comp_psn;
        let rewinds = self.counters.completer_retry_err;
        self.handle_response(pkt, out);
        if self.error {
            return;
        }
        let progressed = self.comp_psn.after(before);
        let restarted_at = (progressed && self.restarting).then_some(before);
        if progressed {
            self.restarting = false;
            // A NAK that moved `comp_psn` also started a go-back-N, which
            // is now under way.
            if self.counters.completer_retry_err == rewinds {
                self.started_retry = false;
            }
            if let Some(last) = self.probed.take() {
                if !self.comp_psn.after(last) && self.counters.completer_retry_err == rewinds {
                    // The probes drew an ACK that stops short of the last
                    // packet: the responder holds nothing after
                    // `comp_psn` (it NAKed once, and that NAK or the
                    // packet resent for it was lost). Go back now. A real
                    // loss: the timers need not wait as long.
                    self.resend_backoff = (self.resend_backoff / 2).max(1);
                    self.counters.rtt_timeouts += 1;
                    self.go_back(GoBackCause::Probe, out);
                }
            }
            let acked = self.comp_psn.distance_from(before);
            self.delivered = self.delivered.saturating_add(u64::from(acked));
            self.deferrals = 0;
            if let Some(t) = self.timed {
                if self.comp_psn.after(t.psn) {
                    self.timed = None;
                    let rtt = self.now.saturating_sub(t.sent_at);
                    self.rtt
                        .sample(rtt, self.delivered.saturating_sub(t.delivered));
                }
            }
        }
        if let Some(resent) = restarted_at {
            if self.comp_psn.after(resent.next()) && self.counters.completer_retry_err == rewinds {
                // The one packet resent after the QP timeout drew an ACK
                // beyond it: the responder had it and more, so the timeout
                // was spurious (a responder slower than the timeout, not a
                // loss). What follows is on its way or queued there: go on
                // with what was never sent instead of resending it.
                self.counters.spurious_timeouts += 1;
                self.resume_after_sent();
            }
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
        // Forgotten once passed, before PSNs wrap around to them.
        if !self.paced() {
            self.paced_until = None;
        }
        if !self.narrowed() {
            self.narrowed_until = None;
        }
        if !self.has_unacked() {
            self.disarm_retry(out);
        } else if progressed && !self.wait_rnr {
            self.start_stall();
            self.arm_retry(out);
        }
    }

    /// Progress (or a start from idle): the QP timeout and the probe
    /// schedule count from now.
    fn start_stall(&mut self) {
        self.stall_since = self.now;
        self.probe_base = self.now;
        self.stall_step = 0;
    }

    fn timeout_ns(&self) -> u64 {
        u64::from(self.config.timeout_usecs) * 1000
    }

    /// When the QP timeout expires. With retries that never run out, each
    /// unanswered expiry doubles the next interval, up to
    /// [`BACKOFF_CAP_NS`] (or the QP timeout, if longer): a peer that is
    /// gone gets one window a second, not one every QP timeout for ever.
    fn full_deadline(&self) -> u64 {
        let timeout = self.timeout_ns();
        let interval = if self.config.retry_cnt == INFINITE_RETRY && self.unanswered > 0 {
            let shift = self.unanswered.min(16);
            timeout
                .saturating_mul(1 << shift)
                .min(BACKOFF_CAP_NS.max(timeout))
        } else {
            timeout
        };
        self.stall_since.saturating_add(interval)
    }

    /// When the next probe (step 0) or RTT-based go-back-N (later steps,
    /// doubling) is due. Before any RTT sample, a quarter of the QP timeout.
    fn next_due(&self) -> u64 {
        if self.unanswered > 0 {
            // Nothing answered a whole QP timeout: no probe or RTT-based
            // go-back-N until something does.
            return self.full_deadline();
        }
        let timeout = self.timeout_ns();
        let floor = u64::from(self.config.probe_floor_usecs) * 1000;
        let unmeasured = (timeout / 4).max(floor);
        let interval = match self.rtt.srtt() {
            None => unmeasured,
            Some(srtt) if self.stall_step == 0 => srtt.saturating_mul(2).max(floor),
            Some(srtt) => {
                let rto = self.rtt.rto(floor).unwrap_or(unmeasured);
                let shift = (self.stall_step - 1).min(16);
                rto.max(srtt.saturating_mul(2)).saturating_mul(1 << shift)
            }
        }
        .saturating_mul(self.resend_backoff);
        self.probe_base.saturating_add(interval.min(timeout))
    }

    /// Arms the retry timer for the nearest deadline (without a clock: the
    /// QP timeout). A timeout of 0 means none.
    fn arm_retry(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        if self.config.timeout_usecs == 0 {
            return;
        }
        let usecs = if self.clocked {
            let due = self.next_due().min(self.full_deadline());
            let ns = due.saturating_sub(self.now).max(1);
            u32::try_from(ns.div_ceil(1000)).unwrap_or(u32::MAX)
        } else {
            self.config.timeout_usecs
        };
        self.retry_armed = true;
        out.push(RequesterAction::ArmRetryTimer { usecs });
    }

    /// Whether a round trip has passed since the last go-back-N began.
    fn round_trip_since_rewind(&self) -> bool {
        self.clocked
            && self
                .rtt
                .srtt()
                .is_some_and(|srtt| self.now.saturating_sub(self.rewound_at) >= srtt)
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
                if matches!(head.wqe.op, WqeOp::Read { .. })
                    && matches!(pkt.op, ResponseOp::ReadResponse(_))
                {
                    // A gap inside the READ response: a response packet
                    // was lost. Re-issue the READ from the missing offset
                    // now (an implicit NAK) rather than at the timeout.
                    self.retry(false, out);
                } else {
                    self.drop_response(ResponseDropReason::Unexpected, out);
                }
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
        if head.wqe.op.answered_by_empty_read_response() {
            // ATOMIC_WRITE and FLUSH: one empty READ RESPONSE ONLY.
            if !aeth_ok || position != Position::Only || pkt.payload_len != 0 || !restart {
                self.drop_response(ResponseDropReason::Malformed, out);
                return;
            }
            self.comp_psn = pkt.psn.next();
            self.reload_retry_counters();
            self.complete_head(CompletionStatus::Success, None, out);
            return;
        }
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
        if !matches!(head.wqe.op, WqeOp::Atomic(_))
            || head.wqe.op.answered_by_empty_read_response()
            || !aeth_ok
            || pkt.psn != head.first_psn
        {
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
        let queued = core::mem::take(&mut self.local_queued);
        if self.error || self.wait_rnr || !self.has_unacked() {
            return;
        }
        if !self.clocked {
            self.counters.timeouts += 1;
            self.retry(true, out);
            return;
        }
        if queued > 0 && self.deferrals < LOCAL_QUEUE_DEFERRALS_MAX {
            // Nothing can have answered packets that have not left this
            // host: count from when they leave.
            self.deferrals += 1;
            self.counters.local_queue_deferrals += 1;
            self.start_stall();
            self.arm_retry(out);
            return;
        }
        self.deferrals = 0;
        let deadline = self.full_deadline();
        let tick = u64::from(self.config.timer_tick_usecs) * 1000;
        if self.now >= deadline {
            self.counters.timeouts += 1;
            self.unanswered = self.unanswered.saturating_add(1);
            self.start_stall();
            // The next timeout counts from this one's deadline, not from
            // when the timer got to run: (retry_cnt + 1) x timeout in all.
            if self.now.saturating_sub(deadline) < self.timeout_ns() {
                self.stall_since = deadline;
            }
            self.retry(true, out);
        } else if self.unanswered == 0 && self.now.saturating_add(tick) >= self.next_due() {
            if self.stall_step == 0 && !self.started_retry {
                self.probe(out);
            } else {
                // The responder NAKed and drops everything after the gap
                // in silence, or the probe drew nothing: go back now.
                self.counters.rtt_timeouts += 1;
                self.go_back(GoBackCause::RttTimeout, out);
            }
            self.stall_step = self.stall_step.saturating_add(1);
            self.probe_base = self.now;
        }
        if !self.error && !self.retry_armed {
            self.arm_retry(out);
        }
    }

    /// A tail-loss probe: the oldest unacknowledged packet and the last one
    /// sent go again with AckReq (for a READ or atomic, its request: from
    /// the missing offset if it is the oldest). The cursor of the ordinary
    /// transmission is left alone.
    ///
    /// A lost ACK: both are duplicates, re-ACKed. A lost tail: the oldest
    /// draws an ACK short of the last, and the last a NAK. A lost NAK or a
    /// resent packet lost again (the responder drops everything after its
    /// gap in silence): the oldest draws an ACK short of the last. An ACK
    /// short of the last probe starts the go-back-N at once.
    fn probe(&mut self, out: &mut impl ActionSink<RequesterAction>) {
        let saved = (self.psn, self.send_index, self.send_offset, self.noack_pkts);
        self.rewind();
        self.probing = true;
        let oldest = self.next_packet();
        self.probing = false;
        (self.psn, self.send_index, self.send_offset, self.noack_pkts) = saved;
        let Some(oldest) = oldest else {
            return;
        };
        self.counters.probes += 1;
        self.watch_resend();
        out.push(RequesterAction::GoBack {
            from: oldest.header.psn,
            cause: GoBackCause::Probe,
        });
        self.emit(oldest, out);
        self.probed = Some(oldest.header.psn);
        let last = self.psn_high.sub(1);
        if !last.after(oldest.header.psn) {
            return;
        }
        let Some((index, offset)) = self.buffer.locate(last, self.config.mtu) else {
            return;
        };
        let Some(entry) = self.buffer.get(index).copied() else {
            return;
        };
        let saved = (self.psn, self.send_index, self.send_offset, self.noack_pkts);
        if !entry.wqe.op.is_read_or_atomic() {
            self.psn = last;
            self.send_index = index;
            self.send_offset = offset;
        } else if index == 0 {
            self.rewind();
        } else {
            self.psn = entry.first_psn;
            self.send_index = index;
            self.send_offset = 0;
        }
        self.probing = true;
        let pkt = self.next_packet();
        self.probing = false;
        (self.psn, self.send_index, self.send_offset, self.noack_pkts) = saved;
        if let Some(pkt) = pkt {
            if pkt.header.psn.after(oldest.header.psn) {
                self.emit(pkt, out);
                self.probed = Some(last);
            }
        }
    }

    /// Moves the send cursor to `psn_high`, the first PSN never sent.
    fn resume_after_sent(&mut self) {
        let last = self.psn_high.sub(1);
        let Some((index, offset)) = self.buffer.locate(last, self.config.mtu) else {
            return;
        };
        let Some(entry) = self.buffer.get(index).copied() else {
            return;
        };
        self.psn = self.psn_high;
        self.noack_pkts = 0;
        if last == entry.last_psn {
            self.send_index = index + 1;
            self.send_offset = 0;
        } else {
            self.send_index = index;
            self.send_offset = offset.saturating_add(self.config.mtu.bytes());
        }
    }

    /// Starts judging a probe or RTT-based resend about to be sent.
    fn watch_resend(&mut self) {
        self.resend_unjudged = Some(ResendWatch {
            // Resends follow one another faster than their duplicates
            // come back: keep the first one's PSN.
            from: self.resend_unjudged.map_or(self.comp_psn, |w| w.from),
            last: self.psn_high.sub(1),
            asked: 0,
            acks: 0,
        });
    }

    /// Starts a go-back-N from `comp_psn`.
    fn go_back(&mut self, cause: GoBackCause, out: &mut impl ActionSink<RequesterAction>) {
        if matches!(cause, GoBackCause::Probe | GoBackCause::RttTimeout) {
            self.watch_resend();
        } else {
            self.resend_unjudged = None;
        }
        self.started_retry = true;
        self.rewound_at = self.now;
        self.probed = None;
        if cause != GoBackCause::Rnr {
            self.paced_until = Some(self.psn_high.add(self.narrow_window()));
            let window = self.config.psn_window.max(1);
            self.narrowed_until = Some(self.psn_high.add(window));
        }
        match cause {
            GoBackCause::Timeout => self.restarting = true,
            // The responder answered and named the PSN it expects.
            GoBackCause::Nak | GoBackCause::Rnr => self.restarting = false,
            GoBackCause::Probe | GoBackCause::RttTimeout => {}
        }
        if let Some(t) = self.timed.as_mut() {
            t.dropped = cause == GoBackCause::Nak && t.psn.after(self.comp_psn);
        }
        self.rewind();
        out.push(RequesterAction::GoBack {
            from: self.psn,
            cause,
        });
    }

    /// The retry decision: go back to `comp_psn` while retries remain, else
    /// fail the oldest WQE with RETRY_EXC_ERR.
    fn retry(&mut self, timeout: bool, out: &mut impl ActionSink<RequesterAction>) {
        if !self.has_unacked() {
            return;
        }
        if self.started_retry && !timeout && !self.round_trip_since_rewind() {
            // The NAK (or implicit NAK) answers packets sent before the
            // go-back-N under way; once a round trip has passed, it
            // answers the resent ones, one of which was lost again.
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
        let cause = if timeout {
            GoBackCause::Timeout
        } else {
            GoBackCause::Nak
        };
        self.go_back(cause, out);
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
        if status == CompletionStatus::Success && self.resend_backoff > 1 {
            self.clean_completions += 1;
            if self.clean_completions >= BACKOFF_DECAY_COMPLETIONS {
                self.clean_completions = 0;
                self.resend_backoff /= 2;
            }
        }
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
