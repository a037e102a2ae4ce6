//! Duplicate READ and ATOMIC handling, RNR NAK with rnr_retry exhaustion, and
//! message-sequence errors (MIDDLE without FIRST, SEND_MIDDLE inside a WRITE).
mod common;

use common::*;
use rxe_proto::proto::aeth::{NakCode, RnrTimer, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Completion, Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp,
    ResponsePacket,
};
use rxe_proto::proto::responder::{DropReason, Responder, ResponderAction, ResponderConfig};
use rxe_proto::proto::transport::{
    AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteRange, RequestOp, RequestPacket,
};

fn responder(psn: u32) -> Responder<4> {
    Responder::new(ResponderConfig {
        max_dest_rd_atomic: 3, // rounded up to 4 resources
        ..responder_config(psn)
    })
}

fn read(psn: u32, va: u64, len: u32) -> RequestPacket {
    RequestPacket {
        reth: Some(mr_range(va, len)),
        ..pkt(psn, RequestOp::Read, Position::Only, 0)
    }
}

fn reply_psns(actions: &[ResponderAction]) -> Vec<(u32, Position, u64, u32)> {
    let mut v = Vec::new();
    for a in actions {
        if let ResponderAction::SendReadResponses(job) = a {
            for p in *job {
                v.push((p.psn.get(), p.position, p.range.va, p.range.len));
            }
        }
    }
    v
}

#[test]
fn duplicate_read_is_answered_again_from_the_requested_psn() {
    let mut resp = responder(10);
    let mut env = Env::new(4096);
    // A 1000-byte READ at MTU 256: responses 10..=13.
    let a = resp_step(&mut resp, &read(10, MR_VA, 1000), &mut env);
    assert_eq!(
        reply_psns(&a),
        vec![
            (10, Position::First, MR_VA, 256),
            (11, Position::Middle, MR_VA + 256, 256),
            (12, Position::Middle, MR_VA + 512, 256),
            (13, Position::Last, MR_VA + 768, 232)
        ]
    );
    assert_eq!(resp.expected_psn(), Psn::new(14));
    assert_eq!(resp.msn(), 1);

    // The whole request again: FIRST..LAST again, nothing else changes.
    let a = resp_step(&mut resp, &read(10, MR_VA, 1000), &mut env);
    assert_eq!(reply_psns(&a).len(), 4);
    assert_eq!(reply_psns(&a)[0].1, Position::First);
    assert_eq!(resp.expected_psn(), Psn::new(14));
    assert_eq!(resp.msn(), 1);

    // A subset resumed at PSN 12 (the requester got 10 and 11): MIDDLE/LAST
    // only, from the advanced va.
    let a = resp_step(&mut resp, &read(12, MR_VA + 512, 488), &mut env);
    assert_eq!(
        reply_psns(&a),
        vec![
            (12, Position::Middle, MR_VA + 512, 256),
            (13, Position::Last, MR_VA + 768, 232)
        ]
    );
    // Resumed at the last PSN: a lone LAST.
    let a = resp_step(&mut resp, &read(13, MR_VA + 768, 232), &mut env);
    assert_eq!(reply_psns(&a), vec![(13, Position::Last, MR_VA + 768, 232)]);

    // Not a subset (runs past the original end, other rkey, before the
    // original va): dropped.
    for bad in [
        read(12, MR_VA + 512, 600),
        RequestPacket {
            reth: Some(RemoteRange {
                va: MR_VA + 512,
                rkey: 99,
                len: 488,
            }),
            ..read(12, 0, 0)
        },
        read(11, MR_VA - 8, 100),
    ] {
        let a = resp_step(&mut resp, &bad, &mut env);
        assert_eq!(
            a,
            vec![ResponderAction::Drop {
                reason: DropReason::NoResource
            }]
        );
    }
    // A duplicate READ for a PSN no resource covers: dropped.
    let a = resp_step(&mut resp, &read(5, MR_VA, 8), &mut env);
    assert_eq!(
        a,
        vec![ResponderAction::Drop {
            reason: DropReason::NoResource
        }]
    );
    assert_eq!(resp.counters().duplicate_request, 7);
    assert!(!resp.is_error());
}

#[test]
fn oldest_read_resource_is_overwritten() {
    let mut resp = responder(0);
    let mut env = Env::new(4096);
    for i in 0..5 {
        resp_step(&mut resp, &read(i, MR_VA, 8), &mut env);
    }
    // Ring of 4: PSN 0 forgotten, 1..=4 remembered.
    assert_eq!(
        resp_step(&mut resp, &read(0, MR_VA, 8), &mut env),
        vec![ResponderAction::Drop {
            reason: DropReason::NoResource
        }]
    );
    assert_eq!(
        reply_psns(&resp_step(&mut resp, &read(1, MR_VA, 8), &mut env)).len(),
        1
    );
}

#[test]
fn duplicate_atomic_replays_the_saved_value_and_executes_once() {
    let mut resp = responder(100);
    let mut env = Env::new(64);
    env.write(MR_VA + 8, &41u64.to_le_bytes());
    let fa = RequestPacket {
        atomic: Some(AtomicArgs {
            va: MR_VA + 8,
            rkey: MR_RKEY,
            op: AtomicOp::FetchAdd { add: 1 },
        }),
        ..pkt(100, RequestOp::Atomic, Position::Only, 0)
    };
    let a = resp_step(&mut resp, &fa, &mut env);
    assert_eq!(
        a,
        vec![ResponderAction::SendAtomicAck {
            psn: Psn::new(100),
            orig: 41,
            msn: 1
        }]
    );
    assert_eq!(env.word(MR_VA + 8), 42);
    for _ in 0..3 {
        let a = resp_step(&mut resp, &fa, &mut env);
        assert_eq!(
            a,
            vec![ResponderAction::SendAtomicAck {
                psn: Psn::new(100),
                orig: 41,
                msn: 1
            }]
        );
    }
    assert_eq!(env.atomics_executed, 1);
    assert_eq!(env.word(MR_VA + 8), 42);

    // Requester side: the ATOMIC_ACKNOWLEDGE completes with the original value.
    let mut req = Requester::<4>::new(RequesterConfig::new(Mtu::MTU_256, Psn::new(100)));
    req.post(
        SendWqe {
            id: 9,
            op: WqeOp::Atomic(fa.atomic.unwrap()),
            length: 8,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.atomic, fa.atomic);
    let ack = responses(&a, &env);
    let acts = req_step(&mut req, RequesterEvent::Response(ack[0].0));
    assert!(acts.contains(&RequesterAction::Complete(Completion {
        wqe_id: 9,
        status: CompletionStatus::Success,
        byte_len: 8,
        atomic_orig: Some(41)
    })));
    // A second copy of the same ACK is stale.
    let acts = req_step(&mut req, RequesterEvent::Response(ack[0].0));
    assert!(!acts
        .iter()
        .any(|a| matches!(a, RequesterAction::Complete(_))));
}

#[test]
fn rnr_nak_then_rnr_retry_exhaustion() {
    let mut resp = responder(0);
    let mut env = Env::new(64);
    let mut cfg = RequesterConfig::new(Mtu::MTU_256, Psn::new(0));
    cfg.rnr_retry = 2;
    cfg.timeout_usecs = 1000;
    let mut req = Requester::<4>::new(cfg);
    req.post(
        SendWqe {
            id: 1,
            op: WqeOp::Send {
                imm: None,
                invalidate_rkey: None,
            },
            length: 10,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    req.post(
        SendWqe {
            id: 2,
            op: WqeOp::Send {
                imm: None,
                invalidate_rkey: None,
            },
            length: 10,
        },
        &mut |_| panic!(),
    )
    .unwrap();

    for round in 0..3 {
        let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
        assert_eq!(tx[0].header.psn, Psn::new(0), "round {round}");
        // No receive WQE: RNR NAK with min_rnr_timer, PSN of the packet.
        let a = resp_step(&mut resp, &tx[0].header, &mut env);
        assert_eq!(
            a,
            vec![
                ResponderAction::SendAck {
                    psn: Psn::new(0),
                    syndrome: Syndrome::RnrNak {
                        timer: RnrTimer::new(14)
                    },
                    msn: 0
                },
                ResponderAction::Drop {
                    reason: DropReason::ReceiverNotReady
                },
            ]
        );
        assert_eq!(resp.expected_psn(), Psn::new(0));
        // The second SEND is a gap now (NAK once, then silent).
        resp_step(&mut resp, &tx[1].header, &mut env);
        let rnr = responses(&a, &env)[0].0;
        let acts = req_step(&mut req, RequesterEvent::Response(rnr));
        if round < 2 {
            assert!(acts.contains(&RequesterAction::ArmRnrTimer { usecs: 1280 }));
            assert!(req.waiting_for_rnr());
            assert_eq!(req.rnr_retry_left(), 1 - round as u8);
            // Nothing is sent while waiting.
            assert!(
                transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 })).is_empty()
            );
            req_step(&mut req, RequesterEvent::RnrTimerExpired);
        } else {
            let comps: Vec<_> = acts
                .iter()
                .filter_map(|a| match a {
                    RequesterAction::Complete(c) => Some((c.wqe_id, c.status)),
                    _ => None,
                })
                .collect();
            assert_eq!(
                comps,
                vec![
                    (1, CompletionStatus::RnrRetryExceededError),
                    (2, CompletionStatus::FlushError)
                ]
            );
            assert!(req.is_error());
            assert_eq!(req.counters().retry_rnr_exceeded_err, 1);
        }
    }
    assert_eq!(resp.counters().send_rnr_err, 3);
    assert_eq!(req.counters().rcvd_rnr_err, 3);
}

#[test]
fn rnr_then_receive_posted_delivers() {
    let mut resp = responder(0);
    let mut env = Env::new(64);
    let mut req = Requester::<4>::new(RequesterConfig::new(Mtu::MTU_256, Psn::new(0)));
    req.post(
        SendWqe {
            id: 1,
            op: WqeOp::Send {
                imm: Some(5),
                invalidate_rkey: None,
            },
            length: 300,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
    let a = resp_step(&mut resp, &tx[0].header, &mut env);
    req_step(&mut req, RequesterEvent::Response(responses(&a, &env)[0].0));
    env.rq.push_back(1024);
    req_step(&mut req, RequesterEvent::RnrTimerExpired);
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
    assert_eq!(tx.len(), 2);
    let mut acts = Vec::new();
    for p in &tx {
        acts.extend(resp_step(&mut resp, &p.header, &mut env));
    }
    assert!(acts.contains(&ResponderAction::ConsumeReceiveWqe));
    assert!(acts.iter().any(|a| matches!(
        a,
        ResponderAction::CompleteReceive {
            len: 300,
            imm: Some(5),
            status: CompletionStatus::Success,
            ..
        }
    )));
    let ack = responses(&acts, &env);
    let acts = req_step(&mut req, RequesterEvent::Response(ack[0].0));
    assert!(acts.iter().any(|a| matches!(
        a,
        RequesterAction::Complete(Completion {
            wqe_id: 1,
            status: CompletionStatus::Success,
            ..
        })
    )));
}

fn expect_invalid_request(actions: &[ResponderAction], psn: u32) {
    assert_eq!(
        actions[0],
        ResponderAction::SendAck {
            psn: Psn::new(psn),
            syndrome: Syndrome::Nak(NakCode::InvalidRequest),
            msn: actions_msn(actions)
        }
    );
    assert!(matches!(
        actions.last(),
        Some(ResponderAction::EnterError {
            status: CompletionStatus::RemoteInvalidRequestError
        })
    ));
}

fn actions_msn(actions: &[ResponderAction]) -> u32 {
    match actions[0] {
        ResponderAction::SendAck { msn, .. } => msn,
        _ => u32::MAX,
    }
}

#[test]
fn middle_without_first_is_an_invalid_request() {
    for op in [RequestOp::Send, RequestOp::Write] {
        for position in [Position::Middle, Position::Last] {
            let mut resp = responder(0);
            let mut env = Env::new(64);
            let a = resp_step(&mut resp, &pkt(0, op, position, 256), &mut env);
            expect_invalid_request(&a, 0);
            assert!(resp.is_error());
            // In ERROR, everything is dropped.
            let a = resp_step(&mut resp, &pkt(1, op, Position::Only, 1), &mut env);
            assert_eq!(
                a,
                vec![ResponderAction::Drop {
                    reason: DropReason::QpError
                }]
            );
        }
    }
}

#[test]
fn send_middle_inside_a_write_is_an_invalid_request() {
    let mut resp = responder(0);
    let mut env = Env::new(4096);
    let first = RequestPacket {
        reth: Some(mr_range(MR_VA, 1024)),
        ..pkt(0, RequestOp::Write, Position::First, 256)
    };
    resp_step(&mut resp, &first, &mut env);
    let a = resp_step(
        &mut resp,
        &pkt(1, RequestOp::Send, Position::Middle, 256),
        &mut env,
    );
    expect_invalid_request(&a, 1);
}

#[test]
fn send_with_missing_last_completes_the_receive_in_error() {
    let mut resp = responder(0);
    let mut env = Env::new(64);
    env.rq.push_back(4096);
    resp_step(
        &mut resp,
        &pkt(0, RequestOp::Send, Position::First, 256),
        &mut env,
    );
    let a = resp_step(
        &mut resp,
        &pkt(1, RequestOp::Send, Position::Only, 10),
        &mut env,
    );
    expect_invalid_request(&a, 1);
    assert!(a.contains(&ResponderAction::CompleteReceive {
        len: 256,
        imm: None,
        invalidate_rkey: None,
        write_with_imm: false,
        status: CompletionStatus::RemoteInvalidRequestError
    }));
}

#[test]
fn length_rules() {
    // FIRST/MIDDLE exactly MTU, LAST 1..=MTU, ONLY <= MTU.
    for (position, len, ok) in [
        (Position::First, 255, false),
        (Position::First, 257, false),
        (Position::Only, 257, false),
        (Position::Only, 0, true),
        (Position::Only, 256, true),
    ] {
        let mut resp = responder(0);
        let mut env = Env::new(64);
        env.rq.push_back(4096);
        let a = resp_step(&mut resp, &pkt(0, RequestOp::Send, position, len), &mut env);
        assert_eq!(!resp.is_error(), ok, "{position:?} {len}");
        let _ = a;
    }
    let mut resp = responder(0);
    let mut env = Env::new(64);
    env.rq.push_back(4096);
    resp_step(
        &mut resp,
        &pkt(0, RequestOp::Send, Position::First, 256),
        &mut env,
    );
    let a = resp_step(
        &mut resp,
        &pkt(1, RequestOp::Send, Position::Last, 0),
        &mut env,
    );
    expect_invalid_request(&a, 1);
    // WRITE: total must match the RETH length.
    let mut resp = responder(0);
    let mut env = Env::new(4096);
    let w = RequestPacket {
        reth: Some(mr_range(MR_VA, 300)),
        ..pkt(0, RequestOp::Write, Position::Only, 256)
    };
    let a = resp_step(&mut resp, &w, &mut env);
    expect_invalid_request(&a, 0);
}

#[test]
fn rkey_violation_is_a_remote_access_error() {
    let mut resp = responder(0);
    let mut env = Env::new(64);
    let w = RequestPacket {
        reth: Some(mr_range(MR_VA + 60, 8)),
        ..pkt(0, RequestOp::Write, Position::Only, 8)
    };
    let a = resp_step(&mut resp, &w, &mut env);
    assert_eq!(
        a.first(),
        Some(&ResponderAction::SendAck {
            psn: Psn::new(0),
            syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
            msn: 0
        })
    );
    assert_eq!(
        a.last(),
        Some(&ResponderAction::EnterError {
            status: CompletionStatus::RemoteAccessError
        })
    );
    // The requester completes its WQE with REM_ACCESS_ERR and flushes.
    let mut req = Requester::<4>::new(RequesterConfig::new(Mtu::MTU_256, Psn::new(0)));
    req.post(
        SendWqe {
            id: 3,
            op: WqeOp::Write {
                va: MR_VA + 60,
                rkey: MR_RKEY,
                imm: None,
            },
            length: 8,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    req_step(&mut req, RequesterEvent::Transmit { budget: 4 });
    let acts = req_step(&mut req, RequesterEvent::Response(responses(&a, &env)[0].0));
    assert!(acts.iter().any(|a| matches!(
        a,
        RequesterAction::Complete(Completion {
            wqe_id: 3,
            status: CompletionStatus::RemoteAccessError,
            ..
        })
    )));
    assert!(req.is_error());
}

#[test]
fn implicit_nak_when_an_ack_passes_an_outstanding_read() {
    let mut req = Requester::<4>::new(RequesterConfig::new(Mtu::MTU_256, Psn::new(0)));
    req.post(
        SendWqe {
            id: 1,
            op: WqeOp::Read {
                va: MR_VA,
                rkey: MR_RKEY,
            },
            length: 600,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    req.post(
        SendWqe {
            id: 2,
            op: WqeOp::Write {
                va: MR_VA,
                rkey: MR_RKEY,
                imm: None,
            },
            length: 4,
        },
        &mut |_| panic!(),
    )
    .unwrap();
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
    // READ reserves PSNs 0..=2 for its three responses; the WRITE is PSN 3.
    assert_eq!(
        tx.iter().map(|p| p.header.psn.get()).collect::<Vec<_>>(),
        vec![0, 3]
    );
    // The READ's FIRST response arrives, the rest is lost, then the WRITE's ACK.
    let first = ResponsePacket {
        psn: Psn::new(0),
        op: ResponseOp::ReadResponse(Position::First),
        syndrome: Some(Syndrome::ACK),
        payload_len: 256,
    };
    let acts = req_step(&mut req, RequesterEvent::Response(first));
    assert!(acts.contains(&RequesterAction::PlaceReadData {
        wqe_id: 1,
        offset: 0,
        len: 256
    }));
    let ack = ResponsePacket {
        psn: Psn::new(3),
        op: ResponseOp::Acknowledge,
        syndrome: Some(Syndrome::ACK),
        payload_len: 0,
    };
    req_step(&mut req, RequesterEvent::Response(ack));
    assert_eq!(req.counters().completer_retry_err, 1);
    // Go back: the READ resumes as a subset request at PSN 1.
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 4 }));
    assert_eq!(tx[0].header.psn, Psn::new(1));
    assert_eq!(tx[0].header.reth, Some(mr_range(MR_VA + 256, 344)));
    assert_eq!(tx[1].header.psn, Psn::new(3));
}

#[test]
fn duplicate_read_whose_rkey_no_longer_validates_is_naked() {
    // rxe re-checks the rkey when it answers a duplicate READ; if the MR is
    // gone or no longer allows the access, it answers with a remote access
    // NAK (and its QP enters ERROR), so the requester completes the READ
    // with an error instead of retrying until its retries run out.
    let mut resp = responder(10);
    let mut env = Env::new(4096);
    let a = resp_step(&mut resp, &read(10, MR_VA, 1000), &mut env);
    assert_eq!(reply_psns(&a).len(), 4);
    env.deny_all = true; // the MR was deregistered
    let a = resp_step(&mut resp, &read(10, MR_VA, 1000), &mut env);
    assert_eq!(
        a,
        vec![
            ResponderAction::SendAck {
                psn: Psn::new(10),
                syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                msn: 1
            },
            ResponderAction::Drop {
                reason: DropReason::Invalid
            },
            ResponderAction::EnterError {
                status: CompletionStatus::RemoteAccessError
            },
        ]
    );
    assert!(resp.is_error());
}

#[test]
fn zero_length_read_checks_no_rkey() {
    // A zero-length READ names no memory: rxe answers it with an empty
    // READ_RESPONSE_ONLY whatever its rkey, first time and as a duplicate.
    let mut resp = responder(10);
    let mut env = Env::new(4096);
    env.deny_all = true;
    let zero = |psn| RequestPacket {
        reth: Some(RemoteRange {
            va: 0,
            rkey: 0xdead_beef,
            len: 0,
        }),
        ..read(psn, 0, 0)
    };
    for _ in 0..2 {
        let a = resp_step(&mut resp, &zero(10), &mut env);
        assert_eq!(reply_psns(&a), vec![(10, Position::Only, 0, 0)]);
        assert!(!resp.is_error());
        assert_eq!(resp.expected_psn(), Psn::new(11));
    }
}

#[test]
fn only_a_sequence_nak_that_moves_the_completer_counts_as_rcvd_seq_err() {
    // rxe counts rcvd_seq_err when a PSN sequence NAK moves its completer
    // PSN; a second NAK naming the same PSN (or an older one) still makes it
    // go back, but is not counted again.
    let mut rcfg = RequesterConfig::new(Mtu::MTU_256, Psn::new(100));
    rcfg.timeout_usecs = 1000;
    let mut req = Requester::<8>::new(rcfg);
    let mut ignore = |_a: RequesterAction| {};
    req.post(
        SendWqe {
            id: 1,
            op: WqeOp::Write {
                va: MR_VA,
                rkey: MR_RKEY,
                imm: None,
            },
            length: 1024,
        },
        &mut ignore,
    )
    .unwrap();
    let tx = transmits(&req_step(
        &mut req,
        RequesterEvent::Transmit { budget: 100 },
    ));
    assert_eq!(tx.len(), 4);
    let nak = |psn| {
        RequesterEvent::Response(ResponsePacket {
            psn: Psn::new(psn),
            op: ResponseOp::Acknowledge,
            syndrome: Some(Syndrome::Nak(NakCode::PsnSequenceError)),
            payload_len: 0,
        })
    };
    // 101 lost: the NAK names it and moves the completer from 100 to 101.
    req_step(&mut req, nak(101));
    assert_eq!(req.counters().rcvd_seq_err, 1);
    // The same NAK again (the responder answered a second stray packet).
    req_step(&mut req, nak(101));
    assert_eq!(req.counters().rcvd_seq_err, 1);
    // A NAK naming the completer's own PSN moves nothing either.
    req_step(&mut req, nak(101));
    assert_eq!(req.counters().rcvd_seq_err, 1);
    // One that moves it again counts.
    req_step(&mut req, nak(102));
    assert_eq!(req.counters().rcvd_seq_err, 2);
}
