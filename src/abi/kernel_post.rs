// SPDX-License-Identifier: GPL-2.0

//! Work requests of kernel ULPs (`ib_post_send`, `ib_post_recv`,
//! `ib_post_srq_recv`) written into their QP's or SRQ's ring in the slot
//! format librxe uses, so that one data path, with its copy-once
//! validation, serves user and kernel queues alike.
//!
//! The checks here are the ones `post_send`/`post_recv` must answer
//! synchronously with an error and the failing work request (`bad_wr`):
//! a full ring, too many SGEs, too much inline data. Everything else is
//! checked again when the data path takes the WQE out of the ring.

use super::layout::{
    put_u16, put_u32, put_u64, recv_wqe, send_wqe, send_wr, DmaInfo, RawRecvWqe, RawSendWqe,
    RawSendWr, Sge,
};
use super::queue::{FromClient, SharedBuf};
use super::send_wqe::UdDest;
use super::values::send_flags;

/// Why a kernel work request was not posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The ring has no free slot (`ENOMEM`, as rxe).
    Full,
    /// More SGEs than the queue was created for (`EINVAL`).
    TooManySges(usize),
    /// More inline bytes than the QP was created for (`EINVAL`).
    InlineTooLong(usize),
}

/// The remote half of a send work request (`ib_rdma_wr`, `ib_atomic_wr`,
/// `ib_ud_wr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Remote {
    /// SEND and local operations.
    #[default]
    None,
    /// RDMA WRITE/READ: the remote address and rkey.
    Rdma {
        /// Remote virtual address.
        addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomics: the remote address, operands and rkey.
    Atomic {
        /// Remote virtual address (8-byte aligned).
        addr: u64,
        /// Compare value (compare-and-swap) or addend (fetch-and-add).
        compare_add: u64,
        /// Swap value.
        swap: u64,
        /// Remote key.
        rkey: u32,
    },
    /// A send on a UD or GSI QP: the destination QP, its Q_Key and the
    /// number of the address handle to send through.
    Datagram(UdDest),
    /// REG_MR (`ib_reg_wr`): the region, by its key-table index, the iova
    /// it is registered at, the new key and the access flags.
    Reg {
        /// Key-table index of the region.
        mr_index: u32,
        /// `ib_mr.iova` at post time.
        iova: u64,
        /// The new key (lkey = rkey).
        key: u32,
        /// `IB_ACCESS_*` flags.
        access: u32,
    },
}

/// A kernel send work request, read out of its `ib_send_wr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSendWr {
    /// `wr_id` (or the `wr_cqe` pointer, as its bits).
    pub wr_id: u64,
    /// `ib_wr_opcode`, whose values are the ring's (`IB_WR_*` =
    /// `IB_UVERBS_WR_*`).
    pub opcode: u32,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// `ex`: immediate data (big-endian bytes) or the rkey to invalidate,
    /// as its four bytes in memory.
    pub ex: [u8; 4],
    /// The remote part.
    pub remote: Remote,
}

/// The payload of a send work request.
#[derive(Clone, Copy, Debug)]
pub enum SendPayload<'a> {
    /// Described by SGEs under lkeys.
    Sges(&'a [Sge]),
    /// Copied into the WQE (`IB_SEND_INLINE`), already gathered.
    Inline(&'a [u8]),
}

/// The queue-side limits of a kernel post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostLimits {
    /// SGEs per WQE the queue was created for.
    pub max_sge: u32,
    /// Inline bytes per WQE the QP was created for (send queues).
    pub max_inline: u32,
    /// Slot size of the ring.
    pub slot_size: usize,
}

fn sum_lengths(sges: &[Sge]) -> u32 {
    sges.iter().fold(0u32, |a, s| a.wrapping_add(s.length))
}

/// Writes `wr` into the next free slot of `ring` (a kernel-owned SQ) and
/// publishes it. The caller holds the lock that serialises the ring's
/// producers.
pub fn post_send<B: SharedBuf + ?Sized>(
    ring: &FromClient,
    buf: &B,
    limits: &PostLimits,
    wr: &KernelSendWr,
    payload: SendPayload<'_>,
) -> Result<(), PostError> {
    let (dma, data_len) = match payload {
        SendPayload::Sges(sges) => {
            if sges.len() > limits.max_sge as usize {
                return Err(PostError::TooManySges(sges.len()));
            }
            let sum = sum_lengths(sges);
            let dma = DmaInfo {
                length: sum,
                resid: sum,
                num_sge: sges.len() as u32,
                ..Default::default()
            };
            (dma, sges.len() * Sge::SIZE)
        }
        SendPayload::Inline(data) => {
            if data.len() > limits.max_inline as usize {
                return Err(PostError::InlineTooLong(data.len()));
            }
            let len = data.len() as u32;
            (
                DmaInfo {
                    length: len,
                    resid: len,
                    num_sge: 1,
                    ..Default::default()
                },
                data.len(),
            )
        }
    };
    if send_wqe::DATA + data_len > limits.slot_size {
        // The caps computed at create time make this impossible; refuse
        // rather than write past the slot.
        return Err(match payload {
            SendPayload::Sges(s) => PostError::TooManySges(s.len()),
            SendPayload::Inline(d) => PostError::InlineTooLong(d.len()),
        });
    }
    let off = ring.free_slot(buf).ok_or(PostError::Full)?;

    // The union's fields at their offsets inside it; the offsets are
    // constants within its 120 bytes, so the writes cannot fail.
    let mut union = [0u8; send_wr::WR_SIZE];
    let at = |field: usize| field - send_wr::WR;
    match wr.remote {
        Remote::None => {}
        Remote::Rdma { addr, rkey } => {
            let _ = put_u64(&mut union, at(send_wr::RDMA_REMOTE_ADDR), addr);
            let _ = put_u32(&mut union, at(send_wr::RDMA_RKEY), rkey);
        }
        Remote::Atomic {
            addr,
            compare_add,
            swap,
            rkey,
        } => {
            let _ = put_u64(&mut union, at(send_wr::ATOMIC_REMOTE_ADDR), addr);
            let _ = put_u64(&mut union, at(send_wr::ATOMIC_COMPARE_ADD), compare_add);
            let _ = put_u64(&mut union, at(send_wr::ATOMIC_SWAP), swap);
            let _ = put_u32(&mut union, at(send_wr::ATOMIC_RKEY), rkey);
        }
        Remote::Datagram(ud) => {
            let _ = put_u32(&mut union, at(send_wr::UD_REMOTE_QPN), ud.remote_qpn);
            let _ = put_u32(&mut union, at(send_wr::UD_REMOTE_QKEY), ud.remote_qkey);
            let _ = put_u16(&mut union, at(send_wr::UD_PKEY_INDEX), ud.pkey_index);
            let _ = put_u32(&mut union, at(send_wr::UD_AH_NUM), ud.ah_num);
        }
        Remote::Reg {
            mr_index,
            iova,
            key,
            access,
        } => {
            let _ = put_u32(&mut union, at(send_wr::REG_MR_INDEX), mr_index);
            let _ = put_u64(&mut union, at(send_wr::REG_IOVA), iova);
            let _ = put_u32(&mut union, at(send_wr::REG_KEY), key);
            let _ = put_u32(&mut union, at(send_wr::REG_ACCESS), access);
        }
    }
    let mut flags = wr.send_flags;
    if matches!(payload, SendPayload::Inline(_)) {
        flags |= send_flags::INLINE;
    } else {
        flags &= !send_flags::INLINE;
    }
    let hdr = RawSendWqe {
        wr: RawSendWr {
            wr_id: wr.wr_id,
            opcode: wr.opcode,
            send_flags: flags,
            ex: wr.ex,
            wr: union,
            ..Default::default()
        },
        dma,
        ..Default::default()
    };
    let mut bytes = [0u8; send_wqe::SIZE];
    // Cannot fail: `bytes` is exactly the header's size.
    let _ = hdr.encode(&mut bytes);
    buf.write_bytes(off, &bytes);
    match payload {
        SendPayload::Sges(sges) => write_sges(buf, off + send_wqe::DATA, sges),
        SendPayload::Inline(data) => buf.write_bytes(off + send_wqe::DATA, data),
    }
    ring.publish(buf);
    Ok(())
}

/// Writes a receive work request into the next free slot of `ring` (a
/// kernel-owned RQ or SRQ) and publishes it. The caller holds the lock
/// that serialises the ring's producers.
pub fn post_recv<B: SharedBuf + ?Sized>(
    ring: &FromClient,
    buf: &B,
    limits: &PostLimits,
    wr_id: u64,
    sges: &[Sge],
) -> Result<(), PostError> {
    if sges.len() > limits.max_sge as usize
        || recv_wqe::DATA + sges.len() * Sge::SIZE > limits.slot_size
    {
        return Err(PostError::TooManySges(sges.len()));
    }
    let off = ring.free_slot(buf).ok_or(PostError::Full)?;
    let sum = sum_lengths(sges);
    let hdr = RawRecvWqe {
        wr_id,
        dma: DmaInfo {
            length: sum,
            resid: sum,
            num_sge: sges.len() as u32,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut bytes = [0u8; recv_wqe::SIZE];
    // Cannot fail: `bytes` is exactly the header's size.
    let _ = hdr.encode(&mut bytes);
    buf.write_bytes(off, &bytes);
    write_sges(buf, off + recv_wqe::DATA, sges);
    ring.publish(buf);
    Ok(())
}

fn write_sges<B: SharedBuf + ?Sized>(buf: &B, mut off: usize, sges: &[Sge]) {
    for sge in sges {
        let mut bytes = [0u8; Sge::SIZE];
        // Cannot fail: `bytes` is exactly an SGE's size.
        let _ = sge.encode(&mut bytes);
        buf.write_bytes(off, &bytes);
        off += Sge::SIZE;
    }
}
