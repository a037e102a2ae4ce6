// SPDX-License-Identifier: GPL-2.0

//! Completion queues: the `ib_cq` at the head of a driver's CQ, the ops a
//! driver implements for them ([`CqOps`]), and their trampolines.

use super::{device::device_of, Adapter, Driver, IbBody, Udata};
use crate::sys::bindings;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_cq` at the head of a driver's CQ.
///
/// # Invariants
///
/// Heads a CQ of a driver that ib_core allocated (`size_ib_cq`) and whose
/// create verb succeeded; ib_core set `device` and the handlers before
/// `create_cq` and does not change them while the CQ exists.
#[repr(transparent)]
pub(crate) struct IbCq(Opaque<bindings::ib_cq>);

// SAFETY: The methods only read fields that ib_core fixed before the
// create verb and keeps while the object exists, call ib_core functions
// that may run in any thread, or write fields under ib_core's
// serialisation of the object's verbs.
unsafe impl Send for IbCq {}
// SAFETY: As above.
unsafe impl Sync for IbCq {}

impl IbCq {
    fn as_ptr(&self) -> *mut bindings::ib_cq {
        self.0.get()
    }

    /// Sets the capacity ib_core reports (`ibcq.cqe`).
    pub(crate) fn set_cqe(&self, cqe: u32) {
        // SAFETY: The CQ is live; `cqe` is an int that only the verbs of
        // this CQ (serialised by ib_core's uobject locking) write and that
        // ib_core reads after them.
        unsafe { (*self.as_ptr()).cqe = cqe as c_int };
    }

    /// Calls the CQ's completion handler (`comp_handler(cq, cq_context)`),
    /// if it has one. Atomic context is fine: ib_core's handlers only
    /// queue work or wake waiters.
    pub(crate) fn completion_event(&self) {
        // SAFETY: The CQ is live; the handler and its context were set by
        // ib_core before create_cq and stay valid while the CQ exists.
        unsafe { bindings::rxe_glue_cq_comp_handler(self.as_ptr()) };
    }

    /// Raises `IB_EVENT_CQ_ERR` through the CQ's event handler, if any.
    pub(crate) fn error_event(&self) {
        // SAFETY: As for `completion_event`.
        unsafe { bindings::rxe_glue_cq_err_event(self.as_ptr()) };
    }
}

/// What a driver's CQ does (`Self` is the driver's CQ struct, headed by an
/// [`IbCq`]).
pub(crate) trait CqOps<D: Driver>: IbBody<Raw = bindings::ib_cq> {
    /// `.create_cq`: the body of a new CQ of at least `cqe` entries
    /// (`flags`: `IB_UVERBS_CQ_FLAGS_*`); `cq` is ib_core's part.
    fn create(
        dev: &D::Device,
        cq: &IbCq,
        cqe: u32,
        flags: u32,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<Self::Body>>;
    /// `.destroy_cq`: the last use is gone; the body is dropped after.
    fn destroy(dev: &D::Device, cq: &Self);
    /// `.resize_user_cq`.
    fn resize(dev: &D::Device, cq: &Self, cqe: u32, udata: Option<&Udata>) -> Result;
    /// `.poll_cq`: moves up to `wc.len()` completions to `wc`; returns how
    /// many.
    fn poll(cq: &Self, wc: &mut [bindings::ib_wc]) -> usize;
    /// `.req_notify_cq`: arms the completion event (`flags`:
    /// `IB_CQ_*`); returns whether completions are already waiting and
    /// `IB_CQ_REPORT_MISSED_EVENTS` asked for that.
    fn req_notify(cq: &Self, flags: u32) -> bool;
}

impl<D: Driver> Adapter<D> {
    /// `.create_cq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed CQ of `size_ib_cq` bytes whose
    /// `device` and handlers are set, live init attributes, and the call's
    /// attribute bundle (null for a kernel caller).
    pub(super) unsafe extern "C" fn create_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a zeroed CQ with `device` and the
            // handlers set, the attributes, and the bundle (null for a
            // kernel caller), all live for the call; `IbCq` is a
            // transparent wrapper.
            let (dev, attr, udata, ib) = unsafe {
                (
                    device_of::<D>((*ibcq).device),
                    &*attr,
                    Udata::from_raw(bindings::rxe_glue_attrs_udata(attrs)),
                    &*ibcq.cast::<IbCq>(),
                )
            };
            let init = D::Cq::create(dev, ib, attr.cqe, attr.flags, udata)?;
            // SAFETY: The body is uninitialised memory of the zeroed object
            // that ib_core never touches or moves; dropped in `destroy_cq`.
            unsafe { super::init_body::<D::Cq>(ibcq, init) };
            Ok(0)
        })
    }

    /// `.destroy_cq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per CQ that `create_cq` made, after its
    /// last user (QP, poller) is gone; ib_core frees its memory afterwards.
    pub(super) unsafe extern "C" fn destroy_cq(
        ibcq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: A CQ that `create_cq` made, with its device.
        let (dev, cq) = unsafe { (device_of::<D>((*ibcq).device), super::object::<D::Cq>(ibcq)) };
        D::Cq::destroy(dev, cq);
        // SAFETY: Initialised in `create_cq`; nothing uses the CQ any more.
        unsafe { super::drop_body::<D::Cq>(ibcq) };
        0
    }

    /// `.resize_user_cq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live CQ that `create_cq` made and the
    /// call's udata or null.
    pub(super) unsafe extern "C" fn resize_cq(
        ibcq: *mut bindings::ib_cq,
        cqe: c_uint,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live CQ of `D` and the call's udata.
            let (dev, cq, udata) = unsafe {
                (
                    device_of::<D>((*ibcq).device),
                    super::object::<D::Cq>(ibcq),
                    Udata::from_raw(udata),
                )
            };
            D::Cq::resize(dev, cq, cqe, udata)?;
            Ok(0)
        })
    }

    /// `.poll_cq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only (`ib_poll_cq`), with a live CQ that
    /// `create_cq` made and, unless null, an array of `num_entries` work
    /// completions the caller owns for the call.
    pub(super) unsafe extern "C" fn poll_cq(
        ibcq: *mut bindings::ib_cq,
        num_entries: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        let n = usize::try_from(num_entries).unwrap_or(0);
        if n == 0 || wc.is_null() {
            return 0;
        }
        // SAFETY: ib_poll_cq's caller passes an array of `num_entries` work
        // completions that it owns for the call, and a live CQ of `D`.
        let (cq, wcs) = unsafe {
            (
                super::object::<D::Cq>(ibcq),
                core::slice::from_raw_parts_mut(wc, n),
            )
        };
        // At most `num_entries`, which is a c_int.
        D::Cq::poll(cq, wcs).min(n) as c_int
    }

    /// `.req_notify_cq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live CQ that `create_cq` made.
    pub(super) unsafe extern "C" fn req_notify_cq(
        ibcq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        // SAFETY: ib_core passes a live CQ of `D`.
        let cq = unsafe { super::object::<D::Cq>(ibcq) };
        c_int::from(D::Cq::req_notify(cq, flags))
    }
}
