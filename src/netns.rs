// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 UDP sockets: one IPv4 and one IPv6 socket on port 4791 in each
//! network namespace that holds at least one rxe device, created with the
//! first device there and released with the last one (or when the namespace
//! dies).

use crate::{
    recv,
    sys::{
        bindings,
        net::{Net, Pernet, UdpTunnelSock},
    },
};
use kernel::prelude::*;

/// The sockets of one namespace. Zero-initialised by the network core,
/// which makes both `None` and the count 0.
pub(crate) struct NetnsSockets {
    /// IPv4 socket.
    v4: Option<UdpTunnelSock>,
    /// IPv6 socket; `None` also when the kernel has no IPv6.
    v6: Option<UdpTunnelSock>,
    /// rxe devices using the sockets.
    devices: u32,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in `init` before any other use.
    unsafe(uninit) static NETNS_LOCK: Mutex<()> = ();
}

static PERNET: Pernet<NetnsSockets> = Pernet::new();

/// Sets up per-namespace socket storage.
///
/// # Safety
///
/// Called once from module init, balanced by [`exit`].
pub(crate) unsafe fn init() -> Result {
    // SAFETY: Called once, before any use of the lock.
    unsafe { NETNS_LOCK.init() };
    // SAFETY: Called once; all-zero `NetnsSockets` is valid (two `None`s
    // over non-null pointers and a zero count).
    unsafe { PERNET.register(netns_exit_callback) }
}

/// Tears down per-namespace socket storage, releasing remaining sockets.
///
/// # Safety
///
/// [`init`] succeeded; called once from module exit.
pub(crate) unsafe fn exit() {
    // SAFETY: Registered by `init`.
    unsafe { PERNET.unregister() };
}

/// Runs `f` on `net`'s sockets with the netns lock held.
fn with_sockets<R>(net: &Net, f: impl FnOnce(&mut NetnsSockets) -> R) -> R {
    let _guard = NETNS_LOCK.lock();
    // SAFETY: The storage is registered while the module lives; `net` is
    // alive for the call; the lock serialises all accesses.
    let sockets = unsafe { &mut *PERNET.get(net) };
    f(sockets)
}

/// Takes a use of `net`'s sockets for a new device, creating them if it is
/// the first one.
pub(crate) fn acquire_sockets(net: &Net) -> Result {
    with_sockets(net, |s| {
        if s.devices == 0 {
            let port = bindings::RXE_GLUE_ROCE_V2_UDP_DPORT;
            let v4 = UdpTunnelSock::new(net, false, port, recv::udp_encap_recv).inspect_err(|_| {
                pr_err!("failed to create IPv4 UDP tunnel\n");
            })?;
            let v6 = match UdpTunnelSock::new(net, true, port, recv::udp_encap_recv) {
                Ok(sock) => Some(sock),
                Err(e) if e == EAFNOSUPPORT => {
                    pr_warn!("IPv6 is not supported, can not create a UDPv6 socket\n");
                    None
                }
                Err(e) => {
                    pr_err!("failed to create IPv6 UDP tunnel\n");
                    return Err(e);
                }
            };
            s.v4 = Some(v4);
            s.v6 = v6;
        }
        s.devices += 1;
        Ok(())
    })
}

/// Gives back a device's use of the sockets of namespace `net`; the last
/// use closes them.
pub(crate) fn release_sockets(net: *mut bindings::net) {
    // SAFETY: A device's namespace outlives its socket use: the netdev
    // notifier releases the use before the namespace's pernet exit runs.
    let net = unsafe { Net::from_raw(net) };
    let closing = with_sockets(net, |s| {
        s.devices = s.devices.saturating_sub(1);
        if s.devices == 0 {
            (s.v4.take(), s.v6.take())
        } else {
            (None, None)
        }
    });
    drop(closing);
}

unsafe extern "C" fn netns_exit_callback(net: *mut bindings::net) {
    // SAFETY: The network core calls this for a namespace being dismantled,
    // still valid for the call.
    let net = unsafe { Net::from_raw(net) };
    let closing = with_sockets(net, |s| {
        if s.devices != 0 {
            pr_warn!("namespace exits with {} rxe device(s) still using it\n", s.devices);
        }
        s.devices = 0;
        (s.v4.take(), s.v6.take())
    });
    drop(closing);
}
