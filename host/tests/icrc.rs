//! ICRC: the CRC-32 engine against crc32fast, the RoCEv2 masking against an
//! independent formulation (doc §3.6 item 5), a vector captured from real
//! hardware, fixed vectors, and the incremental form.
use proptest::prelude::*;
use rxe_proto::proto::error::ParseError;
use rxe_proto::proto::icrc::{
    crc32_update, crc32_update_bytewise, icrc, icrc_ipv4, icrc_ipv6, Crc32, IcrcState, IpHeader,
    ICRC_SEED,
};
use rxe_proto::proto::packet::{fill_icrc, fill_icrc_with, Packet};

/// Another CRC-32 routine, as the kernel module plugs in `crc32_le`:
/// crc32fast's, on the raw (uninverted) state.
enum FastCrc32 {}

impl Crc32 for FastCrc32 {
    fn update(crc: u32, data: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new_with_initial(!crc);
        h.update(data);
        !h.finalize()
    }
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Doc §3.6 item 5: IEEE CRC-32 of 8×0xFF ‖ masked IP ‖ masked UDP ‖ masked
/// BTH ‖ rest, written little-endian. Masks written out again here on purpose.
fn reference(ip: &[u8], udp: &[u8], roce: &[u8]) -> [u8; 4] {
    let mut ip = ip.to_vec();
    if ip.len() == 20 {
        ip[1] = 0xff;
        ip[8] = 0xff;
        ip[10] = 0xff;
        ip[11] = 0xff;
    } else {
        assert_eq!(ip.len(), 40);
        ip[0] |= 0x0f;
        ip[1] = 0xff;
        ip[2] = 0xff;
        ip[3] = 0xff;
        ip[7] = 0xff;
    }
    let mut udp = udp.to_vec();
    udp[6] = 0xff;
    udp[7] = 0xff;
    let mut roce = roce.to_vec();
    roce[4] = 0xff;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(&ip);
    h.update(&udp);
    h.update(&roce);
    h.finalize().to_le_bytes()
}

#[test]
fn seed_is_state_after_eight_ff() {
    assert_eq!(crc32_update(0xffff_ffff, &[0xff; 8]), ICRC_SEED);
    assert_eq!(crc32_update_bytewise(0xffff_ffff, &[0xff; 8]), ICRC_SEED);
}

#[test]
fn crc32_check_value() {
    // The standard CRC-32 check value.
    assert_eq!(!crc32_update(!0, b"123456789"), 0xcbf4_3926);
    assert_eq!(!crc32_update_bytewise(!0, b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32_update(0x1234, &[]), 0x1234);
}

/// A RoCEv2 CNP captured on a ConnectX-4 Lx (from scapy's RoCE tests): IPv4,
/// BECN set (a masked bit), UDP checksum 0. Checks masking and byte order
/// against a hardware implementation.
#[test]
fn connectx4_cnp_capture() {
    let frame = unhex(
        "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
         003c 718c 4000 4011 9161 0a00 1101 0a00
         1201 0000 12b7 0028 0000 8100 ffff 4000
         0118 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 82fd 002a",
    );
    let ip: &[u8; 20] = frame[14..34].try_into().unwrap();
    let udp: &[u8; 8] = frame[34..42].try_into().unwrap();
    let roce = &frame[42..frame.len() - 4];
    let wire = &frame[frame.len() - 4..];
    let v = icrc_ipv4(ip, udp, roce).unwrap();
    assert_eq!(v.to_le_bytes(), wire);
    assert_eq!(v, 0x2a00_fd82);
    assert_eq!(IpHeader::from_slice(&frame[14..]), Ok(IpHeader::V4(ip)));
    assert_eq!(reference(ip, udp, roce), wire);
}

/// Hand-made vectors whose ICRC was computed outside this crate (Python zlib,
/// doc §3.6 item 5): (ip, udp, BTH onward without ICRC, ICRC wire bytes).
const FIXED: &[(&str, &str, &str, &str)] = &[
    // IPv4 RC SEND_ONLY "hello", SE, pad 3, dest QP 0x11, AckReq, PSN 100.
    (
        "45000034123440004011beefc0a80101c0a80102",
        "c12312b700200000",
        "04b0ffff000000118000006468656c6c6f000000",
        "be9f923a",
    ),
    // IPv6 (tclass 0x12, flow label 0x34567) RC ACKNOWLEDGE, AETH ACK MSN 7.
    (
        "61234567001c1140fe800000000000000000000000000001fe800000000000000000000000000002",
        "d00012b7001c0000",
        "1100ffff00abcdef001234561f000007",
        "516ff892",
    ),
];

#[test]
fn fixed_vectors() {
    for (ip, udp, roce, want) in FIXED {
        let (ip, udp, roce, want) = (unhex(ip), unhex(udp), unhex(roce), unhex(want));
        let udp: &[u8; 8] = udp.as_slice().try_into().unwrap();
        let iph = IpHeader::from_slice(&ip).unwrap();
        let v = icrc(iph, udp, &roce).unwrap();
        assert_eq!(v.to_le_bytes().as_slice(), want.as_slice());
        match iph {
            IpHeader::V4(h) => assert_eq!(icrc_ipv4(h, udp, &roce), Ok(v)),
            IpHeader::V6(h) => assert_eq!(icrc_ipv6(h, udp, &roce), Ok(v)),
        }
        assert_eq!(reference(&ip, udp, &roce).as_slice(), want.as_slice());
    }
}

#[test]
fn short_input_and_bad_ip() {
    assert_eq!(
        icrc_ipv4(&[0x45; 20], &[0; 8], &[0; 11]),
        Err(ParseError::Truncated)
    );
    assert_eq!(IpHeader::from_slice(&[]), Err(ParseError::Truncated));
    assert_eq!(
        IpHeader::from_slice(&[0x45; 19]),
        Err(ParseError::Truncated)
    );
    assert_eq!(
        IpHeader::from_slice(&[0x60; 39]),
        Err(ParseError::Truncated)
    );
    assert_eq!(
        IpHeader::from_slice(&[0x46; 24]),
        Err(ParseError::BadIpHeader)
    );
    assert_eq!(
        IpHeader::from_slice(&[0x55; 40]),
        Err(ParseError::BadIpHeader)
    );
}

fn ip_hdr() -> impl Strategy<Value = Vec<u8>> {
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
    fn slicing_by_8_equals_bytewise(init in any::<u32>(),
                                    data in proptest::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(crc32_update(init, &data), crc32_update_bytewise(init, &data));
        prop_assert_eq!(!crc32_update(!0, &data), crc32fast::hash(&data));
    }

    /// The ICRC functions compute the same value with any CRC-32 routine:
    /// the kernel module's `crc32_le` engine is plugged in as this one is.
    #[test]
    fn another_crc_engine_gives_the_same_icrc(ip in ip_hdr(), udp in any::<[u8; 8]>(),
                                              roce in proptest::collection::vec(any::<u8>(), 12..400)) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        let mut pkt = roce.clone();
        pkt.extend_from_slice(&[0; 4]);
        let mut other = pkt.clone();
        let table = fill_icrc(iph, &udp, &mut pkt).unwrap();
        let fast = fill_icrc_with::<FastCrc32>(iph, &udp, &mut other).unwrap();
        prop_assert_eq!(table, fast);
        prop_assert_eq!(&pkt, &other);
        prop_assert_eq!(table.to_le_bytes(), reference(&ip, &udp, &roce));
        let mut start = IcrcState::<FastCrc32>::start(iph, &udp, roce[..12].try_into().unwrap());
        start.update(&roce[12..]);
        prop_assert_eq!(start.finish(), table);
        if let Ok(parsed) = Packet::parse(&pkt) {
            prop_assert!(parsed.verify_icrc_with::<FastCrc32>(iph, &udp).is_ok());
            prop_assert_eq!(parsed.compute_icrc_with::<FastCrc32>(iph, &udp), table);
        }
    }

    #[test]
    fn matches_independent_reference(ip in ip_hdr(), udp in any::<[u8; 8]>(),
                                     roce in proptest::collection::vec(any::<u8>(), 12..400)) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        let v = icrc(iph, &udp, &roce).unwrap();
        prop_assert_eq!(v.to_le_bytes(), reference(&ip, &udp, &roce));
    }

    #[test]
    fn incremental_equals_one_shot(ip in ip_hdr(), udp in any::<[u8; 8]>(),
                                   roce in proptest::collection::vec(any::<u8>(), 12..400),
                                   cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let iph = IpHeader::from_slice(&ip).unwrap();
        let one = icrc(iph, &udp, &roce).unwrap();
        let bth: &[u8; 12] = roce[..12].try_into().unwrap();
        let rest = &roce[12..];
        let mut s = match iph {
            IpHeader::V4(h) => IcrcState::new_v4(h, &udp, bth),
            IpHeader::V6(h) => IcrcState::new_v6(h, &udp, bth),
        };
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (rest.len() + 1)).collect();
        cuts.sort();
        let mut at = 0;
        for c in cuts {
            s.update(&rest[at..c]);
            at = c;
        }
        s.update(&rest[at..]);
        prop_assert_eq!(s.finish(), one);
    }

    /// Masked fields never change the ICRC; any change of one unmasked byte
    /// always does (CRC-32 catches every burst shorter than 32 bits).
    #[test]
    fn masked_fields_ignored(ip in ip_hdr(), udp in any::<[u8; 8]>(),
                             roce in proptest::collection::vec(any::<u8>(), 12..100),
                             pick in any::<usize>(), x in 1u8..=255) {
        let base = icrc(IpHeader::from_slice(&ip).unwrap(), &udp, &roce).unwrap();
        // (area, offset, mask of bits covered by the ICRC mask)
        let v4 = ip.len() == 20;
        let masked = |area: usize, off: usize| -> u8 {
            match (area, off) {
                (0, 1) | (0, 8) | (0, 10) | (0, 11) if v4 => 0xff,
                (0, 0) if !v4 => 0x0f,
                (0, 1) | (0, 2) | (0, 3) | (0, 7) if !v4 => 0xff,
                (1, 6) | (1, 7) => 0xff,
                (2, 4) => 0xff,
                _ => 0,
            }
        };
        let total = ip.len() + 8 + roce.len();
        let p = pick % total;
        let (area, off) = if p < ip.len() { (0, p) } else if p < ip.len() + 8 { (1, p - ip.len()) } else { (2, p - ip.len() - 8) };
        let (mut ip2, mut udp2, mut roce2) = (ip.clone(), udp, roce.clone());
        let byte = match area { 0 => &mut ip2[off], 1 => &mut udp2[off], _ => &mut roce2[off] };
        // Flip only masked bits, then only unmasked bits.
        let m = masked(area, off);
        if m != 0 {
            *byte ^= x & m;
            let v = icrc(IpHeader::from_slice(&ip2).unwrap(), &udp2, &roce2).unwrap();
            prop_assert_eq!(v, base);
        }
        if x & !m != 0 && !(area == 0 && off == 0) {
            let (mut ip3, mut udp3, mut roce3) = (ip.clone(), udp, roce.clone());
            let byte = match area { 0 => &mut ip3[off], 1 => &mut udp3[off], _ => &mut roce3[off] };
            *byte ^= x & !m;
            let v = icrc(IpHeader::from_slice(&ip3).unwrap(), &udp3, &roce3).unwrap();
            prop_assert_ne!(v, base);
        }
    }
}
