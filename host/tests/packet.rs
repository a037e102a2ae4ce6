//! Packet parser and builder: round trips for every opcode, each validation
//! error, ICRC fill/verify, a fixed vector.
mod strategies;

use proptest::prelude::*;
use rxe_proto::proto::aeth::Aeth;
use rxe_proto::proto::error::{BuildError, ParseError};
use rxe_proto::proto::headers::{Bth, Reth};
use rxe_proto::proto::icrc::IpHeader;
use rxe_proto::proto::icrc::TableCrc32;
use rxe_proto::proto::opcode::Opcode;
use rxe_proto::proto::packet::{
    build, fill_icrc, header_len_of, icrc_of_pieces, packet_len, pad_len, write_headers,
    ExtHeaders, Packet, RoceBytes,
};
use rxe_proto::proto::psn::Psn;
use strategies::*;

fn bth(op: Opcode) -> Bth {
    Bth {
        opcode: op as u8,
        pkey: 0xffff,
        dest_qp: 0x11,
        psn: Psn::new(100),
        ..Bth::default()
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn pad_lengths() {
    assert_eq!(
        [0, 1, 2, 3, 4, 5, 8, 1023].map(pad_len),
        [0, 3, 2, 1, 0, 3, 0, 1]
    );
    assert_eq!(packet_len(Opcode::RcSendOnly, 5), Some(12 + 5 + 3 + 4));
    assert_eq!(packet_len(Opcode::RcSendOnly, usize::MAX), None);
}

/// The IPv4 SEND_ONLY vector of tests/icrc.rs, produced by the builder.
#[test]
fn fixed_send_only_vector() {
    let b = Bth {
        se: true,
        ack_req: true,
        ..bth(Opcode::RcSendOnly)
    };
    let mut buf = [0xeeu8; 64];
    let n = build(&mut buf, &b, &ExtHeaders::default(), b"hello").unwrap();
    assert_eq!(n, 24);
    let ip: [u8; 20] = unhex("45000034123440004011beefc0a80101c0a80102")
        .try_into()
        .unwrap();
    let udp: [u8; 8] = unhex("c12312b700200000").try_into().unwrap();
    let v = fill_icrc(IpHeader::V4(&ip), &udp, &mut buf[..n]).unwrap();
    assert_eq!(
        buf[..n],
        unhex("04b0ffff000000118000006468656c6c6f000000be9f923a")
    );
    let p = Packet::parse(&buf[..n]).unwrap();
    assert_eq!(p.icrc, v);
    assert_eq!(p.payload, b"hello");
    assert_eq!(p.pad, 3);
    assert!(p.pad_is_canonical());
    assert_eq!(p.verify_icrc(IpHeader::V4(&ip), &udp), Ok(()));
    assert_eq!(buf[n], 0xee, "nothing written past the packet");
}

#[test]
fn parse_errors() {
    let mut buf = [0u8; 64];
    // Too short for a BTH.
    assert_eq!(Packet::parse(&buf[..11]), Err(ParseError::Truncated));
    // Unknown opcodes.
    for op in [0x15u8, 0x18, 0x40, 0x81, 0xff] {
        let mut b = [0u8; 32];
        b[0] = op;
        assert_eq!(Packet::parse(&b), Err(ParseError::UnknownOpcode(op)));
    }
    // ACK: needs 16 + 4 bytes.
    let n = build(
        &mut buf,
        &bth(Opcode::RcAcknowledge),
        &ExtHeaders {
            aeth: Some(Aeth::ack(1)),
            ..Default::default()
        },
        &[],
    )
    .unwrap();
    assert_eq!(n, 20);
    assert!(Packet::parse(&buf[..n]).is_ok());
    for short in 0..n {
        assert_eq!(
            Packet::parse(&buf[..short]),
            Err(ParseError::Truncated),
            "{short}"
        );
    }
    // Extra bytes on a payload-less opcode.
    assert_eq!(
        Packet::parse(&buf[..n + 1]),
        Err(ParseError::LengthMismatch)
    );
    // Pad on a payload-less opcode.
    let mut p = buf;
    p[1] |= 0x10;
    assert_eq!(Packet::parse(&p[..n + 1]), Err(ParseError::BadPad));
    // Pad that does not fit.
    let mut p = buf;
    p[1] |= 0x30;
    assert_eq!(Packet::parse(&p[..n]), Err(ParseError::Truncated));
    // TVer.
    let mut p = buf;
    p[1] |= 0x01;
    assert_eq!(Packet::parse(&p[..n]), Err(ParseError::BadTver(1)));
    // DestQP 0.
    let mut p = buf;
    p[5..8].fill(0);
    assert_eq!(Packet::parse(&p[..n]), Err(ParseError::BadDestQp));
}

#[test]
fn atomic_write_is_exactly_8() {
    let ext = ExtHeaders {
        reth: Some(Reth {
            va: 8,
            rkey: 1,
            len: 8,
        }),
        ..Default::default()
    };
    let b = bth(Opcode::RcAtomicWrite);
    let mut buf = [0u8; 64];
    for len in [0usize, 4, 7, 9, 16] {
        assert_eq!(
            build(&mut buf, &b, &ext, &vec![1; len]),
            Err(BuildError::BadPayloadLength)
        );
    }
    let n = build(&mut buf, &b, &ext, &[7; 8]).unwrap();
    assert_eq!(n, 28 + 8 + 4);
    assert_eq!(Packet::parse(&buf[..n]).unwrap().payload, &[7; 8]);
    assert_eq!(
        Packet::parse(&buf[..n - 1]),
        Err(ParseError::LengthMismatch)
    );
    assert_eq!(
        Packet::parse(&buf[..n + 1]),
        Err(ParseError::LengthMismatch)
    );
    let mut p = buf;
    p[1] |= 0x20; // pad 2 with 8 + 2 bytes
    assert_eq!(Packet::parse(&p[..n + 2]), Err(ParseError::BadPad));
}

#[test]
fn build_errors() {
    let mut buf = [0u8; 64];
    let none = ExtHeaders::default();
    let reth = ExtHeaders {
        reth: Some(Reth::default()),
        ..Default::default()
    };
    assert_eq!(
        build(
            &mut buf,
            &Bth {
                opcode: 0x15,
                ..Bth::default()
            },
            &none,
            &[]
        ),
        Err(BuildError::UnknownOpcode(0x15))
    );
    assert_eq!(
        build(&mut buf, &bth(Opcode::RcRdmaWriteFirst), &none, &[1]),
        Err(BuildError::HeaderMismatch)
    );
    assert_eq!(
        build(&mut buf, &bth(Opcode::RcSendOnly), &reth, &[1]),
        Err(BuildError::HeaderMismatch)
    );
    assert_eq!(
        build(&mut buf, &bth(Opcode::RcRdmaReadRequest), &reth, &[1]),
        Err(BuildError::BadPayloadLength)
    );
    assert_eq!(
        build(
            &mut buf[..12 + 4 + 3],
            &bth(Opcode::RcSendOnly),
            &none,
            &[1, 2, 3, 4]
        ),
        Err(BuildError::BufferTooSmall)
    );
    assert_eq!(
        write_headers(&mut buf[..27], &bth(Opcode::RcRdmaWriteFirst), &reth, 100),
        Err(BuildError::BufferTooSmall)
    );
    assert_eq!(
        write_headers(&mut buf, &bth(Opcode::RcRdmaWriteFirst), &reth, 100),
        Ok(28)
    );
    assert_eq!(
        fill_icrc(IpHeader::V4(&[0x45; 20]), &[0; 8], &mut buf[..15]),
        Err(BuildError::BufferTooSmall)
    );
}

#[test]
fn every_opcode_at_its_header_length() {
    for op in Opcode::ALL {
        let all = ExtHeaders {
            deth: Some(Default::default()),
            feth: Some(Default::default()),
            reth: Some(Default::default()),
            atomic_eth: Some(Default::default()),
            aeth: Some(Aeth::ack(0)),
            atomic_ack_eth: Some(Default::default()),
            immdt: Some(Default::default()),
            ieth: Some(Default::default()),
        };
        let ext = for_opcode(all, op);
        let len = payload_len_for(op, 0);
        let mut buf = [0u8; 64];
        let n = build(&mut buf, &bth(op), &ext, &vec![0; len]).unwrap();
        assert_eq!(n, op.header_len() + len + 4, "{op:?}");
        let p = Packet::parse(&buf[..n]).unwrap();
        assert_eq!(p.ext, ext, "{op:?}");
        assert_eq!(p.header_len(), op.header_len());
    }
}

fn arb_ip() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<[u8; 20]>().prop_map(|mut a| {
            a[0] = 0x45;
            a.to_vec()
        }),
        proptest::collection::vec(any::<u8>(), 40).prop_map(|mut a| {
            a[0] = 0x60 | (a[0] & 0xf);
            a
        }),
    ]
}

proptest! {
    #[test]
    fn build_parse_round_trip((op, b, ext, payload, bytes) in arb_packet()) {
        let p = Packet::parse(&bytes).unwrap();
        prop_assert_eq!(p.opcode, op);
        prop_assert_eq!(p.bth, Bth { pad_count: pad_len(payload.len()), ..b });
        prop_assert_eq!(p.ext.header_set(), op.headers());
        // Parsed headers equal the given ones after the wire's truncations.
        let mut want = ext;
        if let Some(d) = want.deth.as_mut() { d.src_qp &= 0xff_ffff; }
        if let Some(a) = want.aeth.as_mut() { a.msn &= 0xff_ffff; }
        prop_assert_eq!(p.ext, want);
        prop_assert_eq!(p.payload, payload.as_slice());
        prop_assert!(p.pad_is_canonical());
        prop_assert_eq!(bytes.len(), packet_len(op, payload.len()).unwrap());
        prop_assert_eq!(p.headers(), &bytes[..op.header_len()]);
        prop_assert_eq!(p.wire_len(), bytes.len());
        // Rebuilding the parsed packet gives the same bytes.
        let mut again = vec![0u8; bytes.len()];
        prop_assert_eq!(build(&mut again, &p.bth, &p.ext, p.payload), Ok(bytes.len()));
        prop_assert_eq!(again, bytes);
    }

    #[test]
    fn icrc_fill_then_verify((_op, _b, _e, _p, mut bytes) in arb_packet(), ip in arb_ip(),
                             udp in any::<[u8; 8]>(), flip in any::<usize>(), x in 1u8..=255) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        let v = fill_icrc(iph, &udp, &mut bytes).unwrap();
        let p = Packet::parse(&bytes).unwrap();
        prop_assert_eq!(p.icrc, v);
        prop_assert_eq!(p.verify_icrc(iph, &udp), Ok(()));
        // Corrupting any covered byte other than BTH byte 4 (masked) is caught.
        let i = flip % bytes.len();
        if i != 4 {
            let mut bad = bytes.clone();
            bad[i] ^= x;
            if let Ok(q) = Packet::parse(&bad) {
                let r = q.verify_icrc(iph, &udp);
                prop_assert!(matches!(r, Err(ParseError::IcrcMismatch { .. })), "{:?}", r);
            }
        }
    }
}

/// `bytes` (a whole packet) in the three pieces a zero-copy sender's skb
/// arrives in: headers, payload, pad and ICRC.
fn pieces(bytes: &[u8], op: Opcode, payload_len: usize) -> RoceBytes<'_> {
    let h = op.header_len();
    RoceBytes::split(
        &bytes[..h],
        &bytes[h..h + payload_len],
        &bytes[h + payload_len..],
    )
    .unwrap()
}

proptest! {
    #[test]
    fn a_split_packet_parses_and_verifies_as_the_whole(
        (op, _b, _e, payload, mut bytes) in arb_packet(), ip in arb_ip(),
        udp in any::<[u8; 8]>(), flip in any::<usize>(), x in 1u8..=255,
    ) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        fill_icrc(iph, &udp, &mut bytes).unwrap();
        let whole = Packet::parse(&bytes).unwrap();
        let split = Packet::parse_bytes(pieces(&bytes, op, payload.len())).unwrap();
        prop_assert_eq!(split, whole);
        prop_assert_eq!(Packet::parse_bytes(RoceBytes::contiguous(&bytes)), Ok(whole));
        prop_assert_eq!(split.verify_icrc(iph, &udp), Ok(()));
        prop_assert_eq!(pieces(&bytes, op, payload.len()).len(), bytes.len());
        prop_assert_eq!(header_len_of(&bytes), Some(op.header_len()));
        // A corrupted byte in any piece is caught, as in the whole packet.
        let i = flip % bytes.len();
        if i != 4 {
            let mut bad = bytes.clone();
            bad[i] ^= x;
            if let Ok(q) = Packet::parse_bytes(pieces(&bad, op, payload.len())) {
                let r = q.verify_icrc(iph, &udp);
                prop_assert!(matches!(r, Err(ParseError::IcrcMismatch { .. })), "{:?}", r);
            }
        }
    }

    #[test]
    fn the_icrc_of_pieces_is_the_icrc_of_the_packet(
        (op, _b, _e, payload, mut bytes) in arb_packet(), ip in arb_ip(), udp in any::<[u8; 8]>(),
    ) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        let v = fill_icrc(iph, &udp, &mut bytes).unwrap();
        let h = op.header_len();
        prop_assert_eq!(icrc_of_pieces::<TableCrc32>(iph, &udp, &bytes[..h], &payload), Ok(v));
    }
}

#[test]
fn a_split_packet_must_split_at_the_headers_and_end_with_pad_and_icrc() {
    let op = Opcode::RcRdmaWriteOnly;
    let ext = ExtHeaders {
        reth: Some(Reth {
            va: 0x1000,
            rkey: 7,
            len: 6,
        }),
        ..ExtHeaders::default()
    };
    let mut buf = [0u8; 128];
    let n = build(&mut buf, &bth(op), &ext, &[1, 2, 3, 4, 5, 6]).unwrap();
    let bytes = &buf[..n];
    let h = op.header_len();
    // 6 payload bytes: 2 pad bytes, then the ICRC.
    assert!(Packet::parse_bytes(
        RoceBytes::split(&bytes[..h], &bytes[h..h + 6], &bytes[h + 6..]).unwrap()
    )
    .is_ok());
    // The first piece one byte longer or shorter than the headers.
    let long = RoceBytes::split(&bytes[..h + 1], &bytes[h + 1..h + 6], &bytes[h + 6..]).unwrap();
    assert_eq!(Packet::parse_bytes(long), Err(ParseError::LengthMismatch));
    let short = RoceBytes::split(&bytes[..h - 1], &bytes[h - 1..h + 6], &bytes[h + 6..]).unwrap();
    assert_eq!(Packet::parse_bytes(short), Err(ParseError::LengthMismatch));
    // A trailer without its pad, or with a byte too many.
    let no_pad = RoceBytes::split(&bytes[..h], &bytes[h..h + 8], &bytes[h + 8..]).unwrap();
    assert_eq!(Packet::parse_bytes(no_pad), Err(ParseError::Truncated));
    let extra = RoceBytes::split(&bytes[..h], &bytes[h..h + 5], &bytes[h + 5..]).unwrap();
    assert_eq!(Packet::parse_bytes(extra), Err(ParseError::LengthMismatch));
    // A trailer shorter than an ICRC is no split packet.
    assert_eq!(
        RoceBytes::split(&bytes[..h], &bytes[h..n - 3], &bytes[n - 3..]),
        None
    );
    assert_eq!(header_len_of(&[]), None);
    assert_eq!(header_len_of(&[0xff]), None);
}
