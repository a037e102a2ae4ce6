//! `Requester::reset` and `Responder::reset` (a QP going RESET -> RTR -> RTS
//! again) leave a machine indistinguishable from a new one: every field,
//! compared through `Debug`, after the machine carried traffic.
mod common;

use common::*;
use rxe_proto::proto::aeth::RnrTimer;
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{Requester, RequesterAction, RequesterConfig, RequesterEvent};
use rxe_proto::proto::responder::{AccessFlags, Responder, ResponderConfig};
use rxe_proto::proto::transport::{Mtu, RemoteRange, RequestOp, RequestPacket};

#[test]
fn requester_reset_equals_new() {
    let mut used = Requester::<8>::new(RequesterConfig::new(Mtu::MTU_1024, Psn::new(5)));
    let mut sink = |_a: RequesterAction| {};
    for id in 0..3 {
        used.post(
            SendWqe {
                id,
                op: WqeOp::Write {
                    va: MR_VA,
                    rkey: MR_RKEY,
                    imm: None,
                },
                length: 5000,
            },
            &mut sink,
        )
        .unwrap();
    }
    let acts = req_step(&mut used, RequesterEvent::Transmit { budget: 100 });
    assert!(!acts.is_empty());
    assert_eq!(used.outstanding_wqes(), 3);

    let mut cfg = RequesterConfig::new(Mtu::MTU_4096, Psn::new(0xfffffe));
    cfg.retry_cnt = 2;
    used.reset(cfg);
    let fresh = Requester::<8>::new(cfg);
    assert_eq!(format!("{used:?}"), format!("{fresh:?}"));
    assert_eq!(used.config(), &cfg);
}

#[test]
fn responder_reset_equals_new() {
    let cfg = |psn, rd| ResponderConfig {
        mtu: Mtu::MTU_1024,
        rq_psn: Psn::new(psn),
        min_rnr_timer: RnrTimer::new(3),
        max_dest_rd_atomic: rd,
        access: AccessFlags::ALL,
    };
    let mut used = Responder::<4>::new(cfg(10, 4));
    let mut env = Env::new(64 * 1024);
    // A READ request leaves a responder resource behind, a half WRITE a
    // message in progress.
    let base = RequestPacket {
        psn: Psn::new(10),
        op: RequestOp::Read,
        position: Position::Only,
        ack_req: true,
        payload_len: 0,
        reth: Some(RemoteRange {
            va: MR_VA,
            rkey: MR_RKEY,
            len: 3000,
        }),
        atomic: None,
        imm: None,
        invalidate_rkey: None,
    };
    let _ = resp_step(&mut used, &base, &mut env);
    let first = RequestPacket {
        psn: Psn::new(13),
        op: RequestOp::Write,
        position: Position::First,
        ack_req: false,
        payload_len: 1024,
        ..base
    };
    let _ = resp_step(&mut used, &first, &mut env);
    assert!(used.in_message());

    used.reset(cfg(77, 2));
    let fresh = Responder::<4>::new(cfg(77, 2));
    assert_eq!(format!("{used:?}"), format!("{fresh:?}"));
}
