//! The responder and memory that is not resident (on-demand paging): a
//! packet whose memory is out gets an RNR NAK at its own PSN and changes
//! nothing (no placement, no completion, no PSN, MSN or resource moved);
//! sent again, it goes through. A SEND's first packet keeps the receive
//! WQE it took for its second try; a middle packet keeps the message's
//! offset; a READ, an atomic and an ATOMIC_WRITE are not executed. UC
//! drops the message instead and keeps the WQE for the next one.
mod common;

use common::*;
use rxe_proto::proto::aeth::{NakCode, RnrTimer, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::responder::{
    DropReason, MemoryTarget, PlaceTarget, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{AtomicArgs, AtomicOp, CompletionStatus, Mtu, RequestOp};

const RNR_TIMER: u8 = 3;

fn config() -> ResponderConfig {
    ResponderConfig {
        min_rnr_timer: RnrTimer::new(RNR_TIMER),
        ..responder_config(100)
    }
}

/// The two actions of a not-resident packet on RC.
fn rnr_nak(psn: u32, msn: u32) -> Vec<ResponderAction> {
    vec![
        ResponderAction::SendAck {
            psn: Psn::new(psn),
            syndrome: Syndrome::RnrNak {
                timer: RnrTimer::new(RNR_TIMER),
            },
            msn,
        },
        ResponderAction::Drop {
            reason: DropReason::NotResident,
        },
    ]
}

#[test]
fn send_first_packet_keeps_its_receive_wqe_for_the_second_try() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    env.rq.push_back(1000);
    env.rq.push_back(1000);
    env.not_resident = 1;
    let first = pkt(100, RequestOp::Send, Position::First, 256);
    let a = resp_step(&mut resp, &first, &mut env);
    // The WQE is taken (its SGEs are what is checked), then held.
    assert_eq!(a[0], ResponderAction::ConsumeReceiveWqe);
    assert_eq!(a[1..], rnr_nak(100, 0)[..]);
    assert_eq!(
        env.residency_checks,
        vec![MemoryTarget::Receive {
            offset: 0,
            len: 256
        }]
    );
    assert_eq!(resp.expected_psn(), Psn::new(100));
    assert!(!resp.in_message());
    assert_eq!(resp.counters().send_rnr_err, 1);
    apply_places(&a, &[], &mut env, &mut Vec::new());
    assert_eq!(env.rq.len(), 1, "one WQE consumed, none lost");

    // Sent again: the held WQE is used, no second one is consumed.
    let a = resp_step(&mut resp, &first, &mut env);
    assert!(!a.contains(&ResponderAction::ConsumeReceiveWqe));
    assert_eq!(places(&a), vec![PlaceTarget::Receive { offset: 0 }]);
    assert_eq!(resp.expected_psn(), Psn::new(101));

    // The rest of the message goes to the same WQE and completes once.
    let a = resp_step(
        &mut resp,
        &pkt(101, RequestOp::Send, Position::Last, 100),
        &mut env,
    );
    assert_eq!(places(&a), vec![PlaceTarget::Receive { offset: 256 }]);
    assert!(a.contains(&ResponderAction::CompleteReceive {
        len: 356,
        imm: None,
        invalidate_rkey: None,
        write_with_imm: false,
        status: CompletionStatus::Success,
    }));
    assert_eq!(env.rq.len(), 1);
}

#[test]
fn send_middle_packet_keeps_the_message_offset() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    env.rq.push_back(1000);
    resp_step(
        &mut resp,
        &pkt(100, RequestOp::Send, Position::First, 256),
        &mut env,
    );
    env.not_resident = 1;
    let middle = pkt(101, RequestOp::Send, Position::Middle, 256);
    let a = resp_step(&mut resp, &middle, &mut env);
    assert_eq!(a, rnr_nak(101, 0));
    assert_eq!(
        env.residency_checks.last(),
        Some(&MemoryTarget::Receive {
            offset: 256,
            len: 256
        })
    );
    assert!(resp.in_message());
    assert_eq!(resp.expected_psn(), Psn::new(101));
    // Packets behind it are a gap until it comes again.
    let last = pkt(102, RequestOp::Send, Position::Last, 10);
    let a = resp_step(&mut resp, &last, &mut env);
    assert!(places(&a).is_empty());
    let a = resp_step(&mut resp, &middle, &mut env);
    assert_eq!(places(&a), vec![PlaceTarget::Receive { offset: 256 }]);
    let a = resp_step(&mut resp, &last, &mut env);
    assert_eq!(places(&a), vec![PlaceTarget::Receive { offset: 512 }]);
    assert!(a.iter().any(|x| matches!(
        x,
        ResponderAction::CompleteReceive {
            len: 522,
            status: CompletionStatus::Success,
            ..
        }
    )));
}

#[test]
fn write_packet_is_checked_at_its_own_address() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    let mut first = pkt(100, RequestOp::Write, Position::First, 256);
    first.reth = Some(mr_range(MR_VA + 64, 400));
    env.not_resident = 1;
    assert_eq!(resp_step(&mut resp, &first, &mut env), rnr_nak(100, 0));
    assert!(!resp.in_message());
    let a = resp_step(&mut resp, &first, &mut env);
    assert_eq!(
        places(&a),
        vec![PlaceTarget::Memory {
            va: MR_VA + 64,
            rkey: MR_RKEY
        }]
    );
    env.not_resident = 1;
    let last = pkt(101, RequestOp::Write, Position::Last, 144);
    assert_eq!(resp_step(&mut resp, &last, &mut env), rnr_nak(101, 0));
    assert_eq!(
        env.residency_checks.last(),
        Some(&MemoryTarget::Remote {
            range: mr_range(MR_VA + 64 + 256, 144),
            write: true
        })
    );
    let a = resp_step(&mut resp, &last, &mut env);
    assert_eq!(
        places(&a),
        vec![PlaceTarget::Memory {
            va: MR_VA + 320,
            rkey: MR_RKEY
        }]
    );
    assert_eq!(resp.expected_psn(), Psn::new(102));
    assert_eq!(resp.msn(), 1);
}

#[test]
fn read_is_not_answered_until_its_whole_range_is_resident() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    let mut read = pkt(100, RequestOp::Read, Position::Only, 0);
    read.reth = Some(mr_range(MR_VA, 1000));
    env.not_resident = 1;
    assert_eq!(resp_step(&mut resp, &read, &mut env), rnr_nak(100, 0));
    assert_eq!(
        env.residency_checks,
        vec![MemoryTarget::Remote {
            range: mr_range(MR_VA, 1000),
            write: false
        }]
    );
    assert_eq!(resp.expected_psn(), Psn::new(100));
    assert_eq!(resp.msn(), 0);
    let a = resp_step(&mut resp, &read, &mut env);
    assert!(matches!(a[..], [ResponderAction::SendReadResponses(_)]));
    assert_eq!(resp.expected_psn(), Psn::new(104));
}

#[test]
fn atomics_are_not_executed_while_their_word_is_out() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    let mut fadd = pkt(100, RequestOp::Atomic, Position::Only, 0);
    fadd.atomic = Some(AtomicArgs {
        va: MR_VA + 8,
        rkey: MR_RKEY,
        op: AtomicOp::FetchAdd { add: 5 },
    });
    env.not_resident = 1;
    assert_eq!(resp_step(&mut resp, &fadd, &mut env), rnr_nak(100, 0));
    assert_eq!(env.atomics_executed, 0);
    let a = resp_step(&mut resp, &fadd, &mut env);
    assert_eq!(env.atomics_executed, 1);
    assert!(matches!(
        a[..],
        [ResponderAction::SendAtomicAck { orig: 0, .. }]
    ));
    assert_eq!(env.word(MR_VA + 8), 5);

    let mut store = pkt(101, RequestOp::AtomicWrite, Position::Only, 8);
    store.atomic = Some(AtomicArgs {
        va: MR_VA + 16,
        rkey: MR_RKEY,
        op: AtomicOp::Write { value: 77 },
    });
    env.not_resident = 1;
    assert_eq!(resp_step(&mut resp, &store, &mut env), rnr_nak(101, 1));
    assert_eq!(env.atomics_executed, 1);
    assert_eq!(env.word(MR_VA + 16), 0);
    resp_step(&mut resp, &store, &mut env);
    assert_eq!(env.word(MR_VA + 16), 77);
    assert_eq!(
        env.residency_checks,
        vec![
            MemoryTarget::Remote {
                range: mr_range(MR_VA + 8, 8),
                write: true
            };
            2
        ]
        .into_iter()
        .chain(vec![
            MemoryTarget::Remote {
                range: mr_range(MR_VA + 16, 8),
                write: true
            };
            2
        ])
        .collect::<Vec<_>>()
    );
}

#[test]
fn nothing_is_asked_for_packets_without_payload_or_memory() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    env.rq.push_back(100);
    env.not_resident = u32::MAX;
    // A zero-length SEND and a zero-length READ touch no memory.
    resp_step(
        &mut resp,
        &pkt(100, RequestOp::Send, Position::Only, 0),
        &mut env,
    );
    let mut read = pkt(101, RequestOp::Read, Position::Only, 0);
    read.reth = Some(mr_range(MR_VA, 0));
    let a = resp_step(&mut resp, &read, &mut env);
    assert!(matches!(a[..], [ResponderAction::SendReadResponses(_)]));
    assert!(env.residency_checks.is_empty());
    assert_eq!(resp.counters().send_rnr_err, 0);
}

#[test]
fn uc_drops_the_message_and_keeps_the_wqe() {
    let mut resp = Responder::<4>::new_unreliable(ResponderConfig {
        max_dest_rd_atomic: 0,
        ..config()
    });
    let mut env = Env::new(4096);
    env.rq.push_back(1000);
    env.rq.push_back(1000);
    env.not_resident = 1;
    let a = resp_step(
        &mut resp,
        &pkt(100, RequestOp::Send, Position::First, 256),
        &mut env,
    );
    // No NAK on UC: the drop alone.
    assert_eq!(
        a,
        vec![
            ResponderAction::ConsumeReceiveWqe,
            ResponderAction::Drop {
                reason: DropReason::NotResident
            }
        ]
    );
    assert_eq!(resp.counters().send_rnr_err, 0);
    apply_places(&a, &[], &mut env, &mut Vec::new());
    // The rest of the message is dropped.
    let a = resp_step(
        &mut resp,
        &pkt(101, RequestOp::Send, Position::Last, 10),
        &mut env,
    );
    assert!(places(&a).is_empty());
    // The next message uses the held WQE.
    let a = resp_step(
        &mut resp,
        &pkt(102, RequestOp::Send, Position::Only, 10),
        &mut env,
    );
    assert!(!a.contains(&ResponderAction::ConsumeReceiveWqe));
    assert_eq!(places(&a), vec![PlaceTarget::Receive { offset: 0 }]);
    assert_eq!(env.rq.len(), 1);
}

#[test]
fn pages_that_cannot_come_in_are_a_remote_access_error() {
    let mut resp = Responder::<4>::new(config());
    let mut env = Env::new(4096);
    env.unmapped = true;
    let mut write = pkt(100, RequestOp::Write, Position::Only, 16);
    write.reth = Some(mr_range(MR_VA, 16));
    let a = resp_step(&mut resp, &write, &mut env);
    assert_eq!(
        a[0],
        ResponderAction::SendAck {
            psn: Psn::new(100),
            syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
            msn: 0
        }
    );
    assert!(places(&a).is_empty());
    assert!(resp.is_error());
}

#[test]
fn requester_says_where_a_read_response_lands() {
    use rxe_proto::proto::replay::{SendWqe, WqeOp};
    use rxe_proto::proto::requester::{Requester, RequesterConfig, RequesterEvent};
    let mut req = Requester::<8>::new(RequesterConfig::new(Mtu::MTU_256, Psn::new(0xff_fffe)));
    assert_eq!(
        req.read_response_target(Psn::new(0xff_fffe)),
        None,
        "nothing posted"
    );
    let mut ignore = |_| panic!("post must not act");
    req.post(
        SendWqe {
            id: 7,
            op: WqeOp::Read {
                va: MR_VA,
                rkey: MR_RKEY,
            },
            length: 600,
        },
        &mut ignore,
    )
    .unwrap();
    req.post(
        SendWqe {
            id: 8,
            op: WqeOp::Send {
                imm: None,
                invalidate_rkey: None,
            },
            length: 10,
        },
        &mut ignore,
    )
    .unwrap();
    req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    // 600 bytes at MTU 256: PSNs 0xfffffe, 0xffffff, 0 (wrapping).
    assert_eq!(req.read_response_target(Psn::new(0xff_fffe)), Some((7, 0)));
    assert_eq!(
        req.read_response_target(Psn::new(0xff_ffff)),
        Some((7, 256))
    );
    assert_eq!(req.read_response_target(Psn::new(0)), Some((7, 512)));
    // Outside the READ: the SEND after it, and before it.
    assert_eq!(req.read_response_target(Psn::new(1)), None);
    assert_eq!(req.read_response_target(Psn::new(0xff_fffd)), None);
}
