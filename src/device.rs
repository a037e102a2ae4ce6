// SPDX-License-Identifier: GPL-2.0

//! One rxe device: what `rdma link add` creates on top of a netdev, its
//! advertised attributes, its port, and its teardown.

use crate::{
    counters::{Counter, Counters},
    debugfs::DeviceDebugfs,
    driver::Rxe,
    fault::FaultInjector,
    ib::{self, DeviceIdentity, IbDevice},
    netns,
    params::{self, IbMtu},
    sys::{
        bindings,
        device_box::DeviceBox,
        net::{NetDevice, NetdevEvent},
        odp::OdpUmem,
        table::IndexTable,
    },
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{prelude::*, str::CStr, sync::Arc};

/// Driver state of one rxe device. ib_core allocates it (zeroed) with the
/// `ib_device` first and frees it after `dealloc_driver`.
///
/// # Invariants
///
/// `attr` and `port_attr` are written once, before registration, and only
/// read afterwards (what may change later is in atomics beside them). The device holds a use of `sockets` while
/// `holds_sockets` is true.
#[repr(C)]
pub(crate) struct RxeDevice {
    /// The ib_core device; must stay the first field.
    pub(crate) ib: IbDevice,
    /// Device attributes reported by `query_device`.
    pub(crate) attr: bindings::ib_device_attr,
    /// Static part of the port attributes reported by `query_port`.
    port_attr: bindings::ib_port_attr,
    /// Active RoCE MTU of the port (an [`IbMtu`] value), from the netdev MTU.
    active_mtu: AtomicU32,
    /// The system image GUID `query_device` reports (in `attr`'s byte
    /// order); `modify_device` may change it.
    sys_image_guid: AtomicU64,
    /// The port's capability flags `query_port` reports; `modify_port`
    /// sets and clears them (ib_cm sets `IB_PORT_CM_SUP`).
    port_cap_flags: AtomicU32,
    /// The sockets of the namespace the device was created in (`None`
    /// until then, and after `release`): a shared record that outlives the
    /// namespace if need be, so the device never touches a dead one.
    sockets: Option<Arc<netns::NetnsSockets>>,
    /// Whether this device still counts as a user of `sockets`.
    holds_sockets: AtomicBool,
    /// Open user contexts.
    pub(crate) ucontexts: AtomicU32,
    /// Allocated protection domains.
    pub(crate) pds: AtomicU32,
    /// Allocated completion queues.
    pub(crate) cqs: AtomicU32,
    /// Registered memory regions.
    pub(crate) mrs: AtomicU32,
    /// Registered on-demand-paging regions: while there are none, the data
    /// path skips every residency check.
    pub(crate) odp_regions: AtomicU32,
    /// Memory regions by key index.
    pub(crate) keys: IndexTable<crate::mr::RxeMr>,
    /// Allocated memory windows.
    pub(crate) mw_count: AtomicU32,
    /// Memory windows by key index.
    pub(crate) windows: IndexTable<crate::mw::RxeMw>,
    /// Created queue pairs.
    pub(crate) qp_count: AtomicU32,
    /// Queue pairs by QP number.
    pub(crate) qps: IndexTable<crate::qp::RxeQp>,
    /// Created address handles.
    pub(crate) ah_count: AtomicU32,
    /// Address handles by AH number.
    pub(crate) ahs: IndexTable<crate::ah::RxeAh>,
    /// Created shared receive queues.
    pub(crate) srq_count: AtomicU32,
    /// Shared receive queues by SRQ number.
    pub(crate) srqs: IndexTable<crate::srq::RxeSrq>,
    /// Hardware counters reported by `get_hw_stats`.
    pub(crate) counters: Counters,
    /// The device's debugfs files (fault rules, QP state), if debugfs
    /// could have them.
    pub(crate) debugfs: DeviceBox<DeviceDebugfs>,
    /// UD multicast groups and their members (set at creation).
    pub(crate) multicast: DeviceBox<crate::multicast::Groups>,
}

// SAFETY: Everything is atomics, locked, or immutable after registration
// (`sockets` is written before registration and dropped in `release`, when
// nothing else uses the device).
unsafe impl Sync for RxeDevice {}

// SAFETY: Every field is valid when all its bytes are zero: C structs of
// plain integers, atomics, `None` (`sockets`: a null `Arc` pointer is the
// niche of `None`), and the tables and boxes, whose zeroed state is their
// documented "not yet set up" one (`IndexTable::init`, `DeviceBox`).
unsafe impl pin_init::Zeroable for RxeDevice {}

crate::impl_ib_object!(RxeDevice, ib: bindings::ib_device);

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init before first use.
    unsafe(uninit) static NEWLINK_LOCK: Mutex<()> = ();
}

/// Prepares device creation.
///
/// # Safety
///
/// Called once, from module init, before the link type is registered.
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { NEWLINK_LOCK.init() };
}

/// Handles `rdma link add NAME type rxe netdev DEV`.
pub(crate) fn newlink(name: &CStr, ndev: &NetDevice) -> Result {
    if ndev.is_vlan() {
        pr_err!("rxe creation allowed on top of a real device only\n");
        return Err(EPERM);
    }
    // One device per netdev: the check and the registration are one step.
    let _serial = NEWLINK_LOCK.lock();
    if ib::Device::<Rxe>::of_netdev(ndev).is_some() {
        pr_err!("rxe already configured on this netdev\n");
        return Err(EEXIST);
    }

    let net = ndev.net();
    let mac = ndev.mac().unwrap_or_else(crate::sys::random_mac);
    let guid = params::eui64_from_mac(mac);
    let identity = DeviceIdentity {
        node_guid: guid,
        num_comp_vectors: crate::sys::possible_cpus(),
        node_desc: b"rxe",
    };
    let mtu = IbMtu::for_netdev_mtu(ndev.mtu());
    ib::Device::<Rxe>::create(name, ndev, identity, |rxe| {
        // SAFETY: First use of the table, in the device's final place; it
        // is destroyed in `release`, which runs on every path from here.
        unsafe { rxe.keys.init() };
        // SAFETY: As for the key table.
        unsafe { rxe.qps.init() };
        // SAFETY: As for the key table.
        unsafe { rxe.ahs.init() };
        // SAFETY: As for the key table.
        unsafe { rxe.srqs.init() };
        // SAFETY: As for the key table.
        unsafe { rxe.windows.init() };
        rxe.multicast
            .set(KBox::pin_init(crate::multicast::Groups::new(), GFP_KERNEL)?);
        let sockets = netns::acquire_sockets(net)?;
        // From here on the socket use belongs to the device: `release`
        // gives it back on every path, including a failed registration.
        rxe.attr = device_attr(guid);
        rxe.port_attr = port_attr();
        rxe.active_mtu = AtomicU32::new(mtu as u32);
        rxe.sys_image_guid = AtomicU64::new(rxe.attr.sys_image_guid);
        rxe.port_cap_flags = AtomicU32::new(rxe.port_attr.port_cap_flags);
        rxe.sockets = Some(sockets);
        rxe.holds_sockets = AtomicBool::new(true);
        // Without debugfs the device works, with no fault injection.
        // SAFETY: The files are dropped in `release`, before the device.
        if let Ok(files) = unsafe { crate::debugfs::create(rxe, name) } {
            rxe.debugfs.set(files);
        }
        Ok(())
    })
}

/// The on-demand-paging capabilities `query_device` reports: the C
/// driver's (no implicit ODP), when the kernel has on-demand paging.
fn odp_caps() -> bindings::ib_odp_caps {
    use bindings::*;
    if !OdpUmem::supported() {
        return ib_odp_caps::default();
    }
    let ud = ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV;
    let rc = ud
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH
        | ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE;
    ib_odp_caps {
        general_caps: u64::from(ib_odp_general_cap_bits_IB_ODP_SUPPORT),
        per_transport_caps: ib_odp_caps__bindgen_ty_1 {
            rc_odp_caps: rc,
            ud_odp_caps: ud,
            ..Default::default()
        },
    }
}

/// The attributes `query_device` reports: the C driver's values.
/// `IB_DEVICE_MEM_WINDOW` and `IB_DEVICE_MEM_WINDOW_TYPE_2B`: memory
/// windows of type 1 and 2B (`crate::mw`). `IB_DEVICE_MEM_MGT_EXTENSIONS` (fast registration:
/// `alloc_mr`, `map_mr_sg`, REG_MR, LOCAL_INV, SEND_WITH_INV) is
/// advertised, as NVMe over RDMA requires it (`t_fastreg`).
fn device_attr(sys_image_guid: [u8; 8]) -> bindings::ib_device_attr {
    use bindings::*;
    let cap_flags = ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR
        | ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR
        | ib_device_cap_flags_IB_DEVICE_AUTO_PATH_MIG
        | ib_device_cap_flags_IB_DEVICE_CHANGE_PHY_PORT
        | ib_device_cap_flags_IB_DEVICE_UD_AV_PORT_ENFORCE
        | ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT
        | ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID
        | ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN
        | ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE
        | ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS
        | ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
        | ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B
        | ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL
        | ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT
        | ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE;
    ib_device_attr {
        sys_image_guid: u64::from_ne_bytes(sys_image_guid),
        max_mr_size: params::MAX_MR_SIZE,
        page_size_cap: params::PAGE_SIZE_CAP,
        vendor_id: params::VENDOR_ID,
        max_qp: params::MAX_QP,
        max_qp_wr: params::MAX_QP_WR,
        device_cap_flags: cap_flags as u64,
        kernel_cap_flags: u64::from(ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG)
            | if OdpUmem::supported() {
                u64::from(ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING)
            } else {
                0
            },
        odp_caps: odp_caps(),
        max_send_sge: params::MAX_SGE,
        max_recv_sge: params::MAX_SGE,
        max_sge_rd: params::MAX_SGE_RD,
        max_cq: params::MAX_CQ,
        max_cqe: (1 << params::MAX_LOG_CQE) - 1,
        max_mr: params::MAX_MR,
        max_pd: params::MAX_PD,
        max_qp_rd_atom: params::MAX_QP_RD_ATOM,
        max_res_rd_atom: params::MAX_RES_RD_ATOM,
        max_qp_init_rd_atom: params::MAX_QP_INIT_RD_ATOM,
        atomic_cap: ib_atomic_cap_IB_ATOMIC_HCA,
        max_mcast_grp: params::MAX_MCAST_GRP,
        max_mcast_qp_attach: params::MAX_MCAST_QP_ATTACH,
        max_total_mcast_qp_attach: params::MAX_TOT_MCAST_QP_ATTACH,
        max_ah: params::MAX_AH,
        max_srq: params::MAX_SRQ,
        max_srq_wr: params::MAX_SRQ_WR,
        max_srq_sge: params::MAX_SRQ_SGE,
        max_fast_reg_page_list_len: params::MAX_FMR_PAGE_LIST_LEN,
        max_pkeys: params::MAX_PKEYS,
        local_ca_ack_delay: params::LOCAL_CA_ACK_DELAY,
        max_mw: params::MAX_MW,
        ..Default::default()
    }
}

/// The static part of the port attributes: the C driver's values.
fn port_attr() -> bindings::ib_port_attr {
    use bindings::*;
    ib_port_attr {
        state: ib_port_state_IB_PORT_DOWN,
        max_mtu: ib_mtu_IB_MTU_4096,
        active_mtu: ib_mtu_IB_MTU_256,
        gid_tbl_len: params::PORT_GID_TBL_LEN,
        port_cap_flags: ib_port_capability_mask_bits_IB_PORT_CM_SUP,
        max_msg_sz: params::PORT_MAX_MSG_SZ,
        pkey_tbl_len: params::PORT_PKEY_TBL_LEN,
        max_vl_num: params::PORT_MAX_VL_NUM,
        active_width: ib_port_width_IB_WIDTH_1X as u8,
        active_speed: params::PORT_ACTIVE_SPEED,
        phys_state: ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8,
        ..Default::default()
    }
}

impl RxeDevice {
    /// Whether any on-demand-paging region is registered.
    pub(crate) fn has_odp_regions(&self) -> bool {
        self.odp_regions.load(Ordering::Relaxed) != 0
    }

    /// `query_device`: the attributes, with the system image GUID in force.
    pub(crate) fn query_device(&self) -> bindings::ib_device_attr {
        let mut attr = self.attr;
        attr.sys_image_guid = self.sys_image_guid.load(Ordering::Relaxed);
        attr
    }

    /// `modify_device` with `IB_DEVICE_MODIFY_SYS_IMAGE_GUID`: `guid` in
    /// host order, as ib_core passes it.
    pub(crate) fn set_sys_image_guid(&self, guid: u64) {
        self.sys_image_guid.store(guid.to_be(), Ordering::Relaxed);
    }

    /// `modify_port`: sets, then clears, capability flags; only port 1
    /// exists, and of the other changes only resetting the Q_Key violation
    /// counter (which stays 0: no Q_Key is ever checked against a port) is
    /// supported, as in rxe.
    pub(crate) fn modify_port(&self, port: u32, mask: u32, set: u32, clear: u32) -> Result {
        if port != 1 {
            return Err(EINVAL);
        }
        if mask & !(bindings::RXE_GLUE_IB_PORT_RESET_QKEY_CNTR as u32) != 0 {
            return Err(EOPNOTSUPP);
        }
        let _ = self
            .port_cap_flags
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |flags| {
                Some((flags | set) & !clear)
            });
        Ok(())
    }

    /// `query_port`: the static attributes plus the live state of the netdev.
    pub(crate) fn query_port(&self, port: u32, attr: &mut bindings::ib_port_attr) -> Result {
        use bindings::*;
        if port != 1 {
            return Err(EINVAL);
        }
        let ndev = self.ib.netdev().ok_or(ENODEV)?;
        *attr = self.port_attr;
        attr.port_cap_flags = self.port_cap_flags.load(Ordering::Relaxed);
        attr.active_mtu = self.active_mtu.load(Ordering::Relaxed);
        let mut speed = attr.active_speed;
        let mut width = attr.active_width;
        let speed_res = self.ib.eth_speed(&mut speed, &mut width);
        attr.active_speed = speed;
        attr.active_width = width;
        if ndev.is_active() {
            attr.state = ib_port_state_IB_PORT_ACTIVE;
            attr.phys_state = ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8;
        } else {
            attr.state = ib_port_state_IB_PORT_DOWN;
            attr.phys_state = if ndev.is_up() {
                ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8
            } else {
                ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8
            };
        }
        speed_res
    }

    /// `query_pkey`: one full-membership default P_Key.
    pub(crate) fn query_pkey(&self, _port: u32, index: u16) -> Result<u16> {
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(bindings::RXE_GLUE_IB_DEFAULT_PKEY_FULL)
    }

    /// `get_port_immutable`: a RoCEv2 (UDP encapsulation) port.
    pub(crate) fn port_immutable(
        &self,
        port: u32,
        immutable: &mut bindings::ib_port_immutable,
    ) -> Result {
        if port != 1 {
            return Err(EINVAL);
        }
        immutable.core_cap_flags = bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
        immutable.pkey_tbl_len = c_int::from(self.port_attr.pkey_tbl_len);
        immutable.gid_tbl_len = self.port_attr.gid_tbl_len;
        immutable.max_mad_size = bindings::RXE_GLUE_IB_MGMT_MAD_SIZE;
        Ok(())
    }

    /// `enable_driver`: the device is registered and visible.
    pub(crate) fn enabled(&self) {
        if let Some(ndev) = self.ib.netdev() {
            pr_info!(
                "{}: added on netdev, port {}\n",
                self.ib.name(),
                if ndev.is_active() { "ACTIVE" } else { "DOWN" }
            );
        }
    }

    /// The fault rules, when some are set (the packet paths' one check).
    pub(crate) fn active_faults(&self) -> Option<&FaultInjector> {
        self.debugfs
            .get()
            .map(|d| d.get_ref().faults())
            .filter(|f| f.active())
    }

    /// The port's active MTU in bytes: the largest UD message.
    pub(crate) fn active_mtu_bytes(&self) -> u32 {
        128 << self.active_mtu.load(Ordering::Relaxed).clamp(1, 5)
    }

    /// Follows the netdev's MTU.
    fn set_mtu(&self, ndev_mtu: u32) {
        let mtu = IbMtu::for_netdev_mtu(ndev_mtu);
        self.active_mtu.store(mtu as u32, Ordering::Relaxed);
    }

    /// Gives back this device's use of its namespace's sockets, once.
    fn put_sockets(&self) {
        if self.holds_sockets.swap(false, Ordering::AcqRel) {
            if let Some(sockets) = &self.sockets {
                netns::release_sockets(sockets);
            }
        }
    }

    /// `dealloc_driver`: the last reference is gone.
    pub(crate) fn release(&mut self) {
        self.put_sockets();
        self.sockets = None;
        // SAFETY: ib_core deregistered every MR before freeing the device,
        // and nothing else uses the table any more.
        unsafe { self.keys.destroy() };
        // SAFETY: ib_core destroyed every QP before freeing the device.
        unsafe { self.qps.destroy() };
        // SAFETY: ib_core destroyed every AH before freeing the device.
        unsafe { self.ahs.destroy() };
        // SAFETY: ib_core deallocated every window before freeing the
        // device.
        unsafe { self.windows.destroy() };
        // SAFETY: ib_core destroyed every SRQ before freeing the device.
        unsafe { self.srqs.destroy() };
        // SAFETY: No packet path runs for the device any more: its QPs are
        // destroyed and its netdev no longer maps to it.
        unsafe { self.debugfs.release() };
        // SAFETY: As for the debugfs files; no verb runs any more either.
        unsafe { self.multicast.release() };
    }
}

/// Netdev notifier: follows the netdevs that rxe devices are bound to.
pub(crate) fn netdev_event(event: NetdevEvent, ndev: &NetDevice) {
    let Some(rxe) = ib::Device::<Rxe>::of_netdev(ndev) else {
        return;
    };
    match event {
        NetdevEvent::Unregister => {
            crate::qp::fail_all_for_removal(&rxe);
            rxe.unregister_queued();
            // The namespace may be going away right after this notifier:
            // give the sockets back now rather than when the queued
            // unregistration finally frees the device.
            rxe.put_sockets();
        }
        NetdevEvent::ChangeMtu => rxe.set_mtu(ndev.mtu()),
        // As the C driver: ib_core reports the port state change itself;
        // the driver counts a link that is now down.
        NetdevEvent::Down => {
            if !ndev.is_active() {
                rxe.counters.inc(Counter::LinkDowned);
            }
        }
        NetdevEvent::Other => {}
    }
}
