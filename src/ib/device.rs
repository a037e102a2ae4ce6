// SPDX-License-Identifier: GPL-2.0

//! The `ib_device` at the head of a driver's device: creation and
//! registration, references ([`DeviceRef`]), the `rdma_link_ops`
//! registration ([`LinkRegistration`]), and the trampolines of the
//! device-level verbs.

use super::{Adapter, Driver, MAD_SIZE};
use crate::sys::{
    bindings,
    net::{NetDevice, NetDeviceRef},
    work::BhOff,
};
use core::{cell::UnsafeCell, marker::PhantomData, ptr::NonNull};
use kernel::{
    error::from_result,
    error::to_result,
    prelude::*,
    str::CStr,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};

/// The `ib_device` at the head of a driver's device ([`Driver::Device`]).
///
/// # Invariants
///
/// It was allocated by `_ib_alloc_device` as the head of a driver device
/// and is not yet freed.
#[repr(transparent)]
pub(crate) struct IbDevice(Opaque<bindings::ib_device>);

// SAFETY: The methods read fields fixed at registration, or call ib_core
// functions that take the device's own locks.
unsafe impl Send for IbDevice {}
// SAFETY: As above.
unsafe impl Sync for IbDevice {}

impl IbDevice {
    /// The raw pointer, for C calls of the `sys` wrappers.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The netdev bound to port 1, with a reference, if there still is one.
    pub(crate) fn netdev(&self) -> Option<NetDeviceRef> {
        // SAFETY: The device is valid by the type invariant.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_ptr(), 1) };
        // SAFETY: `ib_device_get_netdev` returns a held reference or null,
        // which the `ARef` takes over.
        NonNull::new(ndev).map(|p| unsafe { NetDeviceRef::from_raw(p.cast::<NetDevice>()) })
    }

    /// The netdev bound to port 1 without taking a reference: valid while
    /// bottom halves stay off (`None` once the netdev is going away).
    pub(crate) fn netdev_bh<'a>(&self, _bh: &'a BhOff) -> Option<&'a NetDevice> {
        // SAFETY: The device is valid; the pointer is RCU-protected, and
        // with bottom halves off (`_bh`) this is an RCU-bh read section
        // that lasts as long as the borrow of `_bh`.
        unsafe {
            let ndev = bindings::rxe_glue_ib_netdev_rcu(self.as_ptr());
            (!ndev.is_null()).then(|| NetDevice::from_raw(ndev))
        }
    }

    /// `ib_get_eth_speed`: the port's IBTA speed and width from the netdev's
    /// link speed.
    pub(crate) fn eth_speed(&self, speed: &mut u16, width: &mut u8) -> Result {
        // SAFETY: The device is valid; the out-pointers are valid for writes.
        to_result(unsafe { bindings::ib_get_eth_speed(self.as_ptr(), 1, speed, width) })
    }

    /// Name of the device, e.g. `rxe0`.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array that ib_core keeps for
        // the device's life; it is only renamed under ib_core's locks.
        unsafe { CStr::from_char_ptr((*self.as_ptr()).name.as_ptr()) }
    }

    /// Sets the node description (`modify_device`, sysfs `node_desc`).
    pub(crate) fn set_node_desc(&self, desc: &[c_char; 64]) {
        // SAFETY: The device is valid; the glue copies the 64 bytes.
        unsafe { bindings::rxe_glue_set_node_desc(self.as_ptr(), desc.as_ptr()) };
    }
}

/// Fixed identity of a new device, written before it is registered.
pub(crate) struct DeviceIdentity {
    /// EUI-64 node GUID, network order.
    pub(crate) node_guid: [u8; 8],
    /// Number of completion vectors.
    pub(crate) num_comp_vectors: u32,
    /// Node description, e.g. `rxe`.
    pub(crate) node_desc: &'static [u8],
}

/// The devices of driver `D`.
pub(crate) struct Device<D: Driver>(PhantomData<D>);

impl<D: Driver> Device<D> {
    /// Allocates a device through ib_core, lets `init` fill the driver
    /// part, binds it to `ndev` and registers it as `name`. On failure,
    /// including a failing `init`, the device is freed again
    /// ([`Driver::release`] runs, as for any device).
    pub(crate) fn create(
        name: &CStr,
        ndev: &NetDevice,
        identity: DeviceIdentity,
        init: impl FnOnce(&mut D::Device) -> Result,
    ) -> Result {
        // SAFETY: `init_net` is the initial namespace, which lives forever;
        // the size covers the whole driver struct, headed by `ib_device`
        // (`IbObject`'s promise).
        let ib = unsafe {
            bindings::_ib_alloc_device(
                core::mem::size_of::<D::Device>(),
                core::ptr::addr_of_mut!(bindings::init_net),
            )
        };
        if ib.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: The allocation is zeroed and sized for `D::Device`, which
        // is valid when zeroed (`Zeroable`); nobody else sees it until it
        // is registered below.
        let dev = unsafe { &mut *ib.cast::<D::Device>() };
        let res = init(dev).and_then(|()| {
            // SAFETY: `ib` is a fresh, unregistered device owned by this
            // thread.
            unsafe { Self::fill_and_register(ib, name, ndev, identity) }
        });
        if res.is_err() {
            // SAFETY: Registration did not happen or failed, so the device
            // is still ours to free; `dealloc_driver` runs from here.
            unsafe { bindings::ib_dealloc_device(ib) };
        }
        res
    }

    /// Sets the ib_device fields and ops of a new device and registers it.
    ///
    /// # Safety
    ///
    /// `ib` is a fresh, unregistered device owned by the caller.
    unsafe fn fill_and_register(
        ib: *mut bindings::ib_device,
        name: &CStr,
        ndev: &NetDevice,
        identity: DeviceIdentity,
    ) -> Result {
        // SAFETY: The caller owns the unregistered device.
        let dev = unsafe { &mut *ib };
        for (dst, src) in dev.node_desc.iter_mut().zip(identity.node_desc) {
            *dst = *src as c_char;
        }
        dev.node_type = bindings::RXE_GLUE_RDMA_NODE_IB_CA;
        dev.phys_port_cnt = 1;
        dev.num_comp_vectors = identity.num_comp_vectors as c_int;
        dev.local_dma_lkey = 0;
        dev.node_guid = u64::from_ne_bytes(identity.node_guid);
        dev.uverbs_cmd_mask |= (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
            | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        let mut ops = Adapter::<D>::VTABLE;
        ops.owner = <D::Module as kernel::ModuleMetadata>::THIS_MODULE
            .as_ptr()
            .cast();
        if !D::advise_mr_supported() {
            ops.advise_mr = None;
        }
        // SAFETY: The caller owns the unregistered device; ib_core copies
        // the ops; `rdma_link_ops` of the driver live in a static of the
        // module (`LinkRegistration`), which outlives its devices.
        unsafe {
            dev.link_ops = LinkRegistration::<D>::ops_ptr();
            bindings::rxe_glue_mark_name_assigned_by_user(ib);
            bindings::ib_set_device_ops(ib, &ops);
            to_result(bindings::ib_device_set_netdev(ib, ndev.as_ptr(), 1))?;
            to_result(bindings::ib_register_device(
                ib,
                name.as_char_ptr(),
                core::ptr::null_mut(),
            ))
        }
    }

    /// Looks up the device of driver `D` bound to `ndev`, with a reference.
    pub(crate) fn of_netdev(ndev: &NetDevice) -> Option<ARef<DeviceRef<D>>> {
        // SAFETY: `ndev` is valid for the call.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_ptr(), D::DRIVER_ID) };
        // SAFETY: A non-null result is a registered device of `D` (only
        // `D` registers devices with its driver id) with a reference held
        // for us, which the `ARef` takes over.
        NonNull::new(ib).map(|p| unsafe { ARef::from_raw(p.cast::<DeviceRef<D>>()) })
    }

    /// Fails every registered device's QPs ([`Driver::dellink`]), then
    /// unregisters them all and waits for them to be freed (module exit).
    pub(crate) fn unregister_all() {
        Self::dellink_all();
        // SAFETY: Always safe to call; ib_core serialises with everything
        // else.
        unsafe { bindings::ib_unregister_driver(D::DRIVER_ID) };
    }

    /// Runs [`Driver::dellink`] on every registered device of `D`. ib_core
    /// exports no way to walk its devices but clients: a client registered
    /// for the walk has its `add` called on each registered device, with
    /// the device held, and keeps none of them (`add` fails), so
    /// unregistering it has nothing to remove.
    fn dellink_all() {
        let Ok(client) = KBox::new(
            bindings::ib_client {
                name: kernel::str::as_char_ptr_in_const_context(c"ib_removal"),
                add: Some(Self::removal_client_add),
                ..Default::default()
            },
            GFP_KERNEL,
        ) else {
            // Without memory the devices go unflushed, as the C driver's do.
            return;
        };
        let client = KBox::into_raw(client);
        // SAFETY: `client` is a valid client that outlives its
        // registration: it is unregistered below, before it is freed.
        if unsafe { bindings::ib_register_client(client) } == 0 {
            // SAFETY: Registered just above.
            unsafe { bindings::ib_unregister_client(client) };
        }
        // SAFETY: From `KBox::into_raw` above; ib_core no longer uses it.
        drop(unsafe { KBox::from_raw(client) });
    }

    /// The walk client's `add`: runs `dellink` on a device of `D`.
    ///
    /// # Safety
    ///
    /// Called by ib_core with a registered device it holds for the call.
    unsafe extern "C" fn removal_client_add(ib: *mut bindings::ib_device) -> c_int {
        let this_module: *mut bindings::module = <D::Module as kernel::ModuleMetadata>::THIS_MODULE
            .as_ptr()
            .cast();
        // SAFETY: ib_core holds the device for the call; `ops` is immutable
        // once the device is registered.
        if unsafe { (*ib).ops.owner } == this_module {
            // SAFETY: A device of this module is a `D::Device`, valid for
            // the call.
            D::dellink(unsafe { super::object::<D::Device>(ib) });
        }
        // Keep no client data: nothing to remove when the client goes.
        EOPNOTSUPP.to_errno()
    }
}

/// A registered device of driver `D` as a reference-counted object (its
/// `ib_device` refcount): what [`Device::of_netdev`] returns.
///
/// # Invariants
///
/// Only exists behind an [`ARef`], as a registered `D::Device`.
#[repr(transparent)]
pub(crate) struct DeviceRef<D: Driver>(Opaque<bindings::ib_device>, PhantomData<D>);

// SAFETY: `ib_device_put` drops the reference `ib_device_get_by_netdev`
// took; `inc_ref` takes one more on a device we hold one on.
unsafe impl<D: Driver> AlwaysRefCounted for DeviceRef<D> {
    fn inc_ref(&self) {
        // SAFETY: We hold a reference, so the count is not zero.
        unsafe { bindings::rxe_glue_ib_device_get(self.0.get()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives back one reference it holds.
        unsafe { bindings::ib_device_put(obj.as_ptr().cast()) };
    }
}

impl<D: Driver> core::ops::Deref for DeviceRef<D> {
    type Target = D::Device;

    fn deref(&self) -> &D::Device {
        // SAFETY: The reference keeps the device alive; it is a `D::Device`
        // (type invariant).
        unsafe { super::object::<D::Device>(self.0.get()) }
    }
}

impl<D: Driver> DeviceRef<D> {
    /// Unregisters the device from a work item (ib_core's
    /// `ib_unregister_device_queued`), as is required from netdev notifiers.
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: We hold a reference, so the device is valid.
        unsafe { bindings::ib_unregister_device_queued(self.0.get()) };
    }
}

// SAFETY: The device is shared between contexts anyway (`D::Device: Sync`);
// the reference count is atomic.
unsafe impl<D: Driver> Send for DeviceRef<D> {}
// SAFETY: As above.
unsafe impl<D: Driver> Sync for DeviceRef<D> {}

/// The `rdma_link_ops` of driver `D`, registered for as long as this
/// lives: `rdma link add NAME type D::LINK_TYPE netdev DEV` reaches
/// [`Driver::newlink`]. Dropping it unregisters the link type, then fails
/// and unregisters every device of `D` and waits for them to be freed.
pub(crate) struct LinkRegistration<D: Driver>(PhantomData<D>);

/// The storage of one driver's `rdma_link_ops`.
struct LinkOps(UnsafeCell<bindings::rdma_link_ops>);

// SAFETY: ib_core writes `list` under its own lock while registered;
// nothing else writes the struct.
unsafe impl Sync for LinkOps {}

impl<D: Driver> LinkRegistration<D> {
    /// The ops; one static per driver (the generic static of a function
    /// would be shared, so the driver type names it through this const).
    const OPS: bindings::rdma_link_ops = bindings::rdma_link_ops {
        list: bindings::list_head {
            next: core::ptr::null_mut(),
            prev: core::ptr::null_mut(),
        },
        type_: kernel::str::as_char_ptr_in_const_context(D::LINK_TYPE),
        newlink: Some(Self::newlink_callback),
        dellink: Some(Self::dellink_callback),
    };

    /// Registers the link type.
    pub(crate) fn new(storage: &'static LinkStorage) -> Result<Self> {
        // SAFETY: Nothing reads the storage until it is registered below;
        // one registration per storage (checked).
        unsafe {
            let ops = storage.0 .0.get();
            if !(*ops).type_.is_null() {
                return Err(EBUSY);
            }
            *ops = Self::OPS;
            bindings::rdma_link_register(ops);
        }
        LINK_STORAGE_OF.set(storage);
        Ok(LinkRegistration(PhantomData))
    }

    /// The registered ops, for new devices' `link_ops`.
    fn ops_ptr() -> *mut bindings::rdma_link_ops {
        LINK_STORAGE_OF.get()
    }

    /// `rdma link add NAME type TYPE netdev NDEV`: creates a device.
    ///
    /// # Safety
    ///
    /// Called by nldev only, with a NUL-terminated name and a netdev it
    /// holds a reference on, both valid for the call.
    unsafe extern "C" fn newlink_callback(
        name: *const c_char,
        ndev: *mut bindings::net_device,
    ) -> c_int {
        from_result(|| {
            // SAFETY: nldev passes a NUL-terminated name and a netdev it
            // holds a reference on for the duration of the call.
            let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDevice::from_raw(ndev)) };
            D::newlink(name, ndev)?;
            Ok(0)
        })
    }

    /// `rdma link del NAME`, before ib_core unregisters the device.
    ///
    /// # Safety
    ///
    /// Called by nldev only, with a device of this driver it holds a
    /// reference on for the call.
    unsafe extern "C" fn dellink_callback(ib: *mut bindings::ib_device) -> c_int {
        // SAFETY: nldev holds the device for the call; the link ops are
        // `D`'s, so the device is a `D::Device`.
        D::dellink(unsafe { super::object::<D::Device>(ib) });
        0
    }
}

impl<D: Driver> Drop for LinkRegistration<D> {
    fn drop(&mut self) {
        // SAFETY: Registered in `new`.
        unsafe { bindings::rdma_link_unregister(Self::ops_ptr()) };
        Device::<D>::unregister_all();
    }
}

/// The static memory a driver gives its [`LinkRegistration`].
pub(crate) struct LinkStorage(LinkOps);

impl LinkStorage {
    /// Empty storage, for a `static`.
    pub(crate) const fn new() -> Self {
        LinkStorage(LinkOps(UnsafeCell::new(bindings::rdma_link_ops {
            list: bindings::list_head {
                next: core::ptr::null_mut(),
                prev: core::ptr::null_mut(),
            },
            type_: core::ptr::null(),
            newlink: None,
            dellink: None,
        })))
    }
}

/// Where the module's one link registration lives (a module registers one
/// link type; a second registration fails with `EBUSY`).
static LINK_STORAGE_OF: LinkStorageOf =
    LinkStorageOf(core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()));

/// See [`LINK_STORAGE_OF`].
struct LinkStorageOf(core::sync::atomic::AtomicPtr<bindings::rdma_link_ops>);

impl LinkStorageOf {
    fn set(&self, storage: &'static LinkStorage) {
        self.0
            .store(storage.0 .0.get(), core::sync::atomic::Ordering::Release);
    }

    fn get(&self) -> *mut bindings::rdma_link_ops {
        self.0.load(core::sync::atomic::Ordering::Acquire)
    }
}

/// Borrows the device an ib_core object belongs to.
///
/// # Safety
///
/// `ib` is the `device` of a live object of driver `D` (objects never
/// outlive their device).
pub(super) unsafe fn device_of<'a, D: Driver>(ib: *mut bindings::ib_device) -> &'a D::Device {
    // SAFETY: By the caller's promise.
    unsafe { super::object::<D::Device>(ib) }
}

/// Checks that a verb got no input and zeroes its response (`ib_no_udata_io`).
fn no_udata_io(udata: *mut bindings::ib_udata) -> Result {
    if udata.is_null() {
        return Ok(());
    }
    // SAFETY: ib_core passes a valid udata or null.
    to_result(unsafe { bindings::rxe_glue_no_udata_io(udata) })
}

impl<D: Driver> Adapter<D> {
    /// `.query_device`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D`, an attribute
    /// buffer writable for the call, and the call's udata or null.
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            no_udata_io(udata)?;
            // SAFETY: ib_core passes a live device and an attribute buffer.
            let (dev, attr) = unsafe { (device_of::<D>(ib), &mut *attr) };
            D::query_device(dev, attr)?;
            Ok(0)
        })
    }

    /// `.modify_device`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and the changes,
    /// readable for the call.
    unsafe extern "C" fn modify_device(
        ib: *mut bindings::ib_device,
        mask: c_int,
        attr: *mut bindings::ib_device_modify,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and the changes.
            let (dev, attr) = unsafe { (device_of::<D>(ib), &*attr) };
            D::modify_device(dev, mask as u32, attr)?;
            Ok(0)
        })
    }

    /// `.modify_port`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and the changes,
    /// readable for the call.
    unsafe extern "C" fn modify_port(
        ib: *mut bindings::ib_device,
        port: u32,
        mask: c_int,
        attr: *mut bindings::ib_port_modify,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and the changes.
            let (dev, attr) = unsafe { (device_of::<D>(ib), &*attr) };
            D::modify_port(dev, port, mask as u32, attr)?;
            Ok(0)
        })
    }

    /// `.query_port`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and an attribute
    /// buffer writable for the call.
    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and an attribute buffer.
            let (dev, attr) = unsafe { (device_of::<D>(ib), &mut *attr) };
            D::query_port(dev, port, attr)?;
            Ok(0)
        })
    }

    /// `.query_pkey`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and an output slot
    /// writable for the call.
    unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and an output slot.
            let (dev, pkey) = unsafe { (device_of::<D>(ib), &mut *pkey) };
            *pkey = D::query_pkey(dev, port, index)?;
            Ok(0)
        })
    }

    /// `.get_port_immutable`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and an output
    /// struct writable for the call.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        immutable: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and an output struct.
            let (dev, immutable) = unsafe { (device_of::<D>(ib), &mut *immutable) };
            D::port_immutable(dev, port, immutable)?;
            Ok(0)
        })
    }

    /// `.get_link_layer`: always Ethernet (RoCE).
    extern "C" fn get_link_layer(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
    }

    /// `.alloc_ucontext`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed context whose `device` is a
    /// live device of `D`.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a context whose `device` is set.
            let dev = unsafe { device_of::<D>((*uctx).device) };
            D::alloc_ucontext(dev)?;
            Ok(0)
        })
    }

    /// `.dealloc_ucontext`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per context that `alloc_ucontext`
    /// accepted, while the context is still valid.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: The context is valid, its `device` a device of `D`.
        D::dealloc_ucontext(unsafe { device_of::<D>((*uctx).device) });
    }

    /// `.disassociate_ucontext`: device removal with a process still
    /// holding a context. ib_core destroys the context's objects through
    /// the destroy verbs and zaps the mappings it tracks, then calls this;
    /// with the hook present, ib_core no longer waits for every such
    /// process to exit before the device goes away. Nothing is left to do
    /// for a driver whose mapped pages hold their own page references.
    extern "C" fn disassociate_ucontext(_uctx: *mut bindings::ib_ucontext) {}

    /// `.alloc_pd`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed PD whose `device` is a live
    /// device of `D`.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a PD whose `device` is set.
            let dev = unsafe { device_of::<D>((*pd).device) };
            D::alloc_pd(dev)?;
            Ok(0)
        })
    }

    /// `.dealloc_pd`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per PD that `alloc_pd` accepted, while
    /// the PD is still valid.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The PD is valid, its `device` a device of `D`.
        D::dealloc_pd(unsafe { device_of::<D>((*pd).device) });
        0
    }

    /// `.enable_driver`: the device is registered.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a registered device of `D`.
    unsafe extern "C" fn enable_driver(ib: *mut bindings::ib_device) -> c_int {
        // SAFETY: ib_core calls this on a registered device of `D`.
        D::enabled(unsafe { device_of::<D>(ib) });
        0
    }

    /// `.dealloc_driver`: the device's last reference is gone.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per device of `D`, before it frees the
    /// memory; nothing else uses the device during or after the call.
    unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        // SAFETY: Called once, when the last reference is gone and before
        // ib_core frees the memory: the borrow is exclusive.
        D::release(unsafe { &mut *ib.cast::<D::Device>() });
    }

    /// `.alloc_hw_port_stats`: a stats struct for the driver's counters,
    /// which ib_core frees.
    extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let descs = D::stat_descs();
        // SAFETY: The descriptions are static and `len` long; the result is
        // the caller's.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                descs.as_ptr(),
                descs.len() as c_int,
                bindings::RXE_GLUE_RDMA_HW_STATS_DEFAULT_LIFESPAN,
            )
        }
    }

    /// `.get_hw_stats`: fills `stats` with the counters' current values.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D` and, under
    /// ib_core's lock, a stats struct that `alloc_hw_port_stats` made (or
    /// null).
    unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        if port == 0 || stats.is_null() {
            return EINVAL.to_errno();
        }
        let n = D::stat_descs().len();
        // SAFETY: ib_core passes a live device of `D` and a stats struct
        // made by `alloc_hw_port_stats`, whose `value` array has `n`
        // entries, under its lock.
        let (dev, values) = unsafe { (device_of::<D>(ib), (*stats).value.as_mut_slice(n)) };
        D::hw_stats(dev, values);
        n as c_int
    }

    /// `.process_mad`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live device of `D`, a readable IB MAD
    /// of `size_of::<ib_mad>()` bytes and a writable one for the answer.
    unsafe extern "C" fn process_mad(
        ib: *mut bindings::ib_device,
        _mad_flags: c_int,
        port: u32,
        _in_wc: *const bindings::ib_wc,
        _in_grh: *const bindings::ib_grh,
        in_mad: *const bindings::ib_mad,
        out_mad: *mut bindings::ib_mad,
        _out_mad_size: *mut usize,
        _out_mad_pkey_index: *mut u16,
    ) -> c_int {
        const { assert!(core::mem::size_of::<bindings::ib_mad>() == MAD_SIZE) };
        // SAFETY: ib_core passes a live device of `D`, a whole IB MAD to
        // read and one to write; `ib_mad` is plain bytes, of the size
        // asserted.
        let (dev, input, out) = unsafe {
            (
                device_of::<D>(ib),
                &*in_mad.cast::<[u8; MAD_SIZE]>(),
                &mut *out_mad.cast::<[u8; MAD_SIZE]>(),
            )
        };
        D::process_mad(dev, port, input, out)
    }

    /// `.advise_mr`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, in process context, with a live PD of a
    /// device of `D` and `num_sge` SGEs at `sg_list`.
    unsafe extern "C" fn advise_mr(
        pd: *mut bindings::ib_pd,
        advice: bindings::ib_uverbs_advise_mr_advice,
        _flags: u32,
        sg_list: *mut bindings::ib_sge,
        num_sge: u32,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        // SAFETY: ib_core passes a live PD of a device of `D`.
        let dev = unsafe { device_of::<D>((*pd).device) };
        let sges: &[bindings::ib_sge] = if num_sge == 0 || sg_list.is_null() {
            &[]
        } else {
            // SAFETY: ib_core passes `num_sge` SGEs at `sg_list`, valid for
            // the call.
            unsafe { core::slice::from_raw_parts(sg_list, num_sge as usize) }
        };
        from_result(|| {
            D::advise_mr(dev, pd as usize, advice, sges)?;
            Ok(0)
        })
    }

    /// The ops table of `D`'s devices (`owner` is set when a device is
    /// created). Optional verbs `D` does not implement are left out.
    pub(super) const VTABLE: bindings::ib_device_ops = bindings::ib_device_ops {
        owner: core::ptr::null_mut(),
        driver_id: D::DRIVER_ID,
        uverbs_abi_ver: D::UVERBS_ABI_VERSION,
        query_device: Some(Self::query_device),
        query_port: Some(Self::query_port),
        modify_device: if D::HAS_MODIFY_DEVICE {
            Some(Self::modify_device)
        } else {
            None
        },
        modify_port: if D::HAS_MODIFY_PORT {
            Some(Self::modify_port)
        } else {
            None
        },
        query_pkey: Some(Self::query_pkey),
        get_port_immutable: Some(Self::get_port_immutable),
        get_link_layer: Some(Self::get_link_layer),
        alloc_ucontext: Some(Self::alloc_ucontext),
        dealloc_ucontext: Some(Self::dealloc_ucontext),
        disassociate_ucontext: Some(Self::disassociate_ucontext),
        alloc_pd: Some(Self::alloc_pd),
        dealloc_pd: Some(Self::dealloc_pd),
        create_cq: Some(Self::create_cq),
        destroy_cq: Some(Self::destroy_cq),
        resize_user_cq: Some(Self::resize_cq),
        poll_cq: Some(Self::poll_cq),
        req_notify_cq: Some(Self::req_notify_cq),
        get_dma_mr: Some(Self::get_dma_mr),
        reg_user_mr: Some(Self::reg_user_mr),
        rereg_user_mr: Some(Self::rereg_user_mr),
        advise_mr: if D::HAS_ADVISE_MR {
            Some(Self::advise_mr)
        } else {
            None
        },
        dereg_mr: Some(Self::dereg_mr),
        alloc_mr: Some(Self::alloc_mr),
        map_mr_sg: Some(Self::map_mr_sg),
        alloc_mw: Some(Self::alloc_mw),
        dealloc_mw: Some(Self::dealloc_mw),
        create_ah: Some(Self::create_ah),
        create_user_ah: Some(Self::create_ah),
        query_ah: Some(Self::query_ah),
        destroy_ah: Some(Self::destroy_ah),
        create_srq: Some(Self::create_srq),
        modify_srq: Some(Self::modify_srq),
        query_srq: Some(Self::query_srq),
        destroy_srq: Some(Self::destroy_srq),
        create_qp: Some(Self::create_qp),
        modify_qp: Some(Self::modify_qp),
        query_qp: Some(Self::query_qp),
        destroy_qp: Some(Self::destroy_qp),
        attach_mcast: if D::HAS_ATTACH_MCAST {
            Some(Self::attach_mcast)
        } else {
            None
        },
        detach_mcast: if D::HAS_DETACH_MCAST {
            Some(Self::detach_mcast)
        } else {
            None
        },
        post_send: Some(Self::post_send),
        post_recv: Some(Self::post_recv),
        post_srq_recv: Some(Self::post_srq_recv),
        mmap: Some(crate::sys::queue::mmap_callback),
        mmap_free: Some(crate::sys::queue::mmap_free_callback),
        alloc_hw_port_stats: Some(Self::alloc_hw_port_stats),
        get_hw_stats: Some(Self::get_hw_stats),
        process_mad: if D::HAS_PROCESS_MAD {
            Some(Self::process_mad)
        } else {
            None
        },
        enable_driver: Some(Self::enable_driver),
        dealloc_driver: Some(Self::dealloc_driver),
        size_ib_pd: core::mem::size_of::<bindings::ib_pd>(),
        size_ib_cq: core::mem::size_of::<D::Cq>(),
        size_ib_ucontext: core::mem::size_of::<bindings::ib_ucontext>(),
        size_ib_qp: core::mem::size_of::<D::Qp>(),
        size_ib_ah: core::mem::size_of::<D::Ah>(),
        size_ib_srq: core::mem::size_of::<D::Srq>(),
        size_ib_mw: core::mem::size_of::<D::Mw>(),
        // SAFETY: All-zero is a valid `ib_device_ops`: null pointers,
        // absent callbacks (`None`), zero sizes.
        ..unsafe { core::mem::zeroed() }
    };
}
