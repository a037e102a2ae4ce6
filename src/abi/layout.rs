// SPDX-License-Identifier: GPL-2.0

//! Byte layouts of the rxe user ABI (rxe-abi-and-wire.md §1.4, §1.6, §1.7, §1.9): sizes,
//! field offsets, and length-checked little-endian encode/decode of the
//! driver udata, the shared queue header, send/receive WQEs and the CQE
//! (`ib_uverbs_wc`) librxe reads.
//!
//! The structs here are *raw* views: every field exactly as the bytes hold
//! it, nothing validated. Decoding takes a private copy of the bytes; the
//! validation of what user space wrote lives in `send_wqe` and `recv_wqe`.
//! Offsets were checked with `offsetof` against the 7.3 uapi headers (see
//! `host/tests/abi_layout.rs`).

/// Why bytes could not be decoded or encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The buffer is shorter than the structure.
    TooShort {
        /// Bytes the structure needs.
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
}

fn check_len(b: &[u8], need: usize) -> Result<(), LayoutError> {
    if b.len() < need {
        Err(LayoutError::TooShort {
            need,
            have: b.len(),
        })
    } else {
        Ok(())
    }
}

fn rd<const N: usize>(b: &[u8], off: usize) -> Result<[u8; N], LayoutError> {
    let end = off.checked_add(N).ok_or(LayoutError::TooShort {
        need: usize::MAX,
        have: b.len(),
    })?;
    match b.get(off..end) {
        Some(s) => {
            let mut a = [0u8; N];
            a.copy_from_slice(s);
            Ok(a)
        }
        None => Err(LayoutError::TooShort {
            need: end,
            have: b.len(),
        }),
    }
}

fn wr<const N: usize>(b: &mut [u8], off: usize, v: [u8; N]) -> Result<(), LayoutError> {
    let have = b.len();
    let end = off.checked_add(N).ok_or(LayoutError::TooShort {
        need: usize::MAX,
        have,
    })?;
    match b.get_mut(off..end) {
        Some(d) => {
            d.copy_from_slice(&v);
            Ok(())
        }
        None => Err(LayoutError::TooShort { need: end, have }),
    }
}

/// Little-endian `u8` at `off` of `b`.
pub fn get_u8(b: &[u8], off: usize) -> Result<u8, LayoutError> {
    Ok(rd::<1>(b, off)?[0])
}
/// Little-endian `u16` at `off` of `b`.
pub fn get_u16(b: &[u8], off: usize) -> Result<u16, LayoutError> {
    Ok(u16::from_le_bytes(rd(b, off)?))
}
/// Little-endian `u32` at `off` of `b`.
pub fn get_u32(b: &[u8], off: usize) -> Result<u32, LayoutError> {
    Ok(u32::from_le_bytes(rd(b, off)?))
}
/// Little-endian `u64` at `off` of `b`.
pub fn get_u64(b: &[u8], off: usize) -> Result<u64, LayoutError> {
    Ok(u64::from_le_bytes(rd(b, off)?))
}
/// Four raw bytes at `off` of `b` (for big-endian opaque fields).
pub fn get_4(b: &[u8], off: usize) -> Result<[u8; 4], LayoutError> {
    rd(b, off)
}
/// Writes `v` at `off` of `b`.
pub fn put_u8(b: &mut [u8], off: usize, v: u8) -> Result<(), LayoutError> {
    wr(b, off, [v])
}
/// Writes `v` little-endian at `off` of `b`.
pub fn put_u16(b: &mut [u8], off: usize, v: u16) -> Result<(), LayoutError> {
    wr(b, off, v.to_le_bytes())
}
/// Writes `v` little-endian at `off` of `b`.
pub fn put_u32(b: &mut [u8], off: usize, v: u32) -> Result<(), LayoutError> {
    wr(b, off, v.to_le_bytes())
}
/// Writes `v` little-endian at `off` of `b`.
pub fn put_u64(b: &mut [u8], off: usize, v: u64) -> Result<(), LayoutError> {
    wr(b, off, v.to_le_bytes())
}
/// Writes four raw bytes at `off` of `b`.
pub fn put_4(b: &mut [u8], off: usize, v: [u8; 4]) -> Result<(), LayoutError> {
    wr(b, off, v)
}

// ---------------------------------------------------------------------------
// §1.4 driver udata

/// `struct mminfo`: where and how much to mmap for one queue buffer (16 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapInfo {
    /// Value to pass as the mmap offset (page aligned).
    pub offset: u64,
    /// Length to map (page aligned, at least the buffer size).
    pub size: u32,
}

impl MmapInfo {
    /// Encoded size.
    pub const SIZE: usize = 16;
    /// Offset of `offset`.
    pub const OFF_OFFSET: usize = 0;
    /// Offset of `size`.
    pub const OFF_SIZE: usize = 8;
    /// Offset of `pad`.
    pub const OFF_PAD: usize = 12;

    /// Writes the 16 bytes (pad zeroed) at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u64(out, Self::OFF_OFFSET, self.offset)?;
        put_u32(out, Self::OFF_SIZE, self.size)?;
        put_u32(out, Self::OFF_PAD, 0)
    }

    /// Reads one from the start of `b` (pad ignored).
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            offset: get_u64(b, Self::OFF_OFFSET)?,
            size: get_u32(b, Self::OFF_SIZE)?,
        })
    }
}

/// `struct rxe_create_cq_resp` (16 B): the CQ buffer's mmap info.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateCqResp {
    /// The CQ buffer.
    pub mi: MmapInfo,
}

impl CreateCqResp {
    /// Encoded size; also the minimum `outlen` create_cq accepts.
    pub const SIZE: usize = 16;

    /// Writes the response at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        self.mi.encode(out)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        Ok(Self {
            mi: MmapInfo::decode(b)?,
        })
    }
}

/// `struct rxe_resize_cq_resp` (16 B): mmap info of the *new* CQ buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResizeCqResp {
    /// The new CQ buffer.
    pub mi: MmapInfo,
}

impl ResizeCqResp {
    /// Encoded size; also the minimum `outlen` resize_cq accepts.
    pub const SIZE: usize = 16;

    /// Writes the response at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        self.mi.encode(out)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        Ok(Self {
            mi: MmapInfo::decode(b)?,
        })
    }
}

/// `struct rxe_create_qp_resp` (32 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateQpResp {
    /// The RQ buffer; all zero when the QP uses an SRQ.
    pub rq_mi: MmapInfo,
    /// The SQ buffer.
    pub sq_mi: MmapInfo,
}

impl CreateQpResp {
    /// Encoded size; also the minimum `outlen` create_qp accepts.
    pub const SIZE: usize = 32;
    /// Offset of `rq_mi`.
    pub const OFF_RQ_MI: usize = 0;
    /// Offset of `sq_mi`.
    pub const OFF_SQ_MI: usize = 16;

    /// Writes the response at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        self.rq_mi
            .encode(out.get_mut(Self::OFF_RQ_MI..).unwrap_or_default())?;
        self.sq_mi
            .encode(out.get_mut(Self::OFF_SQ_MI..).unwrap_or_default())
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            rq_mi: MmapInfo::decode(b.get(Self::OFF_RQ_MI..).unwrap_or_default())?,
            sq_mi: MmapInfo::decode(b.get(Self::OFF_SQ_MI..).unwrap_or_default())?,
        })
    }
}

/// `struct rxe_create_srq_resp` (24 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateSrqResp {
    /// The SRQ buffer.
    pub mi: MmapInfo,
    /// The SRQ number (pool index).
    pub srq_num: u32,
}

impl CreateSrqResp {
    /// Encoded size; also the minimum `outlen` create_srq accepts.
    pub const SIZE: usize = 24;
    /// Offset of `srq_num`.
    pub const OFF_SRQ_NUM: usize = 16;
    /// Offset of `reserved`.
    pub const OFF_RESERVED: usize = 20;

    /// Writes the response (reserved zeroed) at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        self.mi.encode(out)?;
        put_u32(out, Self::OFF_SRQ_NUM, self.srq_num)?;
        put_u32(out, Self::OFF_RESERVED, 0)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            mi: MmapInfo::decode(b)?,
            srq_num: get_u32(b, Self::OFF_SRQ_NUM)?,
        })
    }
}

/// `struct rxe_modify_srq_cmd` (8 B, driver *input*): the user address of an
/// `mminfo` the kernel fills when the SRQ buffer is replaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModifySrqCmd {
    /// User virtual address of a [`MmapInfo`]; untrusted, only for
    /// `copy_to_user`.
    pub mmap_info_addr: u64,
}

impl ModifySrqCmd {
    /// Encoded size; the command must carry at least this much.
    pub const SIZE: usize = 8;

    /// Writes the command at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        put_u64(out, 0, self.mmap_info_addr)
    }

    /// Reads one from the start of `b` (a private copy of the udata).
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        Ok(Self {
            mmap_info_addr: get_u64(b, 0)?,
        })
    }
}

/// `struct rxe_create_ah_resp` (8 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateAhResp {
    /// AH pool index, never 0 (0 would switch librxe to embedded AVs).
    pub ah_num: u32,
}

impl CreateAhResp {
    /// Encoded size; `outlen >= SIZE` marks a librxe that wants `ah_num`.
    pub const SIZE: usize = 8;
    /// Offset of `reserved`.
    pub const OFF_RESERVED: usize = 4;

    /// Writes the response (reserved zeroed) at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u32(out, 0, self.ah_num)?;
        put_u32(out, Self::OFF_RESERVED, 0)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            ah_num: get_u32(b, 0)?,
        })
    }
}

// ---------------------------------------------------------------------------
// §1.6 shared queue buffer header

/// Offsets in `struct rxe_queue_buf`, the header in front of every shared
/// ring.
pub mod queue_hdr {
    /// `log2_elem_size` (kernel-written copy for user space).
    pub const LOG2_ELEM_SIZE: usize = 0;
    /// `index_mask` (kernel-written copy for user space).
    pub const INDEX_MASK: usize = 4;
    /// `producer_index`.
    pub const PRODUCER_INDEX: usize = 128;
    /// `consumer_index`.
    pub const CONSUMER_INDEX: usize = 256;
    /// Start of the slots (`data[]`); also the header size.
    pub const DATA: usize = 384;
}

// ---------------------------------------------------------------------------
// §1.7 WQE layouts

/// `struct rxe_sge` = `ib_sge` = `ibv_sge` (16 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Local virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

impl Sge {
    /// Encoded size.
    pub const SIZE: usize = 16;
    /// Offset of `addr`.
    pub const OFF_ADDR: usize = 0;
    /// Offset of `length`.
    pub const OFF_LENGTH: usize = 8;
    /// Offset of `lkey`.
    pub const OFF_LKEY: usize = 12;

    /// Writes the SGE at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u64(out, Self::OFF_ADDR, self.addr)?;
        put_u32(out, Self::OFF_LENGTH, self.length)?;
        put_u32(out, Self::OFF_LKEY, self.lkey)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            addr: get_u64(b, Self::OFF_ADDR)?,
            length: get_u32(b, Self::OFF_LENGTH)?,
            lkey: get_u32(b, Self::OFF_LKEY)?,
        })
    }
}

/// `struct rxe_dma_info` header (24 B; SGEs or inline data follow it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaInfo {
    /// Total message length.
    pub length: u32,
    /// Bytes still to transfer (kernel cursor in the C driver).
    pub resid: u32,
    /// Current SGE (kernel cursor in the C driver).
    pub cur_sge: u32,
    /// Number of SGEs.
    pub num_sge: u32,
    /// Offset inside the current SGE or the inline data.
    pub sge_offset: u32,
    /// Reserved.
    pub reserved: u32,
}

impl DmaInfo {
    /// Encoded size of the fixed part.
    pub const SIZE: usize = 24;
    /// Offset of `length`.
    pub const OFF_LENGTH: usize = 0;
    /// Offset of `resid`.
    pub const OFF_RESID: usize = 4;
    /// Offset of `cur_sge`.
    pub const OFF_CUR_SGE: usize = 8;
    /// Offset of `num_sge`.
    pub const OFF_NUM_SGE: usize = 12;
    /// Offset of `sge_offset`.
    pub const OFF_SGE_OFFSET: usize = 16;
    /// Offset of `reserved`.
    pub const OFF_RESERVED: usize = 20;
    /// Offset of the flexible union (`sge[]`, `inline_data[]`, `atomic_wr`).
    pub const OFF_DATA: usize = 24;

    /// Writes the fixed part at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u32(out, Self::OFF_LENGTH, self.length)?;
        put_u32(out, Self::OFF_RESID, self.resid)?;
        put_u32(out, Self::OFF_CUR_SGE, self.cur_sge)?;
        put_u32(out, Self::OFF_NUM_SGE, self.num_sge)?;
        put_u32(out, Self::OFF_SGE_OFFSET, self.sge_offset)?;
        put_u32(out, Self::OFF_RESERVED, self.reserved)
    }

    /// Reads the fixed part from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            length: get_u32(b, Self::OFF_LENGTH)?,
            resid: get_u32(b, Self::OFF_RESID)?,
            cur_sge: get_u32(b, Self::OFF_CUR_SGE)?,
            num_sge: get_u32(b, Self::OFF_NUM_SGE)?,
            sge_offset: get_u32(b, Self::OFF_SGE_OFFSET)?,
            reserved: get_u32(b, Self::OFF_RESERVED)?,
        })
    }
}

/// Offsets of `struct rxe_send_wr` (144 B), absolute from its start.
pub mod send_wr {
    /// Size of `struct rxe_send_wr`.
    pub const SIZE: usize = 144;
    /// `wr_id` (u64).
    pub const WR_ID: usize = 0;
    /// `reserved` (u32; the kernel struct's `num_sge`, unused).
    pub const RESERVED: usize = 8;
    /// `opcode` (u32).
    pub const OPCODE: usize = 12;
    /// `send_flags` (u32).
    pub const SEND_FLAGS: usize = 16;
    /// `ex.imm_data` (big-endian, opaque) / `ex.invalidate_rkey` (u32).
    pub const EX: usize = 20;
    /// Start of the 120-byte union `wr`.
    pub const WR: usize = 24;
    /// Size of the union `wr`.
    pub const WR_SIZE: usize = 120;

    /// `wr.rdma.remote_addr` (u64).
    pub const RDMA_REMOTE_ADDR: usize = 24;
    /// `wr.rdma.rkey` (u32).
    pub const RDMA_RKEY: usize = 32;

    /// `wr.atomic.remote_addr` (u64).
    pub const ATOMIC_REMOTE_ADDR: usize = 24;
    /// `wr.atomic.compare_add` (u64).
    pub const ATOMIC_COMPARE_ADD: usize = 32;
    /// `wr.atomic.swap` (u64).
    pub const ATOMIC_SWAP: usize = 40;
    /// `wr.atomic.rkey` (u32).
    pub const ATOMIC_RKEY: usize = 48;

    /// `wr.ud.remote_qpn` (u32).
    pub const UD_REMOTE_QPN: usize = 24;
    /// `wr.ud.remote_qkey` (u32).
    pub const UD_REMOTE_QKEY: usize = 28;
    /// `wr.ud.pkey_index` (u16).
    pub const UD_PKEY_INDEX: usize = 32;
    /// `wr.ud.ah_num` (u32).
    pub const UD_AH_NUM: usize = 36;
    /// `wr.ud.av` (`struct rxe_av`, 88 B; only used in "old kernel" mode).
    pub const UD_AV: usize = 56;

    /// `wr.mw.addr` (u64).
    pub const MW_ADDR: usize = 24;
    /// `wr.mw.length` (u64).
    pub const MW_LENGTH: usize = 32;
    /// `wr.mw.mr_lkey` (u32).
    pub const MW_MR_LKEY: usize = 40;
    /// `wr.mw.mw_rkey` (u32).
    pub const MW_MW_RKEY: usize = 44;
    /// `wr.mw.rkey` (u32, the new rkey).
    pub const MW_RKEY: usize = 48;
    /// `wr.mw.access` (u32).
    pub const MW_ACCESS: usize = 52;

    /// `wr.flush.remote_addr` (u64).
    pub const FLUSH_REMOTE_ADDR: usize = 24;
    /// `wr.flush.length` (u32).
    pub const FLUSH_LENGTH: usize = 32;
    /// `wr.flush.rkey` (u32).
    pub const FLUSH_RKEY: usize = 36;
    /// `wr.flush.type` (u8).
    pub const FLUSH_TYPE: usize = 40;
    /// `wr.flush.level` (u8).
    pub const FLUSH_LEVEL: usize = 41;

    /// `wr.reg.mr` (kernel pointer; kernel QPs only, not uapi).
    pub const REG_MR: usize = 24;
    /// `wr.reg.key` (u32; kernel only).
    pub const REG_KEY: usize = 32;
    /// `wr.reg.access` (u32; kernel only).
    pub const REG_ACCESS: usize = 36;
    /// The registration's iova (u64): this driver's own field after
    /// `wr.reg`, in kernel rings only (the data path never follows the
    /// `wr.reg.mr` pointer; it finds the region by index).
    pub const REG_IOVA: usize = 40;
    /// The index of the region `wr.reg.mr` points to (u32; this driver's
    /// own field, kernel rings only).
    pub const REG_MR_INDEX: usize = 48;
}

/// Offsets of `struct rxe_send_wqe` (208-byte header).
pub mod send_wqe {
    /// `wr` (`struct rxe_send_wr`).
    pub const WR: usize = 0;
    /// `status` (kernel).
    pub const STATUS: usize = 144;
    /// `state` (user writes 0, then kernel).
    pub const STATE: usize = 148;
    /// `iova` (remote VA cursor).
    pub const IOVA: usize = 152;
    /// `mask` (kernel).
    pub const MASK: usize = 160;
    /// `first_psn` (kernel).
    pub const FIRST_PSN: usize = 164;
    /// `last_psn` (kernel).
    pub const LAST_PSN: usize = 168;
    /// `ack_length` (unused).
    pub const ACK_LENGTH: usize = 172;
    /// `ssn` (ignored).
    pub const SSN: usize = 176;
    /// `has_rd_atomic` (kernel; untrusted if read back).
    pub const HAS_RD_ATOMIC: usize = 180;
    /// `dma` (`struct rxe_dma_info`).
    pub const DMA: usize = 184;
    /// Start of the SGE list / inline data / atomic-write value.
    pub const DATA: usize = 208;
    /// Size of the header (everything before [`DATA`]).
    pub const SIZE: usize = 208;
}

/// Offsets of `struct rxe_recv_wqe` (40-byte header).
pub mod recv_wqe {
    /// `wr_id` (u64).
    pub const WR_ID: usize = 0;
    /// `reserved` (u32).
    pub const RESERVED: usize = 8;
    /// `padding` (u32).
    pub const PADDING: usize = 12;
    /// `dma` (`struct rxe_dma_info`).
    pub const DMA: usize = 16;
    /// Start of the SGE list.
    pub const DATA: usize = 40;
    /// Size of the header.
    pub const SIZE: usize = 40;
}

/// Offsets of `struct rxe_av` (88 B).
pub mod av {
    /// `port_num` (u8).
    pub const PORT_NUM: usize = 0;
    /// `network_type` (u8).
    pub const NETWORK_TYPE: usize = 1;
    /// `dmac` (6 B).
    pub const DMAC: usize = 2;
    /// `grh.dgid` (16 B).
    pub const GRH_DGID: usize = 8;
    /// `grh.flow_label` (u32).
    pub const GRH_FLOW_LABEL: usize = 24;
    /// `grh.sgid_index` (u8).
    pub const GRH_SGID_INDEX: usize = 28;
    /// `grh.hop_limit` (u8).
    pub const GRH_HOP_LIMIT: usize = 29;
    /// `grh.traffic_class` (u8).
    pub const GRH_TRAFFIC_CLASS: usize = 30;
    /// `sgid_addr` (28 B sockaddr).
    pub const SGID_ADDR: usize = 32;
    /// `dgid_addr` (28 B sockaddr).
    pub const DGID_ADDR: usize = 60;
    /// Size.
    pub const SIZE: usize = 88;
}

/// Raw `struct rxe_send_wr`: every field as stored, the union kept as bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSendWr {
    /// `wr_id`.
    pub wr_id: u64,
    /// `reserved`.
    pub reserved: u32,
    /// `opcode`, unchecked.
    pub opcode: u32,
    /// `send_flags`, unchecked.
    pub send_flags: u32,
    /// `ex` as its four bytes in memory order (immediate data is big-endian
    /// opaque; `invalidate_rkey` is `u32::from_le_bytes(ex)`).
    pub ex: [u8; 4],
    /// The 120-byte union `wr`; read variants with the `send_wr` offsets
    /// minus [`send_wr::WR`], or with the accessor methods.
    pub wr: [u8; send_wr::WR_SIZE],
}

impl Default for RawSendWr {
    fn default() -> Self {
        Self {
            wr_id: 0,
            reserved: 0,
            opcode: 0,
            send_flags: 0,
            ex: [0; 4],
            wr: [0; send_wr::WR_SIZE],
        }
    }
}

impl RawSendWr {
    /// Encoded size.
    pub const SIZE: usize = send_wr::SIZE;

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            wr_id: get_u64(b, send_wr::WR_ID)?,
            reserved: get_u32(b, send_wr::RESERVED)?,
            opcode: get_u32(b, send_wr::OPCODE)?,
            send_flags: get_u32(b, send_wr::SEND_FLAGS)?,
            ex: get_4(b, send_wr::EX)?,
            wr: rd(b, send_wr::WR)?,
        })
    }

    /// Writes it at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u64(out, send_wr::WR_ID, self.wr_id)?;
        put_u32(out, send_wr::RESERVED, self.reserved)?;
        put_u32(out, send_wr::OPCODE, self.opcode)?;
        put_u32(out, send_wr::SEND_FLAGS, self.send_flags)?;
        put_4(out, send_wr::EX, self.ex)?;
        wr(out, send_wr::WR, self.wr)
    }

    /// `ex` read as `invalidate_rkey`.
    pub fn invalidate_rkey(&self) -> u32 {
        u32::from_le_bytes(self.ex)
    }

    fn u(&self, abs: usize) -> u64 {
        // The offsets used below are constants inside the 120-byte union,
        // so the reads cannot fail; 0 is returned rather than panicking.
        get_u64(&self.wr, abs.wrapping_sub(send_wr::WR)).unwrap_or(0)
    }
    fn w(&self, abs: usize) -> u32 {
        get_u32(&self.wr, abs.wrapping_sub(send_wr::WR)).unwrap_or(0)
    }
    fn h(&self, abs: usize) -> u16 {
        get_u16(&self.wr, abs.wrapping_sub(send_wr::WR)).unwrap_or(0)
    }
    fn b(&self, abs: usize) -> u8 {
        get_u8(&self.wr, abs.wrapping_sub(send_wr::WR)).unwrap_or(0)
    }

    /// The union read as `wr.rdma`: `(remote_addr, rkey)`.
    pub fn rdma(&self) -> (u64, u32) {
        (
            self.u(send_wr::RDMA_REMOTE_ADDR),
            self.w(send_wr::RDMA_RKEY),
        )
    }

    /// The union read as `wr.atomic`: `(remote_addr, compare_add, swap, rkey)`.
    pub fn atomic(&self) -> (u64, u64, u64, u32) {
        (
            self.u(send_wr::ATOMIC_REMOTE_ADDR),
            self.u(send_wr::ATOMIC_COMPARE_ADD),
            self.u(send_wr::ATOMIC_SWAP),
            self.w(send_wr::ATOMIC_RKEY),
        )
    }

    /// The union read as `wr.ud`: `(remote_qpn, remote_qkey, pkey_index, ah_num)`.
    pub fn ud(&self) -> (u32, u32, u16, u32) {
        (
            self.w(send_wr::UD_REMOTE_QPN),
            self.w(send_wr::UD_REMOTE_QKEY),
            self.h(send_wr::UD_PKEY_INDEX),
            self.w(send_wr::UD_AH_NUM),
        )
    }

    /// The union read as `wr.mw`: `(addr, length, mr_lkey, mw_rkey, rkey, access)`.
    pub fn mw(&self) -> (u64, u64, u32, u32, u32, u32) {
        (
            self.u(send_wr::MW_ADDR),
            self.u(send_wr::MW_LENGTH),
            self.w(send_wr::MW_MR_LKEY),
            self.w(send_wr::MW_MW_RKEY),
            self.w(send_wr::MW_RKEY),
            self.w(send_wr::MW_ACCESS),
        )
    }

    /// The union read as `wr.flush`: `(remote_addr, length, rkey, type, level)`.
    pub fn flush(&self) -> (u64, u32, u32, u8, u8) {
        (
            self.u(send_wr::FLUSH_REMOTE_ADDR),
            self.w(send_wr::FLUSH_LENGTH),
            self.w(send_wr::FLUSH_RKEY),
            self.b(send_wr::FLUSH_TYPE),
            self.b(send_wr::FLUSH_LEVEL),
        )
    }

    /// The union read as the kernel-only `wr.reg` with this driver's two
    /// fields after it: `(region index, iova, key, access)`.
    pub fn reg(&self) -> (u32, u64, u32, u32) {
        (
            self.w(send_wr::REG_MR_INDEX),
            self.u(send_wr::REG_IOVA),
            self.w(send_wr::REG_KEY),
            self.w(send_wr::REG_ACCESS),
        )
    }

    /// Writes `wr.rdma`.
    pub fn set_rdma(&mut self, remote_addr: u64, rkey: u32) {
        self.set_u64(send_wr::RDMA_REMOTE_ADDR, remote_addr);
        self.set_u32(send_wr::RDMA_RKEY, rkey);
    }

    /// Writes `wr.atomic`.
    pub fn set_atomic(&mut self, remote_addr: u64, compare_add: u64, swap: u64, rkey: u32) {
        self.set_u64(send_wr::ATOMIC_REMOTE_ADDR, remote_addr);
        self.set_u64(send_wr::ATOMIC_COMPARE_ADD, compare_add);
        self.set_u64(send_wr::ATOMIC_SWAP, swap);
        self.set_u32(send_wr::ATOMIC_RKEY, rkey);
    }

    /// Writes `wr.ud` (not the embedded AV).
    pub fn set_ud(&mut self, remote_qpn: u32, remote_qkey: u32, pkey_index: u16, ah_num: u32) {
        self.set_u32(send_wr::UD_REMOTE_QPN, remote_qpn);
        self.set_u32(send_wr::UD_REMOTE_QKEY, remote_qkey);
        let _ = put_u16(
            &mut self.wr,
            send_wr::UD_PKEY_INDEX - send_wr::WR,
            pkey_index,
        );
        self.set_u32(send_wr::UD_AH_NUM, ah_num);
    }

    /// Writes `wr.mw`.
    pub fn set_mw(
        &mut self,
        addr: u64,
        length: u64,
        mr_lkey: u32,
        mw_rkey: u32,
        rkey: u32,
        access: u32,
    ) {
        self.set_u64(send_wr::MW_ADDR, addr);
        self.set_u64(send_wr::MW_LENGTH, length);
        self.set_u32(send_wr::MW_MR_LKEY, mr_lkey);
        self.set_u32(send_wr::MW_MW_RKEY, mw_rkey);
        self.set_u32(send_wr::MW_RKEY, rkey);
        self.set_u32(send_wr::MW_ACCESS, access);
    }

    /// Writes `wr.flush`.
    pub fn set_flush(&mut self, remote_addr: u64, length: u32, rkey: u32, ty: u8, level: u8) {
        self.set_u64(send_wr::FLUSH_REMOTE_ADDR, remote_addr);
        self.set_u32(send_wr::FLUSH_LENGTH, length);
        self.set_u32(send_wr::FLUSH_RKEY, rkey);
        let _ = put_u8(&mut self.wr, send_wr::FLUSH_TYPE - send_wr::WR, ty);
        let _ = put_u8(&mut self.wr, send_wr::FLUSH_LEVEL - send_wr::WR, level);
    }

    fn set_u64(&mut self, abs: usize, v: u64) {
        let _ = put_u64(&mut self.wr, abs.wrapping_sub(send_wr::WR), v);
    }
    fn set_u32(&mut self, abs: usize, v: u32) {
        let _ = put_u32(&mut self.wr, abs.wrapping_sub(send_wr::WR), v);
    }
}

/// Raw 208-byte header of `struct rxe_send_wqe`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawSendWqe {
    /// The work request.
    pub wr: RawSendWr,
    /// `status`.
    pub status: u32,
    /// `state`.
    pub state: u32,
    /// `iova`.
    pub iova: u64,
    /// `mask`.
    pub mask: u32,
    /// `first_psn`.
    pub first_psn: u32,
    /// `last_psn`.
    pub last_psn: u32,
    /// `ack_length`.
    pub ack_length: u32,
    /// `ssn`.
    pub ssn: u32,
    /// `has_rd_atomic`.
    pub has_rd_atomic: u32,
    /// `dma` (fixed part).
    pub dma: DmaInfo,
}

impl RawSendWqe {
    /// Size of the header.
    pub const SIZE: usize = send_wqe::SIZE;

    /// Reads the header from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            wr: RawSendWr::decode(b)?,
            status: get_u32(b, send_wqe::STATUS)?,
            state: get_u32(b, send_wqe::STATE)?,
            iova: get_u64(b, send_wqe::IOVA)?,
            mask: get_u32(b, send_wqe::MASK)?,
            first_psn: get_u32(b, send_wqe::FIRST_PSN)?,
            last_psn: get_u32(b, send_wqe::LAST_PSN)?,
            ack_length: get_u32(b, send_wqe::ACK_LENGTH)?,
            ssn: get_u32(b, send_wqe::SSN)?,
            has_rd_atomic: get_u32(b, send_wqe::HAS_RD_ATOMIC)?,
            dma: DmaInfo::decode(b.get(send_wqe::DMA..).unwrap_or_default())?,
        })
    }

    /// Writes the header at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        self.wr.encode(out)?;
        put_u32(out, send_wqe::STATUS, self.status)?;
        put_u32(out, send_wqe::STATE, self.state)?;
        put_u64(out, send_wqe::IOVA, self.iova)?;
        put_u32(out, send_wqe::MASK, self.mask)?;
        put_u32(out, send_wqe::FIRST_PSN, self.first_psn)?;
        put_u32(out, send_wqe::LAST_PSN, self.last_psn)?;
        put_u32(out, send_wqe::ACK_LENGTH, self.ack_length)?;
        put_u32(out, send_wqe::SSN, self.ssn)?;
        put_u32(out, send_wqe::HAS_RD_ATOMIC, self.has_rd_atomic)?;
        self.dma
            .encode(out.get_mut(send_wqe::DMA..).unwrap_or_default())
    }
}

/// Raw 40-byte header of `struct rxe_recv_wqe`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRecvWqe {
    /// `wr_id`.
    pub wr_id: u64,
    /// `reserved`.
    pub reserved: u32,
    /// `padding`.
    pub padding: u32,
    /// `dma` (fixed part).
    pub dma: DmaInfo,
}

impl RawRecvWqe {
    /// Size of the header.
    pub const SIZE: usize = recv_wqe::SIZE;

    /// Reads the header from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        check_len(b, Self::SIZE)?;
        Ok(Self {
            wr_id: get_u64(b, recv_wqe::WR_ID)?,
            reserved: get_u32(b, recv_wqe::RESERVED)?,
            padding: get_u32(b, recv_wqe::PADDING)?,
            dma: DmaInfo::decode(b.get(recv_wqe::DMA..).unwrap_or_default())?,
        })
    }

    /// Writes the header at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        check_len(out, Self::SIZE)?;
        put_u64(out, recv_wqe::WR_ID, self.wr_id)?;
        put_u32(out, recv_wqe::RESERVED, self.reserved)?;
        put_u32(out, recv_wqe::PADDING, self.padding)?;
        self.dma
            .encode(out.get_mut(recv_wqe::DMA..).unwrap_or_default())
    }
}

// ---------------------------------------------------------------------------
// §1.9 CQE

/// Offsets of `struct ib_uverbs_wc` (48 B), which librxe copies verbatim
/// into the caller's `struct ibv_wc`.
pub mod uverbs_wc {
    /// `wr_id` (u64).
    pub const WR_ID: usize = 0;
    /// `status` (u32).
    pub const STATUS: usize = 8;
    /// `opcode` (u32).
    pub const OPCODE: usize = 12;
    /// `vendor_err` (u32).
    pub const VENDOR_ERR: usize = 16;
    /// `byte_len` (u32).
    pub const BYTE_LEN: usize = 20;
    /// `ex.imm_data` (big-endian, as received) / `ex.invalidate_rkey` (u32).
    pub const EX: usize = 24;
    /// `qp_num` (u32).
    pub const QP_NUM: usize = 28;
    /// `src_qp` (u32).
    pub const SRC_QP: usize = 32;
    /// `wc_flags` (u32).
    pub const WC_FLAGS: usize = 36;
    /// `pkey_index` (u16).
    pub const PKEY_INDEX: usize = 40;
    /// `slid` (u16).
    pub const SLID: usize = 42;
    /// `sl` (u8).
    pub const SL: usize = 44;
    /// `dlid_path_bits` (u8).
    pub const DLID_PATH_BITS: usize = 45;
    /// `port_num` (u8).
    pub const PORT_NUM: usize = 46;
    /// `reserved` (u8).
    pub const RESERVED: usize = 47;
    /// Size.
    pub const SIZE: usize = 48;
}

/// Raw `struct ib_uverbs_wc`: every field as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawUverbsWc {
    /// `wr_id`.
    pub wr_id: u64,
    /// `status`.
    pub status: u32,
    /// `opcode`.
    pub opcode: u32,
    /// `vendor_err`.
    pub vendor_err: u32,
    /// `byte_len`.
    pub byte_len: u32,
    /// `ex` in memory order.
    pub ex: [u8; 4],
    /// `qp_num`.
    pub qp_num: u32,
    /// `src_qp`.
    pub src_qp: u32,
    /// `wc_flags`.
    pub wc_flags: u32,
    /// `pkey_index`.
    pub pkey_index: u16,
    /// `slid`.
    pub slid: u16,
    /// `sl`.
    pub sl: u8,
    /// `dlid_path_bits`.
    pub dlid_path_bits: u8,
    /// `port_num`.
    pub port_num: u8,
}

impl RawUverbsWc {
    /// Encoded size.
    pub const SIZE: usize = uverbs_wc::SIZE;

    /// The 48 bytes (reserved zeroed).
    pub fn to_bytes(&self) -> [u8; uverbs_wc::SIZE] {
        let mut b = [0u8; uverbs_wc::SIZE];
        // Cannot fail: `b` has exactly `SIZE` bytes.
        let _ = self.encode(&mut b);
        b
    }

    /// Writes the 48 bytes (reserved zeroed) at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        use uverbs_wc as o;
        check_len(out, Self::SIZE)?;
        put_u64(out, o::WR_ID, self.wr_id)?;
        put_u32(out, o::STATUS, self.status)?;
        put_u32(out, o::OPCODE, self.opcode)?;
        put_u32(out, o::VENDOR_ERR, self.vendor_err)?;
        put_u32(out, o::BYTE_LEN, self.byte_len)?;
        put_4(out, o::EX, self.ex)?;
        put_u32(out, o::QP_NUM, self.qp_num)?;
        put_u32(out, o::SRC_QP, self.src_qp)?;
        put_u32(out, o::WC_FLAGS, self.wc_flags)?;
        put_u16(out, o::PKEY_INDEX, self.pkey_index)?;
        put_u16(out, o::SLID, self.slid)?;
        put_u8(out, o::SL, self.sl)?;
        put_u8(out, o::DLID_PATH_BITS, self.dlid_path_bits)?;
        put_u8(out, o::PORT_NUM, self.port_num)?;
        put_u8(out, o::RESERVED, 0)
    }

    /// Reads one from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        use uverbs_wc as o;
        check_len(b, Self::SIZE)?;
        Ok(Self {
            wr_id: get_u64(b, o::WR_ID)?,
            status: get_u32(b, o::STATUS)?,
            opcode: get_u32(b, o::OPCODE)?,
            vendor_err: get_u32(b, o::VENDOR_ERR)?,
            byte_len: get_u32(b, o::BYTE_LEN)?,
            ex: get_4(b, o::EX)?,
            qp_num: get_u32(b, o::QP_NUM)?,
            src_qp: get_u32(b, o::SRC_QP)?,
            wc_flags: get_u32(b, o::WC_FLAGS)?,
            pkey_index: get_u16(b, o::PKEY_INDEX)?,
            slid: get_u16(b, o::SLID)?,
            sl: get_u8(b, o::SL)?,
            dlid_path_bits: get_u8(b, o::DLID_PATH_BITS)?,
            port_num: get_u8(b, o::PORT_NUM)?,
        })
    }
}

/// Bytes of the kernel's `struct rxe_cqe` (union of `ib_wc` and
/// `ib_uverbs_wc` on x86-64), the C driver's CQ element size before rounding.
pub const RXE_CQE_SIZE: usize = 72;
/// Smallest CQ slot librxe accepts (it refuses the CQ otherwise).
pub const MIN_CQ_SLOT: usize = uverbs_wc::SIZE;

// Size checks against rxe-abi-and-wire.md §1.4-§1.9.
const _: () = {
    assert!(MmapInfo::SIZE == 16);
    assert!(CreateCqResp::SIZE == 16 && ResizeCqResp::SIZE == 16);
    assert!(CreateQpResp::SIZE == 32 && CreateQpResp::OFF_SQ_MI == MmapInfo::SIZE);
    assert!(CreateSrqResp::SIZE == 24 && CreateSrqResp::OFF_SRQ_NUM == MmapInfo::SIZE);
    assert!(ModifySrqCmd::SIZE == 8 && CreateAhResp::SIZE == 8);
    assert!(queue_hdr::DATA == 384 && queue_hdr::PRODUCER_INDEX == 128);
    assert!(queue_hdr::CONSUMER_INDEX == 256);
    assert!(Sge::SIZE == 16 && DmaInfo::SIZE == 24);
    assert!(send_wr::SIZE == 144 && send_wr::WR + send_wr::WR_SIZE == send_wr::SIZE);
    assert!(send_wr::UD_AV + av::SIZE == send_wr::SIZE);
    assert!(send_wqe::DMA + DmaInfo::SIZE == send_wqe::DATA);
    assert!(send_wqe::STATUS == send_wr::SIZE && send_wqe::SIZE == 208);
    assert!(recv_wqe::DMA + DmaInfo::SIZE == recv_wqe::DATA && recv_wqe::SIZE == 40);
    assert!(av::SIZE == 88 && av::DGID_ADDR + 28 == av::SIZE);
    assert!(uverbs_wc::SIZE == 48 && uverbs_wc::RESERVED + 1 == uverbs_wc::SIZE);
};
