// SPDX-License-Identifier: GPL-2.0

//! rdma_rxe: Soft-RoCE, the InfiniBand RC transport over UDP (RoCEv2) on any
//! Ethernet netdev, in Rust. A drop-in for the C driver of the same name.
//!
//! This file is the crate root: module registration and nothing else. The
//! pure protocol logic is in `proto`, the generic RDMA
//! layer in `ib` and the kernel wrappers in `sys`, which hold the `unsafe`.

use kernel::prelude::*;

pub mod abi;
mod ah;
mod attrs;
mod ceiling;
mod counters;
mod cq;
mod debugfs;
mod device;
mod driver;
mod fault;
mod ib;
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
mod ring;
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
    params: {
        packet_chains: bool {
            default: true,
            description: "Send a run of a QP's packets to one destination through the IP stack as one UDP GSO skb (a list of the whole packets, unchanged on the wire)",
        },
        tx_zero_copy: bool {
            default: true,
            description: "Send a packet's payload from the application's pinned pages, without a copy, where it lies in one page of a user memory region (256 bytes and more)",
        },
        rx_spread: bool {
            default: true,
            description: "Place an RC/UC QP's received payload on another CPU than the one that sends its packets (from work there), so one stream uses two CPUs",
        },
        stream_defer: bool {
            default: true,
            description: "Leave a user RC QP's stream of posts (none answering the peer's message or the wait for the last completion) to its transmit work, from the posting CPU too, instead of sending within the system call",
        },
        ack_req_coalesce: bool {
            default: true,
            description: "Ask for an ACK (BTH AckReq) on the last packet of a SEND or WRITE only when no packet follows it in the same transmit step (and every 32 packets): a stream of small messages draws an ACK per burst, not per message",
        },
        post_cpu_send: bool {
            default: true,
            description: "Send an RC QP's new requests from the CPU that posted them when all it sent is acknowledged (a ping-pong's next message), not from its transmit CPU",
        },
        recv_cpu_reply: bool {
            default: true,
            description: "Send an RC QP's replies (ACKs, NAKs, atomic ACKs, a short READ response) from the CPU that received the request when none of the QP's packets is in flight, not from its transmit CPU",
        },
        loopback_icrc: bool {
            default: false,
            description: "Compute and check the ICRC of packets on the driver's loopback path (to an address of this host), which never leave memory; off, they carry none and are not checked, as the stack skips checksums on lo",
        },
        reply_relay: bool {
            default: true,
            description: "Have an RC QP's receive work build the replies its reply work would wait for the QP lock to build, while the receive work holds it packet after packet; the reply work sends them",
        },
    },
}

/// Netdev notifier for netdevs with rxe devices on them.
static NETDEV_NOTIFIER: sys::net::NetdevNotifier = sys::net::NetdevNotifier::new();

/// The loaded module: what `init` set up, each undone when its field is
/// dropped, in field order: first the link type and every device (so
/// every QP, every transmit work item and every packet's sender), then
/// what they used.
struct RxeModule {
    /// The `rxe` link type; dropping it removes every device.
    _link: ib::LinkRegistration<driver::Rxe>,
    /// The netdev notifier.
    _notifier: sys::net::NotifierRegistration,
    /// The per-namespace sockets.
    _netns: sys::net::PernetRegistration<netns::NetnsSlot>,
    /// Sent packets' destructor and the loopback path.
    _tx: sys::skb::TxPath,
    /// The transmit workqueue.
    _workqueue: sys::work::TxWorkqueue,
    /// `/sys/kernel/debug/rdma_rxe`, and the unload message.
    _debugfs: debugfs::Registration,
}

/// The storage of the module's `rdma_link_ops`.
static LINK: ib::LinkStorage = ib::LinkStorage::new();

impl kernel::Module for RxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Module init runs once, before anything uses the module's
        // global locks (the `kernel` crate's `global_lock!` needs this one
        // call before the first use).
        unsafe {
            device::init();
            debugfs::init();
            rc::init();
            mw::init();
            netns::init();
        }
        let debugfs = debugfs::Registration::new();
        // SAFETY: Dropped after `_link`, which removes every device, so
        // every QP (whose transmit work is disabled when it goes).
        let workqueue = unsafe { sys::work::TxWorkqueue::new() }?;
        // SAFETY: Dropped after `_link`, which removes every device, so
        // everything that sends.
        let tx = unsafe { sys::skb::TxPath::new::<recv::Receiver>() }?;
        let netns = netns::register()?;
        let notifier = NETDEV_NOTIFIER.register(device::netdev_event)?;
        let link = ib::LinkRegistration::new(&LINK)?;
        pr_info!("loaded\n");
        Ok(RxeModule {
            _link: link,
            _notifier: notifier,
            _netns: netns,
            _tx: tx,
            _workqueue: workqueue,
            _debugfs: debugfs,
        })
    }
}
