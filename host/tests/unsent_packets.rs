//! What the requester still has to transmit (`Requester::unsent_packets`):
//! the doorbell sends a QP's new requests from the posting CPU only when
//! nothing sent is unacknowledged and all of them go out in that one
//! call (and, with `recv_cpu_reply` off, none is a READ or an atomic:
//! `Requester::unsent_awaits_reply`).

use rxe_proto::proto::aeth::{NakCode, Syndrome};
use rxe_proto::proto::opcode::Position;
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

/// A READ response packet for `psn`, at `position` of its READ (an AETH
/// but on a middle one).
fn read_response(req: &mut Requester<8>, psn: u32, position: Position) {
    let packet = ResponsePacket {
        psn: Psn::new(psn),
        op: ResponseOp::ReadResponse(position),
        syndrome: (position != Position::Middle).then_some(Syndrome::ACK),
        payload_len: 1024,
    };
    req.step(RequesterEvent::Response(packet), &mut |_| {});
}

#[test]
fn may_transmit_says_whether_a_transmit_step_sends() {
    // Two READ credits, three 2 KiB READs: the third waits for the first
    // READ's last response packet, which returns a credit; its first one
    // changes nothing the transmit work could use.
    let mut cfg = RequesterConfig::new(Mtu::MTU_1024, Psn::new(100));
    cfg.max_rd_atomic = 2;
    let mut req = Requester::<8>::new(cfg);
    assert!(!req.may_transmit(), "nothing posted");
    for id in 1..=3 {
        req.post(read(id, 2048), &mut |_| panic!()).unwrap();
    }
    assert!(req.may_transmit());
    assert_eq!(transmit(&mut req, 64), 2, "two credits");
    assert!(!req.may_transmit(), "every credit taken");
    assert_eq!(transmit(&mut req, 64), 0);
    read_response(&mut req, 100, Position::First);
    assert!(!req.may_transmit(), "the first READ holds its credit");
    read_response(&mut req, 101, Position::Last);
    assert!(req.may_transmit(), "the first READ's credit is back");
    assert_eq!(transmit(&mut req, 64), 1);
    assert!(!req.may_transmit(), "all three sent");
}

#[test]
fn a_read_answered_by_its_only_response_leaves_nothing_unacknowledged() {
    let mut req = requester();
    req.post(read(1, 2), &mut |_| panic!()).unwrap();
    assert_eq!(transmit(&mut req, 8), 1);
    assert!(req.has_unacked());
    let packet = ResponsePacket {
        psn: Psn::new(100),
        op: ResponseOp::ReadResponse(Position::Only),
        syndrome: Some(Syndrome::ACK),
        payload_len: 2,
    };
    let mut completed = false;
    req.step(RequesterEvent::Response(packet), &mut |a| {
        completed |= matches!(a, RequesterAction::Complete { .. });
    });
    assert!(completed, "the READ completes");
    assert!(!req.has_unacked(), "nothing left unacknowledged");
    assert!(!req.waiting_for_rnr() && !req.is_error());
    // The next READ is one request packet, sendable at once.
    req.post(read(2, 2), &mut |_| panic!()).unwrap();
    assert_eq!(req.unsent_packets(), 1);
    assert!(req.may_transmit());
}
