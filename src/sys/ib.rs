// SPDX-License-Identifier: GPL-2.0

//! ib_core objects: the `ib_device` the driver state is built around, the
//! `rdma_link_ops` registration, and the `ib_device_ops` adapters that turn
//! ib_core's raw callbacks into calls on safe driver types.

use super::{
    bindings,
    net::{NetDevice, NetDeviceRef},
};
use crate::counters;
use crate::device::RxeDevice;
use crate::verbs;
use core::{cell::UnsafeCell, ptr::NonNull};
use kernel::{error::from_result, error::to_result, prelude::*, str::CStr, types::Opaque};

/// The `ib_device` embedded at the start of [`RxeDevice`].
///
/// # Invariants
///
/// It was allocated by `_ib_alloc_device` as the head of an [`RxeDevice`]
/// and is not yet freed.
#[repr(transparent)]
pub(crate) struct IbDevice(Opaque<bindings::ib_device>);

impl IbDevice {
    /// The raw pointer, for C calls.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The netdev bound to port 1, with a reference, if there still is one.
    pub(crate) fn netdev(&self) -> Option<NetDeviceRef> {
        // SAFETY: The device is valid by the type invariant.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_ptr(), 1) };
        // SAFETY: `ib_device_get_netdev` returns a held reference or null.
        NonNull::new(ndev).map(|p| unsafe { NetDeviceRef::from_owned(p) })
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
}

/// Fixed identity of a new device, written before it is registered.
pub(crate) struct DeviceIdentity {
    /// EUI-64 node GUID, network order.
    pub(crate) node_guid: [u8; 8],
    /// Number of completion vectors.
    pub(crate) num_comp_vectors: u32,
}

/// Allocates an [`RxeDevice`] through ib_core, lets `init` fill the driver
/// part, binds it to `ndev` and registers it as `name`. On failure,
/// including a failing `init`, the device is freed again (`dealloc_driver`
/// runs, as for any device).
pub(crate) fn create_device(
    name: &CStr,
    ndev: &NetDevice,
    identity: DeviceIdentity,
    init: impl FnOnce(&mut RxeDevice) -> Result,
) -> Result {
    const { assert!(core::mem::offset_of!(RxeDevice, ib) == 0) };
    // SAFETY: `init_net` is the initial namespace, which lives forever; the
    // size covers the whole driver struct with `ib_device` at offset 0.
    let ib = unsafe {
        bindings::_ib_alloc_device(
            core::mem::size_of::<RxeDevice>(),
            core::ptr::addr_of_mut!(bindings::init_net),
        )
    };
    if ib.is_null() {
        return Err(ENOMEM);
    }
    let rxe = ib.cast::<RxeDevice>();
    // SAFETY: The allocation is zeroed and sized for `RxeDevice`, whose
    // driver fields are all valid when zero; nobody else sees it until it is
    // registered below.
    let rxe = unsafe { &mut *rxe };
    let res = init(rxe).and_then(|()| {
        // SAFETY: `ib` is a fresh, unregistered device owned by this thread.
        unsafe { fill_and_register(ib, name, ndev, identity) }
    });
    if res.is_err() {
        // SAFETY: Registration did not happen or failed, so the device is
        // still ours to free; `dealloc_driver` runs from here.
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
    unsafe {
        let dev = &mut *ib;
        let desc = b"rxe\0";
        for (dst, src) in dev.node_desc.iter_mut().zip(desc.iter()) {
            *dst = *src as c_char;
        }
        dev.node_type = bindings::RXE_GLUE_RDMA_NODE_IB_CA;
        dev.phys_port_cnt = 1;
        dev.num_comp_vectors = identity.num_comp_vectors as c_int;
        dev.local_dma_lkey = 0;
        dev.node_guid = u64::from_ne_bytes(identity.node_guid);
        dev.uverbs_cmd_mask |= (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
            | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        dev.link_ops = LINK_OPS.0.get();
        bindings::rxe_glue_mark_name_assigned_by_user(ib);
        let ops = device_ops();
        bindings::ib_set_device_ops(ib, &ops);
        to_result(bindings::ib_device_set_netdev(ib, ndev.as_ptr(), 1)).and_then(|()| {
            to_result(bindings::ib_register_device(
                ib,
                name.as_char_ptr(),
                core::ptr::null_mut(),
            ))
        })
    }
}

/// Looks up the rxe device bound to `ndev`, with a reference.
pub(crate) fn device_of_netdev(ndev: &NetDevice) -> Option<RxeDeviceRef> {
    // SAFETY: `ndev` is valid for the call.
    let ib = unsafe {
        bindings::ib_device_get_by_netdev(ndev.as_ptr(), bindings::rdma_driver_id_RDMA_DRIVER_RXE)
    };
    // INVARIANT: A non-null result is a registered rxe device with a reference
    // held for us. Only this driver registers RDMA_DRIVER_RXE devices (the C
    // module has the same name and cannot be loaded beside us).
    NonNull::new(ib).map(RxeDeviceRef)
}

/// A reference on a registered rxe device, dropped with `ib_device_put`.
///
/// # Invariants
///
/// Holds one `ib_device_get`-style reference on an [`RxeDevice`].
pub(crate) struct RxeDeviceRef(NonNull<bindings::ib_device>);

impl core::ops::Deref for RxeDeviceRef {
    type Target = RxeDevice;

    fn deref(&self) -> &RxeDevice {
        // SAFETY: The reference keeps the device alive; it heads an
        // `RxeDevice`.
        unsafe { rxe_from_ib(self.0.as_ptr()) }
    }
}

impl Drop for RxeDeviceRef {
    fn drop(&mut self) {
        // SAFETY: We hold one reference, given back once.
        unsafe { bindings::ib_device_put(self.0.as_ptr()) };
    }
}

impl RxeDeviceRef {
    /// Unregisters the device from a work item (ib_core's
    /// `ib_unregister_device_queued`), as is required from netdev notifiers.
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: We hold a reference, so the device is valid.
        unsafe { bindings::ib_unregister_device_queued(self.0.as_ptr()) };
    }
}

/// Borrows the driver struct around an `ib_device`.
///
/// # Safety
///
/// `ib` is a live device allocated by [`create_device`], valid for `'a`.
unsafe fn rxe_from_ib<'a>(ib: *mut bindings::ib_device) -> &'a RxeDevice {
    // CAST: `ib` is at offset 0 of `RxeDevice` (checked in `create_device`).
    // SAFETY: Valid for `'a` by the caller's promise.
    unsafe { &*ib.cast::<RxeDevice>() }
}

/// The device an ib_core object belongs to.
///
/// # Safety
///
/// `device` is the `device` field of a live ib_core object of this driver.
pub(super) unsafe fn rxe_of<'a>(device: *mut bindings::ib_device) -> &'a RxeDevice {
    // SAFETY: Objects of a device never outlive it.
    unsafe { rxe_from_ib(device) }
}

/// Unregisters every rxe device and waits for them to be freed (module
/// exit). First every QP of every device fails
/// ([`crate::qp::fail_all_for_removal`]), as when a netdev goes: the
/// unregistration destroys QPs without completing their work, and a
/// process polling a CQ whose QP just went would wait for ever.
pub(crate) fn unregister_all_devices() {
    fail_all_devices_for_removal();
    // SAFETY: Always safe to call; ib_core serialises with everything else.
    unsafe { bindings::ib_unregister_driver(bindings::rdma_driver_id_RDMA_DRIVER_RXE) };
}

/// Runs [`crate::qp::fail_all_for_removal`] on every registered rxe
/// device. ib_core exports no way to walk its devices but clients: a
/// client registered for the walk has its `add` called on each registered
/// device, with the device held, and keeps none of them (`add` fails), so
/// unregistering it has nothing to remove.
fn fail_all_devices_for_removal() {
    let Ok(client) = KBox::new(
        bindings::ib_client {
            name: kernel::str::as_char_ptr_in_const_context(c"rxe_removal"),
            add: Some(removal_client_add),
            ..Default::default()
        },
        GFP_KERNEL,
    ) else {
        // Without memory the devices go unflushed, as the C driver's do.
        return;
    };
    let client = KBox::into_raw(client);
    // SAFETY: `client` is a valid client that outlives its registration:
    // it is unregistered below, before it is freed.
    if unsafe { bindings::ib_register_client(client) } == 0 {
        // SAFETY: Registered just above.
        unsafe { bindings::ib_unregister_client(client) };
    }
    // SAFETY: From `KBox::into_raw` above; ib_core no longer uses it.
    drop(unsafe { KBox::from_raw(client) });
}

/// The walk client's `add`: fails the QPs of a device of this module.
///
/// # Safety
///
/// Called by ib_core with a registered device it holds for the call.
unsafe extern "C" fn removal_client_add(ib: *mut bindings::ib_device) -> c_int {
    let this_module: *mut bindings::module =
        <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE
            .as_ptr()
            .cast();
    // SAFETY: ib_core holds the device for the call; `ops` is immutable
    // once the device is registered.
    if unsafe { (*ib).ops.owner } == this_module {
        // SAFETY: A device of this module heads an `RxeDevice`, valid for
        // the call.
        crate::qp::fail_all_for_removal(unsafe { rxe_from_ib(ib) });
    }
    // Keep no client data: nothing to remove when the client goes.
    EOPNOTSUPP.to_errno()
}

/// The `rdma_link_ops` that make `rdma link add NAME type rxe netdev DEV`
/// reach [`crate::device::newlink`].
struct LinkOps(UnsafeCell<bindings::rdma_link_ops>);

// SAFETY: ib_core writes `list` under its own lock while registered; nothing
// else writes the struct.
unsafe impl Sync for LinkOps {}

static LINK_OPS: LinkOps = LinkOps(UnsafeCell::new(bindings::rdma_link_ops {
    list: bindings::list_head {
        next: core::ptr::null_mut(),
        prev: core::ptr::null_mut(),
    },
    type_: kernel::str::as_char_ptr_in_const_context(c"rxe"),
    newlink: Some(newlink_callback),
    dellink: Some(dellink_callback),
}));

/// Registers the `rxe` link type.
pub(crate) fn register_link_ops() {
    // SAFETY: The static lives as long as the module; registered once.
    unsafe { bindings::rdma_link_register(LINK_OPS.0.get()) };
}

/// Unregisters the `rxe` link type.
pub(crate) fn unregister_link_ops() {
    // SAFETY: Registered by `register_link_ops`.
    unsafe { bindings::rdma_link_unregister(LINK_OPS.0.get()) };
}

/// `rdma link add NAME type rxe netdev NDEV`: creates a device.
///
/// # Safety
///
/// Called by nldev only, with a NUL-terminated name and a netdev it holds
/// a reference on, both valid for the call.
unsafe extern "C" fn newlink_callback(
    name: *const c_char,
    ndev: *mut bindings::net_device,
) -> c_int {
    from_result(|| {
        // SAFETY: nldev passes a NUL-terminated name and a netdev it holds a
        // reference on for the duration of the call.
        let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDevice::from_raw(ndev)) };
        crate::device::newlink(name, ndev)?;
        Ok(0)
    })
}

/// `rdma link del NAME`, before ib_core unregisters the device: its QPs
/// fail ([`crate::qp::fail_all_for_removal`]) while their owners can
/// still see the flushed work.
///
/// # Safety
///
/// Called by nldev only, with a device of this driver it holds a
/// reference on for the call.
unsafe extern "C" fn dellink_callback(ib: *mut bindings::ib_device) -> c_int {
    // SAFETY: nldev holds the device for the call; the link ops are ours,
    // so the device is.
    crate::qp::fail_all_for_removal(unsafe { rxe_from_ib(ib) });
    0
}

/// The ops table installed on every device: only verbs that are
/// implemented are set; ib_core answers EOPNOTSUPP for the rest.
fn device_ops() -> bindings::ib_device_ops {
    bindings::ib_device_ops {
        owner: <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE
            .as_ptr()
            .cast(),
        driver_id: bindings::rdma_driver_id_RDMA_DRIVER_RXE,
        uverbs_abi_ver: bindings::RXE_GLUE_RXE_UVERBS_ABI_VERSION,
        query_device: Some(query_device_callback),
        query_port: Some(query_port_callback),
        modify_device: Some(modify_device_callback),
        modify_port: Some(modify_port_callback),
        query_pkey: Some(query_pkey_callback),
        get_port_immutable: Some(get_port_immutable_callback),
        get_link_layer: Some(get_link_layer_callback),
        alloc_ucontext: Some(alloc_ucontext_callback),
        dealloc_ucontext: Some(dealloc_ucontext_callback),
        disassociate_ucontext: Some(disassociate_ucontext_callback),
        alloc_pd: Some(alloc_pd_callback),
        dealloc_pd: Some(dealloc_pd_callback),
        create_cq: Some(super::cq::create_cq_callback),
        destroy_cq: Some(super::cq::destroy_cq_callback),
        resize_user_cq: Some(super::cq::resize_cq_callback),
        poll_cq: Some(super::cq::poll_cq_callback),
        req_notify_cq: Some(super::cq::req_notify_cq_callback),
        get_dma_mr: Some(super::mr::get_dma_mr_callback),
        reg_user_mr: Some(super::mr::reg_user_mr_callback),
        rereg_user_mr: Some(super::mr::rereg_user_mr_callback),
        advise_mr: if super::odp::OdpUmem::supported() {
            Some(super::mr::advise_mr_callback)
        } else {
            None
        },
        dereg_mr: Some(super::mr::dereg_mr_callback),
        alloc_mr: Some(super::mr::alloc_mr_callback),
        map_mr_sg: Some(super::mr::map_mr_sg_callback),
        alloc_mw: Some(super::mw::alloc_mw_callback),
        dealloc_mw: Some(super::mw::dealloc_mw_callback),
        create_ah: Some(super::ah::create_ah_callback),
        create_user_ah: Some(super::ah::create_ah_callback),
        query_ah: Some(super::ah::query_ah_callback),
        destroy_ah: Some(super::ah::destroy_ah_callback),
        create_srq: Some(super::srq::create_srq_callback),
        modify_srq: Some(super::srq::modify_srq_callback),
        query_srq: Some(super::srq::query_srq_callback),
        destroy_srq: Some(super::srq::destroy_srq_callback),
        create_qp: Some(super::qp::create_qp_callback),
        modify_qp: Some(super::qp::modify_qp_callback),
        query_qp: Some(super::qp::query_qp_callback),
        destroy_qp: Some(super::qp::destroy_qp_callback),
        attach_mcast: Some(super::qp::attach_mcast_callback),
        detach_mcast: Some(super::qp::detach_mcast_callback),
        post_send: Some(super::post::post_send_callback),
        post_recv: Some(super::post::post_recv_callback),
        post_srq_recv: Some(super::post::post_srq_recv_callback),
        mmap: Some(super::queue::mmap_callback),
        mmap_free: Some(super::queue::mmap_free_callback),
        alloc_hw_port_stats: Some(alloc_hw_port_stats_callback),
        get_hw_stats: Some(get_hw_stats_callback),
        process_mad: Some(process_mad_callback),
        enable_driver: Some(enable_driver_callback),
        dealloc_driver: Some(dealloc_driver_callback),
        size_ib_pd: core::mem::size_of::<verbs::RxePd>(),
        size_ib_cq: core::mem::size_of::<crate::cq::RxeCq>(),
        size_ib_ucontext: core::mem::size_of::<verbs::RxeUcontext>(),
        size_ib_qp: core::mem::size_of::<crate::qp::RxeQp>(),
        size_ib_ah: core::mem::size_of::<crate::ah::RxeAh>(),
        size_ib_srq: core::mem::size_of::<crate::srq::RxeSrq>(),
        size_ib_mw: core::mem::size_of::<crate::mw::RxeMw>(),
        ..Default::default()
    }
}

/// Checks that a verb got no input and zeroes its response (`ib_no_udata_io`).
fn no_udata_io(udata: *mut bindings::ib_udata) -> Result {
    if udata.is_null() {
        return Ok(());
    }
    // SAFETY: ib_core passes a valid udata or null.
    to_result(unsafe { bindings::rxe_glue_no_udata_io(udata) })
}

/// `.query_device`: the device's attributes.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours, an attribute buffer
/// writable for the call, and the call's udata or null.
unsafe extern "C" fn query_device_callback(
    ib: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        no_udata_io(udata)?;
        // SAFETY: ib_core passes a live device and an attribute buffer.
        let (rxe, attr) = unsafe { (rxe_from_ib(ib), &mut *attr) };
        *attr = rxe.query_device();
        Ok(0)
    })
}

/// `.modify_device`: a new system image GUID or node description (what
/// writing sysfs `node_desc` does); nothing else, as in rxe.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and the changes,
/// readable for the call.
unsafe extern "C" fn modify_device_callback(
    ib: *mut bindings::ib_device,
    mask: c_int,
    attr: *mut bindings::ib_device_modify,
) -> c_int {
    from_result(|| {
        let guid = bindings::RXE_GLUE_IB_DEVICE_MODIFY_SYS_IMAGE_GUID;
        let desc = bindings::RXE_GLUE_IB_DEVICE_MODIFY_NODE_DESC;
        if mask & !(guid | desc) != 0 {
            return Err(EOPNOTSUPP);
        }
        // SAFETY: ib_core passes a live device and the changes.
        let (rxe, attr) = unsafe { (rxe_from_ib(ib), &*attr) };
        if mask & guid != 0 {
            rxe.set_sys_image_guid(attr.sys_image_guid);
        }
        if mask & desc != 0 {
            // SAFETY: `ib` is live; `node_desc` is the size the glue copies.
            unsafe { bindings::rxe_glue_set_node_desc(ib, attr.node_desc.as_ptr()) };
        }
        Ok(0)
    })
}

/// `.modify_port`: capability flags set and cleared (ib_cm's
/// `IB_PORT_CM_SUP`), or the Q_Key violation counter reset.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and the changes,
/// readable for the call.
unsafe extern "C" fn modify_port_callback(
    ib: *mut bindings::ib_device,
    port: u32,
    mask: c_int,
    attr: *mut bindings::ib_port_modify,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live device and the changes.
        let (rxe, attr) = unsafe { (rxe_from_ib(ib), &*attr) };
        rxe.modify_port(
            port,
            mask as u32,
            attr.set_port_cap_mask,
            attr.clr_port_cap_mask,
        )?;
        Ok(0)
    })
}

/// `.query_port`: the port's attributes.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and an attribute
/// buffer writable for the call.
unsafe extern "C" fn query_port_callback(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live device and an attribute buffer.
        let (rxe, attr) = unsafe { (rxe_from_ib(ib), &mut *attr) };
        rxe.query_port(port, attr)?;
        Ok(0)
    })
}

/// `.query_pkey`: the P_Key at `index`.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and an output slot
/// writable for the call.
unsafe extern "C" fn query_pkey_callback(
    ib: *mut bindings::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live device and an output slot.
        let (rxe, pkey) = unsafe { (rxe_from_ib(ib), &mut *pkey) };
        *pkey = rxe.query_pkey(port, index)?;
        Ok(0)
    })
}

/// `.get_port_immutable`: the port's fixed properties.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and an output struct
/// writable for the call.
unsafe extern "C" fn get_port_immutable_callback(
    ib: *mut bindings::ib_device,
    port: u32,
    immutable: *mut bindings::ib_port_immutable,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live device and an output struct.
        let (rxe, immutable) = unsafe { (rxe_from_ib(ib), &mut *immutable) };
        rxe.port_immutable(port, immutable)?;
        Ok(0)
    })
}

/// `.get_link_layer`: always Ethernet.
extern "C" fn get_link_layer_callback(
    _ib: *mut bindings::ib_device,
    _port: u32,
) -> bindings::rdma_link_layer {
    bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

/// `.alloc_ucontext`: a process opened the device.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed context of `size_ib_ucontext`
/// bytes whose `device` is a live device of ours.
unsafe extern "C" fn alloc_ucontext_callback(
    uctx: *mut bindings::ib_ucontext,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a zeroed object of `size_ib_ucontext` bytes
        // whose `device` is set.
        let rxe = unsafe { rxe_of((*uctx).device) };
        verbs::alloc_ucontext(rxe)?;
        Ok(0)
    })
}

/// `.dealloc_ucontext`: the context's process is done with the device.
///
/// # Safety
///
/// Called by ib_core only, once per context that `alloc_ucontext_callback`
/// accepted, while the context is still valid.
unsafe extern "C" fn dealloc_ucontext_callback(uctx: *mut bindings::ib_ucontext) {
    // SAFETY: The context was created by `alloc_ucontext_callback`.
    let rxe = unsafe { rxe_of((*uctx).device) };
    verbs::dealloc_ucontext(rxe);
}

/// Device removal with a process still holding a context (`rdma link del`
/// while an rdma_cm listener or a pingpong server has the device open):
/// ib_core destroys the context's objects through the destroy verbs and
/// zaps the mappings it tracks, then calls this. Nothing is left for the
/// driver to do: the ring pages a process may still have mapped are kept
/// alive by the mapping's page references after the ring is freed, and
/// nothing in the kernel reads them any more. With the hook present,
/// ib_core no longer waits for every such process to exit before the
/// device goes away, as with the C driver (which has the same empty hook).
extern "C" fn disassociate_ucontext_callback(_uctx: *mut bindings::ib_ucontext) {}

/// `.alloc_pd`: counts a new PD.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed PD of `size_ib_pd` bytes whose
/// `device` is a live device of ours.
unsafe extern "C" fn alloc_pd_callback(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a zeroed object of `size_ib_pd` bytes whose
        // `device` is set.
        let rxe = unsafe { rxe_of((*pd).device) };
        verbs::alloc_pd(rxe)?;
        Ok(0)
    })
}

/// `.dealloc_pd`: uncounts a PD.
///
/// # Safety
///
/// Called by ib_core only, once per PD that `alloc_pd_callback` accepted,
/// while the PD is still valid.
unsafe extern "C" fn dealloc_pd_callback(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: The PD was created by `alloc_pd_callback`.
    let rxe = unsafe { rxe_of((*pd).device) };
    verbs::dealloc_pd(rxe);
    0
}

/// `.enable_driver`: the device is registered.
///
/// # Safety
///
/// Called by ib_core only, with a registered device of ours.
unsafe extern "C" fn enable_driver_callback(ib: *mut bindings::ib_device) -> c_int {
    // SAFETY: ib_core calls this on a registered device.
    let rxe = unsafe { rxe_from_ib(ib) };
    rxe.enabled();
    0
}

/// The counter descriptions handed to ib_core: the names of
/// [`crate::counters::NAMES`], as C `rdma_stat_desc`s.
struct StatDescs([bindings::rdma_stat_desc; counters::COUNT]);

// SAFETY: Immutable after compile time; the pointers are to static strings.
unsafe impl Sync for StatDescs {}

static STAT_DESCS: StatDescs = StatDescs({
    let mut descs = [bindings::rdma_stat_desc {
        name: core::ptr::null(),
        flags: 0,
        priv_: core::ptr::null(),
    }; counters::COUNT];
    let mut i = 0;
    while i < counters::COUNT {
        descs[i].name = kernel::str::as_char_ptr_in_const_context(counters::NAMES[i]);
        i += 1;
    }
    descs
});

/// `.alloc_hw_port_stats`: a stats struct for our counters, which ib_core
/// frees.
extern "C" fn alloc_hw_port_stats_callback(
    _ib: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: The descriptions are static and `COUNT` long; the result is
    // the caller's.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            STAT_DESCS.0.as_ptr(),
            counters::COUNT as c_int,
            bindings::RXE_GLUE_RDMA_HW_STATS_DEFAULT_LIFESPAN,
        )
    }
}

/// `.process_mad`: the performance management agent
/// ([`crate::proto::perf_mgmt`]); ib_core calls it for sysfs `counters/`
/// and for every MAD received on QP1.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours, a readable IB MAD of
/// `size_of::<ib_mad>()` bytes and a writable one for the answer.
unsafe extern "C" fn process_mad_callback(
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
    use crate::proto::perf_mgmt::{answer, MAD_SIZE};
    const { assert!(core::mem::size_of::<bindings::ib_mad>() == MAD_SIZE) };
    // SAFETY: ib_core passes a live device of ours, a whole IB MAD to read
    // and one to write (see above); `ib_mad` is plain bytes, of the size
    // asserted.
    let (rxe, input, out) = unsafe {
        (
            rxe_from_ib(ib),
            &*in_mad.cast::<[u8; MAD_SIZE]>(),
            &mut *out_mad.cast::<[u8; MAD_SIZE]>(),
        )
    };
    answer(port, input, &rxe.counters.port_counters(), out)
}

/// `.get_hw_stats`: fills `stats` with the counters' current values.
///
/// # Safety
///
/// Called by ib_core only, with a live device of ours and, under ib_core's
/// lock, a stats struct that `alloc_hw_port_stats_callback` made (or
/// null).
unsafe extern "C" fn get_hw_stats_callback(
    ib: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    if port == 0 || stats.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: ib_core passes a live device of ours and a stats struct made
    // by `alloc_hw_port_stats`, whose `value` array has `COUNT` entries, under
    // its lock.
    let (rxe, values) = unsafe {
        (
            rxe_from_ib(ib),
            (*stats).value.as_mut_slice(counters::COUNT),
        )
    };
    values.copy_from_slice(&rxe.counters.snapshot());
    counters::COUNT as c_int
}

/// `.dealloc_driver`: the device's last reference is gone.
///
/// # Safety
///
/// Called by ib_core only, once per device of ours, before it frees the
/// memory; nothing else uses the device during or after the call.
unsafe extern "C" fn dealloc_driver_callback(ib: *mut bindings::ib_device) {
    // SAFETY: Called once, when the last reference is gone and before
    // ib_core frees the memory: nothing else uses the device, so the
    // borrow is exclusive.
    let rxe = unsafe { &mut *ib.cast::<RxeDevice>() };
    rxe.release();
}
