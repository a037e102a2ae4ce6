//! The UC requester: packets carry PSNs as on RC, but nothing is ever
//! acknowledged, so a WQE completes once its last packet is handed to the
//! network (as in rxe), no AckReq is set, no timer runs, the PSN window
//! does not hold transmission back, and a response is ignored. READ and
//! atomics do not exist on UC: one fails the QP with LOC_QP_OP_ERR, as in
//! rxe.
mod common;

use common::*;
use rxe_proto::proto::aeth::Syndrome;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Completion, Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp,
    ResponsePacket,
};
use rxe_proto::proto::transport::{CompletionStatus, Mtu};

fn uc_requester() -> Requester<256> {
    let mut cfg = RequesterConfig::new(Mtu::MTU_256, Psn::new(100));
    cfg.timeout_usecs = 1000;
    Requester::new_unreliable(cfg)
}

fn read(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: WqeOp::Read {
            va: MR_VA,
            rkey: MR_RKEY,
        },
        length: len,
    }
}

fn send(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: WqeOp::Send {
            imm: None,
            invalidate_rkey: None,
        },
        length: len,
    }
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

fn post(req: &mut Requester<256>, wqe: SendWqe) {
    let mut v = Vec::new();
    req.post(wqe, &mut |a| v.push(a)).unwrap();
    assert!(v.is_empty(), "{v:?}");
}

fn completions(actions: &[RequesterAction]) -> Vec<Completion> {
    actions
        .iter()
        .filter_map(|a| match a {
            RequesterAction::Complete(c) => Some(*c),
            _ => None,
        })
        .collect()
}

fn no_timers(actions: &[RequesterAction]) {
    for a in actions {
        assert!(
            !matches!(
                a,
                RequesterAction::ArmRetryTimer { .. } | RequesterAction::ArmRnrTimer { .. }
            ),
            "a UC requester armed a timer: {a:?}"
        );
    }
}

#[test]
fn a_send_completes_when_its_last_packet_is_sent() {
    let mut req = uc_requester();
    post(&mut req, send(1, 600));
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 100 });
    no_timers(&a);
    let tx = transmits(&a);
    assert_eq!(
        tx.iter().map(|p| p.header.psn.get()).collect::<Vec<_>>(),
        vec![100, 101, 102]
    );
    assert!(tx.iter().all(|p| !p.header.ack_req), "no AckReq on UC");
    // The completion follows the last packet, after it in the actions.
    let last_tx = a
        .iter()
        .rposition(|x| matches!(x, RequesterAction::Transmit(_)))
        .unwrap();
    let done = a
        .iter()
        .position(|x| matches!(x, RequesterAction::Complete(_)))
        .unwrap();
    assert!(done > last_tx);
    assert_eq!(
        completions(&a),
        vec![Completion {
            wqe_id: 1,
            status: CompletionStatus::Success,
            byte_len: 600,
            atomic_orig: None
        }]
    );
    assert_eq!(req.outstanding_wqes(), 0);
    assert!(!req.has_unacked());
    assert!(!req.retry_timer_armed());
}

#[test]
fn the_psn_window_does_not_hold_back_what_is_never_acknowledged() {
    let mut req = uc_requester();
    for id in 0..200 {
        post(&mut req, write(id, 256));
        let a = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
        assert_eq!(transmits(&a).len(), 1, "WQE {id}");
        assert_eq!(completions(&a).len(), 1, "WQE {id}");
    }
    assert_eq!(req.next_psn(), Psn::new(300));
}

#[test]
fn a_budget_that_ends_mid_message_completes_the_wqe_only_at_its_last_packet() {
    let mut req = uc_requester();
    post(&mut req, write(7, 5 * 256));
    post(&mut req, send(8, 10));
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 2 });
    assert_eq!(transmits(&a).len(), 2);
    assert!(completions(&a).is_empty());
    let b = req_step(&mut req, RequesterEvent::Transmit { budget: 10 });
    assert_eq!(transmits(&b).len(), 4);
    assert_eq!(
        completions(&b).iter().map(|c| c.wqe_id).collect::<Vec<_>>(),
        vec![7, 8]
    );
}

#[test]
fn timers_and_responses_change_nothing() {
    let mut req = uc_requester();
    post(&mut req, send(1, 10));
    req_step(&mut req, RequesterEvent::Transmit { budget: 1 });
    for ev in [
        RequesterEvent::RetryTimerExpired,
        RequesterEvent::RnrTimerExpired,
    ] {
        let a = req_step(&mut req, ev);
        assert!(
            transmits(&a).is_empty() && completions(&a).is_empty(),
            "{a:?}"
        );
    }
    let a = req_step(
        &mut req,
        RequesterEvent::Response(ResponsePacket {
            psn: Psn::new(100),
            op: ResponseOp::Acknowledge,
            syndrome: Some(Syndrome::ACK),
            payload_len: 0,
        }),
    );
    assert!(
        matches!(a[..], [RequesterAction::DropResponse { .. }]),
        "{a:?}"
    );
    assert!(!req.is_error());
}

#[test]
fn a_read_on_uc_fails_the_qp_with_a_local_qp_operation_error() {
    let mut req = uc_requester();
    post(&mut req, read(3, 8));
    post(&mut req, send(4, 8));
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    assert!(transmits(&a).is_empty());
    let c = completions(&a);
    assert_eq!(
        c.iter().map(|c| (c.wqe_id, c.status)).collect::<Vec<_>>(),
        vec![
            (3, CompletionStatus::LocalQpOperationError),
            (4, CompletionStatus::FlushError)
        ]
    );
    assert!(req.is_error());
}

#[test]
fn reset_keeps_the_requester_unreliable() {
    let mut req = uc_requester();
    let cfg = *req.config();
    req.reset(cfg);
    post(&mut req, send(1, 10));
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 1 });
    no_timers(&a);
    assert_eq!(completions(&a).len(), 1);
}

#[test]
fn end_to_end_a_lost_packet_loses_its_message_and_only_that_one() {
    use rxe_proto::proto::aeth::RnrTimer;
    use rxe_proto::proto::responder::{AccessFlags, Responder, ResponderAction, ResponderConfig};
    let mut req = uc_requester();
    let mut resp: Responder<4> = Responder::new_unreliable(ResponderConfig {
        mtu: Mtu::MTU_256,
        rq_psn: Psn::new(100),
        min_rnr_timer: RnrTimer::new(1),
        max_dest_rd_atomic: 0,
        access: AccessFlags::ALL,
    });
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    env.rq.push_back(4096);
    // Three 3-packet SENDs; the middle packet of the second is lost.
    for id in 1..=3 {
        post(&mut req, send(id, 700));
    }
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 100 });
    assert_eq!(completions(&a).len(), 3, "the sender completes all three");
    let mut received = Vec::new();
    let mut answers = 0;
    for p in transmits(&a) {
        if p.header.psn == Psn::new(104) {
            continue;
        }
        for act in resp_step(&mut resp, &p.header, &mut env) {
            match act {
                ResponderAction::ConsumeReceiveWqe => {
                    env.rq.pop_front();
                }
                ResponderAction::CompleteReceive { len, status, .. } => {
                    received.push((p.wqe_id, len, status))
                }
                ResponderAction::SendAck { .. } | ResponderAction::SendAtomicAck { .. } => {
                    answers += 1
                }
                _ => {}
            }
        }
    }
    assert_eq!(answers, 0);
    assert_eq!(
        received,
        vec![
            (1, 700, CompletionStatus::Success),
            (3, 700, CompletionStatus::Success)
        ]
    );
    assert!(
        env.rq.is_empty(),
        "two receives used, none lost to the dropped message"
    );
}

#[test]
fn a_send_with_invalidate_on_uc_fails_the_qp_instead_of_vanishing() {
    let mut req = uc_requester();
    post(
        &mut req,
        SendWqe {
            id: 5,
            op: WqeOp::Send {
                imm: None,
                invalidate_rkey: Some(0x77),
            },
            length: 8,
        },
    );
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    assert!(transmits(&a).is_empty());
    assert_eq!(
        completions(&a)
            .iter()
            .map(|c| (c.wqe_id, c.status))
            .collect::<Vec<_>>(),
        vec![(5, CompletionStatus::LocalQpOperationError)]
    );
    assert!(req.is_error());
}

#[test]
fn a_read_on_uc_is_something_the_transmit_step_acts_on() {
    // A UC QP's attributes carry no READ credits; the driver steps the
    // requester only while `may_transmit` says yes, and it is the
    // transmit step that fails the READ: without it the WQE would wait
    // for ever.
    let mut cfg = RequesterConfig::new(Mtu::MTU_256, Psn::new(100));
    cfg.max_rd_atomic = 0;
    let mut req: Requester<256> = Requester::new_unreliable(cfg);
    post(&mut req, read(3, 8));
    assert!(req.may_transmit());
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    assert_eq!(
        completions(&a)
            .iter()
            .map(|c| (c.wqe_id, c.status))
            .collect::<Vec<_>>(),
        vec![(3, CompletionStatus::LocalQpOperationError)]
    );
    assert!(!req.may_transmit(), "failed: nothing more to do");
}
