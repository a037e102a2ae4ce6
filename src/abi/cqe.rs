// SPDX-License-Identifier: GPL-2.0

//! Building the 48-byte `ib_uverbs_wc` that librxe copies out of a CQ slot
//! into the application's `ibv_wc` (rxe-abi-and-wire.md §1.9), from a driver-side
//! completion.

use super::layout::{uverbs_wc, LayoutError, RawUverbsWc};
use super::values::{wc_flags, WcOpcode, WcStatus, WrOpcode};

/// The `ex` word of a completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CqeEx {
    /// Nothing (zero).
    #[default]
    None,
    /// Immediate data, the four bytes as received (network order).
    Imm([u8; 4]),
    /// The rkey a SEND_WITH_INV invalidated.
    InvalidateRkey(u32),
}

/// A completion as the driver describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The WQE's cookie.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Opcode (only meaningful on success; written as is).
    pub opcode: WcOpcode,
    /// Vendor error (rxe: 0).
    pub vendor_err: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data or invalidated rkey.
    pub ex: CqeEx,
    /// The local QP number.
    pub qp_num: u32,
    /// Source QP (UD receives).
    pub src_qp: u32,
    /// `wc_flags` bits (kernel numbering, see [`wc_flags`]).
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Source LID (RoCE: 0).
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits (RoCE: 0).
    pub dlid_path_bits: u8,
    /// Port number.
    pub port_num: u8,
}

impl Completion {
    /// An all-zero completion for `wr_id` on QP `qp_num` with `status`
    /// (opcode field 0), the starting point rxe uses.
    pub const fn zeroed(wr_id: u64, qp_num: u32, status: WcStatus) -> Self {
        Self {
            wr_id,
            status,
            opcode: WcOpcode::Send,
            vendor_err: 0,
            byte_len: 0,
            ex: CqeEx::None,
            qp_num,
            src_qp: 0,
            wc_flags: 0,
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
        }
    }

    /// A send-queue completion as rxe reports it to user space: wr_id,
    /// status, qp_num; on success also the opcode, `byte_len` and
    /// `WITH_IMM` for the `*_WITH_IMM` requests. (Immediate data itself is
    /// not reported on send completions.)
    pub fn send(
        wr_id: u64,
        qp_num: u32,
        status: WcStatus,
        opcode: WrOpcode,
        byte_len: u32,
    ) -> Self {
        let mut c = Self::zeroed(wr_id, qp_num, status);
        if status == WcStatus::Success {
            if let Some(op) = opcode.wc_opcode() {
                c.opcode = op;
            }
            c.byte_len = byte_len;
            if opcode.has_imm() {
                c.wc_flags = wc_flags::WITH_IMM;
            }
        }
        c
    }

    /// A successful receive completion as rxe reports it to user space:
    /// opcode RECV (or RECV_RDMA_WITH_IMM for a WRITE_WITH_IMM), `GRH`
    /// always set, `WITH_IMM` / `WITH_INVALIDATE` with the `ex` word,
    /// `src_qp` (UD) and `port_num`.
    pub fn recv(
        wr_id: u64,
        qp_num: u32,
        rdma_with_imm: bool,
        byte_len: u32,
        ex: CqeEx,
        src_qp: u32,
        port_num: u8,
    ) -> Self {
        let mut c = Self::zeroed(wr_id, qp_num, WcStatus::Success);
        c.opcode = if rdma_with_imm {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        };
        c.byte_len = byte_len;
        c.wc_flags = wc_flags::GRH
            | match ex {
                CqeEx::None => 0,
                CqeEx::Imm(_) => wc_flags::WITH_IMM,
                CqeEx::InvalidateRkey(_) => wc_flags::WITH_INVALIDATE,
            };
        c.ex = ex;
        c.src_qp = src_qp;
        c.port_num = port_num;
        c
    }

    /// A failed receive completion: wr_id, status, qp_num only.
    pub const fn recv_error(wr_id: u64, qp_num: u32, status: WcStatus) -> Self {
        Self::zeroed(wr_id, qp_num, status)
    }

    /// A flushed WQE (send or receive): status WR_FLUSH_ERR, nothing else.
    pub const fn flush(wr_id: u64, qp_num: u32) -> Self {
        Self::zeroed(wr_id, qp_num, WcStatus::WrFlushErr)
    }

    /// The raw structure.
    pub fn to_raw(&self) -> RawUverbsWc {
        RawUverbsWc {
            wr_id: self.wr_id,
            status: self.status.as_u32(),
            opcode: self.opcode.as_u32(),
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            ex: match self.ex {
                CqeEx::None => [0; 4],
                CqeEx::Imm(b) => b,
                CqeEx::InvalidateRkey(k) => k.to_le_bytes(),
            },
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.wc_flags,
            pkey_index: self.pkey_index,
            slid: self.slid,
            sl: self.sl,
            dlid_path_bits: self.dlid_path_bits,
            port_num: self.port_num,
        }
    }

    /// The 48 bytes of `struct ib_uverbs_wc` to put at the start of a CQ slot.
    pub fn to_bytes(&self) -> [u8; uverbs_wc::SIZE] {
        self.to_raw().to_bytes()
    }

    /// Writes the 48 bytes at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        self.to_raw().encode(out)
    }
}
