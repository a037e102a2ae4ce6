//! The seed's walkthrough (a), "Go-back-N: one packet lost, three resent",
//! every step asserted: a 16 KiB RDMA WRITE at MTU 4096 leaves as PSN
//! 1000-1003, 1001 is lost, the responder NAKs once naming 1001 and drops
//! 1003, the requester resends 1001-1003 from the replay buffer and one ACK
//! for 1003 retires the WQE.
mod common;

use common::*;
use rxe_proto::proto::aeth::{NakCode, RnrTimer, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Completion, GoBackCause, Requester, RequesterAction, RequesterConfig, RequesterEvent,
    ResponseOp, ResponsePacket,
};
use rxe_proto::proto::responder::{
    AccessFlags, DropReason, PlaceTarget, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{CompletionStatus, Mtu, RequestOp};

const TIMEOUT: u32 = 500;

#[test]
fn one_packet_lost_three_resent() {
    let mtu = Mtu::MTU_4096;
    let mut rcfg = RequesterConfig::new(mtu, Psn::new(1000));
    rcfg.retry_cnt = 3;
    rcfg.timeout_usecs = TIMEOUT;
    let mut req = Requester::<8>::new(rcfg);
    let mut resp = Responder::<4>::new(ResponderConfig {
        mtu,
        rq_psn: Psn::new(1000),
        min_rnr_timer: RnrTimer::new(1),
        max_dest_rd_atomic: 4,
        access: AccessFlags::ALL,
    });
    let mut env = Env::new(64 * 1024);
    let mut recv = Vec::new();
    let data: Vec<u8> = (0..16384u32).map(|i| (i * 7 + 3) as u8).collect();

    // Step 1: a 16 KiB WRITE leaves as PSN 1000 to 1003; all four sit in the
    // replay buffer and the retry timer arms.
    let mut ignore = |_a: RequesterAction| panic!("post must not act");
    req.post(
        SendWqe {
            id: 1,
            op: WqeOp::Write {
                va: MR_VA,
                rkey: MR_RKEY,
                imm: None,
            },
            length: 16384,
        },
        &mut ignore,
    )
    .unwrap();
    let acts = req_step(&mut req, RequesterEvent::Transmit { budget: 100 });
    let tx = transmits(&acts);
    assert_eq!(tx.len(), 4);
    let positions = [
        Position::First,
        Position::Middle,
        Position::Middle,
        Position::Last,
    ];
    for (i, p) in tx.iter().enumerate() {
        assert_eq!(p.header.psn, Psn::new(1000 + i as u32));
        assert_eq!(p.header.op, RequestOp::Write);
        assert_eq!(p.header.position, positions[i]);
        assert_eq!(p.payload_offset, 4096 * i as u32);
        assert_eq!(p.header.payload_len, 4096);
        assert_eq!(p.header.ack_req, i == 3, "AckReq only on the last packet");
        assert!(!p.retransmit);
    }
    assert!(acts.contains(&RequesterAction::ArmRetryTimer { usecs: TIMEOUT }));
    assert!(req.retry_timer_armed());
    assert_eq!(req.replay_buffer().len(), 1);
    let e = req.replay_buffer().front().unwrap();
    assert_eq!((e.first_psn, e.last_psn), (Psn::new(1000), Psn::new(1003)));
    // Any PSN maps back to its WQE and byte offset.
    assert_eq!(
        req.replay_buffer().locate(Psn::new(1002), mtu),
        Some((0, 8192))
    );
    let payload = |p: &rxe_proto::proto::requester::TxPacket| {
        data[p.payload_offset as usize..(p.payload_offset + p.header.payload_len) as usize].to_vec()
    };

    // Step 2: 1000 is expected; it is accepted and the expected PSN moves on.
    let a = resp_step(&mut resp, &tx[0].header, &mut env);
    assert_eq!(
        a,
        vec![ResponderAction::Place {
            target: PlaceTarget::Memory {
                va: MR_VA,
                rkey: MR_RKEY
            },
            len: 4096,
            payload_offset: 0
        }]
    );
    apply_places(&a, &payload(&tx[0]), &mut env, &mut recv);
    assert_eq!(resp.expected_psn(), Psn::new(1001));

    // Step 3: 1001 is dropped in the fabric. Steps 4-5: 1002 is a gap, not
    // buffered: exactly one NAK naming 1001.
    let a = resp_step(&mut resp, &tx[2].header, &mut env);
    assert_eq!(
        a,
        vec![
            ResponderAction::SendAck {
                psn: Psn::new(1001),
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                msn: 0
            },
            ResponderAction::Drop {
                reason: DropReason::OutOfSeqRequest
            },
        ]
    );
    assert_eq!(resp.expected_psn(), Psn::new(1001));
    assert_eq!(resp.counters().out_of_seq_request, 1);

    // Step 6: 1003 is out of order too: dropped, no second NAK.
    let a = resp_step(&mut resp, &tx[3].header, &mut env);
    assert_eq!(
        a,
        vec![ResponderAction::Drop {
            reason: DropReason::OutOfSeqRequest
        }]
    );
    assert_eq!(resp.counters().out_of_seq_request, 1);
    assert_eq!(resp.counters().out_of_seq_dropped, 1);
    assert_eq!(resp.expected_psn(), Psn::new(1001));

    // Step 7: the NAK reaches the requester; everything before 1001 counts as
    // received, and one retry is consumed.
    let nak = ResponsePacket {
        psn: Psn::new(1001),
        op: ResponseOp::Acknowledge,
        syndrome: Some(Syndrome::Nak(NakCode::PsnSequenceError)),
        payload_len: 0,
    };
    let acts = req_step(&mut req, RequesterEvent::Response(nak));
    assert!(transmits(&acts).is_empty());
    assert!(acts.contains(&RequesterAction::GoBack {
        from: Psn::new(1001),
        cause: GoBackCause::Nak
    }));
    assert!(!acts
        .iter()
        .any(|a| matches!(a, RequesterAction::Complete(_))));
    assert_eq!(req.comp_psn(), Psn::new(1001));
    assert_eq!(req.next_psn(), Psn::new(1001));
    assert_eq!(req.retry_left(), 2);
    assert_eq!(req.counters().rcvd_seq_err, 1);

    // Steps 8-9: every PSN from 1001 on is rebuilt from the replay buffer:
    // same PSNs, same offsets, same bytes.
    let acts = req_step(&mut req, RequesterEvent::Transmit { budget: 100 });
    let resent = transmits(&acts);
    assert_eq!(resent.len(), 3);
    for (r, o) in resent.iter().zip(&tx[1..]) {
        assert_eq!(r.header, o.header);
        assert_eq!(r.payload_offset, o.payload_offset);
        assert_eq!(payload(r), payload(o));
        assert!(r.retransmit);
    }

    // Step 10: they arrive in order and are placed through the reassembly
    // state 1000 left.
    let mut acks = Vec::new();
    for (i, p) in resent.iter().enumerate() {
        let a = resp_step(&mut resp, &p.header, &mut env);
        assert_eq!(
            a[0],
            ResponderAction::Place {
                target: PlaceTarget::Memory {
                    va: MR_VA + 4096 * (i as u64 + 1),
                    rkey: MR_RKEY
                },
                len: 4096,
                payload_offset: 0
            }
        );
        apply_places(&a, &payload(p), &mut env, &mut recv);
        acks.extend(responses(&a, &env));
    }
    assert_eq!(&env.mem[..16384], &data[..]);
    assert_eq!(resp.expected_psn(), Psn::new(1004));
    assert_eq!(acks.len(), 1, "one ACK, for 1003");
    assert_eq!(acks[0].0.psn, Psn::new(1003));
    assert_eq!(acks[0].0.syndrome, Some(Syndrome::ACK));

    // Step 11: one ACK for 1003 retires the WQE and disarms the timer.
    assert_eq!(req.retry_left(), 2, "retry_cnt consumed exactly once");
    let acts = req_step(&mut req, RequesterEvent::Response(acks[0].0));
    assert_eq!(
        acts,
        vec![
            RequesterAction::Complete(Completion {
                wqe_id: 1,
                status: CompletionStatus::Success,
                byte_len: 16384,
                atomic_orig: None
            }),
            RequesterAction::DisarmRetryTimer,
        ]
    );
    assert!(!req.retry_timer_armed());
    assert_eq!(req.outstanding_wqes(), 0);
    assert_eq!(req.counters().completer_retry_err, 1);
    assert_eq!(req.counters().retransmitted_pkts, 3);
    assert_eq!(req.counters().sent_pkts, 7);
}
