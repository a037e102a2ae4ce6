// SPDX-License-Identifier: GPL-2.0

//! Networking objects: borrowed `net_device` and `net`, owned netdev
//! references, UDP tunnel sockets, per-namespace storage and the netdev
//! notifier.

use super::bindings;
use core::{cell::UnsafeCell, ptr::NonNull};
use kernel::{error::to_result, prelude::*, types::Opaque};

/// A network device borrowed from the caller.
///
/// # Invariants
///
/// The `net_device` is registered (or being unregistered) and outlives the
/// borrow.
#[repr(transparent)]
pub(crate) struct NetDevice(Opaque<bindings::net_device>);

impl NetDevice {
    /// Borrows the `net_device` at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `net_device` that stays valid for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // CAST: `NetDevice` is a transparent wrapper of `net_device`.
        // SAFETY: Valid for `'a` by the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for C calls.
    pub(crate) fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The network namespace the device lives in.
    pub(crate) fn net(&self) -> &Net {
        // SAFETY: By the type invariant the device is valid; `dev_net` of a
        // live device is a live namespace, which outlives the device.
        unsafe { Net::from_raw(bindings::rxe_glue_dev_net(self.as_ptr())) }
    }

    /// The device's MTU in bytes.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: By the type invariant the device is valid.
        unsafe { bindings::rxe_glue_netdev_mtu(self.as_ptr()) }
    }

    /// The device's 48-bit hardware address, or `None` if it has none
    /// (a tun device, say).
    pub(crate) fn mac(&self) -> Option<[u8; 6]> {
        let mut mac = [0u8; 6];
        // SAFETY: The device is valid; `mac` has room for the 6 bytes the
        // glue copies at most.
        let n = unsafe {
            bindings::rxe_glue_netdev_hwaddr(self.as_ptr(), mac.as_mut_ptr(), mac.len() as u32)
        };
        (n > 0).then_some(mac)
    }

    /// Whether this is a VLAN device stacked on a real one.
    pub(crate) fn is_vlan(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { bindings::rxe_glue_is_vlan_dev(self.as_ptr()) }
    }

    /// Whether the device is running with carrier: the RoCE port is ACTIVE.
    pub(crate) fn is_active(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { bindings::rxe_glue_netdev_active(self.as_ptr()) }
    }

    /// Whether the device is administratively up.
    pub(crate) fn is_up(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { bindings::rxe_glue_netdev_up(self.as_ptr()) }
    }

    /// Lets frames to the Ethernet multicast address `addr` in
    /// (`dev_mc_add`: counted per address, so each add needs one
    /// [`NetDevice::mc_del`]).
    pub(crate) fn mc_add(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: By the type invariant the device is valid; the address is
        // read (6 bytes) during the call only.
        kernel::error::to_result(unsafe { bindings::dev_mc_add(self.as_ptr(), addr.as_ptr()) })
    }

    /// Undoes one [`NetDevice::mc_add`] of `addr` (`dev_mc_del`).
    pub(crate) fn mc_del(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: As in `mc_add`.
        kernel::error::to_result(unsafe { bindings::dev_mc_del(self.as_ptr(), addr.as_ptr()) })
    }
}

/// An owned reference to a network device, dropped with `dev_put`.
///
/// # Invariants
///
/// Holds one reference on the pointed-to `net_device`.
pub(crate) struct NetDeviceRef(NonNull<bindings::net_device>);

impl NetDeviceRef {
    /// Takes over a reference the caller holds.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `net_device` on which the caller owns one reference.
    pub(crate) unsafe fn from_owned(ptr: NonNull<bindings::net_device>) -> Self {
        // INVARIANT: The caller hands over its reference.
        NetDeviceRef(ptr)
    }
}

impl core::ops::Deref for NetDeviceRef {
    type Target = NetDevice;

    fn deref(&self) -> &NetDevice {
        // SAFETY: The reference we hold keeps the device valid.
        unsafe { NetDevice::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for NetDeviceRef {
    fn drop(&mut self) {
        // SAFETY: We own one reference, given back here once.
        unsafe { bindings::rxe_glue_dev_put(self.0.as_ptr()) };
    }
}

/// A network namespace borrowed from the caller.
///
/// # Invariants
///
/// The namespace is alive for the borrow.
#[repr(transparent)]
pub(crate) struct Net(Opaque<bindings::net>);

impl Net {
    /// Borrows the namespace at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live `net` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Self {
        // CAST: `Net` is a transparent wrapper of `net`.
        // SAFETY: Valid for `'a` by the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for C calls and as an identity.
    pub(crate) fn as_ptr(&self) -> *mut bindings::net {
        self.0.get()
    }
}

/// The function the UDP stack calls for each datagram on a tunnel socket.
pub(crate) type EncapRcv =
    unsafe extern "C" fn(sk: *mut bindings::sock, skb: *mut bindings::sk_buff) -> c_int;

/// A kernel UDP socket on the RoCEv2 port with an encapsulation receive
/// callback, released with `udp_tunnel_sock_release`.
///
/// # Invariants
///
/// `sk` is the `sock` of a tunnel socket this object owns.
pub(crate) struct UdpTunnelSock {
    sk: NonNull<bindings::sock>,
}

// SAFETY: A socket may be released from any thread in process context.
unsafe impl Send for UdpTunnelSock {}

impl UdpTunnelSock {
    /// Creates a socket in `net` bound to `port` (IPv6-only when `ipv6`),
    /// whose datagrams go to `encap_rcv` in softirq context.
    pub(crate) fn new(net: &Net, ipv6: bool, port: u16, encap_rcv: EncapRcv) -> Result<Self> {
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // SAFETY: `net` is live; `sock` is a valid out-pointer.
        to_result(unsafe {
            bindings::rxe_glue_udp_sock_create(net.as_ptr(), ipv6, port, &mut sock)
        })?;
        // SAFETY: `udp_sock_create` succeeded, so `sock` is a valid socket.
        let sk = NonNull::new(unsafe { bindings::rxe_glue_socket_sk(sock) }).ok_or(EINVAL)?;
        let mut cfg = bindings::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sk` is a fresh UDP socket of `net`; `cfg` is read during
        // the call only.
        unsafe { bindings::setup_udp_tunnel_sock(net.as_ptr(), sk.as_ptr(), &mut cfg) };
        // INVARIANT: We own the socket just created.
        Ok(UdpTunnelSock { sk })
    }
}

impl Drop for UdpTunnelSock {
    fn drop(&mut self) {
        // SAFETY: We own the tunnel socket; it is released once, here.
        unsafe { bindings::udp_tunnel_sock_release(self.sk.as_ptr()) };
    }
}

/// Registration of per-namespace storage of type `T`, zero-initialised by
/// the network core in every namespace and handed to `exit` when a
/// namespace goes away.
///
/// # Invariants
///
/// While `registered`, `ops` is on the pernet list and `id` is its slot.
pub(crate) struct Pernet<T: 'static> {
    ops: UnsafeCell<bindings::pernet_operations>,
    id: UnsafeCell<c_uint>,
    _storage: core::marker::PhantomData<T>,
}

// SAFETY: `ops` and `id` are written only by `register`/`unregister`, which
// the module calls once each from its init and exit; the network core
// serialises its own accesses.
unsafe impl<T> Sync for Pernet<T> {}

impl<T: 'static> Pernet<T> {
    /// An unregistered descriptor.
    pub(crate) const fn new() -> Self {
        Pernet {
            // SAFETY: All-zero is a valid `pernet_operations` (no callbacks).
            ops: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            id: UnsafeCell::new(0),
            _storage: core::marker::PhantomData,
        }
    }

    /// Registers the storage with `exit` called for each dying namespace.
    ///
    /// # Safety
    ///
    /// Called once, before any `get`, and balanced by `unregister`; an
    /// all-zero `T` is valid.
    pub(crate) unsafe fn register(
        &'static self,
        exit: unsafe extern "C" fn(net: *mut bindings::net),
    ) -> Result {
        // SAFETY: Not yet registered, so nobody else reads `ops`.
        let ops = unsafe { &mut *self.ops.get() };
        ops.exit = Some(exit);
        ops.id = self.id.get();
        ops.size = core::mem::size_of::<T>();
        // SAFETY: `ops` is static and filled in.
        to_result(unsafe { bindings::register_pernet_subsys(self.ops.get()) })
    }

    /// Unregisters; `exit` runs for every namespace first.
    ///
    /// # Safety
    ///
    /// `register` succeeded and this is called once.
    pub(crate) unsafe fn unregister(&'static self) {
        // SAFETY: Registered by the caller's promise.
        unsafe { bindings::unregister_pernet_subsys(self.ops.get()) };
    }

    /// This namespace's storage.
    ///
    /// # Safety
    ///
    /// The storage is registered. The returned pointer is valid until the
    /// namespace's `exit` returns; the caller serialises accesses to it.
    pub(crate) unsafe fn get(&'static self, net: &Net) -> *mut T {
        // SAFETY: Registered, so `id` is fixed and `net` has the slot.
        unsafe { bindings::rxe_glue_net_generic(net.as_ptr(), *self.id.get()).cast::<T>() }
    }
}

/// A netdev notifier block that forwards events to `F`.
pub(crate) struct NetdevNotifier {
    nb: UnsafeCell<bindings::notifier_block>,
}

// SAFETY: The block is written only by `register`, once, before the notifier
// chain can read it.
unsafe impl Sync for NetdevNotifier {}

/// A netdev event, as the driver cares about it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NetdevEvent {
    /// The device is being unregistered or moved to another namespace.
    Unregister,
    /// The MTU changed.
    ChangeMtu,
    /// The device went down or lost carrier.
    Down,
    /// Anything else.
    Other,
}

impl NetdevNotifier {
    /// An unregistered notifier.
    pub(crate) const fn new() -> Self {
        NetdevNotifier {
            // SAFETY: All-zero is a valid `notifier_block` (no callback).
            nb: UnsafeCell::new(unsafe { core::mem::zeroed() }),
        }
    }

    /// Registers `call` for every netdev event.
    ///
    /// # Safety
    ///
    /// Called once and balanced by `unregister`.
    pub(crate) unsafe fn register(
        &'static self,
        call: unsafe extern "C" fn(*mut bindings::notifier_block, c_ulong, *mut c_void) -> c_int,
    ) -> Result {
        // SAFETY: Not yet registered, so nobody else reads the block.
        unsafe { (*self.nb.get()).notifier_call = Some(call) };
        // SAFETY: The block is static and filled in.
        to_result(unsafe { bindings::register_netdevice_notifier(self.nb.get()) })
    }

    /// Unregisters the notifier.
    ///
    /// # Safety
    ///
    /// `register` succeeded and this is called once.
    pub(crate) unsafe fn unregister(&'static self) {
        // SAFETY: Registered by the caller's promise.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }

    /// Decodes a notifier call's arguments.
    ///
    /// # Safety
    ///
    /// `ptr` is the `netdev_notifier_info` of a netdev notifier call in
    /// progress; the device stays valid for `'a`.
    pub(crate) unsafe fn decode<'a>(
        event: c_ulong,
        ptr: *mut c_void,
    ) -> (NetdevEvent, &'a NetDevice) {
        // SAFETY: By the caller's promise `ptr` is a notifier info.
        let ndev = unsafe { NetDevice::from_raw(bindings::rxe_glue_notifier_dev(ptr)) };
        let event = match event as u32 {
            bindings::netdev_cmd_NETDEV_UNREGISTER => NetdevEvent::Unregister,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => NetdevEvent::ChangeMtu,
            bindings::netdev_cmd_NETDEV_DOWN | bindings::netdev_cmd_NETDEV_CHANGE => {
                NetdevEvent::Down
            }
            _ => NetdevEvent::Other,
        };
        (event, ndev)
    }
}
