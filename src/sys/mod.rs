// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over the kernel's C objects that the driver touches
//! and the `kernel` crate of 7.3 does not cover (net_device, UDP tunnel
//! sockets, per-namespace storage, the netdev notifier, skbs, timer_list,
//! the transmit workqueue, ib_umem, vmalloc_user rings and their mmap
//! entries), with the bindings they use. Like `crate::ib` it imports no
//! driver module; with it, it holds the driver's `unsafe`.

pub(crate) mod bindings;
pub(crate) mod crc;
pub(crate) mod device_box;
pub(crate) mod kva;
pub(crate) mod lock;
pub(crate) mod net;
pub(crate) mod odp;
pub(crate) mod queue;
pub(crate) mod skb;
pub(crate) mod table;
pub(crate) mod timer;
pub(crate) mod trace;
pub(crate) mod umem;
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

/// A random byte (`get_random_u8`).
pub(crate) fn random_u8() -> u8 {
    // SAFETY: Always safe to call.
    unsafe { bindings::get_random_u8() }
}

/// Whether hard interrupts are off here.
pub(crate) fn irqs_off() -> bool {
    // SAFETY: Reads the CPU's interrupt state.
    unsafe { bindings::rxe_glue_irqs_off() }
}
