// SPDX-License-Identifier: GPL-2.0

//! The requester's replay buffer: every send WQE from posting until it
//! completes, with the PSN range it was given, so that any PSN can be mapped
//! back to its WQE and byte offset and retransmitted from there.
//!
//! The requester keeps no packet copies: a packet is rebuilt from its WQE
//! (the caller's copy of the validated work request) and the byte offset.

use crate::proto::psn::Psn;
use crate::proto::transport::{AtomicArgs, Mtu};

/// The operation of a send work request, with its remote target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeOp {
    /// SEND, SEND_WITH_IMM or SEND_WITH_INV.
    Send {
        /// Immediate data for SEND_WITH_IMM.
        imm: Option<u32>,
        /// Rkey for SEND_WITH_INV.
        invalidate_rkey: Option<u32>,
    },
    /// RDMA_WRITE or RDMA_WRITE_WITH_IMM.
    Write {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data for RDMA_WRITE_WITH_IMM.
        imm: Option<u32>,
    },
    /// RDMA_READ into the local buffers.
    Read {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
    },
    /// ATOMIC_CMP_AND_SWP or ATOMIC_FETCH_AND_ADD (8 bytes), or
    /// ATOMIC_WRITE ([`crate::proto::transport::AtomicOp::Write`]).
    Atomic(AtomicArgs),
    /// FLUSH of `len` bytes at `va` (or of the whole region, by
    /// `selectivity`).
    Flush {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Bytes to flush (the RETH's length).
        len: u32,
        /// Placement type bits.
        placement: u8,
        /// Selectivity level.
        selectivity: u8,
    },
}

impl WqeOp {
    /// Whether this is answered by a response that only the responder's
    /// resources can replay (READ, atomics, ATOMIC_WRITE, FLUSH): it needs
    /// an rd_atomic credit, and a plain ACK does not complete it.
    pub const fn is_read_or_atomic(&self) -> bool {
        matches!(
            self,
            WqeOp::Read { .. } | WqeOp::Atomic(_) | WqeOp::Flush { .. }
        )
    }

    /// Whether a zero-length READ RESPONSE ONLY answers it (ATOMIC_WRITE
    /// and FLUSH).
    pub const fn answered_by_empty_read_response(&self) -> bool {
        matches!(
            self,
            WqeOp::Flush { .. }
                | WqeOp::Atomic(AtomicArgs {
                    op: crate::proto::transport::AtomicOp::Write { .. },
                    ..
                })
        )
    }
}

/// A validated send work request, as the requester needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// Caller's handle for the WQE (e.g. the SQ index or wr_id).
    pub id: u64,
    /// Operation.
    pub op: WqeOp,
    /// Total length in bytes (gathered for SEND/WRITE, scattered for READ;
    /// 8 for atomics; for FLUSH the length flushed, which its one packet
    /// names and its completion reports).
    pub length: u32,
}

impl SendWqe {
    /// PSNs this WQE occupies: one per request packet for SEND/WRITE, one per
    /// response packet for READ, one for an atomic.
    pub fn packets(&self, mtu: Mtu) -> u32 {
        match self.op {
            WqeOp::Atomic(_) | WqeOp::Flush { .. } => 1,
            _ => mtu.packets(self.length),
        }
    }
}

/// A WQE in the replay buffer and its transmission state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayEntry {
    /// The work request.
    pub wqe: SendWqe,
    /// PSN of its first packet (valid once `sent`).
    pub first_psn: Psn,
    /// PSN of its last packet (valid once `sent`).
    pub last_psn: Psn,
    /// Whether its first packet has been transmitted.
    pub sent: bool,
    /// Whether it holds an rd_atomic credit.
    pub holds_credit: bool,
    /// READ: response bytes placed so far.
    pub read_received: u32,
}

/// The bounded window of WQEs not yet completed, oldest first.
#[derive(Debug)]
pub struct ReplayBuffer<const N: usize> {
    slots: [Option<ReplayEntry>; N],
    head: usize,
    len: usize,
}

/// The replay buffer (send queue) is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayBufferFull;

impl<const N: usize> Default for ReplayBuffer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReplayBuffer<N> {
    /// An empty buffer.
    pub fn new() -> Self {
        ReplayBuffer {
            slots: [None; N],
            head: 0,
            len: 0,
        }
    }

    /// Empties the buffer in place (QP reset), without building a new one.
    pub fn clear(&mut self) {
        for slot in self.slots.iter_mut() {
            *slot = None;
        }
        self.head = 0;
        self.len = 0;
    }

    /// WQEs held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no WQE is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether another WQE fits.
    pub fn is_full(&self) -> bool {
        self.len >= N
    }

    fn slot(&self, i: usize) -> usize {
        if N == 0 {
            0
        } else {
            (self.head + i) % N
        }
    }

    /// Appends a newly posted WQE.
    pub fn push(&mut self, wqe: SendWqe) -> Result<(), ReplayBufferFull> {
        if self.is_full() {
            return Err(ReplayBufferFull);
        }
        let at = self.slot(self.len);
        let slot = self.slots.get_mut(at).ok_or(ReplayBufferFull)?;
        *slot = Some(ReplayEntry {
            wqe,
            first_psn: Psn::new(0),
            last_psn: Psn::new(0),
            sent: false,
            holds_credit: false,
            read_received: 0,
        });
        self.len += 1;
        Ok(())
    }

    /// The `i`-th oldest entry.
    pub fn get(&self, i: usize) -> Option<&ReplayEntry> {
        if i >= self.len {
            return None;
        }
        self.slots.get(self.slot(i))?.as_ref()
    }

    /// The `i`-th oldest entry, mutably.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut ReplayEntry> {
        if i >= self.len {
            return None;
        }
        let at = self.slot(i);
        self.slots.get_mut(at)?.as_mut()
    }

    /// The oldest entry.
    pub fn front(&self) -> Option<&ReplayEntry> {
        self.get(0)
    }

    /// Removes and returns the oldest entry.
    pub fn pop_front(&mut self) -> Option<ReplayEntry> {
        if self.len == 0 {
            return None;
        }
        let at = self.slot(0);
        let entry = self.slots.get_mut(at)?.take();
        self.head = self.slot(1);
        self.len -= 1;
        entry
    }

    /// Maps `psn` to the index of the sent WQE whose range holds it and the
    /// byte offset of that PSN's packet within the WQE.
    pub fn locate(&self, psn: Psn, mtu: Mtu) -> Option<(usize, u32)> {
        (0..self.len).find_map(|i| {
            let e = self.get(i)?;
            if e.sent && psn.within(e.first_psn, e.last_psn) {
                let k = u64::from(psn.distance_from(e.first_psn));
                let offset = (k * u64::from(mtu.bytes())).min(u64::from(e.wqe.length));
                Some((i, u32::try_from(offset).unwrap_or(e.wqe.length)))
            } else {
                None
            }
        })
    }
}
