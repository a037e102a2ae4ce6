// SPDX-License-Identifier: GPL-2.0

//! From a send WQE copied out of the user's ring and validated
//! ([`crate::abi::send_wqe::SendWqe`]) to the work request the RC requester
//! runs ([`crate::proto::replay::SendWqe`]): the operations that become
//! packets on an RC QP, with their remote targets, and which ones do not
//! (local operations, and the extensions this transport does not carry yet).

use crate::abi::send_wqe::{SendOp, SendWqe as PostedWqe};
use crate::abi::values::WrOpcode;
use crate::proto::replay::{SendWqe, WqeOp};
use crate::proto::transport::{AtomicArgs, AtomicOp};

/// Why a posted WQE does not become requester work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotTransport {
    /// A local operation (LOCAL_INV, BIND_MW, REG_MR): done by the driver
    /// itself, in order with the send queue, without packets.
    Local,
    /// An operation this RC transport does not carry (READ_WITH_INV, a UD
    /// destination): completed with an error.
    Unsupported,
}

/// The requester's work request for `wqe`, identified by `id` (the SQ
/// index the completion refers back to).
pub fn requester_wqe(id: u64, wqe: &PostedWqe) -> Result<SendWqe, NotTransport> {
    let op = match wqe.op {
        SendOp::Send { ud: Some(_), .. } => return Err(NotTransport::Unsupported),
        SendOp::Send {
            imm,
            invalidate_rkey,
            ud: None,
        } => WqeOp::Send {
            imm: imm.map(u32::from_be_bytes),
            invalidate_rkey,
        },
        SendOp::Write { remote, imm } => WqeOp::Write {
            va: remote.addr,
            rkey: remote.rkey,
            imm: imm.map(u32::from_be_bytes),
        },
        SendOp::Read {
            remote,
            invalidate_rkey: None,
        } => WqeOp::Read {
            va: remote.addr,
            rkey: remote.rkey,
        },
        SendOp::Read { .. } => return Err(NotTransport::Unsupported),
        SendOp::Atomic {
            remote,
            compare_add,
            swap,
        } => {
            let op = match wqe.opcode {
                WrOpcode::AtomicCmpAndSwp => AtomicOp::CompareSwap {
                    compare: compare_add,
                    swap,
                },
                _ => AtomicOp::FetchAdd { add: compare_add },
            };
            WqeOp::Atomic(AtomicArgs {
                va: remote.addr,
                rkey: remote.rkey,
                op,
            })
        }
        SendOp::LocalInv { .. } | SendOp::BindMw { .. } | SendOp::RegMr { .. } => {
            return Err(NotTransport::Local)
        }
        SendOp::AtomicWrite { remote, value } => WqeOp::Atomic(AtomicArgs {
            va: remote.addr,
            rkey: remote.rkey,
            op: AtomicOp::Write {
                value: u64::from_ne_bytes(value),
            },
        }),
        SendOp::Flush {
            remote,
            length,
            flush_type,
            level,
        } => WqeOp::Flush {
            va: remote.addr,
            rkey: remote.rkey,
            len: length,
            placement: flush_type,
            selectivity: level,
        },
    };
    let length = match op {
        WqeOp::Atomic(_) => 8,
        // Its completion reports the length flushed, as rxe's does.
        WqeOp::Flush { len, .. } => len,
        _ => wqe.total_len,
    };
    Ok(SendWqe { id, op, length })
}
