//! ATOMIC_WRITE and FLUSH (IBTA 1.5 memory placement extensions) through
//! both machines: the responder executes each once, answers with an empty
//! READ RESPONSE ONLY and answers a duplicate again from its resource; the
//! access, alignment and length rules; the requester sends them with the
//! right headers, holds an rd_atomic credit for each, completes them on
//! the empty READ response only, and recovers a lost response by resending
//! (executed once).
mod common;

use common::*;
use rxe_proto::proto::aeth::{NakCode, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Completion, Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp,
    ResponsePacket,
};
use rxe_proto::proto::responder::{
    AccessFlags, DropReason, Responder, ResponderAction, ResponderConfig,
};
use rxe_proto::proto::transport::{
    AtomicArgs, AtomicOp, CompletionStatus, Mtu, RemoteAccess, RemoteRange, RequestOp,
    RequestPacket, FLUSH_GLOBAL, FLUSH_MR, FLUSH_PERSISTENT, FLUSH_RANGE,
};

const VALUE: u64 = 0x1122_3344_5566_7788;

fn responder(psn: u32, access: AccessFlags) -> Responder<4> {
    Responder::new(ResponderConfig {
        mtu: Mtu::MTU_1024,
        access,
        ..responder_config(psn)
    })
}

fn request(psn: u32, op: RequestOp, payload_len: u32) -> RequestPacket {
    RequestPacket {
        psn: Psn::new(psn),
        op,
        position: Position::Only,
        ack_req: true,
        payload_len,
        reth: None,
        atomic: None,
        imm: None,
        invalidate_rkey: None,
    }
}

fn atomic_write(psn: u32, va: u64, value: u64) -> RequestPacket {
    RequestPacket {
        reth: Some(RemoteRange {
            va,
            rkey: MR_RKEY,
            len: 8,
        }),
        atomic: Some(AtomicArgs {
            va,
            rkey: MR_RKEY,
            op: AtomicOp::Write { value },
        }),
        ..request(psn, RequestOp::AtomicWrite, 8)
    }
}

fn flush(psn: u32, placement: u8, selectivity: u8, va: u64, len: u32) -> RequestPacket {
    RequestPacket {
        reth: Some(RemoteRange {
            va,
            rkey: MR_RKEY,
            len,
        }),
        ..request(
            psn,
            RequestOp::Flush {
                placement,
                selectivity,
            },
            0,
        )
    }
}

/// The empty READ RESPONSE ONLY packets among `actions`: their PSNs.
fn empty_read_responses(actions: &[ResponderAction]) -> Vec<u32> {
    let mut v = Vec::new();
    for a in actions {
        if let ResponderAction::SendReadResponses(job) = a {
            for p in *job {
                assert_eq!(p.position, Position::Only);
                assert_eq!(p.range.len, 0);
                assert!(p.aeth_msn.is_some(), "READ RESPONSE ONLY carries an AETH");
                v.push(p.psn.get());
            }
        }
    }
    v
}

fn naks(actions: &[ResponderAction]) -> Vec<(u32, NakCode)> {
    actions
        .iter()
        .filter_map(|a| match *a {
            ResponderAction::SendAck {
                psn,
                syndrome: Syndrome::Nak(code),
                ..
            } => Some((psn.get(), code)),
            _ => None,
        })
        .collect()
}

#[test]
fn atomic_write_stores_once_and_a_duplicate_is_answered_again() {
    let mut resp = responder(40, AccessFlags::ALL);
    let mut env = Env::new(4096);
    let a = resp_step(&mut resp, &atomic_write(40, MR_VA + 64, VALUE), &mut env);
    assert_eq!(empty_read_responses(&a), vec![40]);
    assert_eq!(env.word(MR_VA + 64), VALUE);
    assert_eq!(env.atomics_executed, 1);
    assert_eq!(resp.expected_psn(), Psn::new(41));
    // The word changes locally; the duplicate must not store again.
    env.write(MR_VA + 64, &7u64.to_le_bytes());
    let a = resp_step(&mut resp, &atomic_write(40, MR_VA + 64, VALUE), &mut env);
    assert_eq!(empty_read_responses(&a), vec![40]);
    assert_eq!(env.word(MR_VA + 64), 7);
    assert_eq!(env.atomics_executed, 1);
    assert_eq!(resp.counters().duplicate_request, 1);
    // A SEND after it is in order.
    env.rq.push_back(100);
    let a = resp_step(&mut resp, &request(41, RequestOp::Send, 10), &mut env);
    assert!(naks(&a).is_empty());
}

#[test]
fn atomic_write_rules() {
    let mut env = Env::new(4096);
    // Misaligned target: invalid request.
    let mut resp = responder(1, AccessFlags::ALL);
    let a = resp_step(&mut resp, &atomic_write(1, MR_VA + 4, VALUE), &mut env);
    assert_eq!(naks(&a), vec![(1, NakCode::InvalidRequest)]);
    // Not exactly 8 bytes of payload: invalid request.
    let mut resp = responder(1, AccessFlags::ALL);
    let short = RequestPacket {
        payload_len: 4,
        ..atomic_write(1, MR_VA, VALUE)
    };
    let a = resp_step(&mut resp, &short, &mut env);
    assert_eq!(naks(&a), vec![(1, NakCode::InvalidRequest)]);
    // The QP does not grant remote write: invalid request (as rxe).
    let mut resp = responder(
        1,
        AccessFlags {
            remote_write: false,
            ..AccessFlags::ALL
        },
    );
    let a = resp_step(&mut resp, &atomic_write(1, MR_VA, VALUE), &mut env);
    assert_eq!(naks(&a), vec![(1, NakCode::InvalidRequest)]);
    // The key table refuses: remote access error; nothing stored.
    let mut resp = responder(1, AccessFlags::ALL);
    env.deny_all = true;
    let a = resp_step(&mut resp, &atomic_write(1, MR_VA, VALUE), &mut env);
    assert_eq!(naks(&a), vec![(1, NakCode::RemoteAccessError)]);
    assert_eq!(env.atomics_executed, 0);
}

#[test]
fn atomic_write_needs_responder_resources() {
    let mut resp = Responder::<4>::new(ResponderConfig {
        mtu: Mtu::MTU_1024,
        max_dest_rd_atomic: 0,
        ..responder_config(1)
    });
    let mut env = Env::new(4096);
    let a = resp_step(&mut resp, &atomic_write(1, MR_VA, VALUE), &mut env);
    assert_eq!(naks(&a), vec![(1, NakCode::InvalidRequest)]);
}

#[test]
fn flush_of_a_range_and_of_a_region() {
    let mut resp = responder(5, AccessFlags::ALL);
    let mut env = Env::new(4096);
    let a = resp_step(
        &mut resp,
        &flush(5, FLUSH_GLOBAL, FLUSH_RANGE, MR_VA + 100, 200),
        &mut env,
    );
    assert_eq!(empty_read_responses(&a), vec![5]);
    let range = RemoteRange {
        va: MR_VA + 100,
        rkey: MR_RKEY,
        len: 200,
    };
    let global = RemoteAccess::Flush {
        global: true,
        persistent: false,
    };
    assert_eq!(env.flushes, vec![(range, global)]);
    // The whole region: the RETH's address and length do not matter.
    let a = resp_step(
        &mut resp,
        &flush(6, FLUSH_GLOBAL | FLUSH_PERSISTENT, FLUSH_MR, 0xdead, 77),
        &mut env,
    );
    assert_eq!(empty_read_responses(&a), vec![6]);
    assert_eq!(env.flushes.len(), 2);
    assert_eq!(env.flushes[1].0.len, 0);
    assert_eq!(
        env.flushes[1].1,
        RemoteAccess::Flush {
            global: true,
            persistent: true
        }
    );
    // A duplicate is answered again without flushing again.
    let a = resp_step(
        &mut resp,
        &flush(5, FLUSH_GLOBAL, FLUSH_RANGE, MR_VA + 100, 200),
        &mut env,
    );
    assert_eq!(empty_read_responses(&a), vec![5]);
    assert_eq!(env.flushes.len(), 2);
    assert_eq!(resp.expected_psn(), Psn::new(7));
}

#[test]
fn flush_rules() {
    let mut env = Env::new(4096);
    let no_global = AccessFlags {
        flush_global: false,
        ..AccessFlags::ALL
    };
    for (access, placement, selectivity, len, want) in [
        // The QP must grant each placement type asked for.
        (
            no_global,
            FLUSH_GLOBAL,
            FLUSH_RANGE,
            8,
            NakCode::InvalidRequest,
        ),
        // No placement type, or an unknown one.
        (AccessFlags::ALL, 0, FLUSH_RANGE, 8, NakCode::InvalidRequest),
        (AccessFlags::ALL, 4, FLUSH_RANGE, 8, NakCode::InvalidRequest),
        // An unknown selectivity level.
        (
            AccessFlags::ALL,
            FLUSH_GLOBAL,
            2,
            8,
            NakCode::InvalidRequest,
        ),
        // Outside the region.
        (
            AccessFlags::ALL,
            FLUSH_GLOBAL,
            FLUSH_RANGE,
            8192,
            NakCode::RemoteAccessError,
        ),
    ] {
        let mut resp = responder(9, access);
        let a = resp_step(
            &mut resp,
            &flush(9, placement, selectivity, MR_VA, len),
            &mut env,
        );
        assert_eq!(
            naks(&a),
            vec![(9, want)],
            "placement {placement} selectivity {selectivity} len {len}"
        );
    }
    assert!(env.flushes.is_empty());
    // A FLUSH carries no payload.
    let mut resp = responder(9, AccessFlags::ALL);
    let with_payload = RequestPacket {
        payload_len: 4,
        ..flush(9, FLUSH_GLOBAL, FLUSH_RANGE, MR_VA, 8)
    };
    let a = resp_step(&mut resp, &with_payload, &mut env);
    assert_eq!(naks(&a), vec![(9, NakCode::InvalidRequest)]);
}

fn requester(max_rd_atomic: u32) -> Requester<16> {
    let mut cfg = RequesterConfig::new(Mtu::MTU_1024, Psn::new(100));
    cfg.max_rd_atomic = max_rd_atomic;
    cfg.retry_cnt = 7;
    Requester::new(cfg)
}

fn post(req: &mut Requester<16>, id: u64, op: WqeOp, length: u32) {
    req.post(SendWqe { id, op, length }, &mut |_| {})
        .expect("room");
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

fn empty_read_response(psn: u32) -> ResponsePacket {
    ResponsePacket {
        psn: Psn::new(psn),
        op: ResponseOp::ReadResponse(Position::Only),
        syndrome: Some(Syndrome::ACK),
        payload_len: 0,
    }
}

const AW_OP: WqeOp = WqeOp::Atomic(AtomicArgs {
    va: MR_VA + 8,
    rkey: MR_RKEY,
    op: AtomicOp::Write { value: VALUE },
});

#[test]
fn requester_sends_atomic_write_and_completes_it_on_the_empty_read_response() {
    let mut req = requester(4);
    post(&mut req, 1, AW_OP, 8);
    let a = req_step(&mut req, RequesterEvent::Transmit { budget: 8 });
    let tx = transmits(&a);
    assert_eq!(tx.len(), 1);
    let h = tx[0].header;
    assert_eq!(h.op, RequestOp::AtomicWrite);
    assert_eq!(h.payload_len, 8);
    assert!(h.ack_req);
    assert_eq!(h.atomic_write_value(), Some(VALUE));
    assert_eq!(h.atomic_header(), None, "no AtomicETH on ATOMIC_WRITE");
    assert_eq!(
        h.reth,
        Some(RemoteRange {
            va: MR_VA + 8,
            rkey: MR_RKEY,
            len: 8
        })
    );
    // A bare ACK does not answer it; an ATOMIC ACKNOWLEDGE neither.
    let ack = ResponsePacket {
        psn: Psn::new(100),
        op: ResponseOp::Acknowledge,
        syndrome: Some(Syndrome::ACK),
        payload_len: 0,
    };
    assert!(completions(&req_step(&mut req, RequesterEvent::Response(ack))).is_empty());
    let atomic_ack = ResponsePacket {
        op: ResponseOp::AtomicAcknowledge { orig: 3 },
        ..ack
    };
    assert!(completions(&req_step(&mut req, RequesterEvent::Response(atomic_ack))).is_empty());
    // Nor does a READ response that carries data.
    let with_data = ResponsePacket {
        payload_len: 8,
        ..empty_read_response(100)
    };
    assert!(completions(&req_step(&mut req, RequesterEvent::Response(with_data))).is_empty());
    let c = completions(&req_step(
        &mut req,
        RequesterEvent::Response(empty_read_response(100)),
    ));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, CompletionStatus::Success);
    assert_eq!(c[0].byte_len, 8);
    assert_eq!(c[0].atomic_orig, None);
    assert_eq!(req.outstanding_wqes(), 0);
}

#[test]
fn requester_sends_flush_with_its_feth_and_no_payload() {
    let mut req = requester(4);
    let op = WqeOp::Flush {
        va: MR_VA,
        rkey: MR_RKEY,
        len: 4096,
        placement: FLUSH_GLOBAL,
        selectivity: FLUSH_RANGE,
    };
    post(&mut req, 1, op, 4096);
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(tx.len(), 1);
    let h = tx[0].header;
    assert_eq!(
        h.op,
        RequestOp::Flush {
            placement: FLUSH_GLOBAL,
            selectivity: FLUSH_RANGE
        }
    );
    assert_eq!(h.payload_len, 0);
    assert_eq!(h.reth.map(|r| r.len), Some(4096));
    assert!(h.flush_header().is_some());
    let c = completions(&req_step(
        &mut req,
        RequesterEvent::Response(empty_read_response(100)),
    ));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, CompletionStatus::Success);
    assert_eq!(c[0].byte_len, 4096);
    assert_eq!(req.next_psn(), Psn::new(101), "one PSN whatever the length");
}

#[test]
fn each_holds_an_rd_atomic_credit() {
    let mut req = requester(1);
    post(&mut req, 1, AW_OP, 8);
    post(
        &mut req,
        2,
        WqeOp::Flush {
            va: MR_VA,
            rkey: MR_RKEY,
            len: 8,
            placement: FLUSH_GLOBAL,
            selectivity: FLUSH_RANGE,
        },
        0,
    );
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(tx.len(), 1, "the FLUSH waits for the ATOMIC_WRITE's credit");
    req_step(&mut req, RequesterEvent::Response(empty_read_response(100)));
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(tx.len(), 1);
    assert!(matches!(tx[0].header.op, RequestOp::Flush { .. }));
}

#[test]
fn a_lost_response_is_recovered_and_the_store_happens_once() {
    let mut req = requester(4);
    let mut resp = responder(100, AccessFlags::ALL);
    let mut env = Env::new(4096);
    post(&mut req, 1, AW_OP, 8);
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    // The responder executes it; its response is lost.
    let a = resp_step(&mut resp, &tx[0].header, &mut env);
    assert_eq!(empty_read_responses(&a), vec![100]);
    assert_eq!(env.word(MR_VA + 8), VALUE);
    // The retry timer resends it: a duplicate, answered again.
    req_step(&mut req, RequesterEvent::RetryTimerExpired);
    let tx = transmits(&req_step(&mut req, RequesterEvent::Transmit { budget: 8 }));
    assert_eq!(tx.len(), 1);
    assert!(tx[0].retransmit);
    env.write(MR_VA + 8, &0u64.to_le_bytes());
    let a = resp_step(&mut resp, &tx[0].header, &mut env);
    assert!(a.iter().all(|x| !matches!(
        x,
        ResponderAction::Drop {
            reason: DropReason::NoResource
        }
    )));
    assert_eq!(env.atomics_executed, 1);
    assert_eq!(env.word(MR_VA + 8), 0, "stored again by the duplicate");
    let mut done = Vec::new();
    for (p, _) in responses(&a, &env) {
        done.extend(completions(&req_step(
            &mut req,
            RequesterEvent::Response(p),
        )));
    }
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, CompletionStatus::Success);
}
