// SPDX-License-Identifier: GPL-2.0

//! ib_core's queue-pair objects: the `ib_qp` at the head of [`RxeQp`],
//! conversion between `ib_qp_attr` / `rdma_ah_attr` and the driver's
//! attribute types, ib_core's state-transition table, and the
//! `ib_device_ops` adapters of the QP verbs.

use super::{bindings, cq::Udata};
use crate::{
    proto::qp_attr::{
        mask, AddressVector, AltPath, ModifyRequest, Network, QpAttrs, QpCaps, QpState, QpType,
    },
    qp::{QpCreate, RxeQp},
};
use core::ptr::NonNull;
use kernel::{
    error::from_result,
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
    types::Opaque,
};

/// The `ib_qp` embedded at the start of [`RxeQp`].
///
/// # Invariants
///
/// Heads an [`RxeQp`] that ib_core allocated (`size_ib_qp`); ib_core set
/// `device`, `pd`, the CQs and the type before `create_qp`.
#[repr(transparent)]
pub(crate) struct IbQp(Opaque<bindings::ib_qp>);

/// `ib_modify_qp_is_ok` for a request against the QP's current state.
pub(crate) fn transition_ok(attrs: &QpAttrs, qp_type: QpType, req: &ModifyRequest) -> bool {
    let cur = if req.mask & mask::CUR_STATE != 0 {
        req.cur_qp_state
    } else {
        attrs.state as u32
    };
    let next = if req.mask & mask::STATE != 0 {
        req.qp_state
    } else {
        cur
    };
    if QpState::from_raw(cur).is_none() || QpState::from_raw(next).is_none() {
        return false;
    }
    // SAFETY: A pure table lookup; the states are in range (checked above).
    unsafe { bindings::ib_modify_qp_is_ok(cur, next, qp_type as u32, req.mask) }
}

/// Reads the RoCE address vector of `ah`. `EINVAL` without a GRH or with a
/// source GID that is neither RoCE v2 IPv4 nor IPv6 (rxe's `chk_attr`).
pub(super) fn read_av(ah: &bindings::rdma_ah_attr) -> Result<AddressVector> {
    if u32::from(ah.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH == 0 || ah.grh.sgid_attr.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: ib_core resolved and holds the source GID attribute for the
    // duration of the verb.
    let (sgid, network) = unsafe {
        let gid_attr = &*ah.grh.sgid_attr;
        (
            gid_attr.gid.raw,
            bindings::rxe_glue_gid_attr_network_type(ah.grh.sgid_attr) as u32,
        )
    };
    let network = match network {
        bindings::rdma_network_type_RDMA_NETWORK_IPV4 => Network::Ipv4,
        bindings::rdma_network_type_RDMA_NETWORK_IPV6 => Network::Ipv6,
        _ => return Err(EINVAL),
    };
    // SAFETY: A RoCE AH attribute uses the `roce` member of the union; all
    // members are plain bytes.
    let dmac = unsafe { ah.__bindgen_anon_1.roce.dmac };
    Ok(AddressVector {
        port_num: ah.port_num as u8,
        // SAFETY: Every member of `ib_gid` is plain bytes.
        dgid: unsafe { ah.grh.dgid.raw },
        sgid,
        sgid_index: ah.grh.sgid_index,
        flow_label: ah.grh.flow_label,
        hop_limit: ah.grh.hop_limit,
        traffic_class: ah.grh.traffic_class,
        dmac,
        network,
    })
}

/// Writes `av` as rxe reports it (`rxe_av_to_attr`): RoCE type, GRH, port.
pub(super) fn write_av(av: &AddressVector, ah: &mut bindings::rdma_ah_attr) {
    ah.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
    ah.grh.dgid.raw = av.dgid;
    ah.grh.flow_label = av.flow_label;
    ah.grh.sgid_index = av.sgid_index;
    ah.grh.hop_limit = av.hop_limit;
    ah.grh.traffic_class = av.traffic_class;
    ah.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    ah.port_num = u32::from(av.port_num);
}

fn caps_of(cap: &bindings::ib_qp_cap) -> QpCaps {
    QpCaps {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    }
}

fn write_caps(caps: &QpCaps, has_rq: bool, cap: &mut bindings::ib_qp_cap) {
    cap.max_send_wr = caps.max_send_wr;
    cap.max_send_sge = caps.max_send_sge;
    cap.max_inline_data = caps.max_inline_data;
    if has_rq {
        cap.max_recv_wr = caps.max_recv_wr;
        cap.max_recv_sge = caps.max_recv_sge;
    }
}

/// Reads a modify request; the address vectors are resolved only when
/// their mask bit is set.
fn read_request(attr: &bindings::ib_qp_attr, m: u32) -> Result<ModifyRequest> {
    let av = if m & mask::AV != 0 {
        read_av(&attr.ah_attr)?
    } else {
        AddressVector::default()
    };
    let alt_av = if m & mask::ALT_PATH != 0 {
        read_av(&attr.alt_ah_attr)?
    } else {
        AddressVector::default()
    };
    Ok(ModifyRequest {
        mask: m,
        qp_state: attr.qp_state,
        cur_qp_state: attr.cur_qp_state,
        en_sqd_async_notify: attr.en_sqd_async_notify != 0,
        access: attr.qp_access_flags as u32,
        pkey_index: attr.pkey_index,
        port_num: attr.port_num,
        qkey: attr.qkey,
        av,
        av_sgid_index: u32::from(attr.ah_attr.grh.sgid_index),
        alt: AltPath {
            av: alt_av,
            port_num: attr.alt_port_num as u8,
            pkey_index: attr.alt_pkey_index,
            timeout: attr.alt_timeout,
        },
        alt_port_num: attr.alt_port_num,
        alt_sgid_index: u32::from(attr.alt_ah_attr.grh.sgid_index),
        path_mtu: attr.path_mtu,
        timeout: attr.timeout,
        retry_cnt: attr.retry_cnt,
        rnr_retry: attr.rnr_retry,
        rq_psn: attr.rq_psn,
        max_rd_atomic: u32::from(attr.max_rd_atomic),
        min_rnr_timer: attr.min_rnr_timer,
        sq_psn: attr.sq_psn,
        max_dest_rd_atomic: u32::from(attr.max_dest_rd_atomic),
        path_mig_state: attr.path_mig_state,
        dest_qpn: attr.dest_qp_num,
        cap: caps_of(&attr.cap),
    })
}

/// Fills `ib_qp_attr` from the QP's attributes (`rxe_qp_to_attr`).
fn write_attrs(a: &QpAttrs, caps: &QpCaps, has_rq: bool, attr: &mut bindings::ib_qp_attr) {
    *attr = bindings::ib_qp_attr::default();
    attr.qp_state = a.state as u32;
    attr.cur_qp_state = a.state as u32;
    attr.path_mtu = u32::from(a.path_mtu);
    attr.path_mig_state = a.path_mig_state;
    attr.qkey = a.qkey;
    attr.rq_psn = a.rq_psn.get();
    attr.sq_psn = a.sq_psn.get();
    attr.dest_qp_num = a.dest_qpn;
    attr.qp_access_flags = a.access as c_int;
    write_caps(caps, has_rq, &mut attr.cap);
    write_av(&a.av, &mut attr.ah_attr);
    write_av(&a.alt.av, &mut attr.alt_ah_attr);
    attr.pkey_index = a.pkey_index;
    attr.alt_pkey_index = a.alt.pkey_index;
    attr.en_sqd_async_notify = u8::from(a.en_sqd_async_notify);
    attr.sq_draining = u8::from(a.sq_draining);
    attr.max_rd_atomic = a.max_rd_atomic.min(255) as u8;
    attr.max_dest_rd_atomic = a.max_dest_rd_atomic.min(255) as u8;
    attr.min_rnr_timer = a.min_rnr_timer;
    attr.port_num = u32::from(a.port_num);
    attr.timeout = a.timeout;
    attr.retry_cnt = a.retry_cnt;
    attr.rnr_retry = a.rnr_retry;
    attr.alt_port_num = u32::from(a.alt.port_num);
    attr.alt_timeout = a.alt.timeout;
}

/// Borrows the driver QP around an `ib_qp`.
///
/// # Safety
///
/// `ibqp` heads a live [`RxeQp`] whose body `create_qp_callback`
/// initialised.
pub(super) unsafe fn rxe_qp<'a>(ibqp: *mut bindings::ib_qp) -> &'a RxeQp {
    // CAST: `ibqp` is the first field of the `#[repr(C)]` `RxeQp`.
    // SAFETY: Live and initialised by the caller's promise.
    unsafe { &*ibqp.cast::<RxeQp>() }
}

/// `.create_qp`: makes the QP and publishes its number.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed QP of `size_ib_qp` bytes whose
/// `device` is set, init attributes writable for the call, and the call's
/// udata or null.
pub(super) unsafe extern "C" fn create_qp_callback(
    ibqp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const { assert!(core::mem::offset_of!(RxeQp, ibqp) == 0) };
    from_result(|| {
        // SAFETY: ib_core passes a zeroed QP of `size_ib_qp` bytes with
        // `device` set, the init attributes (which the driver updates with
        // the real caps) and the call's udata, all live for the call.
        let (rxe, init, udata) = unsafe {
            (
                super::ib::rxe_of((*ibqp).device),
                &mut *init,
                Udata::from_raw(udata),
            )
        };
        let req = QpCreate {
            qp_type: init.qp_type,
            cap: caps_of(&init.cap),
            create_flags: init.create_flags,
            has_cqs: !init.send_cq.is_null() && !init.recv_cq.is_null(),
            has_srq: !init.srq.is_null(),
            sq_sig_all: init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
        };
        let (qpn, caps, body) = crate::qp::create(rxe, &req, udata)?;
        let qp = ibqp.cast::<RxeQp>();
        // SAFETY: The driver part of the zeroed object is memory ib_core
        // never touches and never moves; it is initialised once here and
        // dropped in `destroy_qp`.
        let Ok(()) = unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*qp).body), body) };
        // SAFETY: Initialised just above; ib_core reads `qp_num` after the
        // call.
        let qp = unsafe {
            (*ibqp).qp_num = qpn;
            &*qp
        };
        write_caps(&caps, !req.has_srq, &mut init.cap);
        if let Err(e) = crate::qp::publish(rxe, qp) {
            crate::qp::abandon(rxe, qpn);
            // SAFETY: Initialised above and never published.
            unsafe {
                core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibqp.cast::<RxeQp>()).body))
            };
            return Err(e);
        }
        Ok(0)
    })
}

/// `.destroy_qp`: unpublishes and drains the QP, then drops its body.
///
/// # Safety
///
/// Called by ib_core only, once per QP that `create_qp_callback` made; no
/// other call on the QP follows, and ib_core frees its memory afterwards.
pub(super) unsafe extern "C" fn destroy_qp_callback(
    ibqp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core destroys only QPs that `create_qp` initialised, once.
    let (rxe, qp) = unsafe { (super::ib::rxe_of((*ibqp).device), rxe_qp(ibqp)) };
    crate::qp::destroy(rxe, qp);
    // SAFETY: Initialised in `create_qp_callback`; removed from the table and
    // drained, so nothing uses it; ib_core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibqp.cast::<RxeQp>()).body)) };
    0
}

/// The arguments of a multicast verb: the device, the QP's number and the
/// group's GID.
///
/// # Safety
///
/// `ibqp` is a live QP that `create_qp_callback` made and `mgid` a GID
/// valid for reads during the call.
unsafe fn multicast_args<'a>(
    ibqp: *mut bindings::ib_qp,
    mgid: *const bindings::ib_gid,
) -> (&'a crate::device::RxeDevice, u32, [u8; 16]) {
    // SAFETY: By the caller's promise; every bit pattern of the union is a
    // valid byte array.
    unsafe {
        (
            super::ib::rxe_of((*ibqp).device),
            rxe_qp(ibqp).body.qpn,
            (*mgid).raw,
        )
    }
}

/// `.attach_mcast`: attaches a UD QP to multicast group `mgid` (ib_core
/// has checked that the QP is UD and the GID multicast; the LID means
/// nothing on RoCE).
///
/// # Safety
///
/// Called by ib_core only, with a live QP that `create_qp_callback` made
/// and a GID valid for reads during the call.
pub(super) unsafe extern "C" fn attach_mcast_callback(
    ibqp: *mut bindings::ib_qp,
    mgid: *mut bindings::ib_gid,
    _mlid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live QP of ours and a readable GID.
        let (rxe, qpn, mgid) = unsafe { multicast_args(ibqp, mgid) };
        rxe.multicast.get().ok_or(ENODEV)?.attach(rxe, qpn, mgid)?;
        Ok(0)
    })
}

/// `.detach_mcast`: detaches a QP from multicast group `mgid`.
///
/// # Safety
///
/// As for [`attach_mcast_callback`].
pub(super) unsafe extern "C" fn detach_mcast_callback(
    ibqp: *mut bindings::ib_qp,
    mgid: *mut bindings::ib_gid,
    _mlid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `attach_mcast_callback`.
        let (rxe, qpn, mgid) = unsafe { multicast_args(ibqp, mgid) };
        rxe.multicast.get().ok_or(ENODEV)?.detach(rxe, qpn, mgid)?;
        Ok(0)
    })
}

/// `.modify_qp`: applies the attributes `attr_mask` selects.
///
/// # Safety
///
/// Called by ib_core only, with a live QP that `create_qp_callback` made
/// and live attributes whose resolved source GID attributes are held for
/// the call.
pub(super) unsafe extern "C" fn modify_qp_callback(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    attr_mask: c_int,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live QP of ours and the attributes, with
        // the source GID attributes it resolved held for the call.
        let (rxe, qp, attr) = unsafe { (super::ib::rxe_of((*ibqp).device), rxe_qp(ibqp), &*attr) };
        let req = read_request(attr, attr_mask as u32)?;
        qp.modify(rxe, &req)?;
        Ok(0)
    })
}

/// `.query_qp`: the QP's attributes and init attributes.
///
/// # Safety
///
/// Called by ib_core only, with a live QP that `create_qp_callback` made
/// and two buffers writable for the call.
pub(super) unsafe extern "C" fn query_qp_callback(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _attr_mask: c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours and buffers for the answer.
    let (qp, attr, init, ib) = unsafe { (rxe_qp(ibqp), &mut *attr, &mut *init, &*ibqp) };
    let body = &qp.body;
    let a = qp.attrs();
    let has_rq = ib.srq.is_null();
    write_attrs(&a, &body.caps, has_rq, attr);
    init.event_handler = ib.event_handler;
    init.qp_context = ib.qp_context;
    init.send_cq = ib.send_cq;
    init.recv_cq = ib.recv_cq;
    init.srq = ib.srq;
    write_caps(&body.caps, has_rq, &mut init.cap);
    if !has_rq {
        // ib_core hands us `init` from an unzeroed allocation and copies
        // it to user space: a QP on an SRQ reports no receive queue rather
        // than stale kernel memory (which is what the C driver returns).
        init.cap.max_recv_wr = 0;
        init.cap.max_recv_sge = 0;
    }
    init.sq_sig_type = if body.sq_sig_all {
        bindings::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        bindings::ib_sig_type_IB_SIGNAL_REQ_WR
    };
    init.qp_type = ib.qp_type;
    init.port_num = 1;
    0
}

/// A requester timer of a QP fired; `kind` says which.
///
/// # Safety
///
/// `timer` is the `retry_timer` (for [`TimerKind::Retry`]) or the
/// `rnr_timer` (for [`TimerKind::Rnr`]) of the body of an [`RxeQp`], called
/// from the timer's expiry, in softirq.
///
/// [`TimerKind::Retry`]: crate::rc::complete::TimerKind::Retry
/// [`TimerKind::Rnr`]: crate::rc::complete::TimerKind::Rnr
unsafe fn timer_fired(timer: *mut bindings::timer_list, kind: crate::rc::complete::TimerKind) {
    use crate::sys::timer::Timer;
    let timer = timer.cast::<Timer>();
    // SAFETY: By our contract the timer is the one of `kind` in the
    // `QpBody` of an `RxeQp`, which `destroy_qp` keeps alive until the
    // timers are shut down (which waits for this callback); `Timer` is a
    // transparent `timer_list`.
    let qp = unsafe {
        &*match kind {
            crate::rc::complete::TimerKind::Retry => {
                kernel::container_of!(timer, RxeQp, body.retry_timer)
            }
            crate::rc::complete::TimerKind::Rnr => {
                kernel::container_of!(timer, RxeQp, body.rnr_timer)
            }
        }
    };
    // SAFETY: A timer callback runs in softirq, an RCU read section.
    let (rxe, ndev) = unsafe { device_and_netdev(qp) };
    if let Some(ndev) = ndev {
        crate::rc::complete::timer_expired(rxe, qp, ndev, kind);
    }
}

/// The QP's device and its netdev (`None` once the netdev is going away).
///
/// # Safety
///
/// The caller is in an RCU read-side section (softirq, or bottom halves
/// off) for as long as it uses the netdev, which stays valid through it;
/// the device outlives the QP.
unsafe fn device_and_netdev(
    qp: &RxeQp,
) -> (&crate::device::RxeDevice, Option<&super::net::NetDevice>) {
    // SAFETY: The QP's ib_qp points at its live device; the netdev is
    // valid for the caller's RCU read section (our contract).
    unsafe {
        let ib = (*qp.ibqp.as_ptr()).device;
        let ndev = bindings::rxe_glue_ib_netdev_rcu(ib);
        (
            super::ib::rxe_of(ib),
            (!ndev.is_null()).then(|| super::net::NetDevice::from_raw(ndev)),
        )
    }
}

/// The retransmission timer of a QP fired.
///
/// # Safety
///
/// Called by the timer core only, for the `retry_timer` of a QP's body.
pub(crate) unsafe extern "C" fn retry_timer_callback(timer: *mut bindings::timer_list) {
    // SAFETY: Our contract: the retry timer of a QP, expiring.
    unsafe { timer_fired(timer, crate::rc::complete::TimerKind::Retry) };
}

/// The RNR timer of a QP fired.
///
/// # Safety
///
/// Called by the timer core only, for the `rnr_timer` of a QP's body.
pub(crate) unsafe extern "C" fn rnr_timer_callback(timer: *mut bindings::timer_list) {
    // SAFETY: Our contract: the RNR timer of a QP, expiring.
    unsafe { timer_fired(timer, crate::rc::complete::TimerKind::Rnr) };
}

/// The transmit work of a QP runs (process context, on the QP's transmit
/// CPU); it transmits with bottom halves off, as a softirq would.
///
/// # Safety
///
/// Called by the workqueue core only, for the `tx_work` of a QP's body.
pub(crate) unsafe extern "C" fn tx_work_callback(work: *mut bindings::work_struct) {
    let work = work.cast::<crate::sys::work::TxWork>();
    // SAFETY: By our contract the work is the `tx_work` in the `QpBody` of
    // an `RxeQp`, which
    // `destroy_qp` keeps alive until the work is disabled (which waits for
    // this function); `TxWork` is a transparent `work_struct`.
    let qp = unsafe { &*kernel::container_of!(work, RxeQp, body.tx_work) };
    crate::sys::work::with_bh_off(|| {
        // SAFETY: With bottom halves off this is an RCU read section.
        let (rxe, ndev) = unsafe { device_and_netdev(qp) };
        if let Some(ndev) = ndev {
            crate::rc::transmit(rxe, qp, ndev);
        }
    });
}

/// What a QP's packets in flight point at instead of the QP: the QP while
/// it lives, nothing after `destroy_qp` detached it. Reference counted: the
/// QP holds one reference, each packet in flight another, so a packet that
/// a qdisc holds for longer than the QP lives frees only this.
///
/// # Invariants
///
/// While `qp` is `Some`, it points to a live QP whose `destroy_qp` has not
/// yet returned from [`TxLink::detach`].
#[pin_data]
pub(crate) struct TxLink {
    #[pin]
    qp: SpinLockIrq<Option<QpPtr>>,
}

/// The QP a [`TxLink`] points at.
struct QpPtr(NonNull<RxeQp>);

// SAFETY: The QP is shared with every context anyway (`RxeQp: Sync`); the
// pointer is only followed under the link's lock.
unsafe impl Send for QpPtr {}

impl TxLink {
    /// A link pointing at nothing yet.
    pub(crate) fn new() -> Result<Arc<TxLink>> {
        Arc::pin_init(
            pin_init!(TxLink { qp <- new_spinlock_irq!(None, "TxLink::qp") }),
            GFP_KERNEL,
        )
    }

    /// Points the link at `qp`, whose body holds it.
    ///
    /// # Safety
    ///
    /// `qp` stays live until [`TxLink::detach`] has returned.
    pub(crate) unsafe fn attach(&self, qp: &RxeQp) {
        // INVARIANT: Live until `detach` by the caller's promise.
        *self.qp.lock() = Some(QpPtr(NonNull::from(qp)));
    }

    /// Points the link at nothing: packets freed from now on touch only
    /// the link. Waits for a destructor that is telling the QP.
    pub(crate) fn detach(&self) {
        *self.qp.lock() = None;
    }

    /// The stack freed a packet of the QP: tells the QP if it still lives.
    pub(crate) fn packet_freed(&self) {
        let guard = self.qp.lock();
        if let Some(qp) = &*guard {
            // SAFETY: Attached, so live until `detach`, which waits for
            // the lock we hold (type invariant).
            unsafe { qp.0.as_ref() }.tx_packet_freed();
        }
    }
}

impl RxeQp {
    /// A packet is about to be sent: counts it in flight and returns the
    /// link reference it keeps until the stack frees it.
    pub(crate) fn tx_hold(&self) -> Arc<TxLink> {
        self.body
            .tx_inflight
            .fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        self.body.tx_link.clone()
    }

    /// The stack freed one of the QP's packets. Runs in any context but
    /// hard IRQ (the stack frees packets wherever it is, possibly inside
    /// `send`), under the link's lock: takes no QP lock.
    fn tx_packet_freed(&self) {
        use core::sync::atomic::Ordering::SeqCst;
        let left = self.body.tx_inflight.fetch_sub(1, SeqCst).wrapping_sub(1);
        if left < crate::qp::TX_INFLIGHT_LOW && self.body.tx_blocked.swap(false, SeqCst) {
            // Transmit from the QP's work rather than here (a no-op once
            // `destroy_qp` disabled it).
            crate::rc::kick(self);
        }
    }
}

impl IbQp {
    fn as_ptr(&self) -> *mut bindings::ib_qp {
        self.0.get()
    }

    /// The `struct ib_qp *`, as the opaque cookie a kernel CQ hands back
    /// in `ib_wc.qp`.
    pub(crate) fn cookie(&self) -> u64 {
        self.as_ptr() as usize as u64
    }

    /// Whether user space owns the QP (its rings are mapped by librxe).
    pub(crate) fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before `create_qp` for user
        // QPs and stays null for kernel ones.
        unsafe { !(*self.as_ptr()).uobject.is_null() }
    }

    /// The CQ send completions go to.
    pub(crate) fn send_cq(&self) -> &crate::cq::RxeCq {
        // SAFETY: By the type invariant ib_core set `send_cq` to one of our
        // CQs before `create_qp` and holds a use of it until the QP is
        // destroyed, so it outlives `self`.
        unsafe { super::cq::rxe_cq((*self.as_ptr()).send_cq) }
    }

    /// The CQ receive completions go to.
    pub(crate) fn recv_cq(&self) -> &crate::cq::RxeCq {
        // SAFETY: As for `send_cq`.
        unsafe { super::cq::rxe_cq((*self.as_ptr()).recv_cq) }
    }

    /// The SRQ the QP receives from, if any.
    pub(crate) fn srq(&self) -> Option<&crate::srq::RxeSrq> {
        // SAFETY: By the type invariant `srq` is null or one of our SRQs,
        // which ib_core keeps (with a use) until the QP is destroyed.
        unsafe {
            let srq = (*self.as_ptr()).srq;
            (!srq.is_null()).then(|| super::srq::rxe_srq(srq))
        }
    }

    /// Raises `IB_EVENT_QP_LAST_WQE_REACHED` through the QP's event
    /// handler, if any. Any context (ib_core's handler completes the
    /// drain's completion; uverbs queues an async event with GFP_ATOMIC).
    pub(crate) fn last_wqe_reached(&self) {
        // SAFETY: The QP is live; ib_core set its handler and context
        // before `create_qp` and keeps them until it is destroyed.
        unsafe {
            bindings::rxe_glue_qp_event(
                self.as_ptr(),
                bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
            )
        };
    }

    /// The identity of the QP's protection domain (compared with an MR's).
    pub(crate) fn pd_id(&self) -> usize {
        // SAFETY: `pd` is set by ib_core before `create_qp` and not changed.
        unsafe { (*self.as_ptr()).pd as usize }
    }
}
