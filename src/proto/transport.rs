// SPDX-License-Identifier: GPL-2.0

//! Plain values shared by the RC responder and requester machines: the
//! action sink, path MTU, remote ranges, atomic arguments and completion
//! status codes.
//!
//! The machines take these small structs as input instead of parsed wire
//! headers, so the driver translates a parsed packet into them in one place.

use crate::proto::opcode::Position;
use crate::proto::psn::Psn;

/// Where a state machine pushes the actions one step produces.
///
/// Any `FnMut(A)` closure is a sink, so a caller can act on each action at
/// once or collect them into a bounded buffer of its own.
pub trait ActionSink<A> {
    /// Accepts one action.
    fn push(&mut self, action: A);
}

impl<A, F: FnMut(A)> ActionSink<A> for F {
    fn push(&mut self, action: A) {
        self(action)
    }
}

/// A path MTU: one of 256, 512, 1024, 2048 or 4096 bytes.
///
/// # Invariants
///
/// The inner value is a power of two in `256..=4096`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mtu(u32);

impl Mtu {
    /// 256 bytes, the path MTU until `modify_qp` sets one.
    pub const MTU_256: Mtu = Mtu(256);
    /// 1024 bytes.
    pub const MTU_1024: Mtu = Mtu(1024);
    /// 4096 bytes, the largest path MTU.
    pub const MTU_4096: Mtu = Mtu(4096);

    /// The MTU of `bytes`, if it is one of the five IBTA path MTUs.
    pub const fn new(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 | 512 | 1024 | 2048 | 4096 => Some(Mtu(bytes)),
            _ => None,
        }
    }

    /// The MTU in bytes.
    pub const fn bytes(self) -> u32 {
        self.0
    }

    /// Packets a message of `len` bytes needs: `ceil(len / mtu)`, at least 1.
    pub const fn packets(self, len: u32) -> u32 {
        // Every MTU is a power of two: a shift, with no division (and no
        // division-by-zero panic path in the data path).
        if len == 0 {
            1
        } else {
            ((len - 1) >> self.0.trailing_zeros()) + 1
        }
    }
}

/// The position of a packet carrying `resid` remaining bytes of a message,
/// when `first` says whether it is the message's first packet.
pub const fn packet_position(first: bool, resid: u32, mtu: Mtu) -> Position {
    Position::from_flags(first, resid <= mtu.bytes())
}

/// A remote memory range, as carried by a RETH: virtual address, key, length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteRange {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key (rkey).
    pub rkey: u32,
    /// DMA length in bytes.
    pub len: u32,
}

impl RemoteRange {
    /// Whether `other` lies entirely inside `self` under the same rkey.
    pub fn contains(&self, other: &RemoteRange) -> bool {
        let self_end = u128::from(self.va) + u128::from(self.len);
        let other_end = u128::from(other.va) + u128::from(other.len);
        other.rkey == self.rkey && other.va >= self.va && other_end <= self_end
    }
}

/// The operation of an atomic request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `if *va == compare { *va = swap }`.
    CompareSwap {
        /// Value compared with the target.
        compare: u64,
        /// Value stored when equal.
        swap: u64,
    },
    /// `*va += add`.
    FetchAdd {
        /// Value added to the target.
        add: u64,
    },
    /// `*va = value` as one 8-byte store (ATOMIC_WRITE, whose request
    /// carries the value as its payload, not in an AtomicETH).
    Write {
        /// Value stored.
        value: u64,
    },
}

/// An atomic request's AtomicETH: target, key and operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicArgs {
    /// Remote virtual address of the 8-byte target (must be 8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// The operation.
    pub op: AtomicOp,
}

/// Access a remote operation needs from the key table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteAccess {
    /// RDMA READ.
    Read,
    /// RDMA WRITE.
    Write,
    /// Atomic compare-and-swap or fetch-and-add.
    Atomic,
    /// FLUSH of the placement types named (IB_FLUSH_GLOBAL, IB_FLUSH_PERSISTENT).
    Flush {
        /// Global visibility.
        global: bool,
        /// Persistence.
        persistent: bool,
    },
}

/// FLUSH placement type bits (FETH; `IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`).
pub const FLUSH_GLOBAL: u8 = 1 << 0;
/// See [`FLUSH_GLOBAL`].
pub const FLUSH_PERSISTENT: u8 = 1 << 1;
/// FLUSH selectivity level: the range the RETH names (`IB_FLUSH_RANGE`).
pub const FLUSH_RANGE: u8 = 0;
/// FLUSH selectivity level: the whole region the rkey names (`IB_FLUSH_MR`).
pub const FLUSH_MR: u8 = 1;

/// Work completion status, with the `ib_wc_status` numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CompletionStatus {
    /// IB_WC_SUCCESS.
    Success = 0,
    /// IB_WC_LOC_LEN_ERR: a message did not fit the receive buffer.
    LocalLengthError = 1,
    /// IB_WC_LOC_QP_OP_ERR.
    LocalQpOperationError = 2,
    /// IB_WC_LOC_PROT_ERR.
    LocalProtectionError = 4,
    /// IB_WC_WR_FLUSH_ERR: flushed because the QP is in ERROR.
    FlushError = 5,
    /// IB_WC_BAD_RESP_ERR: the responder answered with a malformed response.
    BadResponseError = 7,
    /// IB_WC_REM_INV_REQ_ERR: NAK invalid request.
    RemoteInvalidRequestError = 9,
    /// IB_WC_REM_ACCESS_ERR: NAK remote access error.
    RemoteAccessError = 10,
    /// IB_WC_REM_OP_ERR: NAK remote operational error.
    RemoteOperationError = 11,
    /// IB_WC_RETRY_EXC_ERR: transport retries exhausted.
    RetryExceededError = 12,
    /// IB_WC_RNR_RETRY_EXC_ERR: RNR retries exhausted.
    RnrRetryExceededError = 13,
}

/// The family of a request packet's opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestOp {
    /// SEND (any variant).
    Send,
    /// RDMA WRITE (any variant).
    Write,
    /// RDMA READ request.
    Read,
    /// COMPARE_SWAP or FETCH_ADD.
    Atomic,
    /// ATOMIC_WRITE: the RETH names the 8-byte target, `atomic` carries
    /// the value ([`AtomicOp::Write`]).
    AtomicWrite,
    /// FLUSH, with its FETH.
    Flush {
        /// Placement type bits ([`FLUSH_GLOBAL`], [`FLUSH_PERSISTENT`]).
        placement: u8,
        /// Selectivity level ([`FLUSH_RANGE`], [`FLUSH_MR`]).
        selectivity: u8,
    },
    /// An opcode this responder does not implement.
    Unsupported,
}

/// An inbound request packet, reduced to what the responder decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestPacket {
    /// BTH PSN.
    pub psn: Psn,
    /// Opcode family.
    pub op: RequestOp,
    /// Opcode position in its message.
    pub position: Position,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// Payload bytes (after removing the pad and the ICRC).
    pub payload_len: u32,
    /// RETH, for WRITE FIRST/ONLY and READ requests.
    pub reth: Option<RemoteRange>,
    /// AtomicETH, for atomics.
    pub atomic: Option<AtomicArgs>,
    /// Immediate data (SEND/WRITE ..._WITH_IMMEDIATE).
    pub imm: Option<u32>,
    /// IETH rkey (SEND ..._WITH_INVALIDATE).
    pub invalidate_rkey: Option<u32>,
}

/// Increment of a 24-bit message sequence number.
pub(crate) const fn msn_next(msn: u32) -> u32 {
    msn.wrapping_add(1) & 0x00ff_ffff
}
