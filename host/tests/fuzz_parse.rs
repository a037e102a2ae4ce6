//! Fuzz-style properties: `Packet::parse` (and what callers do next with a
//! parsed packet) never panics on arbitrary bytes or on mutations of valid
//! packets, and whatever it accepts is self-consistent.
//!
//! Budget: `RXE_FUZZ_CASES` cases per property (default 8000, which keeps
//! this file well under 10 s in a debug build).
mod strategies;

use proptest::prelude::*;
use rxe_proto::proto::aeth::{Aeth, Syndrome};
use rxe_proto::proto::error::ParseError;
use rxe_proto::proto::icrc::IpHeader;
use rxe_proto::proto::opcode::Opcode;
use rxe_proto::proto::packet::{packet_len, Packet};
use strategies::arb_packet;

fn cases() -> u32 {
    std::env::var("RXE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8000)
}

/// Invariants of an accepted packet, and the follow-up calls a receive path
/// makes on it.
fn check_accepted(buf: &[u8], p: &Packet<'_>) {
    let op = Opcode::from_u8(buf[0]).unwrap();
    assert_eq!(p.opcode, op);
    assert_eq!(p.bth.tver, 0);
    assert_ne!(p.bth.dest_qp, 0);
    assert_eq!(
        op.header_len() + p.payload.len() + usize::from(p.pad) + 4,
        buf.len()
    );
    assert_eq!(p.ext.header_set(), op.headers());
    if !op.has_payload() {
        assert!(p.payload.is_empty());
    }
    if op == Opcode::RcAtomicWrite {
        assert_eq!(p.payload.len(), 8);
    }
    // payload is the slice right after the headers.
    assert_eq!(
        p.payload,
        &buf[op.header_len()..op.header_len() + p.payload.len()]
    );
    if let Some(a) = p.ext.aeth {
        assert_eq!(Aeth::parse(&a.to_bytes()), Ok(a));
        let _ = Syndrome::from_u8(a.syndrome.to_u8());
    }
    let _ = p.pad_is_canonical();
    let _ = packet_len(op, p.payload.len());
    let ip4 = [0x45u8; 20];
    let ip6 = [0x60u8; 40];
    let udp = [0u8; 8];
    for ip in [IpHeader::V4(&ip4), IpHeader::V6(&ip6)] {
        match p.verify_icrc(ip, &udp) {
            Ok(()) | Err(ParseError::IcrcMismatch { .. }) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
}

fn parse_and_check(buf: &[u8]) {
    if let Ok(p) = Packet::parse(buf) {
        check_accepted(buf, &p);
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Extend(Vec<u8>),
    SetOpcode(u8),
    SetFlags(u8),
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Extend),
        2 => any::<u8>().prop_map(Mutation::SetOpcode),
        2 => any::<u8>().prop_map(Mutation::SetFlags),
    ]
}

fn apply(buf: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Flip(i, x) => {
            let n = buf.len();
            if n > 0 {
                buf[i % n] ^= x;
            }
        }
        Mutation::Truncate(k) => {
            let n = buf.len();
            buf.truncate(k % (n + 1));
        }
        Mutation::Extend(v) => buf.extend_from_slice(v),
        Mutation::SetOpcode(op) => {
            if let Some(b) = buf.first_mut() {
                *b = *op;
            }
        }
        Mutation::SetFlags(f) => {
            if let Some(b) = buf.get_mut(1) {
                *b = *f;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
        parse_and_check(&buf);
    }

    /// Arbitrary tails after a known opcode with TVer 0 and a non-zero QP:
    /// reaches the length and payload checks far more often than pure noise.
    #[test]
    fn plausible_headers_never_panic(op in proptest::sample::select(Opcode::ALL.to_vec()),
                                     flags in any::<u8>(),
                                     rest in proptest::collection::vec(any::<u8>(), 0..120)) {
        let mut buf = vec![op as u8, flags & 0xf0, 0xff, 0xff, 0, 0, 0, 1];
        buf.extend_from_slice(&rest);
        parse_and_check(&buf);
    }

    #[test]
    fn mutated_valid_packets_never_panic((_op, _b, _e, _p, bytes) in arb_packet(),
                                         muts in proptest::collection::vec(arb_mutation(), 1..4)) {
        let mut buf = bytes;
        for m in &muts {
            apply(&mut buf, m);
        }
        parse_and_check(&buf);
    }

    /// Changing payload bytes never changes whether a packet parses.
    #[test]
    fn payload_bytes_do_not_matter((op, _b, _e, payload, mut bytes) in arb_packet(),
                                   i in any::<usize>(), x in any::<u8>()) {
        if !payload.is_empty() {
            let at = op.header_len() + i % payload.len();
            bytes[at] ^= x;
            let p = Packet::parse(&bytes).unwrap();
            check_accepted(&bytes, &p);
        }
    }
}
