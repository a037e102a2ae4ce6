//! `ReplyQueue`: the responder's replies leave in the order they were
//! decided, a READ reply packet by packet, plain ACKs coalesced, and a
//! full queue refuses rather than overwrites.
use rxe_proto::proto::aeth::{NakCode, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::responder::replies::{OnePacket, Reply, ReplyPacket, ReplyQueue};
use rxe_proto::proto::responder::resources::ReadReply;
use rxe_proto::proto::transport::{Mtu, RemoteRange};

fn ack(psn: u32) -> Reply {
    Reply::One(OnePacket::Ack {
        psn: Psn::new(psn),
        syndrome: Syndrome::ACK,
        msn: psn,
    })
}

fn read(psn: u32, len: u32) -> Reply {
    let range = RemoteRange {
        va: 0x1000,
        rkey: 7,
        len,
    };
    Reply::Read(ReadReply::new(
        Psn::new(psn),
        range,
        Mtu::MTU_1024,
        false,
        1,
    ))
}

fn psn_of(p: &ReplyPacket) -> u32 {
    match p {
        ReplyPacket::ReadResponse(r) => r.psn.get(),
        ReplyPacket::One(one) => one.psn().get(),
    }
}

fn drain<const N: usize>(q: &mut ReplyQueue<N>) -> Vec<ReplyPacket> {
    core::iter::from_fn(|| q.next_packet()).collect()
}

#[test]
fn read_reply_is_sent_packet_by_packet_then_what_queued_behind_it() {
    let mut q = ReplyQueue::<4>::new();
    assert!(q.push(read(10, 3000)));
    assert!(q.push(ack(13)));
    let first = q.next_packet().unwrap();
    let ReplyPacket::ReadResponse(p) = first else {
        panic!("{first:?}")
    };
    assert_eq!(
        (p.psn, p.position, p.range.len),
        (Psn::new(10), Position::First, 1024)
    );
    assert_eq!(q.len(), 2, "the READ stays queued until its last packet");
    let rest = drain(&mut q);
    let shape: Vec<_> = rest
        .iter()
        .map(|p| match p {
            ReplyPacket::ReadResponse(r) => (r.psn.get(), Some(r.position)),
            ReplyPacket::One(one) => (one.psn().get(), None),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (11, Some(Position::Middle)),
            (12, Some(Position::Last)),
            (13, None)
        ]
    );
    assert!(q.is_empty());
}

#[test]
fn plain_acks_coalesce_but_naks_and_reads_keep_their_place() {
    let mut q = ReplyQueue::<8>::new();
    assert!(q.push(ack(1)));
    assert!(q.push(ack(2)));
    assert!(q.push(ack(3)));
    assert_eq!(q.len(), 1);
    let nak = Reply::One(OnePacket::Ack {
        psn: Psn::new(4),
        syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
        msn: 3,
    });
    assert!(q.push(nak));
    assert!(q.push(ack(5)));
    assert!(q.push(read(6, 10)));
    assert!(q.push(ack(7)));
    assert_eq!(q.len(), 5);
    let psns: Vec<u32> = drain(&mut q).iter().map(psn_of).collect();
    assert_eq!(psns, vec![3, 4, 5, 6, 7]);
}

#[test]
fn full_queue_refuses_and_keeps_order_across_wrap() {
    let mut q = ReplyQueue::<2>::new();
    assert!(q.push(read(1, 1)));
    assert!(q.push(Reply::One(OnePacket::AtomicAck {
        psn: Psn::new(2),
        orig: 9,
        msn: 2
    })));
    assert!(!q.push(read(3, 1)), "full");
    assert!(!q.push(ack(3)), "an ACK cannot coalesce into an atomic ACK");
    assert!(matches!(
        q.next_packet(),
        Some(ReplyPacket::ReadResponse(_))
    ));
    assert!(q.push(ack(3)));
    assert!(matches!(
        q.next_packet(),
        Some(ReplyPacket::One(OnePacket::AtomicAck { orig: 9, .. }))
    ));
    assert!(matches!(
        q.next_packet(),
        Some(ReplyPacket::One(OnePacket::Ack { .. }))
    ));
    assert_eq!(q.next_packet(), None);
}

#[test]
fn pop_front_abandons_the_rest_of_a_read() {
    let mut q = ReplyQueue::<4>::new();
    assert!(q.push(read(1, 5000)));
    assert!(q.push(ack(7)));
    assert!(q.next_packet().is_some());
    q.pop_front();
    assert!(matches!(
        q.next_packet(),
        Some(ReplyPacket::One(OnePacket::Ack { .. }))
    ));
    assert!(q.is_empty());
    q.push(read(8, 1));
    q.clear();
    assert_eq!(q, ReplyQueue::new());
}

#[test]
fn a_replayed_read_replaces_what_is_queued_after_it() {
    let mut q = ReplyQueue::<8>::new();
    assert!(q.push(read(10, 4096))); // PSNs 10..=13
    assert!(q.push(ack(14)));
    assert!(q.push(read(15, 2048))); // PSNs 15..=16
    assert!(matches!(
        q.next_packet(),
        Some(ReplyPacket::ReadResponse(_))
    )); // PSN 10 sent
        // An ACK older than the replay point stays (it is still news).
    let mut keep = ReplyQueue::<4>::new();
    assert!(keep.push(ack(3)));
    let old = RemoteRange {
        va: 0x1000,
        rkey: 7,
        len: 1,
    };
    assert!(keep.push_replay(ReadReply::new(Psn::new(5), old, Mtu::MTU_1024, false, 1)));
    assert_eq!(keep.len(), 2);
    // The requester timed out and asks again from PSN 11.
    let range = RemoteRange {
        va: 0x1400,
        rkey: 7,
        len: 3072,
    };
    assert!(q.push_replay(ReadReply::new(Psn::new(11), range, Mtu::MTU_1024, true, 1)));
    let psns: Vec<u32> = drain(&mut q).iter().map(psn_of).collect();
    assert_eq!(psns, vec![11, 12, 13]);
}

#[test]
fn packets_counts_what_each_waiting_reply_still_needs_sent() {
    let mut q = ReplyQueue::<4>::new();
    assert_eq!(q.packets(), 0);
    assert!(q.push(ack(1)));
    assert_eq!(q.packets(), 1);
    // 3000 bytes at path MTU 1024: three READ response packets.
    assert!(q.push(read(2, 3000)));
    assert!(q.push(ack(5)));
    assert_eq!(q.packets(), 5);
    q.next_packet();
    q.next_packet();
    assert_eq!(q.packets(), 3, "the ACK and the READ's first packet went");
    drain(&mut q);
    assert_eq!(q.packets(), 0);
}
