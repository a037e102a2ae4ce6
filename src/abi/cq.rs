// SPDX-License-Identifier: GPL-2.0

//! Completion-queue logic that needs no kernel: the notification arming of
//! `req_notify_cq` (rxe-abi-and-wire.md §1.9, §1.10), the slot format of CQs whose
//! consumer is a kernel ULP (a `ib_uverbs_wc` followed by what `ib_wc` has
//! beyond it), and the kernel-side consumer of such a CQ.
//!
//! User CQs carry just the 48-byte `ib_uverbs_wc` at the start of each slot
//! ([`super::cqe::Completion::to_bytes`]); librxe copies those 48 bytes.

use super::cqe::Completion;
use super::layout::{
    get_u16, get_u32, get_u64, get_u8, put_u16, put_u64, put_u8, queue_hdr, uverbs_wc, LayoutError,
    RawUverbsWc,
};
use super::queue::{SharedBuf, ToClient};

/// Element size asked for when sizing a CQ: rxe's `sizeof(struct rxe_cqe)`
/// (the union of the kernel `ib_wc` and `ib_uverbs_wc`), so slots are the
/// same size as the C driver's (128 bytes with 64-byte cache lines).
pub const CQE_ELEM_SIZE: usize = 72;

/// `enum ib_cq_notify_flags`.
pub mod notify_flags {
    /// Signal the next solicited completion (`IB_CQ_SOLICITED`).
    pub const SOLICITED: u32 = 1 << 0;
    /// Signal the next completion (`IB_CQ_NEXT_COMP`).
    pub const NEXT_COMP: u32 = 1 << 1;
    /// The two arming bits (`IB_CQ_SOLICITED_MASK`).
    pub const SOLICITED_MASK: u32 = SOLICITED | NEXT_COMP;
    /// Report completions that may have been missed (`IB_CQ_REPORT_MISSED_EVENTS`).
    pub const REPORT_MISSED_EVENTS: u32 = 1 << 2;
}

/// The arming state of a CQ: which completion, if any, calls the CQ's
/// completion handler next. One-shot: firing disarms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqNotify {
    armed: u32,
}

impl CqNotify {
    /// Not armed.
    pub const fn new() -> Self {
        Self { armed: 0 }
    }

    /// `req_notify_cq(flags)`: adds the arming bits of `flags` (others are
    /// ignored). Returns `true` ("1") only if `REPORT_MISSED_EVENTS` was
    /// asked for and the CQ is not empty, as rxe does; the caller may then
    /// poll again instead of waiting for an event.
    pub fn arm(&mut self, flags: u32, empty: bool) -> bool {
        self.armed |= flags & notify_flags::SOLICITED_MASK;
        flags & notify_flags::REPORT_MISSED_EVENTS != 0 && !empty
    }

    /// A completion was queued: returns whether the completion handler must
    /// be called (armed for any completion, or for solicited ones and this
    /// one is solicited), and disarms if so.
    pub fn fire(&mut self, solicited: bool) -> bool {
        let fire = self.armed & notify_flags::NEXT_COMP != 0
            || (solicited && self.armed & notify_flags::SOLICITED != 0);
        if fire {
            self.armed = 0;
        }
        fire
    }

    /// The arming bits.
    pub const fn armed(&self) -> u32 {
        self.armed
    }
}

/// What a kernel consumer's `ib_wc` carries beyond `ib_uverbs_wc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelWcExtra {
    /// The `struct ib_qp *` of the completing QP, as an opaque cookie that
    /// is handed back unchanged in `ib_wc.qp`.
    pub qp: u64,
    /// `ib_wc.network_hdr_type` (`RDMA_NETWORK_*`).
    pub network_hdr_type: u8,
    /// `ib_wc.vlan_id`.
    pub vlan_id: u16,
    /// `ib_wc.smac`.
    pub smac: [u8; 6],
}

/// One slot of a kernel CQ: `ib_uverbs_wc` (48 bytes) then the extras.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCqe {
    /// The fields shared with user CQEs.
    pub wc: RawUverbsWc,
    /// The rest of `ib_wc`.
    pub extra: KernelWcExtra,
}

impl KernelCqe {
    /// Offset of the QP cookie (u64).
    pub const OFF_QP: usize = uverbs_wc::SIZE;
    /// Offset of `network_hdr_type` (u8).
    pub const OFF_NETWORK_HDR_TYPE: usize = 56;
    /// Offset of `vlan_id` (u16).
    pub const OFF_VLAN_ID: usize = 58;
    /// Offset of `smac` (6 bytes).
    pub const OFF_SMAC: usize = 60;
    /// Encoded size (fits in [`CQE_ELEM_SIZE`]).
    pub const SIZE: usize = 66;

    /// A slot for `c` with `extra`.
    pub fn new(c: &Completion, extra: &KernelWcExtra) -> Self {
        Self {
            wc: c.to_raw(),
            extra: *extra,
        }
    }

    /// Writes the slot bytes at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), LayoutError> {
        if out.len() < Self::SIZE {
            return Err(LayoutError::TooShort {
                need: Self::SIZE,
                have: out.len(),
            });
        }
        self.wc.encode(out)?;
        put_u64(out, Self::OFF_QP, self.extra.qp)?;
        put_u8(out, Self::OFF_NETWORK_HDR_TYPE, self.extra.network_hdr_type)?;
        put_u8(out, Self::OFF_NETWORK_HDR_TYPE + 1, 0)?;
        put_u16(out, Self::OFF_VLAN_ID, self.extra.vlan_id)?;
        for (i, b) in self.extra.smac.iter().enumerate() {
            put_u8(out, Self::OFF_SMAC + i, *b)?;
        }
        Ok(())
    }

    /// The slot bytes.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        // The array is exactly SIZE bytes, so encoding cannot fail.
        let _ = self.encode(&mut b);
        b
    }

    /// Reads a slot from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, LayoutError> {
        if b.len() < Self::SIZE {
            return Err(LayoutError::TooShort {
                need: Self::SIZE,
                have: b.len(),
            });
        }
        let mut ex = [0u8; 4];
        let mut smac = [0u8; 6];
        for (i, x) in ex.iter_mut().enumerate() {
            *x = get_u8(b, uverbs_wc::EX + i)?;
        }
        for (i, x) in smac.iter_mut().enumerate() {
            *x = get_u8(b, Self::OFF_SMAC + i)?;
        }
        Ok(Self {
            wc: RawUverbsWc {
                wr_id: get_u64(b, uverbs_wc::WR_ID)?,
                status: get_u32(b, uverbs_wc::STATUS)?,
                opcode: get_u32(b, uverbs_wc::OPCODE)?,
                vendor_err: get_u32(b, uverbs_wc::VENDOR_ERR)?,
                byte_len: get_u32(b, uverbs_wc::BYTE_LEN)?,
                ex,
                qp_num: get_u32(b, uverbs_wc::QP_NUM)?,
                src_qp: get_u32(b, uverbs_wc::SRC_QP)?,
                wc_flags: get_u32(b, uverbs_wc::WC_FLAGS)?,
                pkey_index: get_u16(b, uverbs_wc::PKEY_INDEX)?,
                slid: get_u16(b, uverbs_wc::SLID)?,
                sl: get_u8(b, uverbs_wc::SL)?,
                dlid_path_bits: get_u8(b, uverbs_wc::DLID_PATH_BITS)?,
                port_num: get_u8(b, uverbs_wc::PORT_NUM)?,
            },
            extra: KernelWcExtra {
                qp: get_u64(b, Self::OFF_QP)?,
                network_hdr_type: get_u8(b, Self::OFF_NETWORK_HDR_TYPE)?,
                vlan_id: get_u16(b, Self::OFF_VLAN_ID)?,
                smac,
            },
        })
    }
}

/// The consumer side of a kernel CQ (`poll_cq`), where the kernel is both
/// producer (`ring`) and consumer: copies the oldest entry's first
/// `out.len()` bytes (at most one slot) into `out` and retires it
/// (store-release of the consumer index). Returns `false` if the CQ is
/// empty. Must run under the same lock as the producer.
pub fn kernel_pop<B: SharedBuf + ?Sized>(ring: &ToClient, buf: &B, out: &mut [u8]) -> bool {
    let geo = ring.geometry();
    let consumer = ring.consumer(buf);
    if consumer == ring.index() {
        return false;
    }
    let len = out.len().min(geo.elem_size());
    if let Some(dst) = out.get_mut(..len) {
        buf.read_bytes(geo.slot_offset(consumer), dst);
    }
    buf.store_release_u32(
        queue_hdr::CONSUMER_INDEX,
        geo.mask(consumer.wrapping_add(1)),
    );
    true
}
