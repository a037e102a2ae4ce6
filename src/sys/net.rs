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

// SAFETY: `dev_hold`/`dev_put` are the netdev's reference count; a
// `NetDevice` is only borrowed while a reference or RCU keeps it alive.
unsafe impl kernel::sync::aref::AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: The device is alive (the borrow), so its count is held.
        unsafe { bindings::rxe_glue_dev_hold(self.as_ptr()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives back one reference it holds.
        unsafe { bindings::rxe_glue_dev_put(obj.as_ptr().cast()) };
    }
}

/// An owned reference to a network device.
pub(crate) type NetDeviceRef = kernel::sync::aref::ARef<NetDevice>;

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
    /// whose datagrams go to `H` in softirq context.
    pub(crate) fn new<H: super::skb::RxHandler>(net: &Net, ipv6: bool, port: u16) -> Result<Self> {
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // SAFETY: `net` is live; `sock` is a valid out-pointer.
        to_result(unsafe {
            bindings::rxe_net_udp_sock_create(net.as_ptr(), ipv6, port, &mut sock)
        })?;
        // SAFETY: `udp_sock_create` succeeded, so `sock` is a valid socket.
        let sk = NonNull::new(unsafe { bindings::rxe_glue_socket_sk(sock) }).ok_or(EINVAL)?;
        let mut cfg = bindings::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(super::skb::encap_rcv::<H>),
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
    registered: core::sync::atomic::AtomicBool,
    _storage: core::marker::PhantomData<T>,
}

/// A registered [`Pernet`], unregistered on drop.
pub(crate) struct PernetRegistration<T: 'static>(&'static Pernet<T>);

impl<T: 'static> Drop for PernetRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered by `register`, which made this, once.
        unsafe { bindings::unregister_pernet_subsys(self.0.ops.get()) };
        self.0
            .registered
            .store(false, core::sync::atomic::Ordering::Release);
    }
}

// SAFETY: `ops` and `id` are written only by `register`, while not
// registered (checked atomically); the network core serialises its own
// accesses.
unsafe impl<T> Sync for Pernet<T> {}

impl<T: 'static> Pernet<T> {
    /// An unregistered descriptor.
    pub(crate) const fn new() -> Self {
        Pernet {
            // SAFETY: All-zero is a valid `pernet_operations` (no callbacks).
            ops: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            id: UnsafeCell::new(0),
            registered: core::sync::atomic::AtomicBool::new(false),
            _storage: core::marker::PhantomData,
        }
    }

    /// Registers the storage with `exit` called for each dying namespace,
    /// until the result is dropped (then `exit` runs for every namespace
    /// first); `EBUSY` if registered already.
    pub(crate) fn register(
        &'static self,
        exit: unsafe extern "C" fn(net: *mut bindings::net),
    ) -> Result<PernetRegistration<T>>
    where
        T: pin_init::Zeroable,
    {
        if self
            .registered
            .swap(true, core::sync::atomic::Ordering::AcqRel)
        {
            return Err(EBUSY);
        }
        // SAFETY: Not registered (checked above), so nobody else reads
        // `ops`.
        let ops = unsafe { &mut *self.ops.get() };
        ops.exit = Some(exit);
        ops.id = self.id.get();
        ops.size = core::mem::size_of::<T>();
        // SAFETY: `ops` is static and filled in; the network core zeroes
        // the storage, which is a valid `T` (`Zeroable`).
        if let Err(e) = to_result(unsafe { bindings::register_pernet_subsys(self.ops.get()) }) {
            self.registered
                .store(false, core::sync::atomic::Ordering::Release);
            return Err(e);
        }
        Ok(PernetRegistration(self))
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

/// What a [`NetdevNotifier`] calls for each event.
pub(crate) type NetdevHandler = fn(NetdevEvent, &NetDevice);

/// A netdev notifier block that forwards events to a [`NetdevHandler`].
#[repr(C)]
pub(crate) struct NetdevNotifier {
    nb: UnsafeCell<bindings::notifier_block>,
    registered: core::sync::atomic::AtomicBool,
    handler: UnsafeCell<Option<NetdevHandler>>,
}

/// A registered [`NetdevNotifier`], unregistered on drop.
pub(crate) struct NotifierRegistration(&'static NetdevNotifier);

impl Drop for NotifierRegistration {
    fn drop(&mut self) {
        // SAFETY: Registered by `register`, which made this, once.
        unsafe { bindings::unregister_netdevice_notifier(self.0.nb.get()) };
        self.0
            .registered
            .store(false, core::sync::atomic::Ordering::Release);
    }
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
            registered: core::sync::atomic::AtomicBool::new(false),
            handler: UnsafeCell::new(None),
        }
    }

    /// Registers `handler` for every netdev event, until the result is
    /// dropped; `EBUSY` if the block is registered already.
    pub(crate) fn register(&'static self, handler: NetdevHandler) -> Result<NotifierRegistration> {
        if self
            .registered
            .swap(true, core::sync::atomic::Ordering::AcqRel)
        {
            return Err(EBUSY);
        }
        // SAFETY: Not registered (checked above), so nobody else reads the
        // block or the handler.
        unsafe {
            *self.handler.get() = Some(handler);
            (*self.nb.get()).notifier_call = Some(Self::notifier_call);
        }
        // SAFETY: The block is static and filled in.
        if let Err(e) = to_result(unsafe { bindings::register_netdevice_notifier(self.nb.get()) }) {
            self.registered
                .store(false, core::sync::atomic::Ordering::Release);
            return Err(e);
        }
        Ok(NotifierRegistration(self))
    }

    /// The notifier chain's callback: decodes the event and hands it to
    /// the handler.
    ///
    /// # Safety
    ///
    /// Called by the netdev notifier chain only, for a registered
    /// [`NetdevNotifier`]'s block, with the event's `netdev_notifier_info`,
    /// whose device stays valid for the call.
    unsafe extern "C" fn notifier_call(
        nb: *mut bindings::notifier_block,
        event: c_ulong,
        ptr: *mut c_void,
    ) -> c_int {
        // CAST: `nb` is the first field of the `#[repr(C)]` notifier.
        // SAFETY: The block of a registered, static notifier, whose handler
        // was set before it was registered and is not changed while it is.
        let handler = unsafe { *(*nb.cast::<NetdevNotifier>()).handler.get() };
        // SAFETY: `ptr` is the call's notifier info (our contract).
        let ndev = unsafe { NetDevice::from_raw(bindings::rxe_glue_notifier_dev(ptr)) };
        let event = match event as u32 {
            bindings::netdev_cmd_NETDEV_UNREGISTER => NetdevEvent::Unregister,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => NetdevEvent::ChangeMtu,
            bindings::netdev_cmd_NETDEV_DOWN | bindings::netdev_cmd_NETDEV_CHANGE => {
                NetdevEvent::Down
            }
            _ => NetdevEvent::Other,
        };
        if let Some(handler) = handler {
            handler(event, ndev);
        }
        bindings::NOTIFY_OK as c_int
    }
}
