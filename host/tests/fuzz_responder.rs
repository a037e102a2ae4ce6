//! Arbitrary packet sequences into the responder and arbitrary
//! ACK/NAK/response streams into the requester: nothing panics and the
//! machines' invariants hold. `RXE_FUZZ_CASES` sets the number of cases
//! (default 2000 of each).
mod common;
#[path = "sim/mod.rs"]
mod sim;

use common::{Env, MR_RKEY, MR_VA};
use rxe_proto::proto::aeth::{RnrTimer, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp, ResponsePacket,
};
use rxe_proto::proto::responder::{
    AccessFlags, DropReason, PlaceTarget, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{
    AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteRange, RequestOp, RequestPacket,
};
use sim::Rng;

fn cases() -> u64 {
    std::env::var("RXE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000)
}

const POSITIONS: [Position; 4] = [
    Position::First,
    Position::Middle,
    Position::Last,
    Position::Only,
];
const OPS: [RequestOp; 5] = [
    RequestOp::Send,
    RequestOp::Write,
    RequestOp::Read,
    RequestOp::Atomic,
    RequestOp::Unsupported,
];

fn near(rng: &mut Rng, base: Psn) -> Psn {
    match rng.below(4) {
        0 => Psn::new(rng.next_u64() as u32),
        _ => base.add(rng.below(12) as u32).sub(6),
    }
}

fn any_len(rng: &mut Rng, mtu: u32) -> u32 {
    match rng.below(6) {
        0 => 0,
        1 => mtu,
        2 => rng.below(u64::from(mtu) + 2) as u32,
        3 => rng.next_u64() as u32,
        _ => rng.below(4 * u64::from(mtu)) as u32,
    }
}

fn any_range(rng: &mut Rng, mtu: u32) -> RemoteRange {
    RemoteRange {
        va: if rng.chance(0.8) {
            MR_VA + rng.below(8192)
        } else {
            rng.next_u64()
        },
        rkey: if rng.chance(0.9) {
            MR_RKEY
        } else {
            rng.next_u64() as u32
        },
        len: any_len(rng, mtu),
    }
}

#[test]
fn responder_survives_arbitrary_packets() {
    for case in 0..cases() {
        let mut rng = Rng::new(0xF00D + case);
        let mtu = Mtu::new(256 << rng.below(5)).unwrap();
        let start = Psn::new(rng.next_u64() as u32);
        let mut resp = Responder::<4>::new(ResponderConfig {
            mtu,
            rq_psn: start,
            min_rnr_timer: RnrTimer::new(rng.below(32) as u8),
            max_dest_rd_atomic: rng.below(6) as u32,
            access: AccessFlags {
                remote_read: rng.chance(0.9),
                remote_write: rng.chance(0.9),
                remote_atomic: rng.chance(0.9),
                flush_global: rng.chance(0.9),
                flush_persistent: rng.chance(0.9),
            },
        });
        let mut env = Env::new(16 * 1024);
        let mut wqes_held = 0u32;
        for _ in 0..200 {
            if rng.chance(0.3) {
                env.rq.push_back(rng.below(20_000) as u32);
            }
            let pkt = RequestPacket {
                psn: near(&mut rng, resp.expected_psn()),
                op: OPS[rng.below(5) as usize],
                position: POSITIONS[rng.below(4) as usize],
                ack_req: rng.chance(0.5),
                payload_len: any_len(&mut rng, mtu.bytes()),
                reth: rng.chance(0.7).then(|| any_range(&mut rng, mtu.bytes())),
                atomic: rng.chance(0.5).then(|| AtomicArgs {
                    va: MR_VA + rng.below(64),
                    rkey: MR_RKEY,
                    op: if rng.chance(0.5) {
                        AtomicOp::FetchAdd { add: 1 }
                    } else {
                        AtomicOp::CompareSwap {
                            compare: 0,
                            swap: 1,
                        }
                    },
                }),
                imm: rng.chance(0.3).then(|| rng.next_u64() as u32),
                invalidate_rkey: None,
            };
            let before = resp.expected_psn();
            let was_error = resp.is_error();
            let mut acts = Vec::new();
            resp.step(&pkt, &mut env, &mut |a| acts.push(a));
            // The expected PSN only moves forward.
            assert!(
                !resp.expected_psn().before(before),
                "case {case}: expected PSN went back"
            );
            if was_error {
                assert_eq!(
                    acts,
                    vec![ResponderAction::Drop {
                        reason: DropReason::QpError
                    }]
                );
            }
            if pkt.psn != before {
                // Nothing out of order is ever placed or executed.
                assert!(acts.iter().all(|a| !matches!(
                    a,
                    ResponderAction::Place { .. }
                        | ResponderAction::ConsumeReceiveWqe
                        | ResponderAction::CompleteReceive { .. }
                )));
                assert_eq!(resp.expected_psn(), before);
            }
            for a in &acts {
                match *a {
                    ResponderAction::ConsumeReceiveWqe => {
                        assert!(
                            env.rq.pop_front().is_some(),
                            "case {case}: consumed a WQE that is not there"
                        );
                        wqes_held += 1;
                    }
                    ResponderAction::CompleteReceive { .. } => {
                        assert!(wqes_held > 0, "case {case}: completed a receive twice");
                        wqes_held -= 1;
                    }
                    ResponderAction::Place {
                        target,
                        len,
                        payload_offset,
                    } => {
                        assert!(
                            u64::from(payload_offset) + u64::from(len)
                                <= u64::from(pkt.payload_len)
                        );
                        assert!(len <= mtu.bytes());
                        if let PlaceTarget::Memory { va, .. } = target {
                            assert!(
                                va >= MR_VA && va + u64::from(len) <= MR_VA + 16 * 1024,
                                "case {case}: unchecked placement"
                            );
                        }
                    }
                    ResponderAction::SendReadResponses(job) => {
                        let n = job.remaining_packets();
                        assert!(n <= (1 << 23));
                        if n < 64 {
                            let pkts: Vec<_> = job.collect();
                            assert_eq!(pkts.len() as u32, n);
                            for w in pkts.windows(2) {
                                assert_eq!(w[1].psn, w[0].psn.next());
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert!(wqes_held <= 1);
        }
    }
}

#[test]
fn requester_survives_arbitrary_responses() {
    for case in 0..cases() {
        let mut rng = Rng::new(0xBEEF + case);
        let mtu = Mtu::new(256 << rng.below(5)).unwrap();
        let mut cfg = RequesterConfig::new(mtu, Psn::new(rng.next_u64() as u32));
        cfg.retry_cnt = rng.below(8) as u8;
        cfg.rnr_retry = rng.below(8) as u8;
        cfg.max_rd_atomic = rng.below(4) as u32 + 1;
        cfg.psn_window = rng.below(64) as u32 + 1;
        cfg.ack_req_every = rng.below(8) as u32 + 1;
        let mut req = Requester::<8>::new(cfg);
        let mut posted: Vec<SendWqe> = Vec::new();
        let mut completed = 0usize;
        let mut comp_psn = req.comp_psn();
        for _ in 0..300 {
            let mut acts = Vec::new();
            let ev = match rng.below(10) {
                0 | 1 => {
                    let length = if rng.chance(0.2) {
                        8
                    } else {
                        rng.below(4 * u64::from(mtu.bytes())) as u32
                    };
                    let op = match rng.below(4) {
                        0 => WqeOp::Send {
                            imm: None,
                            invalidate_rkey: None,
                        },
                        1 => WqeOp::Write {
                            va: 0,
                            rkey: 1,
                            imm: None,
                        },
                        2 => WqeOp::Read { va: 0, rkey: 1 },
                        _ => WqeOp::Atomic(AtomicArgs {
                            va: 0,
                            rkey: 1,
                            op: AtomicOp::FetchAdd { add: 1 },
                        }),
                    };
                    let length = if matches!(op, WqeOp::Atomic(_)) {
                        8
                    } else {
                        length
                    };
                    let wqe = SendWqe {
                        id: posted.len() as u64,
                        op,
                        length,
                    };
                    if req.post(wqe, &mut |a| acts.push(a)).is_ok() {
                        posted.push(wqe);
                    }
                    None
                }
                2 | 3 => Some(RequesterEvent::Transmit {
                    budget: rng.below(20) as u32,
                }),
                4 => Some(RequesterEvent::RetryTimerExpired),
                5 => Some(RequesterEvent::RnrTimerExpired),
                _ => {
                    let op = match rng.below(3) {
                        0 => ResponseOp::Acknowledge,
                        1 => ResponseOp::AtomicAcknowledge {
                            orig: rng.next_u64(),
                        },
                        _ => ResponseOp::ReadResponse(POSITIONS[rng.below(4) as usize]),
                    };
                    Some(RequesterEvent::Response(ResponsePacket {
                        psn: near(&mut rng, req.comp_psn().add(2)),
                        op,
                        syndrome: rng.chance(0.8).then(|| {
                            Syndrome::from_u8(if rng.chance(0.6) {
                                0x1f
                            } else {
                                rng.next_u64() as u8
                            })
                        }),
                        payload_len: any_len(&mut rng, mtu.bytes()),
                    }))
                }
            };
            if let Some(ev) = ev {
                req.step(ev, &mut |a| acts.push(a));
            }
            for a in &acts {
                match *a {
                    RequesterAction::Complete(c) => {
                        // In order, each exactly once.
                        assert_eq!(c.wqe_id, completed as u64, "case {case}: completion order");
                        completed += 1;
                        if c.status == CompletionStatus::Success {
                            assert_eq!(c.byte_len, posted[c.wqe_id as usize].length);
                        }
                    }
                    RequesterAction::PlaceReadData {
                        wqe_id,
                        offset,
                        len,
                    } => {
                        let w = posted[wqe_id as usize];
                        assert!(matches!(w.op, WqeOp::Read { .. }));
                        assert!(
                            u64::from(offset) + u64::from(len) <= u64::from(w.length),
                            "case {case}: READ placed past the buffer"
                        );
                        assert!(len <= mtu.bytes());
                    }
                    RequesterAction::Transmit(p) => {
                        assert!(!req.is_error());
                        assert!(p.header.payload_len <= mtu.bytes());
                        let w = posted[p.wqe_id as usize];
                        assert!(
                            u64::from(p.payload_offset) + u64::from(p.header.payload_len)
                                <= u64::from(w.length)
                        );
                    }
                    _ => {}
                }
            }
            assert!(completed <= posted.len());
            assert_eq!(req.outstanding_wqes(), posted.len() - completed);
            // The oldest unacknowledged PSN only moves forward.
            assert!(
                !req.comp_psn().before(comp_psn),
                "case {case}: comp_psn went back"
            );
            comp_psn = req.comp_psn();
        }
    }
}
