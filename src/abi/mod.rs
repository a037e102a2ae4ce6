// SPDX-License-Identifier: GPL-2.0

//! The user-space ABI of rxe, as pure code: the byte layouts librxe shares
//! with the driver (udata, queue header, WQEs, CQEs), the numeric values of
//! opcodes and flags, the shared rings as the kernel sees them, and the
//! one-shot copy-and-validate of the WQEs an untrusted process posts.
//!
//! Like `proto`, everything here uses `core` only and is compiled both into
//! `rdma_rxe.ko` and into the host crate in `host/`. The reference for
//! every byte is Documentation/rxe-abi-and-wire.md §1.

pub mod cq;
pub mod cqe;
pub mod kernel_post;
pub mod layout;
pub mod queue;
pub mod recv_wqe;
pub mod send_wqe;
pub mod sge;
pub mod values;
