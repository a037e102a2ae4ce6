// SPDX-License-Identifier: GPL-2.0

//! The only place for `unsafe`: driver-local bindings and thin wrappers over
//! the C objects the driver touches (ib_device, net_device, UDP tunnel
//! sockets, per-namespace storage, the netdev notifier, rdma_link_ops).

pub(crate) mod ah;
pub(crate) mod bindings;
pub(crate) mod cq;
pub(crate) mod crc;
pub(crate) mod device_box;
pub(crate) mod ib;
pub(crate) mod kva;
pub(crate) mod lock;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod net;
pub(crate) mod odp;
pub(crate) mod post;
pub(crate) mod qp;
pub(crate) mod queue;
pub(crate) mod skb;
pub(crate) mod srq;
pub(crate) mod table;
pub(crate) mod timer;
pub(crate) mod trace;
pub(crate) mod work;

/// Number of possible CPUs (`num_possible_cpus()`).
pub(crate) fn possible_cpus() -> u32 {
    // SAFETY: Reads a boot-time constant mask.
    unsafe { bindings::rxe_glue_num_possible_cpus() }
}

/// The CPU's cache-line size (`cache_line_size()`).
pub(crate) fn cache_line_size() -> usize {
    // SAFETY: Reads a boot-time constant.
    unsafe { bindings::rxe_glue_cache_line_size() as usize }
}

/// A random locally administered unicast MAC address (`eth_random_addr`),
/// for netdevs that have no hardware address.
pub(crate) fn random_mac() -> [u8; 6] {
    let mut mac = [0u8; 6];
    // SAFETY: `mac` has the 6 bytes the call writes.
    unsafe { bindings::rxe_glue_eth_random_addr(mac.as_mut_ptr()) };
    mac
}

/// Logs a packet dropped for a bad ICRC, at most a few lines every few
/// seconds (`pr_warn_ratelimited`): the peer decides how many arrive.
pub(crate) fn warn_bad_icrc() {
    // SAFETY: No requirements.
    unsafe { bindings::rxe_glue_warn_bad_icrc() };
}
