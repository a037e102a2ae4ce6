// SPDX-License-Identifier: GPL-2.0

//! The only place for `unsafe`: driver-local bindings and thin wrappers over
//! the C objects the driver touches (ib_device, net_device, UDP tunnel
//! sockets, per-namespace storage, the netdev notifier, rdma_link_ops).

pub(crate) mod ah;
pub(crate) mod bindings;
pub(crate) mod cq;
pub(crate) mod ib;
pub(crate) mod kva;
pub(crate) mod lock;
pub(crate) mod mr;
pub(crate) mod net;
pub(crate) mod post;
pub(crate) mod qp;
pub(crate) mod queue;
pub(crate) mod skb;
pub(crate) mod srq;
pub(crate) mod table;
pub(crate) mod timer;
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

/// The driver's debugfs directory, `rdma_rxe/`: module-wide counters.
pub(crate) mod debugfs {
    use super::bindings;
    use core::{ffi::CStr, sync::atomic::AtomicU64};

    /// Creates the directory (without debugfs, nothing: the files are
    /// only for inspection).
    ///
    /// # Safety
    ///
    /// Called once, from module init, balanced by [`exit`].
    pub(crate) unsafe fn init() {
        // SAFETY: Once, by the caller's promise.
        unsafe { bindings::rxe_glue_debugfs_init() };
    }

    /// Adds a read-only file `name` showing `value`.
    ///
    /// # Safety
    ///
    /// Between [`init`] and [`exit`], from module init.
    pub(crate) unsafe fn add_counter(name: &CStr, value: &'static AtomicU64) {
        // SAFETY: The directory exists (our contract); `value` lives for
        // ever, so past the file's removal in `exit`; debugfs reads it as
        // a `u64`, which `AtomicU64` is in memory; the name is copied.
        unsafe { bindings::rxe_glue_debugfs_u64(name.as_ptr().cast(), value.as_ptr()) };
    }

    /// Removes the directory and its files.
    ///
    /// # Safety
    ///
    /// Called once, from module exit, after [`init`].
    pub(crate) unsafe fn exit() {
        // SAFETY: Once, by the caller's promise.
        unsafe { bindings::rxe_glue_debugfs_exit() };
    }
}
