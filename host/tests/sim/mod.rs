//! A simulated lossy link joining a requester and a responder machine, with
//! simulated memory, receive queue and time. Shared by `tests/lossy_link.rs`
//! and `examples/lossy_link_report.rs`.
#![expect(
    dead_code,
    reason = "each crate that includes this module uses only part of it"
)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rxe_proto::proto::aeth::{RnrTimer, Syndrome};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp, ResponsePacket,
};
use rxe_proto::proto::responder::{
    AccessError, AccessFlags, MemoryTarget, PlaceTarget, Responder, ResponderAction,
    ResponderConfig, ResponderEnv,
};
use rxe_proto::proto::transport::{
    AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteAccess, RemoteRange, RequestPacket,
};

/// xorshift64* PRNG: small, seeded, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }
}

/// Parameters of one simulated run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    /// Probability each packet (either direction) is lost.
    pub loss: f64,
    /// Probability each delivered packet is duplicated.
    pub dup: f64,
    /// Probability a packet is held back by up to `jitter_ns` (reordering).
    pub reorder: f64,
    /// Largest extra delay of a held-back packet, in ns.
    pub jitter_ns: u64,
    pub messages: usize,
    pub mtu: Mtu,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    /// Receive WQEs trickle in (RNR NAKs happen) instead of all up front.
    pub rq_starve: bool,
    /// Probability the responder finds the memory a packet touches not
    /// resident (an on-demand-paging region whose pages are out): it
    /// answers with an RNR NAK and must not have placed anything.
    pub not_resident: f64,
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct SimResult {
    pub completed: usize,
    pub error: Option<CompletionStatus>,
    pub sent_pkts: u64,
    pub needed_pkts: u64,
    pub response_pkts: u64,
    pub sim_ns: u64,
    pub messages: usize,
    pub retries: u64,
    pub rnr_naks: u64,
    /// Residency checks the responder answered "not resident".
    pub faults: u64,
    pub timeouts: u64,
    pub seq_naks: u64,
}

const RO_VA: u64 = 0x10_0000;
const RO_LEN: usize = 32 * 1024;
const ATOMIC_VA: u64 = RO_VA + RO_LEN as u64;
const ATOMIC_WORDS: usize = 4;
const WRITE_VA: u64 = ATOMIC_VA + 8 * ATOMIC_WORDS as u64;
const RKEY: u32 = 0x77;
const LINK_NS: u64 = 5_000;
const BYTES_PER_US: u64 = 1250; // 10 Gb/s
const RQ_REFILL_NS: u64 = 30_000;

/// One posted work request and its local data.
struct Work {
    wqe: SendWqe,
    /// SEND/WRITE source bytes; READ destination.
    local: Vec<u8>,
    /// For atomics: the original value the model expects.
    expect_orig: Option<u64>,
}

struct Mem {
    bytes: Vec<u8>,
    rq: VecDeque<u32>,
    atomics_executed: usize,
    /// Decides residency (see [`SimConfig::not_resident`]).
    paging: Rng,
    not_resident: f64,
    /// Residency checks answered "not resident".
    faults: u64,
}

impl Mem {
    fn off(&self, range: &RemoteRange) -> Option<usize> {
        if range.rkey != RKEY || range.va < RO_VA {
            return None;
        }
        let off = usize::try_from(range.va - RO_VA).ok()?;
        (off.checked_add(range.len as usize)? <= self.bytes.len()).then_some(off)
    }
}

impl ResponderEnv for Mem {
    fn receive_wqe(&mut self) -> Option<u32> {
        self.rq.front().copied()
    }
    fn check_access(&mut self, range: &RemoteRange, _a: RemoteAccess) -> Result<(), AccessError> {
        self.off(range).map(|_| ()).ok_or(AccessError)
    }
    fn execute_atomic(&mut self, args: &AtomicArgs) -> Result<u64, AccessError> {
        let off = self
            .off(&RemoteRange {
                va: args.va,
                rkey: args.rkey,
                len: 8,
            })
            .ok_or(AccessError)?;
        let orig = u64::from_le_bytes(self.bytes[off..off + 8].try_into().unwrap());
        let new = apply_atomic(orig, args.op);
        self.bytes[off..off + 8].copy_from_slice(&new.to_le_bytes());
        self.atomics_executed += 1;
        Ok(orig)
    }
    fn flush(&mut self, range: &RemoteRange, _a: RemoteAccess) -> Result<(), AccessError> {
        if range.len == 0 {
            return Ok(());
        }
        self.off(range).map(|_| ()).ok_or(AccessError)
    }
    fn resident(&mut self, _target: &MemoryTarget) -> Result<bool, AccessError> {
        if self.not_resident > 0.0 && self.paging.chance(self.not_resident) {
            self.faults += 1;
            return Ok(false);
        }
        Ok(true)
    }
}

fn apply_atomic(orig: u64, op: AtomicOp) -> u64 {
    match op {
        AtomicOp::CompareSwap { compare, swap } => {
            if orig == compare {
                swap
            } else {
                orig
            }
        }
        AtomicOp::FetchAdd { add } => orig.wrapping_add(add),
        AtomicOp::Write { value } => value,
    }
}

enum Ev {
    ToResponder(RequestPacket, Vec<u8>),
    ToRequester(ResponsePacket, Vec<u8>),
    RetryTimer(u64),
    RnrTimer(u64),
    RqRefill,
}

struct Link {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    events: Vec<Option<Ev>>,
    seq: u64,
    free_at: [u64; 2],
}

impl Link {
    fn at(&mut self, t: u64, ev: Ev) {
        self.events.push(Some(ev));
        self.heap.push(Reverse((t, self.events.len() as u64 - 1)));
        self.seq += 1;
    }
    /// Sends a packet in direction `dir`, with serialization, loss,
    /// duplication and jitter.
    fn send(
        &mut self,
        rng: &mut Rng,
        cfg: &SimConfig,
        now: u64,
        dir: usize,
        bytes: u32,
        ev: impl Fn() -> Ev,
    ) {
        let depart = now.max(self.free_at[dir]);
        self.free_at[dir] = depart + 200 + u64::from(bytes) * 1000 / BYTES_PER_US;
        let copies = if rng.chance(cfg.dup) { 2 } else { 1 };
        for _ in 0..copies {
            if rng.chance(cfg.loss) {
                continue;
            }
            let jitter = if cfg.jitter_ns > 0 && rng.chance(cfg.reorder) {
                rng.below(cfg.jitter_ns)
            } else {
                0
            };
            self.at(self.free_at[dir] + LINK_NS + jitter, ev());
        }
    }
}

fn gen_len(rng: &mut Rng, mtu: u32) -> u32 {
    match rng.below(8) {
        0 => 0,
        1 => 1 + rng.below(8) as u32,
        2 => mtu,
        3 => mtu - 1,
        4 => mtu + 1,
        5 => 2 * mtu,
        _ => rng.below(u64::from(3 * mtu + 100)) as u32,
    }
}

/// Builds the workload: SEND/WRITE/READ/ATOMIC (compare-and-swap,
/// fetch-and-add, ATOMIC_WRITE) mixes, lengths 0..several MTU.
fn workload(rng: &mut Rng, cfg: &SimConfig, mem: &mut Mem) -> Vec<Work> {
    let mtu = cfg.mtu.bytes();
    let mut works = Vec::new();
    let mut write_va = WRITE_VA;
    let mut model = [0u64; ATOMIC_WORDS];
    for (i, w) in model.iter_mut().enumerate() {
        *w = u64::from_le_bytes(
            mem.bytes[RO_LEN + 8 * i..RO_LEN + 8 * i + 8]
                .try_into()
                .unwrap(),
        );
    }
    for id in 0..cfg.messages as u64 {
        let roll = rng.below(100);
        let len = gen_len(rng, mtu);
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let w = if roll < 30 {
            let imm = rng.chance(0.3).then(|| rng.next_u64() as u32);
            Work {
                wqe: SendWqe {
                    id,
                    op: WqeOp::Send {
                        imm,
                        invalidate_rkey: None,
                    },
                    length: len,
                },
                local: data,
                expect_orig: None,
            }
        } else if roll < 60 {
            let imm = rng.chance(0.2).then(|| rng.next_u64() as u32);
            let va = write_va;
            write_va += u64::from(len);
            Work {
                wqe: SendWqe {
                    id,
                    op: WqeOp::Write {
                        va,
                        rkey: RKEY,
                        imm,
                    },
                    length: len,
                },
                local: data,
                expect_orig: None,
            }
        } else if roll < 85 {
            let va = RO_VA + rng.below((RO_LEN - len as usize) as u64 + 1);
            Work {
                wqe: SendWqe {
                    id,
                    op: WqeOp::Read { va, rkey: RKEY },
                    length: len,
                },
                local: vec![0; len as usize],
                expect_orig: None,
            }
        } else {
            let word = rng.below(ATOMIC_WORDS as u64) as usize;
            let op = if rng.chance(0.25) {
                AtomicOp::Write {
                    value: rng.next_u64(),
                }
            } else if rng.chance(0.5) {
                AtomicOp::FetchAdd {
                    add: rng.below(1000),
                }
            } else {
                let compare = if rng.chance(0.5) {
                    model[word]
                } else {
                    rng.next_u64()
                };
                AtomicOp::CompareSwap {
                    compare,
                    swap: rng.next_u64(),
                }
            };
            let orig = model[word];
            model[word] = apply_atomic(orig, op);
            let args = AtomicArgs {
                va: ATOMIC_VA + 8 * word as u64,
                rkey: RKEY,
                op,
            };
            // ATOMIC_WRITE returns no original value.
            let returns_orig = !matches!(op, AtomicOp::Write { .. });
            Work {
                wqe: SendWqe {
                    id,
                    op: WqeOp::Atomic(args),
                    length: 8,
                },
                local: Vec::new(),
                expect_orig: returns_orig.then_some(orig),
            }
        };
        works.push(w);
    }
    mem.bytes.resize((write_va - RO_VA) as usize, 0);
    works
}

/// Runs one simulation and checks delivery: every message exactly once, in
/// order, byte-identical; atomics executed once with the right original
/// value; or ERROR only because retries ran out. Panics (naming the seed) on
/// any violation.
pub fn run(cfg: &SimConfig) -> SimResult {
    let mut rng = Rng::new(cfg.seed);
    let mtu = cfg.mtu;
    let start_psn = Psn::new(0x00ff_ffff - rng.below(300) as u32);
    let mut mem = Mem {
        bytes: (0..RO_LEN + 8 * ATOMIC_WORDS)
            .map(|_| rng.next_u64() as u8)
            .collect(),
        rq: VecDeque::new(),
        atomics_executed: 0,
        paging: Rng::new(cfg.seed ^ 0x0D9_0D9),
        not_resident: cfg.not_resident,
        faults: 0,
    };
    let mut works = workload(&mut rng, cfg, &mut mem);
    let expected_recv: Vec<(Vec<u8>, Option<u32>, bool)> = works
        .iter()
        .filter_map(|w| match w.wqe.op {
            WqeOp::Send { imm, .. } => Some((w.local.clone(), imm, false)),
            WqeOp::Write { imm: Some(imm), .. } => Some((Vec::new(), Some(imm), true)),
            _ => None,
        })
        .collect();
    let recv_cap = 4 * mtu.bytes() + 200;
    if !cfg.rq_starve {
        mem.rq
            .extend(std::iter::repeat_n(recv_cap, expected_recv.len()));
    }

    let mut rcfg = RequesterConfig::new(mtu, start_psn);
    rcfg.retry_cnt = cfg.retry_cnt;
    rcfg.rnr_retry = cfg.rnr_retry;
    rcfg.max_rd_atomic = 8;
    rcfg.timeout_usecs = 262; // attr.timeout = 6
    let mut req = Requester::<32>::new(rcfg);
    let mut resp = Responder::<8>::new(ResponderConfig {
        mtu,
        rq_psn: start_psn,
        min_rnr_timer: RnrTimer::new(2),
        max_dest_rd_atomic: 8,
        access: AccessFlags::ALL,
    });

    let mut link = Link {
        heap: BinaryHeap::new(),
        events: Vec::new(),
        seq: 0,
        free_at: [0; 2],
    };
    let mut now = 0u64;
    let mut next_post = 0usize;
    let mut completions: Vec<(u64, CompletionStatus, Option<u64>)> = Vec::new();
    let mut received: Vec<(Vec<u8>, Option<u32>, bool)> = Vec::new();
    let mut cur_recv: Option<Vec<u8>> = None;
    let mut retry_gen = 0u64;
    let mut rnr_gen = 0u64;
    let mut req_error = None;
    let mut resp_error = None;
    let mut response_pkts = 0u64;
    let mut refills_left = if cfg.rq_starve {
        expected_recv.len()
    } else {
        0
    };
    if refills_left > 0 {
        link.at(RQ_REFILL_NS, Ev::RqRefill);
    }
    let ctx = format!("seed {} loss {} mtu {}", cfg.seed, cfg.loss, mtu.bytes());

    let mut ev: Option<Ev> = None;
    let mut steps = 0u64;
    loop {
        steps += 1;
        assert!(steps < 5_000_000, "{ctx}: livelock");
        // 1. Process the event.
        let mut req_actions: Vec<RequesterAction> = Vec::new();
        let mut resp_payload: Vec<u8> = Vec::new();
        match ev.take() {
            None => {}
            Some(Ev::RqRefill) => {
                mem.rq.push_back(recv_cap);
                refills_left -= 1;
                if refills_left > 0 {
                    link.at(now + RQ_REFILL_NS, Ev::RqRefill);
                }
            }
            Some(Ev::RetryTimer(g)) if g == retry_gen => {
                req.step(RequesterEvent::RetryTimerExpired, &mut |a| {
                    req_actions.push(a)
                });
            }
            Some(Ev::RnrTimer(g)) if g == rnr_gen => {
                req.step(RequesterEvent::RnrTimerExpired, &mut |a| {
                    req_actions.push(a)
                });
            }
            Some(Ev::RetryTimer(_) | Ev::RnrTimer(_)) => {}
            Some(Ev::ToRequester(pkt, payload)) => {
                req.step(RequesterEvent::Response(pkt), &mut |a| req_actions.push(a));
                resp_payload = payload;
            }
            Some(Ev::ToResponder(pkt, payload)) => {
                let mut acts = Vec::new();
                resp.step(&pkt, &mut mem, &mut |a| acts.push(a));
                for a in acts {
                    match a {
                        ResponderAction::ConsumeReceiveWqe => {
                            assert!(
                                mem.rq.pop_front().is_some(),
                                "{ctx}: consumed a missing WQE"
                            );
                            cur_recv = Some(Vec::new());
                        }
                        ResponderAction::Place {
                            target,
                            len,
                            payload_offset,
                        } => {
                            let src =
                                &payload[payload_offset as usize..(payload_offset + len) as usize];
                            match target {
                                PlaceTarget::Memory { va, rkey } => {
                                    let off = mem
                                        .off(&RemoteRange { va, rkey, len })
                                        .expect("checked range");
                                    mem.bytes[off..off + src.len()].copy_from_slice(src);
                                }
                                PlaceTarget::Receive { offset } => {
                                    let buf = cur_recv.as_mut().expect("receive WQE held");
                                    assert_eq!(
                                        buf.len(),
                                        offset as usize,
                                        "{ctx}: SEND placed out of order"
                                    );
                                    buf.extend_from_slice(src);
                                }
                            }
                        }
                        ResponderAction::CompleteReceive {
                            len,
                            imm,
                            write_with_imm,
                            status,
                            ..
                        } => {
                            assert_eq!(status, CompletionStatus::Success, "{ctx}");
                            let data = if write_with_imm {
                                Vec::new()
                            } else {
                                cur_recv.take().unwrap_or_default()
                            };
                            if !write_with_imm {
                                assert_eq!(data.len(), len as usize);
                            }
                            cur_recv = None;
                            received.push((data, imm, write_with_imm));
                        }
                        ResponderAction::SendAck { psn, syndrome, .. } => {
                            response_pkts += 1;
                            let p = ResponsePacket {
                                psn,
                                op: ResponseOp::Acknowledge,
                                syndrome: Some(syndrome),
                                payload_len: 0,
                            };
                            link.send(&mut rng, cfg, now, 1, 0, || Ev::ToRequester(p, Vec::new()));
                        }
                        ResponderAction::SendAtomicAck { psn, orig, .. } => {
                            response_pkts += 1;
                            let p = ResponsePacket {
                                psn,
                                op: ResponseOp::AtomicAcknowledge { orig },
                                syndrome: Some(Syndrome::ACK),
                                payload_len: 0,
                            };
                            link.send(&mut rng, cfg, now, 1, 0, || Ev::ToRequester(p, Vec::new()));
                        }
                        ResponderAction::SendReadResponses(job) => {
                            for r in job {
                                response_pkts += 1;
                                // An empty READ response (a zero-length READ,
                                // an ATOMIC_WRITE's answer) reads nothing.
                                let data = if r.range.len == 0 {
                                    Vec::new()
                                } else {
                                    let off = mem.off(&r.range).expect("checked range");
                                    mem.bytes[off..off + r.range.len as usize].to_vec()
                                };
                                let p = ResponsePacket {
                                    psn: r.psn,
                                    op: ResponseOp::ReadResponse(r.position),
                                    syndrome: r.aeth_msn.map(|_| Syndrome::ACK),
                                    payload_len: r.range.len,
                                };
                                link.send(&mut rng, cfg, now, 1, r.range.len, || {
                                    Ev::ToRequester(p, data.clone())
                                });
                            }
                        }
                        ResponderAction::Drop { .. } => {}
                        ResponderAction::EnterError { status } => resp_error = Some(status),
                    }
                }
            }
        }
        // 2. Post what fits, then give the requester a transmit opportunity.
        while next_post < works.len() && !req.replay_buffer().is_full() {
            req.post(works[next_post].wqe, &mut |a| req_actions.push(a))
                .expect("fits");
            next_post += 1;
        }
        req.step(RequesterEvent::Transmit { budget: 1000 }, &mut |a| {
            req_actions.push(a)
        });
        for a in req_actions {
            match a {
                RequesterAction::Transmit(p) => {
                    let w = &works[p.wqe_id as usize];
                    let payload = match w.wqe.op {
                        WqeOp::Send { .. } | WqeOp::Write { .. } => w.local[p.payload_offset
                            as usize
                            ..(p.payload_offset + p.header.payload_len) as usize]
                            .to_vec(),
                        _ => Vec::new(),
                    };
                    let h = p.header;
                    link.send(&mut rng, cfg, now, 0, h.payload_len, || {
                        Ev::ToResponder(h, payload.clone())
                    });
                }
                RequesterAction::PlaceReadData {
                    wqe_id,
                    offset,
                    len,
                } => {
                    let w = &mut works[wqe_id as usize];
                    w.local[offset as usize..(offset + len) as usize]
                        .copy_from_slice(&resp_payload[..len as usize]);
                }
                RequesterAction::Complete(c) => {
                    assert_eq!(
                        c.wqe_id,
                        completions.len() as u64,
                        "{ctx}: completion out of order or twice"
                    );
                    completions.push((c.wqe_id, c.status, c.atomic_orig));
                }
                RequesterAction::ArmRetryTimer { usecs } => {
                    retry_gen += 1;
                    link.at(now + u64::from(usecs) * 1000, Ev::RetryTimer(retry_gen));
                }
                RequesterAction::DisarmRetryTimer => retry_gen += 1,
                RequesterAction::ArmRnrTimer { usecs } => {
                    rnr_gen += 1;
                    link.at(now + u64::from(usecs) * 1000, Ev::RnrTimer(rnr_gen));
                }
                RequesterAction::DropResponse { .. } | RequesterAction::GoBack { .. } => {}
                RequesterAction::EnterError { status } => req_error = Some(status),
            }
        }
        if completions.len() == works.len() {
            break;
        }
        // 3. Next event.
        let Some(Reverse((t, idx))) = link.heap.pop() else {
            panic!(
                "{ctx}: stalled with {} of {} complete",
                completions.len(),
                works.len()
            );
        };
        now = t;
        ev = link.events[idx as usize].take();
    }

    // Verdict.
    assert!(
        resp_error.is_none(),
        "{ctx}: responder error {resp_error:?}"
    );
    let infinite = cfg.retry_cnt == 7 && cfg.rnr_retry == 7;
    let mut ok_prefix = completions.len();
    if let Some(status) = req_error {
        assert!(!infinite, "{ctx}: ERROR with infinite retries");
        assert!(
            matches!(
                status,
                CompletionStatus::RetryExceededError | CompletionStatus::RnrRetryExceededError
            ),
            "{ctx}: ERROR for {status:?}"
        );
        ok_prefix = completions
            .iter()
            .position(|c| c.1 != CompletionStatus::Success)
            .unwrap();
        assert_eq!(completions[ok_prefix].1, status);
        assert!(completions[ok_prefix + 1..]
            .iter()
            .all(|c| c.1 == CompletionStatus::FlushError));
    } else {
        assert!(
            completions.iter().all(|c| c.1 == CompletionStatus::Success),
            "{ctx}"
        );
    }
    // Received messages: exactly once, in order, byte-identical (a prefix if
    // the QP failed).
    assert!(
        received.len() <= expected_recv.len(),
        "{ctx}: extra receive completions"
    );
    assert_eq!(
        &received[..],
        &expected_recv[..received.len()],
        "{ctx}: receive stream differs"
    );
    if req_error.is_none() {
        assert_eq!(
            received.len(),
            expected_recv.len(),
            "{ctx}: receives missing"
        );
    }
    let mut atomics = 0;
    for (w, c) in works.iter().zip(&completions).take(ok_prefix) {
        match w.wqe.op {
            WqeOp::Write { va, rkey, .. } | WqeOp::Read { va, rkey } => {
                // A WRITE's remote bytes and a READ's landed local bytes
                // must be the same (the local buffer is what moved).
                let what = if matches!(w.wqe.op, WqeOp::Read { .. }) {
                    "READ"
                } else {
                    "WRITE"
                };
                let off = mem
                    .off(&RemoteRange {
                        va,
                        rkey,
                        len: w.wqe.length,
                    })
                    .unwrap();
                assert_eq!(
                    &mem.bytes[off..off + w.local.len()],
                    &w.local[..],
                    "{ctx}: {what} {} differs",
                    w.wqe.id
                );
            }
            WqeOp::Atomic(_) => {
                atomics += 1;
                assert_eq!(
                    c.2, w.expect_orig,
                    "{ctx}: atomic {} original value",
                    w.wqe.id
                );
            }
            WqeOp::Send { .. } | WqeOp::Flush { .. } => {}
        }
    }
    if req_error.is_none() {
        assert_eq!(
            mem.atomics_executed, atomics,
            "{ctx}: atomics executed more than once"
        );
    } else {
        let posted_atomics = works
            .iter()
            .filter(|w| matches!(w.wqe.op, WqeOp::Atomic(_)))
            .count();
        assert!(mem.atomics_executed <= posted_atomics);
    }
    let c = req.counters();
    SimResult {
        completed: ok_prefix,
        error: req_error,
        sent_pkts: c.sent_pkts,
        needed_pkts: c.sent_pkts - c.retransmitted_pkts,
        response_pkts,
        sim_ns: now,
        messages: works.len(),
        retries: c.completer_retry_err,
        rnr_naks: c.rcvd_rnr_err,
        faults: mem.faults,
        timeouts: c.timeouts,
        seq_naks: c.rcvd_seq_err,
    }
}
