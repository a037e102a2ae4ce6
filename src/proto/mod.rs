// SPDX-License-Identifier: GPL-2.0

//! Pure RoCEv2 protocol logic: header codecs, the opcode table, ICRC, PSN
//! arithmetic and the RC responder and requester state machines.
//!
//! Everything under this module uses `core` only. The same files are compiled
//! into `rdma_rxe.ko` and into the host crate in `host/`, where `cargo test`
//! exercises them. Timers and the network are inputs and outputs of the state
//! machines, never calls.

pub mod access;
pub mod admission;
pub mod aeth;
pub mod datagram;
pub mod error;
pub mod fault;
pub mod headers;
pub mod icrc;
pub mod multicast;
pub mod opcode;
pub mod packet;
pub mod perf_mgmt;
pub mod psn;
pub mod qp_attr;
pub mod replay;
pub mod requester;
pub mod responder;
pub mod rtt;
pub mod translate;
pub mod transport;
pub mod window;
pub mod work_request;
