// SPDX-License-Identifier: GPL-2.0

//! UD rules that do not depend on the kernel: the Q_Key and AckReq bit a
//! send carries and the network header a received message is delivered
//! behind.

use super::admission::GSI_QKEY;
use super::qp_attr::{Network, QpType};

/// Bytes of network header in front of a received UD message (`ib_grh`).
pub const GRH_LEN: usize = 40;

/// Bytes of IPv4 header copied into the network header (no options).
const IPV4_HDR_LEN: usize = 20;

/// The Q_Key a UD send carries: the GSI QP always sends the well-known
/// one; a posted Q_Key with the high bit set stands for the sending QP's
/// own (IBTA 10.2.5); otherwise the posted one.
pub const fn send_qkey(qp_type: QpType, qp_qkey: u32, posted_qkey: u32) -> u32 {
    match qp_type {
        QpType::Gsi => GSI_QKEY,
        _ if posted_qkey & 0x8000_0000 != 0 => qp_qkey,
        _ => posted_qkey,
    }
}

/// The BTH AckReq bit of a datagram (every one is a message's only
/// packet): set by the GSI QP, clear on a UD QP, as rxe sends them (it
/// asks for an ACK at the end of every message except on UD and UC QPs).
/// No responder acknowledges a datagram; the bit is kept for the same wire
/// bytes as a C peer's.
pub const fn send_ack_req(qp_type: QpType) -> bool {
    matches!(qp_type, QpType::Gsi)
}

/// The network header a received message is delivered behind
/// (`union rdma_network_hdr`): the IPv6 header, or 20 zero bytes and the
/// IPv4 header (ib_core checks that header's checksum when it builds a
/// reply's address from it). `ip` is the header as received; if it is
/// shorter than the header, the rest stays zero.
pub fn network_header(ip: &[u8], network: Network) -> [u8; GRH_LEN] {
    let mut grh = [0u8; GRH_LEN];
    let at = match network {
        Network::Ipv4 => GRH_LEN - IPV4_HDR_LEN,
        Network::Ipv6 => 0,
    };
    let len = (GRH_LEN - at).min(ip.len());
    grh[at..at + len].copy_from_slice(&ip[..len]);
    grh
}
