// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the `ib_qp` at the head of a driver's QP, the ops a driver
//! implements for them ([`QpOps`]), and their trampolines.

use super::{
    attr::QpAttr,
    device::device_of,
    wr::{RecvWrs, SendWrs},
    Adapter, Driver, IbBody, Udata,
};
use crate::sys::bindings;
use core::marker::PhantomData;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_qp` at the head of a QP of driver `D`.
///
/// # Invariants
///
/// Heads a `D::Qp` that ib_core allocated (`size_ib_qp`); ib_core set
/// `device`, `pd`, the CQs, the SRQ, `uobject`, the event handler and the
/// type before `create_qp` and does not change them while the QP exists,
/// and holds a use of the CQs and the SRQ until it is destroyed.
#[repr(transparent)]
pub(crate) struct IbQp<D: Driver>(Opaque<bindings::ib_qp>, PhantomData<D>);

// SAFETY: The methods only read fields that ib_core fixed before
// `create_qp` and keeps while the QP exists, or call ib_core functions
// that may run in any thread.
unsafe impl<D: Driver> Send for IbQp<D> {}
// SAFETY: As above.
unsafe impl<D: Driver> Sync for IbQp<D> {}

impl<D: Driver> IbQp<D> {
    fn as_ptr(&self) -> *mut bindings::ib_qp {
        self.0.get()
    }

    /// The QP's device (which outlives it).
    pub(crate) fn device(&self) -> &D::Device {
        // SAFETY: `device` is set before `create_qp`; a device outlives its
        // objects.
        unsafe { device_of::<D>((*self.as_ptr()).device) }
    }

    /// The `struct ib_qp *`, as the opaque cookie a kernel CQ hands back
    /// in `ib_wc.qp`.
    pub(crate) fn cookie(&self) -> u64 {
        self.as_ptr() as usize as u64
    }

    /// Whether user space owns the QP (its rings are mapped there).
    pub(crate) fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before `create_qp` for user
        // QPs and stays null for kernel ones.
        unsafe { !(*self.as_ptr()).uobject.is_null() }
    }

    /// The CQ send completions go to.
    pub(crate) fn send_cq(&self) -> &D::Cq {
        // SAFETY: ib_core set `send_cq` to a CQ of `D` and holds a use of
        // it until the QP is destroyed (type invariant).
        unsafe { super::object::<D::Cq>((*self.as_ptr()).send_cq) }
    }

    /// The CQ receive completions go to.
    pub(crate) fn recv_cq(&self) -> &D::Cq {
        // SAFETY: As for `send_cq`.
        unsafe { super::object::<D::Cq>((*self.as_ptr()).recv_cq) }
    }

    /// The SRQ the QP receives from, if any.
    pub(crate) fn srq(&self) -> Option<&D::Srq> {
        // SAFETY: `srq` is null or an SRQ of `D` that ib_core keeps (with a
        // use) until the QP is destroyed (type invariant).
        unsafe {
            let srq = (*self.as_ptr()).srq;
            (!srq.is_null()).then(|| super::object::<D::Srq>(srq))
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

/// `ib_modify_qp_is_ok`: whether ib_core's transition table allows
/// `cur` -> `next` for a QP of type `qp_type` with attribute `mask`.
pub(crate) fn modify_is_ok(cur: u32, next: u32, qp_type: u32, mask: u32) -> bool {
    if cur > bindings::ib_qp_state_IB_QPS_ERR || next > bindings::ib_qp_state_IB_QPS_ERR {
        return false;
    }
    // SAFETY: A pure table lookup; the states are in range (checked above).
    unsafe { bindings::ib_modify_qp_is_ok(cur, next, qp_type, mask) }
}

/// What a driver's QP does (`Self` is the driver's QP struct, headed by an
/// [`IbQp`]).
pub(crate) trait QpOps<D: Driver>: IbBody<Raw = bindings::ib_qp> {
    /// `.create_qp`: the new QP's number and body; writes the real
    /// capabilities back to `init.cap`.
    fn create(
        dev: &D::Device,
        init: &mut bindings::ib_qp_init_attr,
        udata: Option<&Udata>,
    ) -> Result<(u32, impl PinInit<Self::Body>)>;
    /// The new QP is initialised: makes it reachable. On an error, undoes
    /// what `create` reserved; the body is dropped after.
    fn publish(dev: &D::Device, qp: &Self) -> Result;
    /// `.modify_qp`: applies what `mask` (`IB_QP_*`) selects of `attr`.
    fn modify(dev: &D::Device, qp: &Self, attr: &QpAttr, mask: u32) -> Result;
    /// `.query_qp`: the attributes, and of the init attributes the
    /// capabilities and `sq_sig_type` (ib_core's part is filled here).
    fn query(qp: &Self, attr: &mut bindings::ib_qp_attr, init: &mut bindings::ib_qp_init_attr);
    /// `.destroy_qp`: unpublishes and drains the QP; the body is dropped
    /// after.
    fn destroy(dev: &D::Device, qp: &Self);
    /// `.post_send`: a kernel caller's chain of sends, or a user QP's
    /// doorbell.
    fn post_send(dev: &D::Device, qp: &Self, wrs: &mut SendWrs<'_, D>) -> Result;
    /// `.post_recv`: a kernel caller's chain of receives.
    fn post_recv(dev: &D::Device, qp: &Self, wrs: &mut RecvWrs<'_>) -> Result;
}

impl<D: Driver> Adapter<D> {
    /// `.create_qp`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed QP of `size_ib_qp` bytes whose
    /// `device` is set, init attributes writable for the call, and the
    /// call's udata or null.
    pub(super) unsafe extern "C" fn create_qp(
        ibqp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a zeroed QP with `device` set, the init
            // attributes (updated with the real caps) and the call's udata,
            // all live for the call.
            let (dev, init, udata) = unsafe {
                (
                    device_of::<D>((*ibqp).device),
                    &mut *init,
                    Udata::from_raw(udata),
                )
            };
            let (qpn, body) = D::Qp::create(dev, init, udata)?;
            // SAFETY: ib_core reads `qp_num` after the call; the body is
            // uninitialised memory of the zeroed object that ib_core never
            // touches or moves.
            unsafe {
                (*ibqp).qp_num = qpn;
                super::init_and_publish::<D::Qp>(ibqp, body, |qp| D::Qp::publish(dev, qp))
            }?;
            Ok(0)
        })
    }

    /// `.destroy_qp`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per QP that `create_qp` made; no other
    /// call on the QP follows, and ib_core frees its memory afterwards.
    pub(super) unsafe extern "C" fn destroy_qp(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: A QP that `create_qp` made, once.
        let (dev, qp) = unsafe { (device_of::<D>((*ibqp).device), super::object::<D::Qp>(ibqp)) };
        D::Qp::destroy(dev, qp);
        // SAFETY: Initialised in `create_qp`; unpublished and drained.
        unsafe { super::drop_body::<D::Qp>(ibqp) };
        0
    }

    /// `.modify_qp`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live QP that `create_qp` made and
    /// live attributes whose resolved source GID attributes are held for
    /// the call.
    pub(super) unsafe extern "C" fn modify_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        attr_mask: c_int,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live QP of `D` and the attributes,
            // with the source GID attributes it resolved held for the call.
            let (dev, qp, attr) = unsafe {
                (
                    device_of::<D>((*ibqp).device),
                    super::object::<D::Qp>(ibqp),
                    QpAttr::from_raw(attr),
                )
            };
            D::Qp::modify(dev, qp, attr, attr_mask as u32)?;
            Ok(0)
        })
    }

    /// `.query_qp`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live QP that `create_qp` made and two
    /// buffers writable for the call.
    pub(super) unsafe extern "C" fn query_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _attr_mask: c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        // SAFETY: ib_core passes a live QP of `D` and buffers for the
        // answer.
        let (qp, attr, init, ib) =
            unsafe { (super::object::<D::Qp>(ibqp), &mut *attr, &mut *init, &*ibqp) };
        init.event_handler = ib.event_handler;
        init.qp_context = ib.qp_context;
        init.send_cq = ib.send_cq;
        init.recv_cq = ib.recv_cq;
        init.srq = ib.srq;
        init.qp_type = ib.qp_type;
        init.port_num = 1;
        D::Qp::query(qp, attr, init);
        0
    }

    /// `.attach_mcast` (ib_core has checked that the QP is UD and the GID
    /// multicast; the LID means nothing on RoCE).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live QP that `create_qp` made and a
    /// GID valid for reads during the call.
    pub(super) unsafe extern "C" fn attach_mcast(
        ibqp: *mut bindings::ib_qp,
        mgid: *mut bindings::ib_gid,
        _mlid: u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live QP of `D` and a readable GID,
            // every bit pattern of which is a byte array.
            let (qp, mgid) = unsafe { (super::object::<D::Qp>(ibqp), (*mgid).raw) };
            D::attach_mcast(qp, mgid)?;
            Ok(0)
        })
    }

    /// `.detach_mcast`.
    ///
    /// # Safety
    ///
    /// As for [`Adapter::attach_mcast`].
    pub(super) unsafe extern "C" fn detach_mcast(
        ibqp: *mut bindings::ib_qp,
        mgid: *mut bindings::ib_gid,
        _mlid: u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `attach_mcast`.
            let (qp, mgid) = unsafe { (super::object::<D::Qp>(ibqp), (*mgid).raw) };
            D::detach_mcast(qp, mgid)?;
            Ok(0)
        })
    }
}
