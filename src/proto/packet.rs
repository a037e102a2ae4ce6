// SPDX-License-Identifier: GPL-2.0

//! Whole RoCEv2 packets (the UDP payload: BTH, extension headers, payload,
//! pad, ICRC): a validating zero-copy parser into [`Packet`], and a builder
//! that writes headers, pad and ICRC into a caller-provided buffer.
//!
//! Parsing does the framing checks rxe does before looking up the QP (known
//! opcode, length, TVer, DestQP) plus the payload rules of the opcode table;
//! ICRC verification is separate because it needs the IP and UDP headers.

use super::aeth::Aeth;
use super::error::{BuildError, ParseError};
use super::headers::{AtomicAckEth, AtomicEth, Bth, Deth, Feth, Ieth, ImmDt, Reth};
use super::icrc::{Crc32, IcrcState, IpHeader, TableCrc32, ICRC_LEN, UDP_HDR_LEN};
use super::opcode::{ExtHeader, HeaderSet, OpFamily, Opcode, BTH_LEN};
use super::psn::Psn;

/// Payload length of an ATOMIC_WRITE.
pub const ATOMIC_WRITE_LEN: usize = 8;

/// The extension headers of a packet; exactly those the opcode carries are
/// `Some`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtHeaders {
    /// DETH (UD).
    pub deth: Option<Deth>,
    /// FETH (FLUSH).
    pub feth: Option<Feth>,
    /// RETH (WRITE first/only, READ request, FLUSH, ATOMIC_WRITE).
    pub reth: Option<Reth>,
    /// AtomicETH (COMPARE_SWAP, FETCH_ADD).
    pub atomic_eth: Option<AtomicEth>,
    /// AETH (ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, READ response first/last/only).
    pub aeth: Option<Aeth>,
    /// AtomicAckETH (ATOMIC_ACKNOWLEDGE).
    pub atomic_ack_eth: Option<AtomicAckEth>,
    /// Immediate data (SEND/WRITE with immediate).
    pub immdt: Option<ImmDt>,
    /// IETH (SEND with invalidate).
    pub ieth: Option<Ieth>,
}

/// The bytes at `off..` of `buf`, or `Truncated`.
fn tail(buf: &[u8], off: usize) -> Result<&[u8], ParseError> {
    buf.get(off..).ok_or(ParseError::Truncated)
}

/// The bytes at `off..` of `buf`, or `BufferTooSmall`.
fn tail_mut(buf: &mut [u8], off: usize) -> Result<&mut [u8], BuildError> {
    buf.get_mut(off..).ok_or(BuildError::BufferTooSmall)
}

impl ExtHeaders {
    /// Which headers are present.
    pub fn header_set(&self) -> HeaderSet {
        let mut s = HeaderSet::EMPTY;
        let present = [
            (self.deth.is_some(), ExtHeader::Deth),
            (self.feth.is_some(), ExtHeader::Feth),
            (self.reth.is_some(), ExtHeader::Reth),
            (self.atomic_eth.is_some(), ExtHeader::AtomicEth),
            (self.aeth.is_some(), ExtHeader::Aeth),
            (self.atomic_ack_eth.is_some(), ExtHeader::AtomicAckEth),
            (self.immdt.is_some(), ExtHeader::ImmDt),
            (self.ieth.is_some(), ExtHeader::Ieth),
        ];
        for (p, h) in present {
            if p {
                s = s.with(h);
            }
        }
        s
    }

    /// Decodes the headers of `set` from `pkt`, a buffer starting with the
    /// BTH (offsets are from the start of the BTH).
    pub fn parse(set: HeaderSet, pkt: &[u8]) -> Result<ExtHeaders, ParseError> {
        let mut e = ExtHeaders::default();
        // Each present header starts where the previous present one ends
        // (what `HeaderSet::offset` computes, in one walk).
        let mut next = BTH_LEN;
        for h in ExtHeader::ORDER {
            if !set.contains(h) {
                continue;
            }
            let off = next;
            next += h.wire_len();
            let b = tail(pkt, off)?;
            match h {
                ExtHeader::Deth => e.deth = Some(Deth::parse(b)?),
                ExtHeader::Feth => e.feth = Some(Feth::parse(b)?),
                ExtHeader::Reth => e.reth = Some(Reth::parse(b)?),
                ExtHeader::AtomicEth => e.atomic_eth = Some(AtomicEth::parse(b)?),
                ExtHeader::Aeth => e.aeth = Some(Aeth::parse(b)?),
                ExtHeader::AtomicAckEth => e.atomic_ack_eth = Some(AtomicAckEth::parse(b)?),
                ExtHeader::ImmDt => e.immdt = Some(ImmDt::parse(b)?),
                ExtHeader::Ieth => e.ieth = Some(Ieth::parse(b)?),
            }
        }
        Ok(e)
    }

    /// Writes the present headers into `pkt`, a buffer starting with the
    /// BTH, each at its offset for this set of headers.
    pub fn write(&self, pkt: &mut [u8]) -> Result<(), BuildError> {
        let set = self.header_set();
        let mut next = BTH_LEN;
        for h in ExtHeader::ORDER {
            if !set.contains(h) {
                continue;
            }
            let off = next;
            next += h.wire_len();
            let b = tail_mut(pkt, off)?;
            match h {
                ExtHeader::Deth => self.deth.map(|x| x.write(b)),
                ExtHeader::Feth => self.feth.map(|x| x.write(b)),
                ExtHeader::Reth => self.reth.map(|x| x.write(b)),
                ExtHeader::AtomicEth => self.atomic_eth.map(|x| x.write(b)),
                ExtHeader::Aeth => self.aeth.map(|x| x.write(b)),
                ExtHeader::AtomicAckEth => self.atomic_ack_eth.map(|x| x.write(b)),
                ExtHeader::ImmDt => self.immdt.map(|x| x.write(b)),
                ExtHeader::Ieth => self.ieth.map(|x| x.write(b)),
            }
            .unwrap_or(Ok(()))?;
        }
        Ok(())
    }
}

/// The bytes of a received RoCE packet, the UDP payload from the BTH
/// through the ICRC: one buffer, or three, as a packet whose payload stayed
/// in its sender's pages arrives (the skb's linear data holds the headers,
/// one page fragment the payload, another the pad and the ICRC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceBytes<'a> {
    /// The whole packet, or, split, exactly its BTH and extension headers.
    head: &'a [u8],
    /// Split: the payload. Empty otherwise.
    payload: &'a [u8],
    /// Split: the pad and the ICRC (never empty). Empty otherwise.
    trailer: &'a [u8],
}

impl<'a> RoceBytes<'a> {
    /// A packet in one buffer.
    pub const fn contiguous(buf: &'a [u8]) -> RoceBytes<'a> {
        RoceBytes {
            head: buf,
            payload: &[],
            trailer: &[],
        }
    }

    /// A packet in three pieces: `headers` (BTH and extension headers,
    /// exactly: see [`header_len_of`]), `payload`, and `trailer` (pad and
    /// ICRC, at least the ICRC). `None` if the trailer is shorter than an
    /// ICRC.
    pub fn split(headers: &'a [u8], payload: &'a [u8], trailer: &'a [u8]) -> Option<RoceBytes<'a>> {
        (trailer.len() >= ICRC_LEN).then_some(RoceBytes {
            head: headers,
            payload,
            trailer,
        })
    }

    /// Whether the packet is in pieces.
    pub fn is_split(&self) -> bool {
        !self.trailer.is_empty()
    }

    /// The first piece: the whole packet, or, split, its headers (a BTH
    /// at least, if the packet is well formed).
    pub fn head(&self) -> &'a [u8] {
        self.head
    }

    /// The packet in one buffer, if it is.
    pub fn as_contiguous(&self) -> Option<&'a [u8]> {
        (!self.is_split()).then_some(self.head)
    }

    /// The pieces, in order (the last two empty for a packet in one).
    pub fn pieces(&self) -> [&'a [u8]; 3] {
        [self.head, self.payload, self.trailer]
    }

    /// Length of the whole packet.
    pub fn len(&self) -> usize {
        self.head.len() + self.payload.len() + self.trailer.len()
    }

    /// Whether the packet has no byte at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Length of the BTH and extension headers of the packet starting at
/// `buf`, from its opcode; `None` for an empty buffer or an unknown opcode.
/// A receiver keeps a packet split only where its first piece is exactly
/// this long.
pub fn header_len_of(buf: &[u8]) -> Option<usize> {
    let opcode = Opcode::from_u8(*buf.first()?)?;
    Some(opcode.header_len())
}

/// A parsed, framing-validated RoCEv2 packet borrowing the receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The base transport header.
    pub bth: Bth,
    /// The opcode (known, from `bth.opcode`).
    pub opcode: Opcode,
    /// The opcode's extension headers.
    pub ext: ExtHeaders,
    /// The payload, without pad and ICRC.
    pub payload: &'a [u8],
    /// Number of pad bytes after the payload (`bth.pad_count`).
    pub pad: u8,
    /// The ICRC trailer as stored (its wire bytes read little-endian), to be
    /// compared with [`Packet::compute_icrc`].
    pub icrc: u32,
    /// The BTH and extension headers as received.
    headers: &'a [u8],
    /// The pad bytes as received.
    pad_bytes: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Parses `buf`, the whole UDP payload (BTH through ICRC; its length is
    /// the UDP length minus 8), and validates, in order: at least a BTH,
    /// known opcode, room for the headers, pad and ICRC, TVer 0, DestQP not
    /// 0, no payload (and no pad) for opcodes without payload, exactly 8
    /// payload bytes for ATOMIC_WRITE.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let (bth, opcode) = Self::parse_bth(buf)?;
        let hdr_len = opcode.header_len();
        let pad = bth.pad_count;
        // buf = headers | payload | pad | icrc
        let after_hdr = buf
            .len()
            .checked_sub(hdr_len)
            .ok_or(ParseError::Truncated)?;
        let payload_len = after_hdr
            .checked_sub(usize::from(pad))
            .and_then(|n| n.checked_sub(ICRC_LEN))
            .ok_or(ParseError::Truncated)?;
        Self::check(&bth, opcode, payload_len)?;
        let ext = ExtHeaders::parse(opcode.headers(), buf)?;
        let payload_end = hdr_len
            .checked_add(payload_len)
            .ok_or(ParseError::Truncated)?;
        let payload = buf.get(hdr_len..payload_end).ok_or(ParseError::Truncated)?;
        let (body, icrc_bytes) = buf
            .split_last_chunk::<ICRC_LEN>()
            .ok_or(ParseError::Truncated)?;
        Ok(Packet {
            bth,
            opcode,
            ext,
            payload,
            pad,
            icrc: u32::from_le_bytes(*icrc_bytes),
            headers: buf.get(..hdr_len).ok_or(ParseError::Truncated)?,
            pad_bytes: body.get(payload_end..).ok_or(ParseError::Truncated)?,
        })
    }

    /// Parses a received packet, in one buffer as [`Packet::parse`] or in
    /// pieces, with the same checks; split, its first piece must be exactly
    /// the headers (`LengthMismatch` otherwise) and its trailer exactly the
    /// pad and the ICRC.
    pub fn parse_bytes(bytes: RoceBytes<'a>) -> Result<Packet<'a>, ParseError> {
        if !bytes.is_split() {
            return Packet::parse(bytes.head);
        }
        let headers = bytes.head;
        let (bth, opcode) = Self::parse_bth(headers)?;
        if headers.len() != opcode.header_len() {
            return Err(ParseError::LengthMismatch);
        }
        let pad = bth.pad_count;
        let (pad_bytes, icrc_bytes) = bytes
            .trailer
            .split_last_chunk::<ICRC_LEN>()
            .ok_or(ParseError::Truncated)?;
        match pad_bytes.len().cmp(&usize::from(pad)) {
            core::cmp::Ordering::Less => return Err(ParseError::Truncated),
            core::cmp::Ordering::Greater => return Err(ParseError::LengthMismatch),
            core::cmp::Ordering::Equal => {}
        }
        Self::check(&bth, opcode, bytes.payload.len())?;
        let ext = ExtHeaders::parse(opcode.headers(), headers)?;
        Ok(Packet {
            bth,
            opcode,
            ext,
            payload: bytes.payload,
            pad,
            icrc: u32::from_le_bytes(*icrc_bytes),
            headers,
            pad_bytes,
        })
    }

    /// The BTH at the start of `buf` and its opcode, if known.
    fn parse_bth(buf: &[u8]) -> Result<(Bth, Opcode), ParseError> {
        let bth = Bth::parse(buf)?;
        let opcode = Opcode::from_u8(bth.opcode).ok_or(ParseError::UnknownOpcode(bth.opcode))?;
        Ok((bth, opcode))
    }

    /// The checks after framing: TVer 0, DestQP not 0, no payload (and no
    /// pad) for opcodes without payload, exactly 8 payload bytes for
    /// ATOMIC_WRITE.
    fn check(bth: &Bth, opcode: Opcode, payload_len: usize) -> Result<(), ParseError> {
        let pad = bth.pad_count;
        if bth.tver != 0 {
            return Err(ParseError::BadTver(bth.tver));
        }
        if bth.dest_qp == 0 {
            return Err(ParseError::BadDestQp);
        }
        if !opcode.has_payload() {
            if pad != 0 {
                return Err(ParseError::BadPad);
            }
            if payload_len != 0 {
                return Err(ParseError::LengthMismatch);
            }
        }
        if opcode.family() == OpFamily::AtomicWrite {
            if pad != 0 {
                return Err(ParseError::BadPad);
            }
            if payload_len != ATOMIC_WRITE_LEN {
                return Err(ParseError::LengthMismatch);
            }
        }
        Ok(())
    }

    /// The BTH and extension headers as received.
    pub fn headers(&self) -> &'a [u8] {
        self.headers
    }

    /// Length of the packet as received, BTH through ICRC.
    pub fn wire_len(&self) -> usize {
        self.headers.len() + self.payload.len() + self.pad_bytes.len() + ICRC_LEN
    }

    /// Length of BTH plus extension headers.
    pub fn header_len(&self) -> usize {
        self.opcode.header_len()
    }

    /// The packet sequence number.
    pub fn psn(&self) -> Psn {
        self.bth.psn
    }

    /// The destination QP number.
    pub fn dest_qp(&self) -> u32 {
        self.bth.dest_qp
    }

    /// Whether the pad count is the one a sender computes for this payload
    /// length (`(-len) & 3`). rxe does not drop packets for this; the
    /// responder checks it only where the doc says so.
    pub fn pad_is_canonical(&self) -> bool {
        pad_len(self.payload.len()) == self.pad
    }

    /// The ICRC computed over this packet with the IP and UDP headers it came
    /// with.
    pub fn compute_icrc(&self, ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN]) -> u32 {
        self.compute_icrc_with::<TableCrc32>(ip, udp)
    }

    /// [`Packet::compute_icrc`] with the CRC-32 routine `C`.
    pub fn compute_icrc_with<C: Crc32>(&self, ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN]) -> u32 {
        match self.headers.split_first_chunk::<BTH_LEN>() {
            Some((bth, ext)) => {
                let mut s = IcrcState::<C>::start(ip, udp, bth);
                s.update(ext);
                s.update(self.payload);
                s.update(self.pad_bytes);
                s.finish()
            }
            // Parsing guaranteed a BTH; never reached. Return a value that
            // cannot be mistaken for a match.
            None => !self.icrc,
        }
    }

    /// `Ok` if the ICRC trailer matches the packet, else `IcrcMismatch`.
    pub fn verify_icrc(&self, ip: IpHeader<'_>, udp: &[u8; UDP_HDR_LEN]) -> Result<(), ParseError> {
        self.verify_icrc_with::<TableCrc32>(ip, udp)
    }

    /// [`Packet::verify_icrc`] with the CRC-32 routine `C`.
    pub fn verify_icrc_with<C: Crc32>(
        &self,
        ip: IpHeader<'_>,
        udp: &[u8; UDP_HDR_LEN],
    ) -> Result<(), ParseError> {
        let computed = self.compute_icrc_with::<C>(ip, udp);
        if computed == self.icrc {
            Ok(())
        } else {
            Err(ParseError::IcrcMismatch {
                received: self.icrc,
                computed,
            })
        }
    }
}

/// Pad bytes a sender puts after a payload of `payload_len` bytes:
/// `(-payload_len) & 3`.
pub const fn pad_len(payload_len: usize) -> u8 {
    (payload_len.wrapping_neg() & 3) as u8
}

/// UDP payload length of a packet of `opcode` with `payload_len` payload
/// bytes: headers, payload, pad and ICRC. `None` on overflow.
pub fn packet_len(opcode: Opcode, payload_len: usize) -> Option<usize> {
    opcode
        .header_len()
        .checked_add(payload_len)?
        .checked_add(usize::from(pad_len(payload_len)))?
        .checked_add(ICRC_LEN)
}

/// Writes BTH and extension headers for a packet carrying `payload_len`
/// payload bytes to the start of `buf`; returns the header length (where the
/// payload goes). The BTH pad count is set from `payload_len`, the other BTH
/// fields are written as given.
///
/// Fails if the opcode is unknown, `ext` does not hold exactly the opcode's
/// headers, the payload length is not allowed for the opcode, or `buf` is
/// shorter than the headers.
pub fn write_headers(
    buf: &mut [u8],
    bth: &Bth,
    ext: &ExtHeaders,
    payload_len: usize,
) -> Result<usize, BuildError> {
    let opcode = Opcode::from_u8(bth.opcode).ok_or(BuildError::UnknownOpcode(bth.opcode))?;
    if ext.header_set() != opcode.headers() {
        return Err(BuildError::HeaderMismatch);
    }
    let payload_ok = if opcode.family() == OpFamily::AtomicWrite {
        payload_len == ATOMIC_WRITE_LEN
    } else {
        opcode.has_payload() || payload_len == 0
    };
    if !payload_ok {
        return Err(BuildError::BadPayloadLength);
    }
    let hdr_len = opcode.header_len();
    let hdr = buf.get_mut(..hdr_len).ok_or(BuildError::BufferTooSmall)?;
    let mut b = *bth;
    b.pad_count = pad_len(payload_len);
    b.write(hdr)?;
    ext.write(hdr)?;
    Ok(hdr_len)
}

/// Builds a whole packet (BTH through ICRC) into `buf`: headers as in
/// [`write_headers`], `payload`, zero pad bytes and a zero ICRC placeholder
/// (fill it with [`fill_icrc`] once the IP and UDP headers are known).
/// Returns the packet length.
pub fn build(
    buf: &mut [u8],
    bth: &Bth,
    ext: &ExtHeaders,
    payload: &[u8],
) -> Result<usize, BuildError> {
    let opcode = Opcode::from_u8(bth.opcode).ok_or(BuildError::UnknownOpcode(bth.opcode))?;
    let total = packet_len(opcode, payload.len()).ok_or(BuildError::BufferTooSmall)?;
    let pkt = buf.get_mut(..total).ok_or(BuildError::BufferTooSmall)?;
    let hdr_len = write_headers(pkt, bth, ext, payload.len())?;
    let (body, trailer) = pkt
        .get_mut(hdr_len..)
        .ok_or(BuildError::BufferTooSmall)?
        .split_at_mut_checked(payload.len())
        .ok_or(BuildError::BufferTooSmall)?;
    body.copy_from_slice(payload);
    // Pad and ICRC placeholder.
    trailer.fill(0);
    Ok(total)
}

/// Computes the ICRC of `pkt` (BTH through ICRC, as written by [`build`])
/// with its final IP and UDP headers and stores it in the last four bytes,
/// little-endian. Returns the ICRC.
pub fn fill_icrc(
    ip: IpHeader<'_>,
    udp: &[u8; UDP_HDR_LEN],
    pkt: &mut [u8],
) -> Result<u32, BuildError> {
    fill_icrc_with::<TableCrc32>(ip, udp, pkt)
}

/// The ICRC of a packet built in pieces: `headers` (BTH and extension
/// headers, as [`write_headers`] wrote them), `payload`, and the zero pad
/// bytes a sender puts after it, with the final IP and UDP headers.
pub fn icrc_of_pieces<C: Crc32>(
    ip: IpHeader<'_>,
    udp: &[u8; UDP_HDR_LEN],
    headers: &[u8],
    payload: &[u8],
) -> Result<u32, BuildError> {
    let (bth, ext) = headers
        .split_first_chunk::<BTH_LEN>()
        .ok_or(BuildError::BufferTooSmall)?;
    let mut s = IcrcState::<C>::start(ip, udp, bth);
    s.update(ext);
    s.update(payload);
    s.update(&[0u8; 3][..usize::from(pad_len(payload.len()))]);
    Ok(s.finish())
}

/// [`fill_icrc`] with the CRC-32 routine `C`.
pub fn fill_icrc_with<C: Crc32>(
    ip: IpHeader<'_>,
    udp: &[u8; UDP_HDR_LEN],
    pkt: &mut [u8],
) -> Result<u32, BuildError> {
    let (body, trailer) = pkt
        .split_last_chunk_mut::<ICRC_LEN>()
        .ok_or(BuildError::BufferTooSmall)?;
    let (bth, rest) = body
        .split_first_chunk::<BTH_LEN>()
        .ok_or(BuildError::BufferTooSmall)?;
    let mut s = IcrcState::<C>::start(ip, udp, bth);
    s.update(rest);
    let v = s.finish();
    *trailer = v.to_le_bytes();
    Ok(v)
}
