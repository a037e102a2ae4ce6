//! Fault-injection rules (`src/proto/fault.rs`): parsing, refusals with a
//! reason, matching, nth/prob/count picking, counters, rendering, and the
//! delay line that reorders.
use rxe_proto::proto::fault::*;
use rxe_proto::proto::opcode::Opcode;
use rxe_proto::proto::psn::Psn;

fn pkt(direction: Direction, qpn: u32, class: PacketClass, psn: u32) -> FaultPacket {
    FaultPacket {
        direction,
        dest_qpn: qpn,
        class,
        psn: Psn::new(psn),
    }
}

#[test]
fn classes_follow_the_opcode() {
    assert_eq!(PacketClass::of(Opcode::RcSendOnly), PacketClass::Request);
    assert_eq!(
        PacketClass::of(Opcode::RcRdmaWriteMiddle),
        PacketClass::Request
    );
    assert_eq!(PacketClass::of(Opcode::RcAcknowledge), PacketClass::Ack);
    assert_eq!(
        PacketClass::of(Opcode::RcAtomicAcknowledge),
        PacketClass::AtomicAck
    );
    assert_eq!(
        PacketClass::of(Opcode::RcRdmaReadResponseMiddle),
        PacketClass::ReadResponse
    );
}

#[test]
fn the_seeds_lost_packet_rule() {
    // Walkthrough (a): the second packet of a WRITE, PSN 1001, lost once.
    let mut rules =
        FaultRules::parse(b"drop dir=tx qpn=17 class=request psn=1001 count=1\n").unwrap();
    let write = |psn| pkt(Direction::Tx, 17, PacketClass::Request, psn);
    assert_eq!(rules.decide(&write(1000)), None);
    assert_eq!(rules.decide(&write(1001)), Some(FaultAction::Drop));
    assert_eq!(rules.decide(&write(1002)), None);
    // The retransmission of 1001 passes: count=1.
    assert_eq!(rules.decide(&write(1001)), None);
    // Other QP, direction or class: not matched.
    assert_eq!(
        rules.decide(&pkt(Direction::Rx, 17, PacketClass::Request, 1001)),
        None
    );
    assert_eq!(
        rules.decide(&pkt(Direction::Tx, 18, PacketClass::Request, 1001)),
        None
    );
    assert_eq!(
        rules.decide(&pkt(Direction::Tx, 17, PacketClass::Ack, 1001)),
        None
    );
    let r = rules.rules().next().unwrap();
    assert_eq!((r.matched(), r.acted()), (2, 1));
}

#[test]
fn nth_picks_one_packet_and_the_first_picking_rule_decides() {
    let mut rules =
        FaultRules::parse(b"# the first ACK\ndrop dir=rx class=ack nth=1\ndup class=ack\n")
            .unwrap();
    let ack = pkt(Direction::Rx, 5, PacketClass::Ack, 9);
    assert_eq!(rules.decide(&ack), Some(FaultAction::Drop));
    assert_eq!(rules.decide(&ack), Some(FaultAction::Duplicate));
    assert_eq!(rules.decide(&ack), Some(FaultAction::Duplicate));
    let mut out = String::new();
    rules.render(&mut out).unwrap();
    assert_eq!(
        out,
        "drop dir=rx class=ack nth=1 # matched=3 acted=1\ndup class=ack # matched=2 acted=2\n"
    );
}

#[test]
fn probability_is_seeded_and_near_its_rate() {
    let run = |text: &[u8]| {
        let mut rules = FaultRules::parse(text).unwrap();
        (0..100_000u32)
            .map(|i| {
                rules
                    .decide(&pkt(Direction::Tx, 1, PacketClass::Request, i & 0xff_ffff))
                    .is_some()
            })
            .collect::<Vec<_>>()
    };
    let a = run(b"drop prob=0.01 seed=7");
    assert_eq!(a, run(b"drop prob=0.01 seed=7"), "same seed, same packets");
    assert_ne!(a, run(b"drop prob=0.01 seed=8"));
    let hits = a.iter().filter(|&&x| x).count();
    assert!((800..1200).contains(&hits), "1% of 100000 gave {hits}");
    assert_eq!(run(b"drop prob=0").iter().filter(|&&x| x).count(), 0);
    assert_eq!(run(b"drop prob=1").iter().filter(|&&x| x).count(), 100_000);
    // count= bounds a probabilistic rule too.
    assert_eq!(
        run(b"drop prob=0.5 count=10")
            .iter()
            .filter(|&&x| x)
            .count(),
        10
    );
}

#[test]
fn rendering_round_trips() {
    let text = "delay=3 dir=rx qpn=255 class=read_resp psn=16777215 count=2 # matched=0 acted=0\n\
                drop prob=0.050000 seed=99 # matched=0 acted=0\n";
    let rules = FaultRules::parse(text.as_bytes()).unwrap();
    let mut out = String::new();
    rules.render(&mut out).unwrap();
    assert_eq!(out, text);
    assert_eq!(FaultRules::parse(out.as_bytes()).unwrap(), rules);
}

#[test]
fn nomem_fails_builds_and_is_not_a_wire_rule() {
    let mut rules =
        FaultRules::parse(b"nomem dir=tx class=request count=2\ndrop dir=tx class=request nth=3\n")
            .unwrap();
    let req = |psn| pkt(Direction::Tx, 17, PacketClass::Request, psn);
    // Built: the first two fail; the wire rule never sees a build.
    assert!(rules.fails_build(&req(1)));
    assert!(rules.fails_build(&req(1)));
    assert!(!rules.fails_build(&req(1)));
    assert!(!rules.fails_build(&pkt(Direction::Tx, 17, PacketClass::Ack, 5)));
    // On the wire: the nomem rule is not asked; the drop rule counts from 1.
    assert_eq!(rules.decide(&req(1)), None);
    assert_eq!(rules.decide(&req(2)), None);
    assert_eq!(rules.decide(&req(3)), Some(FaultAction::Drop));
    let counts: Vec<_> = rules.rules().map(|r| (r.matched(), r.acted())).collect();
    assert_eq!(counts, [(3, 2), (3, 1)]);
    let mut out = String::new();
    rules.render(&mut out).unwrap();
    assert!(
        out.starts_with("nomem dir=tx class=request count=2 # matched=3 acted=2\n"),
        "{out}"
    );
}

#[test]
fn an_empty_set_clears() {
    let rules = FaultRules::parse(b"").unwrap();
    assert!(rules.is_empty());
    assert!(FaultRules::parse(b"\n  # nothing\n\n").unwrap().is_empty());
}

#[test]
fn invalid_rules_are_refused_with_a_reason_and_a_line() {
    for (text, line, why) in [
        (
            &b"explode"[..],
            1,
            "the action must be drop, dup, delay=N or nomem",
        ),
        (b"drop\ndrop dir=up", 2, "dir must be tx or rx"),
        (b"drop qpn=0x1000000", 1, "qpn is 24 bits"),
        (b"drop psn=16777216", 1, "psn is 24 bits"),
        (
            b"drop class=nak",
            1,
            "class must be request, ack, read_resp or atomic_ack",
        ),
        (b"drop nth=0", 1, "nth counts from 1"),
        (b"drop nth=2 prob=0.1", 1, "nth and prob exclude each other"),
        (b"drop seed=3", 1, "seed needs prob"),
        (
            b"drop prob=1.5",
            1,
            "prob must be a decimal fraction from 0 to 1 (at most six digits)",
        ),
        (
            b"drop prob=0.0000001",
            1,
            "prob must be a decimal fraction from 0 to 1 (at most six digits)",
        ),
        (
            b"drop prob=-1",
            1,
            "prob must be a decimal fraction from 0 to 1 (at most six digits)",
        ),
        (b"delay=0", 1, "delay must be 1 to 64 packets"),
        (b"delay=65", 1, "delay must be 1 to 64 packets"),
        (b"delay=2", 1, "delay needs dir=rx"),
        (b"delay=2 dir=tx", 1, "delay needs dir=rx"),
        (b"nomem", 1, "nomem needs dir=tx"),
        (b"nomem dir=rx", 1, "nomem needs dir=tx"),
        (b"drop qpn=x", 1, "a value is not a number"),
        (
            b"drop colour=red",
            1,
            "unknown field (dir, qpn, class, psn, nth, prob, seed, count)",
        ),
        (b"drop dir", 1, "fields are key=value"),
        (b"\xff", 1, "not UTF-8 text"),
    ] {
        let e = FaultRules::parse(text).unwrap_err();
        assert_eq!(
            (e.line, e.reason),
            (line, why),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
    let many = "drop\n".repeat(MAX_FAULT_RULES + 1);
    assert_eq!(
        FaultRules::parse(many.as_bytes()).unwrap_err().line,
        MAX_FAULT_RULES + 1
    );
    assert_eq!(
        FaultRules::parse("drop\n".repeat(MAX_FAULT_RULES).as_bytes())
            .unwrap()
            .rules()
            .count(),
        MAX_FAULT_RULES
    );
}

#[test]
fn the_delay_line_reorders() {
    let mut line = DelayLine::<u32, 2>::new();
    let mut wire = Vec::new();
    // Packet 1 is held for 2; 2 and 3 pass; 1 follows 3.
    line.hold(1, 2).unwrap();
    for p in [2, 3, 4] {
        wire.push(p);
        line.passed(|x| wire.push(x));
    }
    assert_eq!(wire, vec![2, 3, 1, 4]);
    assert!(line.is_empty());
    // Full: the item comes back.
    line.hold(5, 9).unwrap();
    line.hold(6, 9).unwrap();
    assert_eq!(line.hold(7, 1), Err(7));
    let mut drained = Vec::new();
    line.drain(|x| drained.push(x));
    assert_eq!(drained, vec![5, 6]);
    assert!(line.is_empty());
}

#[test]
fn packets_are_seen_through_their_bth() {
    // RC RDMA WRITE MIDDLE to QP 0x000123, PSN 0xabcdef (AckReq set).
    let bth = [
        0x07, 0, 0xff, 0xff, 0, 0x00, 0x01, 0x23, 0x80, 0xab, 0xcd, 0xef, 0xaa,
    ];
    assert_eq!(
        FaultPacket::from_bth(Direction::Rx, &bth),
        Some(pkt(Direction::Rx, 0x123, PacketClass::Request, 0xabcdef))
    );
    let mut ack = bth;
    ack[0] = 0x11;
    assert_eq!(
        FaultPacket::from_bth(Direction::Tx, &ack).unwrap().class,
        PacketClass::Ack
    );
    assert_eq!(FaultPacket::from_bth(Direction::Tx, &bth[..11]), None);
    let mut unknown = bth;
    unknown[0] = 0x1f;
    assert_eq!(FaultPacket::from_bth(Direction::Tx, &unknown), None);
}
