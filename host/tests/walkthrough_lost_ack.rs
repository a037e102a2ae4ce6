//! The seed's walkthrough (b), "Lost ACK: timeout, resend, duplicate", every
//! step asserted, and the variant where the retry count runs out first.
mod common;

use common::*;
use rxe_proto::proto::aeth::{RnrTimer, Syndrome};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Completion, GoBackCause, Requester, RequesterAction, RequesterConfig, RequesterEvent,
};
use rxe_proto::proto::responder::{
    AccessFlags, DropReason, PlaceTarget, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{CompletionStatus, Mtu};

const TIMEOUT: u32 = 300;

fn machines(retry_cnt: u8) -> (Requester<8>, Responder<4>) {
    let mtu = Mtu::MTU_1024;
    let mut rcfg = RequesterConfig::new(mtu, Psn::new(1000));
    rcfg.retry_cnt = retry_cnt;
    rcfg.timeout_usecs = TIMEOUT;
    let resp = Responder::new(ResponderConfig {
        mtu,
        rq_psn: Psn::new(1000),
        min_rnr_timer: RnrTimer::new(1),
        max_dest_rd_atomic: 4,
        access: AccessFlags::ALL,
    });
    (Requester::new(rcfg), resp)
}

fn write(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: WqeOp::Write {
            va: MR_VA,
            rkey: MR_RKEY,
            imm: None,
        },
        length: len,
    }
}

#[test]
fn lost_ack_timeout_resend_duplicate() {
    let (mut req, mut resp) = machines(3);
    let mut env = Env::new(4096);
    let mut recv = Vec::new();
    let data = [0xabu8; 512];

    // Step 1: single-packet WRITE, PSN 1000; replay entry written, timer arms.
    req.post(write(7, 512), &mut |_| panic!()).unwrap();
    let acts = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    let tx = transmits(&acts);
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].header.psn, Psn::new(1000));
    assert!(tx[0].header.ack_req);
    assert!(acts.contains(&RequesterAction::ArmRetryTimer { usecs: TIMEOUT }));

    // Step 2: in order, placed; the responder now expects 1001.
    let a = resp_step(&mut resp, &tx[0].header, &mut env);
    assert_eq!(
        a[0],
        ResponderAction::Place {
            target: PlaceTarget::Memory {
                va: MR_VA,
                rkey: MR_RKEY
            },
            len: 512,
            payload_offset: 0
        }
    );
    apply_places(&a, &data, &mut env, &mut recv);
    assert_eq!(resp.expected_psn(), Psn::new(1001));
    let ack = responses(&a, &env);
    assert_eq!(ack.len(), 1);
    assert_eq!(ack[0].0.psn, Psn::new(1000));

    // Step 3: the ACK is dropped. The data is in place.
    assert_eq!(&env.mem[..512], &data[..]);
    env.mem[..512].fill(0x11); // anything placed again would show

    // Steps 4-5: the timeout expires; the retry count drops by one and 1000
    // is rebuilt from the replay buffer.
    let acts = req_step(&mut req, RequesterEvent::RetryTimerExpired);
    assert!(transmits(&acts).is_empty());
    assert_eq!(
        acts,
        vec![RequesterAction::GoBack {
            from: Psn::new(1000),
            cause: GoBackCause::Timeout
        }]
    );
    assert_eq!(req.retry_left(), 2);
    assert_eq!(req.counters().timeouts, 1);
    let acts = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    let resent = transmits(&acts);
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0].header, tx[0].header);
    assert!(resent[0].retransmit);
    assert!(acts.contains(&RequesterAction::ArmRetryTimer { usecs: TIMEOUT }));

    // Step 6: 1000 is lower than expected: a duplicate; not placed again,
    // ACKed again (PSN = last executed PSN).
    let a = resp_step(&mut resp, &resent[0].header, &mut env);
    assert_eq!(
        a,
        vec![
            ResponderAction::SendAck {
                psn: Psn::new(1000),
                syndrome: Syndrome::ACK,
                msn: 1
            },
            ResponderAction::Drop {
                reason: DropReason::DuplicateRequest
            },
        ]
    );
    assert!(
        env.mem[..512].iter().all(|&b| b == 0x11),
        "not placed again"
    );
    assert_eq!(resp.counters().duplicate_request, 1);
    assert_eq!(resp.expected_psn(), Psn::new(1001));

    // Step 7: this ACK gets through: the entry retires and the timer disarms.
    let ack = responses(&a, &env);
    let acts = req_step(&mut req, RequesterEvent::Response(ack[0].0));
    assert_eq!(
        acts,
        vec![
            RequesterAction::Complete(Completion {
                wqe_id: 7,
                status: CompletionStatus::Success,
                byte_len: 512,
                atomic_orig: None
            }),
            RequesterAction::DisarmRetryTimer,
        ]
    );
    assert_eq!(req.outstanding_wqes(), 0);
    assert!(!req.is_error());
}

#[test]
fn retry_count_runs_out_first() {
    // retry_cnt 1: the first timeout uses it, the second finds none left.
    let (mut req, _resp) = machines(1);
    for id in 1..=3 {
        req.post(write(id, 100), &mut |_| panic!()).unwrap();
    }
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(tx.len(), 3);
    // Every ACK is lost.
    req_step(&mut req, RequesterEvent::RetryTimerExpired);
    assert_eq!(req.retry_left(), 0);
    let tx2 = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(
        tx2.iter().map(|p| p.header).collect::<Vec<_>>(),
        tx.iter().map(|p| p.header).collect::<Vec<_>>()
    );
    let acts = req_step(&mut req, RequesterEvent::RetryTimerExpired);
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
            (1, CompletionStatus::RetryExceededError),
            (2, CompletionStatus::FlushError),
            (3, CompletionStatus::FlushError)
        ]
    );
    assert_eq!(
        acts.last(),
        Some(&RequesterAction::EnterError {
            status: CompletionStatus::RetryExceededError
        })
    );
    assert!(req.is_error());
    assert_eq!(req.counters().retry_exceeded_err, 1);
    assert!(transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 })).is_empty());
    // Posting in ERROR flushes at once.
    let mut v = Vec::new();
    req.post(write(4, 1), &mut |a| v.push(a)).unwrap();
    assert!(matches!(
        v[..],
        [RequesterAction::Complete(Completion {
            wqe_id: 4,
            status: CompletionStatus::FlushError,
            ..
        })]
    ));
}

#[test]
fn retry_count_zero_fails_on_first_timeout() {
    let (mut req, _resp) = machines(0);
    req.post(write(1, 10), &mut |_| panic!()).unwrap();
    req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    let acts = req_step(&mut req, RequesterEvent::RetryTimerExpired);
    assert!(acts.contains(&RequesterAction::Complete(Completion {
        wqe_id: 1,
        status: CompletionStatus::RetryExceededError,
        byte_len: 0,
        atomic_orig: None
    })));
    assert!(req.is_error());
}

#[test]
fn retry_count_seven_is_infinite() {
    let (mut req, _resp) = machines(7);
    req.post(write(1, 10), &mut |_| panic!()).unwrap();
    for _ in 0..1000 {
        req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
        req_step(&mut req, RequesterEvent::RetryTimerExpired);
    }
    assert!(!req.is_error());
    assert_eq!(req.retry_left(), 7);
    assert_eq!(req.counters().timeouts, 1000);
}
