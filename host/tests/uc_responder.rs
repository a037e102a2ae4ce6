//! The UC responder (IBTA 9.7.5.1.5 / rxe's behaviour): no ACK or NAK is
//! ever sent; a PSN other than the expected one, or any packet after one
//! was dropped, drops the rest of the message until a FIRST or ONLY packet
//! starts a new one at whatever PSN it carries; a receive WQE taken by a
//! SEND that was dropped half way is used again by the next message; an
//! error (no receive WQE, a bad rkey, a length error) drops the message
//! silently and the QP stays usable.
mod common;

use common::*;
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::responder::{
    AccessFlags, DropReason, PlaceTarget, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{CompletionStatus, RemoteRange, RequestOp, RequestPacket};

fn uc_responder(psn: u32) -> Responder<4> {
    Responder::new_unreliable(ResponderConfig {
        max_dest_rd_atomic: 0,
        access: AccessFlags {
            remote_read: false,
            remote_write: true,
            remote_atomic: false,
            flush_global: false,
            flush_persistent: false,
        },
        ..responder_config(psn)
    })
}

/// A SEND packet that asks for no ACK.
fn send(psn: u32, position: Position, len: u32) -> RequestPacket {
    RequestPacket {
        ack_req: false,
        ..pkt(psn, RequestOp::Send, position, len)
    }
}

fn write(psn: u32, position: Position, len: u32, reth: Option<RemoteRange>) -> RequestPacket {
    RequestPacket {
        op: RequestOp::Write,
        reth,
        ..send(psn, position, len)
    }
}

fn no_acks(actions: &[ResponderAction]) {
    for a in actions {
        assert!(
            !matches!(
                a,
                ResponderAction::SendAck { .. }
                    | ResponderAction::SendAtomicAck { .. }
                    | ResponderAction::SendReadResponses(_)
                    | ResponderAction::EnterError { .. }
            ),
            "a UC responder answered or failed: {a:?}"
        );
    }
}

fn consumes(actions: &[ResponderAction]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, ResponderAction::ConsumeReceiveWqe))
        .count()
}

fn completion(actions: &[ResponderAction]) -> Option<(u32, CompletionStatus)> {
    actions.iter().find_map(|a| match a {
        ResponderAction::CompleteReceive { len, status, .. } => Some((*len, *status)),
        _ => None,
    })
}

fn dropped(actions: &[ResponderAction]) -> Option<DropReason> {
    actions.iter().find_map(|a| match a {
        ResponderAction::Drop { reason } => Some(*reason),
        _ => None,
    })
}

#[test]
fn an_in_order_send_is_placed_and_completed_without_any_ack() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    let mut all = Vec::new();
    let mut last = send(12, Position::Last, 100);
    last.ack_req = true; // a peer may set it: UC still sends nothing
    for p in [
        send(10, Position::First, 256),
        send(11, Position::Middle, 256),
        last,
    ] {
        all.extend(resp_step(&mut resp, &p, &mut env));
    }
    no_acks(&all);
    assert_eq!(consumes(&all), 1);
    assert_eq!(
        places(&all),
        vec![
            PlaceTarget::Receive { offset: 0 },
            PlaceTarget::Receive { offset: 256 },
            PlaceTarget::Receive { offset: 512 }
        ]
    );
    assert_eq!(completion(&all), Some((612, CompletionStatus::Success)));
    assert_eq!(resp.expected_psn(), Psn::new(13));
}

#[test]
fn a_gap_drops_the_rest_of_the_message_and_the_next_first_resyncs_into_the_same_receive() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    let a = resp_step(&mut resp, &send(10, Position::First, 256), &mut env);
    assert_eq!(consumes(&a), 1);
    // 11 (MIDDLE) lost: the LAST is dropped, nothing completes, no NAK.
    let b = resp_step(&mut resp, &send(12, Position::Last, 10), &mut env);
    no_acks(&b);
    assert_eq!(completion(&b), None);
    assert_eq!(dropped(&b), Some(DropReason::OutOfSeqRequest));
    // A MIDDLE at the old expected PSN is still dropped: the message is gone.
    let c = resp_step(&mut resp, &send(11, Position::Middle, 256), &mut env);
    assert_eq!(dropped(&c), Some(DropReason::OutOfSeqRequest));
    assert!(places(&c).is_empty());
    // The next message starts at its own PSN and fills the receive taken by
    // the dropped one from its start: no second receive is consumed.
    let d = resp_step(&mut resp, &send(13, Position::Only, 40), &mut env);
    no_acks(&d);
    assert_eq!(consumes(&d), 0);
    assert_eq!(places(&d), vec![PlaceTarget::Receive { offset: 0 }]);
    assert_eq!(completion(&d), Some((40, CompletionStatus::Success)));
    assert_eq!(resp.expected_psn(), Psn::new(14));
}

#[test]
fn a_first_packet_at_an_unexpected_psn_starts_a_message_there() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    // Packets 10..=19 were lost whole: the ONLY at 20 is a new message.
    let a = resp_step(&mut resp, &send(20, Position::Only, 8), &mut env);
    no_acks(&a);
    assert_eq!(consumes(&a), 1);
    assert_eq!(completion(&a), Some((8, CompletionStatus::Success)));
    assert_eq!(resp.expected_psn(), Psn::new(21));
}

#[test]
fn no_receive_wqe_drops_the_message_silently() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    let a = resp_step(&mut resp, &send(10, Position::First, 256), &mut env);
    no_acks(&a);
    assert_eq!(dropped(&a), Some(DropReason::ReceiverNotReady));
    assert_eq!(consumes(&a), 0);
    // The rest of that message is dropped even once a receive is posted.
    env.rq.push_back(4096);
    let b = resp_step(&mut resp, &send(11, Position::Last, 5), &mut env);
    assert!(dropped(&b).is_some());
    assert_eq!(completion(&b), None);
    // The next message is received.
    let c = resp_step(&mut resp, &send(12, Position::Only, 5), &mut env);
    assert_eq!(consumes(&c), 1);
    assert_eq!(completion(&c), Some((5, CompletionStatus::Success)));
    assert_eq!(resp.counters().send_rnr_err, 0, "no RNR NAK was sent");
}

#[test]
fn a_write_with_a_bad_rkey_is_dropped_and_the_qp_stays_usable() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    let bad = RemoteRange {
        rkey: MR_RKEY + 1,
        ..mr_range(MR_VA, 300)
    };
    let a = resp_step(
        &mut resp,
        &write(10, Position::First, 256, Some(bad)),
        &mut env,
    );
    no_acks(&a);
    assert!(places(&a).is_empty());
    assert!(dropped(&a).is_some());
    assert!(!resp.is_error());
    let b = resp_step(&mut resp, &write(11, Position::Last, 44, None), &mut env);
    assert!(places(&b).is_empty());
    let c = resp_step(
        &mut resp,
        &write(12, Position::Only, 16, Some(mr_range(MR_VA, 16))),
        &mut env,
    );
    no_acks(&c);
    assert_eq!(
        places(&c),
        vec![PlaceTarget::Memory {
            va: MR_VA,
            rkey: MR_RKEY
        }]
    );
}

#[test]
fn a_send_longer_than_its_receive_is_dropped_and_the_receive_used_again() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(300);
    let a = resp_step(&mut resp, &send(10, Position::First, 256), &mut env);
    assert_eq!(consumes(&a), 1);
    let b = resp_step(&mut resp, &send(11, Position::Last, 100), &mut env);
    no_acks(&b);
    assert_eq!(completion(&b), None);
    assert!(!resp.is_error());
    let c = resp_step(&mut resp, &send(12, Position::Only, 200), &mut env);
    assert_eq!(consumes(&c), 0);
    assert_eq!(completion(&c), Some((200, CompletionStatus::Success)));
}

#[test]
fn a_write_with_immediate_after_a_dropped_send_completes_into_the_held_receive() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    let a = resp_step(&mut resp, &send(10, Position::First, 256), &mut env);
    assert_eq!(consumes(&a), 1);
    let mut w = write(12, Position::Only, 16, Some(mr_range(MR_VA, 16)));
    w.imm = Some(7);
    let b = resp_step(&mut resp, &w, &mut env);
    no_acks(&b);
    assert_eq!(consumes(&b), 0);
    assert_eq!(completion(&b), Some((16, CompletionStatus::Success)));
}

#[test]
fn a_message_sequence_error_drops_the_message_without_error() {
    let mut resp = uc_responder(10);
    let mut env = Env::new(4096);
    env.rq.push_back(4096);
    // A WRITE MIDDLE inside a SEND: dropped, the QP is not moved to ERROR.
    resp_step(&mut resp, &send(10, Position::First, 256), &mut env);
    let b = resp_step(&mut resp, &write(11, Position::Middle, 256, None), &mut env);
    no_acks(&b);
    assert!(dropped(&b).is_some());
    assert!(!resp.is_error());
    let c = resp_step(&mut resp, &send(12, Position::Only, 3), &mut env);
    assert_eq!(completion(&c), Some((3, CompletionStatus::Success)));
}

#[test]
fn reset_keeps_the_responder_unreliable() {
    let mut resp = uc_responder(10);
    let cfg = *resp.config();
    resp.reset(cfg);
    let mut env = Env::new(4096);
    let a = resp_step(&mut resp, &send(30, Position::First, 256), &mut env);
    no_acks(&a);
}
