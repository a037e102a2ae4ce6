// SPDX-License-Identifier: GPL-2.0

//! Per-device hardware counters (rxe-abi-and-wire.md §2.6): the C driver's seventeen
//! counters, with its names and in its order, as `rdma statistic show link
//! rxe0/1` and `/sys/class/infiniband/rxe0/ports/1/hw_counters/` show them.
//! The data path bumps them; ib_core reads them through `get_hw_stats`.

use core::{
    ffi::CStr,
    sync::atomic::{AtomicU64, Ordering},
};

/// One counter; the value is its index in [`NAMES`] and in the C driver's
/// `enum rxe_counters`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// Packets handed to the network.
    SentPkts,
    /// Packets received that passed header and ICRC checks.
    RcvdPkts,
    /// Duplicate requests received (PSN below the expected one).
    DuplicateRequest,
    /// Requests received ahead of the expected PSN.
    OutOfSeqRequest,
    /// RNR NAKs received.
    RcvdRnrErr,
    /// RNR NAKs sent.
    SendRnrErr,
    /// Sequence-error NAKs received.
    RcvdSeqErr,
    /// Times the requester deferred an ACK to its send task.
    AckDeferred,
    /// Retry counter ran out.
    RetryExceededErr,
    /// RNR retry counter ran out.
    RetryRnrExceededErr,
    /// Retransmissions started by the completer.
    CompleterRetryErr,
    /// Failed transmissions.
    SendErr,
    /// Link went down.
    LinkDowned,
    /// RDMA sends (SEND opcodes) transmitted.
    RdmaSends,
    /// RDMA receives (SEND opcodes) received.
    RdmaRecvs,
    /// Bytes of RoCE packets sent.
    SentBytes,
    /// Bytes of RoCE packets received.
    RcvdBytes,
}

/// Number of counters.
pub(crate) const COUNT: usize = 17;

/// Counter names, indexed by [`Counter`] (the C driver's `rxe_counter_descs`).
pub(crate) const NAMES: [&CStr; COUNT] = [
    c"sent_pkts",
    c"rcvd_pkts",
    c"duplicate_request",
    c"out_of_seq_request",
    c"rcvd_rnr_err",
    c"send_rnr_err",
    c"rcvd_seq_err",
    c"ack_deferred",
    c"retry_exceeded_err",
    c"retry_rnr_exceeded_err",
    c"completer_retry_err",
    c"send_err",
    c"link_downed",
    c"rdma_sends",
    c"rdma_recvs",
    c"sent_bytes",
    c"rcvd_bytes",
];

const _: () = assert!(Counter::RcvdBytes as usize + 1 == COUNT);

/// The counters of one device. All-zero memory is a valid, zeroed set (the
/// device is allocated zeroed by ib_core).
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Counters {
    /// Adds `n` to `counter`. Adding nothing touches nothing: each
    /// protocol step adds what it counted to several counters, mostly
    /// zero, and an atomic add is a write to a line every CPU of the device
    /// shares.
    pub(crate) fn add(&self, counter: Counter, n: u64) {
        if n != 0 {
            self.0[counter as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds one to `counter`.
    pub(crate) fn inc(&self, counter: Counter) {
        self.add(counter, 1);
    }

    /// Current values, in [`NAMES`] order.
    pub(crate) fn snapshot(&self) -> [u64; COUNT] {
        core::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }

    /// What the performance management agent reports.
    pub(crate) fn port_counters(&self) -> crate::proto::perf_mgmt::PortCounters {
        let get = |c: Counter| self.0[c as usize].load(Ordering::Relaxed);
        crate::proto::perf_mgmt::PortCounters {
            sent_bytes: get(Counter::SentBytes),
            rcvd_bytes: get(Counter::RcvdBytes),
            sent_pkts: get(Counter::SentPkts),
            rcvd_pkts: get(Counter::RcvdPkts),
            link_downed: get(Counter::LinkDowned),
        }
    }
}
