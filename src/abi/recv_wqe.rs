// SPDX-License-Identifier: GPL-2.0

//! Copy-once validation of receive WQEs (RQ and SRQ slots, rxe-abi-and-wire.md §1.7).
//!
//! The 40-byte header and then the SGE list are each read exactly once into
//! a private [`RecvWqe`]; only `wr_id`, `num_sge` and the SGEs are used. The
//! DMA cursor fields of the slot are ignored: the responder keeps its own.

use super::layout::{recv_wqe, RawRecvWqe, Sge};
use super::queue::SharedBuf;
use super::sge::{read_sges_into, read_slot_into, SharedSlot, SliceSlot, SlotSource, MAX_SGE};
use super::values::WcStatus;

pub use super::sge::SgeList;

/// RQ/SRQ element size for `max_sge` SGEs: the 40-byte header plus 16
/// bytes per SGE. `None` above 32 SGEs (SRQs are further limited to 27 by
/// the device attributes).
pub const fn recv_elem_size(max_sge: u32) -> Option<usize> {
    if max_sge as usize > MAX_SGE {
        return None;
    }
    Some(recv_wqe::SIZE + max_sge as usize * Sge::SIZE)
}

/// The queue-side limits a receive WQE is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvLimits {
    /// The RQ's `max_recv_sge` or the SRQ's `max_sge` (clamped to 32).
    pub max_sge: u32,
    /// Size of one slot in bytes.
    pub slot_size: usize,
}

/// Why a receive WQE was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvWqeError {
    /// The slot is smaller than the 40-byte header.
    Truncated,
    /// `num_sge` exceeds the queue's limit.
    TooManySges(u32),
    /// The SGE list does not fit in the slot.
    SgesExceedSlot,
    /// The SGE lengths add up to more than a `u32` can hold.
    LengthOverflow(u64),
}

impl RecvWqeError {
    /// The status of the error completion to generate for this WQE.
    pub const fn wc_status(&self) -> WcStatus {
        match self {
            Self::LengthOverflow(_) => WcStatus::LocLenErr,
            _ => WcStatus::LocQpOpErr,
        }
    }
}

/// A receive WQE, copied out of its slot once and validated.
///
/// # Invariants
///
/// `sges.len() <= max_sge <= 32`, the list fitted in the slot, and
/// `total_len` is the exact sum of the SGE lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe {
    /// The caller's cookie, returned in the completion.
    pub wr_id: u64,
    /// Where received data goes (lkeys not yet checked).
    pub sges: SgeList,
    /// Room in bytes.
    pub total_len: u32,
}

impl RecvWqe {
    /// Validates a receive WQE from a private copy of its slot (at most
    /// `limits.slot_size` bytes of `slot` are used).
    pub fn parse(slot: &[u8], limits: &RecvLimits) -> Result<Self, RecvWqeError> {
        let n = slot.len().min(limits.slot_size);
        let slot = slot.get(..n).unwrap_or_default();
        parse_from(&SliceSlot(slot), slot.len(), limits)
    }

    /// Copies the WQE in the slot at byte `slot_off` of a shared queue
    /// buffer into private memory (each byte read at most once) and
    /// validates it.
    pub fn read_from<B: SharedBuf + ?Sized>(
        buf: &B,
        slot_off: usize,
        limits: &RecvLimits,
    ) -> Result<Self, RecvWqeError> {
        let src = SharedSlot {
            buf,
            base: slot_off,
            size: limits.slot_size,
        };
        parse_from(&src, limits.slot_size, limits)
    }

    /// [`RecvWqe::read_from`] into `dst`, reusing the storage of the WQE it
    /// holds (see [`read_slot_into`]). `dst` is `None` after an error.
    pub fn read_into<B: SharedBuf + ?Sized>(
        buf: &B,
        slot_off: usize,
        limits: &RecvLimits,
        dst: &mut Option<RecvWqe>,
    ) -> Result<(), RecvWqeError> {
        let size = limits.slot_size;
        read_slot_into(
            buf,
            slot_off,
            size,
            dst,
            || RecvWqe::EMPTY,
            |src, wqe| parse_into(src, size, limits, wqe),
        )
    }

    /// Storage for [`RecvWqe::read_into`] to fill: no SGEs, no room.
    const EMPTY: RecvWqe = RecvWqe {
        wr_id: 0,
        sges: SgeList::new(),
        total_len: 0,
    };
}

fn parse_from<S: SlotSource + ?Sized>(
    src: &S,
    slot_size: usize,
    limits: &RecvLimits,
) -> Result<RecvWqe, RecvWqeError> {
    let mut wqe = RecvWqe::EMPTY;
    parse_into(src, slot_size, limits, &mut wqe)?;
    Ok(wqe)
}

/// Parses the WQE of `src` into `dst`, its SGEs in place. On error `dst`
/// is no WQE.
fn parse_into<S: SlotSource + ?Sized>(
    src: &S,
    slot_size: usize,
    limits: &RecvLimits,
    dst: &mut RecvWqe,
) -> Result<(), RecvWqeError> {
    use RecvWqeError as E;

    let mut hdr = [0u8; recv_wqe::SIZE];
    if !src.read(0, &mut hdr) {
        return Err(E::Truncated);
    }
    let raw = RawRecvWqe::decode(&hdr).map_err(|_| E::Truncated)?;
    let n = raw.dma.num_sge;
    if n as usize > (limits.max_sge as usize).min(MAX_SGE) {
        return Err(E::TooManySges(n));
    }
    // n <= 32: no overflow.
    if recv_wqe::DATA + n as usize * Sge::SIZE > slot_size {
        return Err(E::SgesExceedSlot);
    }
    if !read_sges_into(src, recv_wqe::DATA, n as usize, &mut dst.sges) {
        return Err(E::SgesExceedSlot);
    }
    let total = dst.sges.total_len();
    dst.total_len = u32::try_from(total).map_err(|_| E::LengthOverflow(total))?;
    dst.wr_id = raw.wr_id;
    Ok(())
}
