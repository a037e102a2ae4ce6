//! The lossy-link benchmark's twin: one RC QP streaming 64 KiB SENDs to a
//! responder over a simulated veth-like link, with the kernel's parameters
//! around the `proto` machines: AckReq every `TX_INFLIGHT_LOW` packets, at
//! most `TX_INFLIGHT_HIGH` of the QP's packets queued in the host (the
//! requester stops there and is restarted below `TX_INFLIGHT_LOW`), at most
//! `TX_BUDGET` packets per requester step, timers that fire on 1 ms jiffy
//! ticks (`mod_timer(jiffies + usecs_to_jiffies(usecs))`, HZ=1000), and the
//! QP's Local ACK Timeout from `modify_qp` (`timeout` 14 is 67 ms, what
//! perftest and `ibv_rc_pingpong` use). Like src/rc, it steps the requester
//! with the clock and tells it, before each retry timer expiry, how many of
//! its packets are still queued in the host. Shared by `tests/lossy_twin.rs` and
//! `examples/lossy_link_report.rs`.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rxe_proto::proto::aeth::{RnrTimer, Syndrome};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp, ResponsePacket,
};
use rxe_proto::proto::responder::{
    AccessError, AccessFlags, Responder, ResponderAction, ResponderConfig, ResponderEnv,
};
use rxe_proto::proto::transport::{AtomicArgs, CompletionStatus, Mtu, RemoteAccess, RemoteRange};

/// `TX_INFLIGHT_HIGH` in src/qp.rs.
pub const TX_INFLIGHT_HIGH: u32 = 64;
/// `TX_INFLIGHT_LOW` in src/qp.rs (also the kernel's AckReq spacing).
pub const TX_INFLIGHT_LOW: u32 = 16;
/// `TX_BUDGET` in src/rc/send.rs.
pub const TX_BUDGET: u32 = 32;
/// `SQ_WINDOW` in src/rc/mod.rs.
pub const SQ_WINDOW: usize = 64;
/// One jiffy (HZ=1000).
pub const JIFFY_NS: u64 = 1_000_000;
/// The Local ACK Timeout of `timeout` = 14: 4.096 us << 14.
pub const TIMEOUT_67MS: u32 = 67_108;
/// A short Local ACK Timeout, `timeout` = 8: 4.096 us << 8.
pub const TIMEOUT_1MS: u32 = 1_048;

/// Link: bytes per microsecond (2 Gb/s, about what soft-RoCE moves over a
/// veth pair on one core) and one-way latency (softirq, veth, receive).
const BYTES_PER_US: u64 = 250;
const ONE_WAY_NS: u64 = 10_000;
/// Ethernet + IP + UDP + BTH + ICRC bytes per packet.
const HEADER_BYTES: u64 = 78;

/// How packets are lost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// None.
    None,
    /// Every packet, both directions, with this probability.
    Random(f64),
    /// Gilbert-Elliott bursts (mean burst `burst` packets) in both
    /// directions, averaging this loss rate.
    Bursty(f64, f64),
    /// Only ACKs and NAKs (the responder's direction).
    AckOnly(f64),
    /// Only the first transmission of a message's last packet, for this
    /// fraction of messages.
    Tail(f64),
    /// Random loss `.0` both ways, and retransmitted packets lost with
    /// probability `.1` on top.
    Retransmissions(f64, f64),
    /// The peer vanishes after this many messages completed: nothing gets
    /// through in either direction from then on.
    Vanish(usize),
    /// Nothing lost, but as netem's `delay D reorder P`: in both
    /// directions every packet is held back by `.1` ns but a fraction `.0`
    /// of them, which overtake the held ones.
    Reorder(f64, u64),
}

impl Loss {
    /// A short name for tables.
    pub fn describe(&self) -> String {
        match *self {
            Loss::None => "none".into(),
            Loss::Random(p) => format!("random {:.1}%", p * 100.0),
            Loss::Bursty(p, b) => format!("bursty {:.1}% (burst {b})", p * 100.0),
            Loss::AckOnly(p) => format!("ACK/NAK {:.1}%", p * 100.0),
            Loss::Tail(p) => format!("tail {:.0}% of msgs", p * 100.0),
            Loss::Retransmissions(p, q) => {
                format!("random {:.1}% + resends {:.0}%", p * 100.0, q * 100.0)
            }
            Loss::Vanish(n) => format!("peer gone after {n}"),
            Loss::Reorder(p, d) => format!("reorder {:.0}% ({} us)", p * 100.0, d / 1000),
        }
    }
}

/// Parameters of one run.
#[derive(Clone, Copy, Debug)]
pub struct TwinConfig {
    pub seed: u64,
    pub loss: Loss,
    /// Local ACK Timeout in microseconds.
    pub timeout_usecs: u32,
    pub retry_cnt: u8,
    pub messages: usize,
    pub msg_len: u32,
    pub mtu: Mtu,
    /// WQEs posted at once: 1 is a pingpong, `SQ_WINDOW` a bandwidth test.
    pub outstanding: usize,
}

impl TwinConfig {
    /// 64 KiB SENDs one at a time, MTU 1024, the 67 ms timeout, retry_cnt 7.
    pub fn pingpong(seed: u64, loss: Loss) -> Self {
        TwinConfig {
            seed,
            loss,
            timeout_usecs: TIMEOUT_67MS,
            retry_cnt: 7,
            messages: 200,
            msg_len: 64 * 1024,
            mtu: Mtu::MTU_1024,
            outstanding: 1,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct TwinResult {
    pub completed: usize,
    pub messages: usize,
    pub error: Option<CompletionStatus>,
    /// When the QP entered ERROR.
    pub error_ns: u64,
    /// When the last message completed successfully.
    pub last_success_ns: u64,
    pub sent_pkts: u64,
    pub needed_pkts: u64,
    pub probes: u64,
    /// Go-back-N started by the RTT-based timer (not the QP timeout).
    pub rtt_timeouts: u64,
    /// Expiries of the full QP timeout (each one consumes `retry_cnt`).
    pub timeouts: u64,
    pub naks: u64,
    pub sim_ns: u64,
}

impl TwinResult {
    /// Adds `r` to this total.
    pub fn add(&mut self, r: &TwinResult) {
        self.completed += r.completed;
        self.messages += r.messages;
        self.sent_pkts += r.sent_pkts;
        self.needed_pkts += r.needed_pkts;
        self.probes += r.probes;
        self.rtt_timeouts += r.rtt_timeouts;
        self.timeouts += r.timeouts;
        self.naks += r.naks;
        self.sim_ns += r.sim_ns;
    }

    /// Simulated time per completed message, in microseconds.
    pub fn us_per_msg(&self) -> f64 {
        self.sim_ns as f64 / 1000.0 / self.completed.max(1) as f64
    }
}

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next_u64() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }
}

/// The responder host: a receive WQE is always there.
struct Peer;

impl ResponderEnv for Peer {
    fn receive_wqe(&mut self) -> Option<u32> {
        Some(u32::MAX)
    }
    fn check_access(&mut self, _r: &RemoteRange, _a: RemoteAccess) -> Result<(), AccessError> {
        Ok(())
    }
    fn execute_atomic(&mut self, _args: &AtomicArgs) -> Result<u64, AccessError> {
        Err(AccessError)
    }
    fn flush(&mut self, _r: &RemoteRange, _a: RemoteAccess) -> Result<(), AccessError> {
        Err(AccessError)
    }
}

enum Ev {
    /// The head of the local queue leaves the host.
    Depart,
    ToResponder(rxe_proto::proto::transport::RequestPacket),
    ToRequester(ResponsePacket),
    RetryTimer(u64),
    RnrTimer(u64),
}

struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    events: Vec<Option<Ev>>,
}

impl Queue {
    fn at(&mut self, t: u64, ev: Ev) {
        self.events.push(Some(ev));
        self.heap.push(Reverse((t, self.events.len() as u64 - 1)));
    }
}

/// When a timer armed at `now` for `usecs` fires: on the jiffy tick
/// `usecs_to_jiffies(usecs)` ticks after the current one.
fn timer_fires(now: u64, usecs: u32) -> u64 {
    let ticks = (u64::from(usecs) * 1000).div_ceil(JIFFY_NS).max(1);
    (now / JIFFY_NS + ticks) * JIFFY_NS
}

struct Lossy {
    rng: Rng,
    bad: [bool; 2],
    vanished: bool,
}

impl Lossy {
    /// Whether a packet in direction `dir` (0 requests, 1 responses) is lost.
    fn lost(&mut self, loss: Loss, dir: usize, tail: bool, retransmit: bool) -> bool {
        if self.vanished {
            return true;
        }
        match loss {
            Loss::None | Loss::Vanish(_) | Loss::Reorder(..) => false,
            Loss::Random(p) => self.rng.chance(p),
            Loss::Bursty(p, burst) => {
                // Good -> bad with p / (burst (1 - p)), bad -> good with
                // 1 / burst: the chain is bad a fraction p of the time, and
                // every packet sent while bad is lost.
                let to_bad = p / (burst * (1.0 - p));
                let b = &mut self.bad[dir];
                *b = if *b {
                    !self.rng.chance(1.0 / burst)
                } else {
                    self.rng.chance(to_bad)
                };
                *b
            }
            Loss::AckOnly(p) => dir == 1 && self.rng.chance(p),
            Loss::Tail(p) => dir == 0 && tail && !retransmit && self.rng.chance(p),
            Loss::Retransmissions(p, q) => {
                self.rng.chance(p) || (dir == 0 && retransmit && self.rng.chance(q))
            }
        }
    }
}

impl Lossy {
    /// The extra delay of a packet that is not lost.
    fn delay(&mut self, loss: Loss) -> u64 {
        match loss {
            Loss::Reorder(p, d) if !self.rng.chance(p) => d,
            _ => 0,
        }
    }
}

/// The kernel glue around the requester, as src/rc does it.
struct Host {
    req: Requester<SQ_WINDOW>,
    /// Packets emitted and not yet left the host (`tx_inflight`).
    local: VecDeque<(rxe_proto::proto::transport::RequestPacket, bool)>,
    departing: bool,
    link_free: [u64; 2],
    blocked: bool,
    retry_gen: u64,
    rnr_gen: u64,
    error: Option<CompletionStatus>,
    error_ns: u64,
    completed: usize,
    last_success_ns: u64,
}

impl Host {
    fn step(&mut self, q: &mut Queue, now: u64, ev: RequesterEvent) -> u32 {
        let mut acts = Vec::new();
        self.req.step_at(now, ev, &mut |a| acts.push(a));
        let mut sent = 0;
        for a in acts {
            match a {
                RequesterAction::Transmit(p) => {
                    sent += 1;
                    self.local.push_back((p.header, p.retransmit));
                    self.kick_departure(q, now);
                }
                RequesterAction::ArmRetryTimer { usecs } => {
                    self.retry_gen += 1;
                    q.at(timer_fires(now, usecs), Ev::RetryTimer(self.retry_gen));
                }
                RequesterAction::DisarmRetryTimer => self.retry_gen += 1,
                RequesterAction::ArmRnrTimer { usecs } => {
                    self.rnr_gen += 1;
                    q.at(timer_fires(now, usecs), Ev::RnrTimer(self.rnr_gen));
                }
                RequesterAction::Complete(c) => {
                    if c.status == CompletionStatus::Success {
                        self.completed += 1;
                        self.last_success_ns = now;
                    }
                }
                RequesterAction::EnterError { status } => {
                    self.error = Some(status);
                    self.error_ns = now;
                }
                RequesterAction::PlaceReadData { .. }
                | RequesterAction::DropResponse { .. }
                | RequesterAction::GoBack { .. } => {}
            }
        }
        sent
    }

    fn kick_departure(&mut self, q: &mut Queue, now: u64) {
        if self.departing {
            return;
        }
        if let Some((h, _)) = self.local.front() {
            let bytes = HEADER_BYTES + u64::from(h.payload_len);
            let start = now.max(self.link_free[0]);
            self.link_free[0] = start + bytes * 1000 / BYTES_PER_US;
            self.departing = true;
            q.at(self.link_free[0], Ev::Depart);
        }
    }

    /// `send::pump`: transmit while the host has room.
    fn pump(&mut self, q: &mut Queue, now: u64) {
        loop {
            if self.error.is_some() {
                return;
            }
            let queued = self.local.len() as u32;
            let room = TX_INFLIGHT_HIGH.saturating_sub(queued);
            if room == 0 {
                self.blocked = true;
                return;
            }
            let sent = self.step(
                q,
                now,
                RequesterEvent::Transmit {
                    budget: room.min(TX_BUDGET),
                },
            );
            if sent == 0 {
                return;
            }
        }
    }

    /// `complete::timer_expired` for the retry timer: the packets still
    /// queued here, then the expiry.
    fn retry_timer(&mut self, q: &mut Queue, now: u64) {
        let packets = self.local.len() as u32;
        self.step(q, now, RequesterEvent::LocalQueue { packets });
        self.step(q, now, RequesterEvent::RetryTimerExpired);
        self.pump(q, now);
    }
}

/// Runs one configuration to the end (every message complete, or ERROR).
pub fn run(cfg: &TwinConfig) -> TwinResult {
    let mtu = cfg.mtu;
    let start = Psn::new(0x00ff_ff00);
    let mut rcfg = RequesterConfig::new(mtu, start);
    rcfg.retry_cnt = cfg.retry_cnt;
    rcfg.rnr_retry = 7;
    rcfg.timeout_usecs = cfg.timeout_usecs;
    rcfg.ack_req_every = TX_INFLIGHT_LOW;
    // As the kernel (module parameter ack_req_coalesce, default on).
    rcfg.coalesce_ack_req = true;
    // As src/rc/mod.rs: the probe floor and the timer tick are one jiffy.
    rcfg.timer_tick_usecs = (JIFFY_NS / 1000) as u32;
    rcfg.probe_floor_usecs = rcfg.timer_tick_usecs;
    let mut host = Host {
        req: Requester::new(rcfg),
        local: VecDeque::new(),
        departing: false,
        link_free: [0; 2],
        blocked: false,
        retry_gen: 0,
        rnr_gen: 0,
        error: None,
        error_ns: 0,
        completed: 0,
        last_success_ns: 0,
    };
    let mut resp = Responder::<16>::new(ResponderConfig {
        mtu,
        rq_psn: start,
        min_rnr_timer: RnrTimer::new(1),
        max_dest_rd_atomic: 16,
        access: AccessFlags::ALL,
    });
    let mut lossy = Lossy {
        rng: Rng::new(cfg.seed),
        bad: [false; 2],
        vanished: false,
    };
    let mut q = Queue {
        heap: BinaryHeap::new(),
        events: Vec::new(),
    };
    let mut posted = 0usize;
    let mut now = 0u64;
    let mut steps = 0u64;
    loop {
        steps += 1;
        assert!(steps < 50_000_000, "seed {}: livelock", cfg.seed);
        if let Loss::Vanish(n) = cfg.loss {
            lossy.vanished = host.completed >= n;
        }
        // Post up to `outstanding` WQEs (completions free room).
        while posted < cfg.messages && posted - host.completed < cfg.outstanding {
            if host.error.is_some() {
                break;
            }
            let wqe = SendWqe {
                id: posted as u64,
                op: WqeOp::Send {
                    imm: None,
                    invalidate_rkey: None,
                },
                length: cfg.msg_len,
            };
            host.req.post(wqe, &mut |_| {}).expect("room");
            posted += 1;
        }
        host.pump(&mut q, now);
        if host.completed == cfg.messages || host.error.is_some() {
            break;
        }
        let Some(Reverse((t, idx))) = q.heap.pop() else {
            panic!(
                "seed {}: stalled at {} of {}",
                cfg.seed, host.completed, cfg.messages
            );
        };
        now = t;
        match q.events[idx as usize].take().expect("event once") {
            Ev::Depart => {
                host.departing = false;
                let (h, retransmit) = host.local.pop_front().expect("queued");
                if !lossy.lost(cfg.loss, 0, h.position.ends(), retransmit) {
                    let delay = lossy.delay(cfg.loss);
                    q.at(now + ONE_WAY_NS + delay, Ev::ToResponder(h));
                }
                host.kick_departure(&mut q, now);
                if host.blocked && (host.local.len() as u32) < TX_INFLIGHT_LOW {
                    host.blocked = false;
                    host.pump(&mut q, now);
                }
            }
            Ev::ToResponder(h) => {
                let mut acts = Vec::new();
                resp.step(&h, &mut Peer, &mut |a| acts.push(a));
                for a in acts {
                    let p = match a {
                        ResponderAction::SendAck { psn, syndrome, .. } => ResponsePacket {
                            psn,
                            op: ResponseOp::Acknowledge,
                            syndrome: Some(syndrome),
                            payload_len: 0,
                        },
                        ResponderAction::SendAtomicAck { psn, orig, .. } => ResponsePacket {
                            psn,
                            op: ResponseOp::AtomicAcknowledge { orig },
                            syndrome: Some(Syndrome::ACK),
                            payload_len: 0,
                        },
                        _ => continue,
                    };
                    let start = now.max(host.link_free[1]);
                    host.link_free[1] = start + HEADER_BYTES * 1000 / BYTES_PER_US;
                    if !lossy.lost(cfg.loss, 1, false, false) {
                        let delay = lossy.delay(cfg.loss);
                        q.at(host.link_free[1] + ONE_WAY_NS + delay, Ev::ToRequester(p));
                    }
                }
            }
            Ev::ToRequester(p) => {
                host.step(&mut q, now, RequesterEvent::Response(p));
            }
            Ev::RetryTimer(g) => {
                if g == host.retry_gen {
                    host.retry_timer(&mut q, now);
                }
            }
            Ev::RnrTimer(g) => {
                if g == host.rnr_gen {
                    host.step(&mut q, now, RequesterEvent::RnrTimerExpired);
                }
            }
        }
    }
    let c = *host.req.counters();
    TwinResult {
        completed: host.completed,
        messages: cfg.messages,
        error: host.error,
        error_ns: host.error_ns,
        last_success_ns: host.last_success_ns,
        sent_pkts: c.sent_pkts,
        needed_pkts: c.sent_pkts - c.retransmitted_pkts,
        probes: c.probes,
        rtt_timeouts: c.rtt_timeouts,
        timeouts: c.timeouts,
        naks: c.rcvd_seq_err,
        sim_ns: host.last_success_ns,
    }
}
