// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 UDP sockets: one IPv4 and one IPv6 socket on port 4791 in each
//! network namespace that holds at least one rxe device, created with the
//! first device there and released with the last one (or when the namespace
//! dies).

use crate::{
    recv,
    sys::{
        bindings,
        net::{Net, Pernet, PernetRegistration, UdpTunnelSock},
    },
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// What a namespace's storage holds: the namespace's sockets, shared with
/// the rxe devices there. Zero-initialised by the network core (`None`).
pub(crate) struct NetnsSlot {
    sockets: Option<Arc<NetnsSockets>>,
}

/// The sockets of one namespace. The namespace's storage and every rxe
/// device on a netdev there hold a reference, so a device that outlives
/// the namespace (its last release comes after the namespace's exit) finds
/// the sockets closed here and never touches the dead namespace.
#[pin_data]
pub(crate) struct NetnsSockets {
    #[pin]
    inner: Mutex<SocketsInner>,
}

struct SocketsInner {
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

static PERNET: Pernet<NetnsSlot> = Pernet::new();

/// Prepares the namespace lock.
///
/// # Safety
///
/// Called once, from module init, before [`register`].
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { NETNS_LOCK.init() };
}

/// Sets up per-namespace socket storage until the result is dropped
/// (which releases the sockets left in every namespace).
pub(crate) fn register() -> Result<PernetRegistration<NetnsSlot>> {
    PERNET.register(netns_exit_callback)
}

// SAFETY: All-zero is `None`: `Arc` is a non-null pointer, whose niche
// `None` uses.
unsafe impl pin_init::Zeroable for NetnsSlot {}

/// Runs `f` on `net`'s storage with the netns lock held.
fn with_slot<R>(net: &Net, f: impl FnOnce(&mut NetnsSlot) -> R) -> R {
    let _guard = NETNS_LOCK.lock();
    // SAFETY: The storage is registered while the module lives; `net` is
    // alive for the call; the lock serialises all accesses.
    let slot = unsafe { &mut *PERNET.get(net) };
    f(slot)
}

/// Takes a use of `net`'s sockets for a new device, creating them if it is
/// the first one; the device keeps the returned reference and gives the
/// use back with [`release_sockets`].
pub(crate) fn acquire_sockets(net: &Net) -> Result<Arc<NetnsSockets>> {
    with_slot(net, |slot| {
        let sockets = match &slot.sockets {
            Some(s) => s.clone(),
            None => {
                let s = Arc::pin_init(
                    pin_init!(NetnsSockets {
                        inner <- new_mutex!(
                            SocketsInner { v4: None, v6: None, devices: 0 },
                            "NetnsSockets::inner"
                        ),
                    }),
                    GFP_KERNEL,
                )?;
                slot.sockets = Some(s.clone());
                s
            }
        };
        {
            let mut s = sockets.inner.lock();
            if s.devices == 0 {
                let port = bindings::RXE_GLUE_ROCE_V2_UDP_DPORT;
                let v4 =
                    UdpTunnelSock::new::<recv::Receiver>(net, false, port).inspect_err(|_| {
                        pr_err!("failed to create IPv4 UDP tunnel\n");
                    })?;
                let v6 = match UdpTunnelSock::new::<recv::Receiver>(net, true, port) {
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
        }
        Ok(sockets)
    })
}

/// Gives back a device's use of its namespace's sockets; the last use
/// closes them, unless the namespace's exit has closed them already.
/// Never touches the namespace itself.
pub(crate) fn release_sockets(sockets: &NetnsSockets) {
    let guard = NETNS_LOCK.lock();
    let mut s = sockets.inner.lock();
    s.devices = s.devices.saturating_sub(1);
    let closing = if s.devices == 0 {
        (s.v4.take(), s.v6.take())
    } else {
        (None, None)
    };
    drop(s);
    drop(guard);
    // Closed outside the locks.
    drop(closing);
}

/// The `pernet_operations` exit callback: drops the namespace's sockets.
///
/// # Safety
///
/// Called only by the network core, for a namespace being dismantled that
/// stays valid for the call.
unsafe extern "C" fn netns_exit_callback(net: *mut bindings::net) {
    // SAFETY: The network core calls this for a namespace being dismantled,
    // still valid for the call.
    let net = unsafe { Net::from_raw(net) };
    let closing = with_slot(net, |slot| {
        let sockets = slot.sockets.take()?;
        let mut s = sockets.inner.lock();
        if s.devices != 0 {
            pr_warn!(
                "namespace exits with {} rxe device(s) still using it\n",
                s.devices
            );
        }
        // From here on the record is the devices' only: their releases
        // find no socket to close.
        let closing = (s.v4.take(), s.v6.take());
        Some(closing)
    });
    drop(closing);
}
