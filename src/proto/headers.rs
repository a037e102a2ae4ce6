// SPDX-License-Identifier: GPL-2.0

//! Codecs for the base transport header (BTH) and the extension headers that
//! follow it: RETH, AtomicETH, AtomicAckETH, ImmDt, IETH, DETH and FETH (the
//! AETH lives in `aeth`). All multi-byte fields are big-endian on the wire.
//!
//! Every header has `from_bytes`/`to_bytes` on its fixed-size array, and
//! length-checked `parse` (reads the first `LEN` bytes of a slice) and
//! `write` (writes the first `LEN` bytes of a slice).

use super::error::{BuildError, ParseError};
use super::psn::Psn;

/// Mask of a 24-bit QP number.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// The default P_Key rxe sends and accepts (full member, index 0).
pub const DEFAULT_PKEY: u16 = 0xffff;

/// The `N` bytes at offset `OFF` of a fixed-size array. Whether the range is
/// inside the array is checked when the program is compiled.
fn get<const OFF: usize, const N: usize, const M: usize>(b: &[u8; M]) -> [u8; N] {
    const { assert!(OFF + N <= M) };
    let mut out = [0u8; N];
    if let Some(src) = b.get(OFF..OFF.wrapping_add(N)) {
        out.copy_from_slice(src);
    }
    out
}

/// Stores `src` at offset `OFF` of a fixed-size array; the range is checked
/// when the program is compiled.
fn put<const OFF: usize, const N: usize, const M: usize>(b: &mut [u8; M], src: [u8; N]) {
    const { assert!(OFF + N <= M) };
    if let Some(dst) = b.get_mut(OFF..OFF.wrapping_add(N)) {
        dst.copy_from_slice(&src);
    }
}

/// The first `N` bytes of `buf` as an array, or `Truncated`.
fn head<const N: usize>(buf: &[u8]) -> Result<&[u8; N], ParseError> {
    buf.split_first_chunk::<N>()
        .map(|(h, _)| h)
        .ok_or(ParseError::Truncated)
}

/// The first `N` bytes of `buf` as a mutable array, or `BufferTooSmall`.
fn head_mut<const N: usize>(buf: &mut [u8]) -> Result<&mut [u8; N], BuildError> {
    buf.split_first_chunk_mut::<N>()
        .map(|(h, _)| h)
        .ok_or(BuildError::BufferTooSmall)
}

fn u24_be(b: [u8; 3]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

fn u24_to_be(v: u32) -> [u8; 3] {
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// Implements `parse`, `write` and the `LEN` constant for a header type with
/// `from_bytes`/`to_bytes`.
macro_rules! slice_codec {
    ($t:ty, $len:expr) => {
        impl $t {
            /// Length on the wire, in bytes.
            pub const LEN: usize = $len;

            /// Decodes the header from the start of `buf`; extra bytes are
            /// ignored.
            pub fn parse(buf: &[u8]) -> Result<Self, ParseError> {
                head::<{ $len }>(buf).map(Self::from_bytes)
            }

            /// Writes the header to the start of `buf`.
            pub fn write(&self, buf: &mut [u8]) -> Result<(), BuildError> {
                *head_mut::<{ $len }>(buf)? = self.to_bytes();
                Ok(())
            }
        }
    };
}

/// Base transport header (12 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bth {
    /// Opcode as on the wire (see `opcode::Opcode::from_u8`).
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// Migration request.
    pub mig_req: bool,
    /// Pad count, 2 bits: bytes of padding after the payload.
    pub pad_count: u8,
    /// Transport header version, 4 bits (must be 0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Destination QP number, 24 bits.
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl Bth {
    /// Decodes the 12 wire bytes. Reserved bits are ignored.
    pub fn from_bytes(b: &[u8; 12]) -> Bth {
        let [op, flags] = get::<0, 2, 12>(b);
        let [f4] = get::<4, 1, 12>(b);
        let [a8] = get::<8, 1, 12>(b);
        Bth {
            opcode: op,
            se: flags & 0x80 != 0,
            mig_req: flags & 0x40 != 0,
            pad_count: (flags >> 4) & 0x3,
            tver: flags & 0xf,
            pkey: u16::from_be_bytes(get::<2, 2, 12>(b)),
            fecn: f4 & 0x80 != 0,
            becn: f4 & 0x40 != 0,
            dest_qp: u24_be(get::<5, 3, 12>(b)),
            ack_req: a8 & 0x80 != 0,
            psn: Psn::new(u24_be(get::<9, 3, 12>(b))),
        }
    }

    /// Encodes to the 12 wire bytes. Reserved bits are zero; fields wider
    /// than their wire width are truncated to it.
    pub fn to_bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        let flags = (u8::from(self.se) << 7)
            | (u8::from(self.mig_req) << 6)
            | ((self.pad_count & 0x3) << 4)
            | (self.tver & 0xf);
        put::<0, 2, 12>(&mut b, [self.opcode, flags]);
        put::<2, 2, 12>(&mut b, self.pkey.to_be_bytes());
        put::<4, 1, 12>(
            &mut b,
            [(u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6)],
        );
        put::<5, 3, 12>(&mut b, u24_to_be(self.dest_qp));
        put::<8, 1, 12>(&mut b, [u8::from(self.ack_req) << 7]);
        put::<9, 3, 12>(&mut b, u24_to_be(self.psn.get()));
        b
    }
}
slice_codec!(Bth, 12);

/// RDMA extended transport header (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length in bytes.
    pub len: u32,
}

impl Reth {
    /// Decodes the 16 wire bytes.
    pub fn from_bytes(b: &[u8; 16]) -> Reth {
        Reth {
            va: u64::from_be_bytes(get::<0, 8, 16>(b)),
            rkey: u32::from_be_bytes(get::<8, 4, 16>(b)),
            len: u32::from_be_bytes(get::<12, 4, 16>(b)),
        }
    }

    /// Encodes to the 16 wire bytes.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put::<0, 8, 16>(&mut b, self.va.to_be_bytes());
        put::<8, 4, 16>(&mut b, self.rkey.to_be_bytes());
        put::<12, 4, 16>(&mut b, self.len.to_be_bytes());
        b
    }
}
slice_codec!(Reth, 16);

/// Atomic extended transport header (28 bytes, packed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned for a valid request).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value (COMPARE_SWAP) or value to add (FETCH_ADD).
    pub swap_add: u64,
    /// Compare value (COMPARE_SWAP only).
    pub compare: u64,
}

impl AtomicEth {
    /// Decodes the 28 wire bytes.
    pub fn from_bytes(b: &[u8; 28]) -> AtomicEth {
        AtomicEth {
            va: u64::from_be_bytes(get::<0, 8, 28>(b)),
            rkey: u32::from_be_bytes(get::<8, 4, 28>(b)),
            swap_add: u64::from_be_bytes(get::<12, 8, 28>(b)),
            compare: u64::from_be_bytes(get::<20, 8, 28>(b)),
        }
    }

    /// Encodes to the 28 wire bytes.
    pub fn to_bytes(&self) -> [u8; 28] {
        let mut b = [0u8; 28];
        put::<0, 8, 28>(&mut b, self.va.to_be_bytes());
        put::<8, 4, 28>(&mut b, self.rkey.to_be_bytes());
        put::<12, 8, 28>(&mut b, self.swap_add.to_be_bytes());
        put::<20, 8, 28>(&mut b, self.compare.to_be_bytes());
        b
    }
}
slice_codec!(AtomicEth, 28);

/// Atomic acknowledge extended transport header (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicAckEth {
    /// The remote value before the atomic operation.
    pub orig: u64,
}

impl AtomicAckEth {
    /// Decodes the 8 wire bytes.
    pub fn from_bytes(b: &[u8; 8]) -> AtomicAckEth {
        AtomicAckEth {
            orig: u64::from_be_bytes(*b),
        }
    }

    /// Encodes to the 8 wire bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        self.orig.to_be_bytes()
    }
}
slice_codec!(AtomicAckEth, 8);

/// Immediate data (4 bytes).
///
/// The value is the four wire bytes read big-endian. The verbs `imm_data`
/// fields are `__be32`, i.e. the wire bytes as they are: their memory bytes
/// are `imm.to_be_bytes()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImmDt {
    /// Immediate data.
    pub imm: u32,
}

impl ImmDt {
    /// Decodes the 4 wire bytes.
    pub fn from_bytes(b: &[u8; 4]) -> ImmDt {
        ImmDt {
            imm: u32::from_be_bytes(*b),
        }
    }

    /// Encodes to the 4 wire bytes.
    pub fn to_bytes(&self) -> [u8; 4] {
        self.imm.to_be_bytes()
    }
}
slice_codec!(ImmDt, 4);

/// Invalidate extended transport header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ieth {
    /// R_Key to invalidate.
    pub rkey: u32,
}

impl Ieth {
    /// Decodes the 4 wire bytes.
    pub fn from_bytes(b: &[u8; 4]) -> Ieth {
        Ieth {
            rkey: u32::from_be_bytes(*b),
        }
    }

    /// Encodes to the 4 wire bytes.
    pub fn to_bytes(&self) -> [u8; 4] {
        self.rkey.to_be_bytes()
    }
}
slice_codec!(Ieth, 4);

/// Datagram extended transport header (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number, 24 bits.
    pub src_qp: u32,
}

impl Deth {
    /// Decodes the 8 wire bytes; the reserved byte is ignored.
    pub fn from_bytes(b: &[u8; 8]) -> Deth {
        Deth {
            qkey: u32::from_be_bytes(get::<0, 4, 8>(b)),
            src_qp: u24_be(get::<5, 3, 8>(b)),
        }
    }

    /// Encodes to the 8 wire bytes; the reserved byte is zero and `src_qp`
    /// is truncated to 24 bits.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put::<0, 4, 8>(&mut b, self.qkey.to_be_bytes());
        put::<5, 3, 8>(&mut b, u24_to_be(self.src_qp));
        b
    }
}
slice_codec!(Deth, 8);

/// Flush extended transport header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Feth {
    /// Selectivity level, 2 bits (bits 5..4).
    pub selectivity: u8,
    /// Placement type, 4 bits (bits 3..0).
    pub placement: u8,
}

impl Feth {
    /// Decodes the 4 wire bytes; reserved bits are ignored.
    pub fn from_bytes(b: &[u8; 4]) -> Feth {
        let v = u32::from_be_bytes(*b);
        Feth {
            selectivity: ((v >> 4) & 0x3) as u8,
            placement: (v & 0xf) as u8,
        }
    }

    /// Encodes to the 4 wire bytes; reserved bits are zero and the fields
    /// are truncated to their widths.
    pub fn to_bytes(&self) -> [u8; 4] {
        let v = (u32::from(self.selectivity & 0x3) << 4) | u32::from(self.placement & 0xf);
        v.to_be_bytes()
    }
}
slice_codec!(Feth, 4);
