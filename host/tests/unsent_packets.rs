//! What the requester still has to transmit (`Requester::unsent_packets`):
//! the doorbell sends a QP's new requests from the posting CPU only when
//! nothing sent is unacknowledged, all of them go out in that one call
//! and none is a READ or an atomic (`Requester::unsent_awaits_reply`).

use rxe_proto::proto::aeth::{NakCode, Syndrome};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp, ResponsePacket,
};
use rxe_proto::proto::transport::Mtu;

fn requester() -> Requester<8> {
    Requester::new(RequesterConfig::new(Mtu::MTU_1024, Psn::new(100)))
}

fn wqe(id: u64, op: WqeOp, length: u32) -> SendWqe {
    SendWqe { id, op, length }
}

fn write(id: u64, length: u32) -> SendWqe {
    let op = WqeOp::Write {
        va: 0x1000,
        rkey: 1,
        imm: None,
    };
    wqe(id, op, length)
}

fn send(id: u64, length: u32) -> SendWqe {
    let op = WqeOp::Send {
        imm: None,
        invalidate_rkey: None,
    };
    wqe(id, op, length)
}

fn read(id: u64, length: u32) -> SendWqe {
    wqe(
        id,
        WqeOp::Read {
            va: 0x2000,
            rkey: 2,
        },
        length,
    )
}

/// Transmits up to `budget` packets; returns how many went out.
fn transmit(req: &mut Requester<8>, budget: u32) -> usize {
    let mut sent = 0;
    req.step(RequesterEvent::Transmit { budget }, &mut |a| {
        sent += usize::from(matches!(a, RequesterAction::Transmit(_)));
    });
    sent
}

fn respond(req: &mut Requester<8>, psn: u32, syndrome: Syndrome) {
    let packet = ResponsePacket {
        psn: Psn::new(psn),
        op: ResponseOp::Acknowledge,
        syndrome: Some(syndrome),
        payload_len: 0,
    };
    req.step(RequesterEvent::Response(packet), &mut |_| {});
}

#[test]
fn each_wqe_counts_its_request_packets_until_sent() {
    let mut req = requester();
    assert_eq!(req.unsent_packets(), 0);
    for w in [write(1, 4096), read(2, 8192), send(3, 100), send(4, 0)] {
        req.post(w, &mut |_| panic!()).unwrap();
    }
    // Four WRITE packets, one READ request (its eight PSNs are the
    // responder's packets), one SEND packet each (a 0-byte one too).
    assert_eq!(req.unsent_packets(), 7);
    assert!(req.unsent_awaits_reply(), "the READ");
    assert!(!req.has_unacked());
    assert_eq!(transmit(&mut req, 2), 2);
    assert_eq!(
        req.unsent_packets(),
        5,
        "the WRITE's last two, then the rest"
    );
    assert!(req.has_unacked());
    assert_eq!(transmit(&mut req, 64), 5);
    assert_eq!(req.unsent_packets(), 0);
    assert!(!req.unsent_awaits_reply(), "the READ is sent");
}

#[test]
fn after_a_go_back_the_packets_to_send_again_count() {
    let mut req = requester();
    req.post(write(1, 4096), &mut |_| panic!()).unwrap();
    req.post(send(2, 2048), &mut |_| panic!()).unwrap();
    assert!(!req.unsent_awaits_reply(), "a WRITE and a SEND");
    assert_eq!(transmit(&mut req, 64), 6);
    assert_eq!(req.unsent_packets(), 0);
    // PSN 101 lost: 101..=105 go again.
    respond(&mut req, 101, Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(req.unsent_packets(), 5);
    assert_eq!(transmit(&mut req, 64), 5);
    assert_eq!(req.unsent_packets(), 0);
    respond(&mut req, 105, Syndrome::ACK);
    assert!(!req.has_unacked());
    assert_eq!(req.outstanding_wqes(), 0);
}
