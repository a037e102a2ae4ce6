//! UD rules (`src/proto/datagram.rs`): the Q_Key and AckReq bit a send
//! carries and the network header a received message is delivered behind.
use rxe_proto::proto::admission::GSI_QKEY;
use rxe_proto::proto::datagram::{network_header, send_ack_req, send_qkey, GRH_LEN};
use rxe_proto::proto::qp_attr::{Network, QpType};

#[test]
fn gsi_always_sends_the_well_known_qkey() {
    assert_eq!(send_qkey(QpType::Gsi, 0, 0x1234), GSI_QKEY);
    assert_eq!(send_qkey(QpType::Gsi, 0, 0x8000_0001), GSI_QKEY);
}

/// rxe sets AckReq on the GSI QP's packets (ib_cm's MADs) and not on a UD
/// QP's; a C peer sees the bit (t_ud's `ns/wire_ackreq` checks the wire).
#[test]
fn gsi_asks_for_an_ack_and_ud_does_not() {
    assert!(send_ack_req(QpType::Gsi));
    assert!(!send_ack_req(QpType::Ud));
}

#[test]
fn ud_sends_the_posted_qkey_unless_its_high_bit_names_the_qps() {
    assert_eq!(send_qkey(QpType::Ud, 0x11, 0x1234), 0x1234);
    assert_eq!(send_qkey(QpType::Ud, 0x11, 0x8000_0000), 0x11);
    assert_eq!(send_qkey(QpType::Ud, 0x11, 0xffff_ffff), 0x11);
}

/// An IPv4 header with a valid checksum (10.0.0.2 -> 10.0.0.1, UDP).
fn ipv4_header() -> [u8; 20] {
    let mut h = [
        0x45, 0, 0, 60, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
    ];
    let mut sum = 0u32;
    for w in h.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    h
}

#[test]
fn ipv4_header_lands_in_the_last_20_bytes_after_zeros() {
    let ip = ipv4_header();
    let grh = network_header(&ip, Network::Ipv4);
    assert_eq!(grh.len(), GRH_LEN);
    assert_eq!(&grh[..20], &[0u8; 20]);
    assert_eq!(&grh[20..], &ip);
    // ib_core verifies this checksum (ib_get_gids_from_rdma_hdr): the
    // copy keeps it valid.
    let mut sum = 0u32;
    for w in grh[20..].chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(sum, 0xffff);
}

#[test]
fn ipv4_options_are_not_copied() {
    let mut ip = [0xaau8; 24];
    ip[0] = 0x46;
    let grh = network_header(&ip, Network::Ipv4);
    assert_eq!(&grh[20..], &ip[..20]);
}

#[test]
fn ipv6_header_fills_the_whole_grh() {
    let ip: Vec<u8> = (0..40).collect();
    assert_eq!(&network_header(&ip, Network::Ipv6)[..], &ip[..]);
}

#[test]
fn short_header_leaves_zeros() {
    let grh = network_header(&[0x60, 1, 2], Network::Ipv6);
    assert_eq!(&grh[..3], &[0x60, 1, 2]);
    assert_eq!(&grh[3..], &[0u8; 37]);
}
