// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 invariant CRC (ICRC): a reflected CRC-32 (polynomial
//! 0xEDB88320) seeded with 0xDEBB20E3, over the IP, UDP and BTH headers with
//! their variant fields masked to ones, then the rest of the packet (extension
//! headers, payload, pad). The ICRC is the inverted CRC, carried in the last
//! four bytes of the packet in little-endian order.
//!
//! The C driver stores the ICRC with a plain 32-bit store, i.e. in host byte
//! order; on the little-endian machines it runs on that is little-endian,
//! which is what we always send and expect.

use super::error::ParseError;

/// CRC-32 polynomial, reflected (IEEE 802.3).
pub const CRC32_POLY: u32 = 0xedb8_8320;

/// CRC state the ICRC starts from: the state after 8 bytes of 0xFF from the
/// usual 0xFFFFFFFF, standing in for the masked InfiniBand LRH.
pub const ICRC_SEED: u32 = 0xdebb_20e3;

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// IPv4 header length (no options: rxe neither sends nor expects any).
pub const IPV4_HDR_LEN: usize = 20;

/// IPv6 header length (no extension headers).
pub const IPV6_HDR_LEN: usize = 40;

/// UDP header length.
pub const UDP_HDR_LEN: usize = 8;

/// Builds the slicing-by-8 tables. Only evaluated at compile time (it
/// initialises a `static`), so its indexing cannot fail at run time.
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ CRC32_POLY
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// Slicing-by-8 tables: `TABLES[0]` is the classic bytewise table,
/// `TABLES[k][b]` is the CRC contribution of byte `b` followed by `k` zero
/// bytes.
static TABLES: [[u32; 256]; 8] = make_tables();

/// Table lookup by a byte; a `u8` index never exceeds the 256 entries.
#[inline(always)]
fn t(table: &[u32; 256], i: u8) -> u32 {
    table[usize::from(i)]
}

/// Advances the raw CRC-32 state `crc` over `data`, one byte at a time
/// (no inversion at either end). Reference for [`crc32_update`].
pub fn crc32_update_bytewise(mut crc: u32, data: &[u8]) -> u32 {
    let t0 = &TABLES[0];
    for &b in data {
        crc = (crc >> 8) ^ t(t0, (crc as u8) ^ b);
    }
    crc
}

/// Advances the raw CRC-32 state `crc` over `data`, eight bytes per step
/// (no inversion at either end).
pub fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    let [t0, t1, t2, t3, t4, t5, t6, t7] = &TABLES;
    let (chunks, rest) = data.as_chunks::<8>();
    for c in chunks {
        let [a0, a1, a2, a3, b0, b1, b2, b3] = *c;
        let [l0, l1, l2, l3] = (crc ^ u32::from_le_bytes([a0, a1, a2, a3])).to_le_bytes();
        crc = t(t7, l0)
            ^ t(t6, l1)
            ^ t(t5, l2)
            ^ t(t4, l3)
            ^ t(t3, b0)
            ^ t(t2, b1)
            ^ t(t1, b2)
            ^ t(t0, b3);
    }
    crc32_update_bytewise(crc, rest)
}

/// The IP header of a RoCEv2 packet, as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpHeader<'a> {
    /// An IPv4 header without options.
    V4(&'a [u8; IPV4_HDR_LEN]),
    /// An IPv6 header.
    V6(&'a [u8; IPV6_HDR_LEN]),
}

impl<'a> IpHeader<'a> {
    /// The IP header at the start of `buf`, by its version nibble. An IPv4
    /// header with options (IHL ≠ 5) or another version is refused.
    pub fn from_slice(buf: &'a [u8]) -> Result<IpHeader<'a>, ParseError> {
        match buf.first().map(|b| b >> 4) {
            Some(4) => {
                let (h, _) = buf
                    .split_first_chunk::<IPV4_HDR_LEN>()
                    .ok_or(ParseError::Truncated)?;
                if h[0] & 0xf != 5 {
                    return Err(ParseError::BadIpHeader);
                }
                Ok(IpHeader::V4(h))
            }
            Some(6) => {
                let (h, _) = buf
                    .split_first_chunk::<IPV6_HDR_LEN>()
                    .ok_or(ParseError::Truncated)?;
                Ok(IpHeader::V6(h))
            }
            Some(_) => Err(ParseError::BadIpHeader),
            None => Err(ParseError::Truncated),
        }
    }

    /// Header length in bytes.
    pub fn len(&self) -> usize {
        match self {
            IpHeader::V4(_) => IPV4_HDR_LEN,
            IpHeader::V6(_) => IPV6_HDR_LEN,
        }
    }

    /// Always false: an IP header is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// An IPv4 header with TOS, TTL and header checksum set to ones.
pub fn mask_ipv4(ip: &[u8; IPV4_HDR_LEN]) -> [u8; IPV4_HDR_LEN] {
    let mut m = *ip;
    m[1] = 0xff; // TOS
    m[8] = 0xff; // TTL
    m[10] = 0xff; // header checksum
    m[11] = 0xff;
    m
}

/// An IPv6 header with traffic class, flow label and hop limit set to ones.
pub fn mask_ipv6(ip: &[u8; IPV6_HDR_LEN]) -> [u8; IPV6_HDR_LEN] {
    let mut m = *ip;
    m[0] |= 0x0f; // traffic class, high nibble
    m[1] = 0xff; // traffic class low nibble, flow label high nibble
    m[2] = 0xff; // flow label
    m[3] = 0xff;
    m[7] = 0xff; // hop limit
    m
}

/// A UDP header with the checksum set to ones.
pub fn mask_udp(udp: &[u8; UDP_HDR_LEN]) -> [u8; UDP_HDR_LEN] {
    let mut m = *udp;
    m[6] = 0xff;
    m[7] = 0xff;
    m
}

/// A BTH with byte 4 (FECN, BECN, reserved) set to ones.
pub fn mask_bth(bth: &[u8; 12]) -> [u8; 12] {
    let mut m = *bth;
    m[4] = 0xff;
    m
}

/// A CRC-32 routine: advances the raw state (reflected polynomial
/// [`CRC32_POLY`], no inversion at either end) over some bytes. The ICRC
/// functions are generic over it so that the kernel module can use the
/// kernel's architecture-accelerated `crc32_le` while the host build uses
/// [`TableCrc32`]; both compute the same function.
pub trait Crc32 {
    /// The state after `data`, starting from `crc`.
    fn update(crc: u32, data: &[u8]) -> u32;
}

/// [`crc32_update`]: this module's slicing-by-8 tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableCrc32 {}

impl Crc32 for TableCrc32 {
    fn update(crc: u32, data: &[u8]) -> u32 {
        crc32_update(crc, data)
    }
}

/// The masked headers [`IcrcState::start`] covers, at most: an IPv6
/// header, the UDP header and the BTH.
const PSEUDO_HDR_MAX: usize = IPV6_HDR_LEN + UDP_HDR_LEN + 12;

/// ICRC computation in progress with the CRC-32 routine `C`; feed it the
/// bytes after the BTH (extension headers, payload, pad) in order, in as
/// many pieces as convenient.
///
/// The IP and UDP headers must be final (lengths filled in) before they are
/// given to [`IcrcState::start`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcrcState<C: Crc32 = TableCrc32> {
    crc: u32,
    engine: core::marker::PhantomData<C>,
}

impl IcrcState {
    /// Starts an ICRC over the (masked) IP header, UDP header and BTH, with
    /// [`TableCrc32`].
    pub fn new(ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN], bth: &[u8; 12]) -> IcrcState {
        IcrcState::start(ip, udp, bth)
    }

    /// [`IcrcState::new`] for IPv4.
    pub fn new_v4(ip: &[u8; IPV4_HDR_LEN], udp: &[u8; UDP_HDR_LEN], bth: &[u8; 12]) -> Self {
        Self::new(IpHeader::V4(ip), udp, bth)
    }

    /// [`IcrcState::new`] for IPv6.
    pub fn new_v6(ip: &[u8; IPV6_HDR_LEN], udp: &[u8; UDP_HDR_LEN], bth: &[u8; 12]) -> Self {
        Self::new(IpHeader::V6(ip), udp, bth)
    }
}

impl<C: Crc32> IcrcState<C> {
    /// Starts an ICRC over the (masked) IP header, UDP header and BTH.
    ///
    /// The three masked headers are laid end to end and fed in one call:
    /// the kernel's accelerated CRC pays a fixed cost per call and takes
    /// its byte-at-a-time path below 16 bytes, which the UDP header (8)
    /// and the BTH (12) alone would each take, on every packet sent and
    /// received.
    pub fn start(ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN], bth: &[u8; 12]) -> IcrcState<C> {
        let mut pseudo = [0u8; PSEUDO_HDR_MAX];
        let ip_len = match ip {
            IpHeader::V4(h) => {
                pseudo[..IPV4_HDR_LEN].copy_from_slice(&mask_ipv4(h));
                IPV4_HDR_LEN
            }
            IpHeader::V6(h) => {
                pseudo[..IPV6_HDR_LEN].copy_from_slice(&mask_ipv6(h));
                IPV6_HDR_LEN
            }
        };
        let udp_end = ip_len + UDP_HDR_LEN;
        pseudo[ip_len..udp_end].copy_from_slice(&mask_udp(udp));
        pseudo[udp_end..udp_end + 12].copy_from_slice(&mask_bth(bth));
        IcrcState {
            crc: C::update(ICRC_SEED, &pseudo[..udp_end + 12]),
            engine: core::marker::PhantomData,
        }
    }

    /// Continues over `data`, which follows the bytes already fed.
    pub fn update(&mut self, data: &[u8]) {
        self.crc = C::update(self.crc, data);
    }

    /// The ICRC value; its wire bytes are `to_le_bytes()`.
    pub fn finish(&self) -> u32 {
        !self.crc
    }
}

/// The ICRC of a packet: `roce` is the UDP payload from the BTH up to and
/// including the pad, without the ICRC trailer.
pub fn icrc(ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN], roce: &[u8]) -> Result<u32, ParseError> {
    let (bth, rest) = roce
        .split_first_chunk::<12>()
        .ok_or(ParseError::Truncated)?;
    let mut s = IcrcState::new(ip, udp, bth);
    s.update(rest);
    Ok(s.finish())
}

/// [`icrc`] for IPv4.
pub fn icrc_ipv4(
    ip: &[u8; IPV4_HDR_LEN],
    udp: &[u8; UDP_HDR_LEN],
    roce: &[u8],
) -> Result<u32, ParseError> {
    icrc(IpHeader::V4(ip), udp, roce)
}

/// [`icrc`] for IPv6.
pub fn icrc_ipv6(
    ip: &[u8; IPV6_HDR_LEN],
    udp: &[u8; UDP_HDR_LEN],
    roce: &[u8],
) -> Result<u32, ParseError> {
    icrc(IpHeader::V6(ip), udp, roce)
}
