//! The responder's ACK PSN is the last SEND/WRITE/atomic it executed: a READ
//! moves `expected_psn` past its responses but not the PSN that duplicates
//! of earlier requests are re-ACKed with. A C rdma_rxe requester completes a
//! READ WQE successfully (without its data) when it sees a plain ACK whose
//! PSN reaches the READ's last PSN, so that PSN must never be sent.
mod common;

use common::*;
use rxe_proto::proto::aeth::Syndrome;
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::responder::{DropReason, Responder, ResponderAction};
use rxe_proto::proto::transport::{AtomicArgs, AtomicOp, RemoteRange, RequestOp, RequestPacket};

fn responder(psn: u32) -> Responder<4> {
    Responder::new(responder_config(psn))
}

fn write(psn: u32, len: u32) -> RequestPacket {
    RequestPacket {
        psn: Psn::new(psn),
        op: RequestOp::Write,
        position: Position::Only,
        ack_req: true,
        payload_len: len,
        reth: Some(RemoteRange {
            va: MR_VA,
            rkey: MR_RKEY,
            len,
        }),
        atomic: None,
        imm: None,
        invalidate_rkey: None,
    }
}

fn read(psn: u32, len: u32) -> RequestPacket {
    RequestPacket {
        op: RequestOp::Read,
        payload_len: 0,
        reth: Some(RemoteRange {
            va: MR_VA,
            rkey: MR_RKEY,
            len,
        }),
        ..write(psn, 0)
    }
}

fn acks(actions: &[ResponderAction]) -> Vec<(Psn, Syndrome)> {
    actions
        .iter()
        .filter_map(|a| match *a {
            ResponderAction::SendAck { psn, syndrome, .. } => Some((psn, syndrome)),
            _ => None,
        })
        .collect()
}

#[test]
fn duplicate_write_after_read_is_acked_with_the_writes_psn() {
    let mut resp = responder(99);
    let mut env = Env::new(4096);
    // WRITE(99), acknowledged as 99.
    let a = resp_step(&mut resp, &write(99, 16), &mut env);
    assert_eq!(acks(&a), vec![(Psn::new(99), Syndrome::ACK)]);
    // A 1000-byte READ at MTU 256: responses 100..=103.
    resp_step(&mut resp, &read(100, 1000), &mut env);
    assert_eq!(resp.expected_psn(), Psn::new(104));
    // The WRITE again (its ACK was lost): re-ACKed as 99, never 100 or later.
    let a = resp_step(&mut resp, &write(99, 16), &mut env);
    assert_eq!(acks(&a), vec![(Psn::new(99), Syndrome::ACK)]);
    assert!(a.contains(&ResponderAction::Drop {
        reason: DropReason::DuplicateRequest
    }));
    assert_eq!(
        resp.ack_psn(),
        Psn::new(100),
        "ack_psn is the last executed SEND/WRITE + 1"
    );
}

#[test]
fn duplicate_write_after_several_reads_is_acked_with_the_writes_psn() {
    let mut resp = responder(0x00ff_fffe);
    let mut env = Env::new(4096);
    resp_step(&mut resp, &write(0x00ff_fffe, 8), &mut env);
    // Two READs across the PSN wrap.
    resp_step(&mut resp, &read(0x00ff_ffff, 512), &mut env);
    resp_step(&mut resp, &read(1, 8), &mut env);
    assert_eq!(resp.expected_psn(), Psn::new(2));
    let a = resp_step(&mut resp, &write(0x00ff_fffe, 8), &mut env);
    assert_eq!(acks(&a), vec![(Psn::new(0x00ff_fffe), Syndrome::ACK)]);
}

#[test]
fn an_atomic_moves_the_ack_psn() {
    // rxe moves its ACK PSN after an atomic (only READ is left out): a
    // duplicate WRITE after an atomic is re-ACKed with the atomic's PSN.
    let mut resp = responder(10);
    let mut env = Env::new(4096);
    resp_step(&mut resp, &write(10, 8), &mut env);
    let atomic = RequestPacket {
        op: RequestOp::Atomic,
        reth: None,
        payload_len: 0,
        atomic: Some(AtomicArgs {
            va: MR_VA + 64,
            rkey: MR_RKEY,
            op: AtomicOp::FetchAdd { add: 1 },
        }),
        ..write(11, 0)
    };
    resp_step(&mut resp, &atomic, &mut env);
    let a = resp_step(&mut resp, &write(10, 8), &mut env);
    assert_eq!(acks(&a), vec![(Psn::new(11), Syndrome::ACK)]);
}
