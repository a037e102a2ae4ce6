// SPDX-License-Identifier: GPL-2.0

//! rdma_rxe: Soft-RoCE, the InfiniBand RC transport over UDP (RoCEv2) on any
//! Ethernet netdev, in Rust. A drop-in for the C driver of the same name.
//!
//! This file is the crate root: module registration and nothing else. The
//! pure protocol logic is in `proto`, every `unsafe` in `sys`.

use kernel::prelude::*;

pub mod abi;
mod ah;
mod ceiling;
mod counters;
mod cq;
mod debugfs;
mod device;
mod fault;
mod mr;
mod multicast;
mod mw;
mod netns;
mod odp;
mod params;
pub mod proto;
mod qp;
mod rc;
mod recv;
mod srq;
mod sys;
mod verbs;

module! {
    type: RxeModule,
    name: "rdma_rxe",
    authors: ["rxe-rs developers"],
    description: "Soft RDMA transport (RoCEv2), in Rust",
    license: "GPL",
    alias: ["rdma-link-rxe"],
}

/// Netdev notifier for netdevs with rxe devices on them.
static NETDEV_NOTIFIER: sys::net::NetdevNotifier = sys::net::NetdevNotifier::new();

/// The netdev notifier's callback: passes the event on to the devices.
///
/// # Safety
///
/// Called only by the netdev notifier chain, with the event and its
/// `netdev_notifier_info`, whose device stays valid for the call.
unsafe extern "C" fn netdev_notifier_callback(
    _nb: *mut sys::bindings::notifier_block,
    event: c_ulong,
    ptr: *mut c_void,
) -> c_int {
    // SAFETY: Called by the netdev notifier chain with its info pointer.
    let (event, ndev) = unsafe { sys::net::NetdevNotifier::decode(event, ptr) };
    device::netdev_event(event, ndev);
    sys::bindings::NOTIFY_OK as c_int
}

/// The loaded module: everything registered in `init` is undone in `drop`.
struct RxeModule;

impl kernel::Module for RxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Module init runs once, before the link type is registered.
        unsafe { device::init() };
        // SAFETY: Module init runs once, before any device exists.
        unsafe { debugfs::init() };
        // SAFETY: Module init runs once, before any device exists.
        unsafe { rc::init() };
        // SAFETY: Module init runs once, before any device exists.
        unsafe { mw::init() };
        // SAFETY: Once, at init, before any device (so any packet) exists.
        unsafe { sys::skb::loopback_init(recv::loopback_recv) };
        // SAFETY: Once, at init, before any device (so any packet) exists.
        unsafe { sys::skb::tx_init() };
        // SAFETY: Once, at init, before any QP (so any transmit work)
        // exists; `exit` in `drop` or below balances it.
        if let Err(e) = unsafe { sys::work::init() } {
            // SAFETY: No device, so no packet, exists yet.
            unsafe { sys::skb::loopback_exit() };
            debugfs::exit();
            return Err(e);
        }
        // SAFETY: Module init runs once; `exit` in `drop` balances it.
        if let Err(e) = unsafe { netns::init() } {
            // SAFETY: Created above; no QP exists.
            unsafe { sys::work::exit() };
            // SAFETY: No device, so no packet, exists yet.
            unsafe { sys::skb::loopback_exit() };
            debugfs::exit();
            return Err(e);
        }
        // SAFETY: Registered once here, unregistered in `drop`.
        if let Err(e) = unsafe { NETDEV_NOTIFIER.register(netdev_notifier_callback) } {
            // SAFETY: `netns::init` succeeded above.
            unsafe { netns::exit() };
            // SAFETY: Created above; no QP exists.
            unsafe { sys::work::exit() };
            // SAFETY: No device, so no packet, exists yet.
            unsafe { sys::skb::loopback_exit() };
            debugfs::exit();
            return Err(e);
        }
        sys::ib::register_link_ops();
        pr_info!("loaded\n");
        Ok(RxeModule)
    }
}

impl Drop for RxeModule {
    fn drop(&mut self) {
        sys::ib::unregister_link_ops();
        sys::ib::unregister_all_devices();
        // SAFETY: Registered in `init`.
        unsafe { NETDEV_NOTIFIER.unregister() };
        // SAFETY: `netns::init` succeeded in `init`.
        unsafe { netns::exit() };
        // Packets sent while the devices went away hold no module
        // reference that could have kept the module: their destructors
        // must still find its code.
        sys::skb::wait_sent_packets();
        // SAFETY: Once, at exit; every device, so every QP, is gone.
        unsafe { sys::skb::loopback_exit() };
        // SAFETY: Created in `init`; every QP, so every transmit work, is
        // gone.
        unsafe { sys::work::exit() };
        debugfs::exit();
        pr_info!(
            "unloaded ({} datagrams dropped on receive)\n",
            recv::dropped()
        );
    }
}
