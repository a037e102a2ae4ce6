//! Wire compatibility with the C rdma_rxe: packets it sent in the VM
//! (captured by scripts/capture-vectors.sh into tests/data/c_rxe_capture.pcap)
//! must parse, carry the ICRC we compute, and be rebuilt byte for byte by
//! our builder from the parsed headers.
use rxe_proto::proto::icrc::IpHeader;
use rxe_proto::proto::opcode::Opcode;
use rxe_proto::proto::packet::{build, fill_icrc, Packet};
use std::collections::BTreeSet;

const CAPTURE: &[u8] = include_bytes!("data/c_rxe_capture.pcap");

/// One captured RoCEv2 datagram: IP header, UDP header, UDP payload.
struct Datagram<'a> {
    ip: &'a [u8],
    udp: [u8; 8],
    roce: &'a [u8],
}

/// Frames of a classic little-endian pcap file with Ethernet link type.
fn frames(pcap: &[u8]) -> Vec<&[u8]> {
    assert_eq!(&pcap[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let mut out = Vec::new();
    let mut off = 24;
    while off + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
        let orig = u32::from_le_bytes(pcap[off + 12..off + 16].try_into().unwrap()) as usize;
        assert_eq!(incl, orig, "capture must not be truncated");
        out.push(&pcap[off + 16..off + 16 + incl]);
        off += 16 + incl;
    }
    assert_eq!(off, pcap.len());
    out
}

fn datagram(frame: &[u8]) -> Datagram<'_> {
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let l3 = &frame[14..];
    let (ip_len, udp_off) = match ethertype {
        0x0800 => {
            assert_eq!(l3[0], 0x45, "IPv4 without options");
            assert_eq!(l3[9], 17, "UDP");
            (20, 20)
        }
        0x86dd => {
            assert_eq!(l3[6], 17, "UDP");
            (40, 40)
        }
        t => panic!("unexpected ethertype {t:#x}"),
    };
    let udp: [u8; 8] = l3[udp_off..udp_off + 8].try_into().unwrap();
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 4791);
    let udp_len = u16::from_be_bytes([udp[4], udp[5]]) as usize;
    Datagram {
        ip: &l3[..ip_len],
        udp,
        roce: &l3[udp_off + 8..udp_off + udp_len],
    }
}

#[test]
fn c_driver_packets_parse_verify_and_rebuild_identically() {
    let frames = frames(CAPTURE);
    assert!(frames.len() >= 30, "capture too small: {}", frames.len());
    let mut opcodes = BTreeSet::new();
    let (mut v4, mut v6) = (0, 0);
    for (i, frame) in frames.iter().enumerate() {
        let d = datagram(frame);
        let ip = IpHeader::from_slice(d.ip).unwrap();
        match ip {
            IpHeader::V4(_) => v4 += 1,
            IpHeader::V6(_) => v6 += 1,
        }
        let pkt = Packet::parse(d.roce).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
        pkt.verify_icrc(ip, &d.udp)
            .unwrap_or_else(|e| panic!("frame {i} ({:?}): {e:?}", pkt.opcode));
        opcodes.insert(pkt.opcode as u8);

        let mut rebuilt = vec![0u8; d.roce.len() + 8];
        let n = build(&mut rebuilt, &pkt.bth, &pkt.ext, pkt.payload).unwrap();
        rebuilt.truncate(n);
        fill_icrc(ip, &d.udp, &mut rebuilt).unwrap();
        assert_eq!(
            rebuilt, d.roce,
            "frame {i} ({:?}) rebuilt differently",
            pkt.opcode
        );
    }
    assert!(v4 > 0 && v6 > 0, "need IPv4 and IPv6 packets ({v4}/{v6})");
    for want in [
        Opcode::RcSendOnly,
        Opcode::RcSendFirst,
        Opcode::RcSendLast,
        Opcode::RcAcknowledge,
        Opcode::RcRdmaWriteFirst,
        Opcode::RcRdmaWriteLast,
        Opcode::RcRdmaReadRequest,
        Opcode::RcRdmaReadResponseFirst,
        Opcode::RcRdmaReadResponseLast,
        Opcode::RcAtomicAcknowledge,
    ] {
        assert!(
            opcodes.contains(&(want as u8)),
            "capture lacks {want:?}; has {opcodes:?}"
        );
    }
    assert!(
        opcodes.contains(&(Opcode::RcFetchAdd as u8))
            || opcodes.contains(&(Opcode::RcCompareSwap as u8)),
        "capture lacks an atomic request"
    );
}

#[test]
fn a_flipped_bit_anywhere_fails_the_icrc() {
    let frames = frames(CAPTURE);
    let d = datagram(frames[0]);
    let ip = IpHeader::from_slice(d.ip).unwrap();
    for byte in 0..d.roce.len() {
        let mut bad = d.roce.to_vec();
        bad[byte] ^= 0x01;
        // BTH byte 4 (FECN, BECN, reserved) is masked out of the ICRC.
        if byte == 4 {
            continue;
        }
        if let Ok(p) = Packet::parse(&bad) {
            assert!(
                p.verify_icrc(ip, &d.udp).is_err(),
                "flip in byte {byte} not detected"
            );
        }
    }
}
