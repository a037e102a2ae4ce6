// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: the `ib_srq` at the head of a driver's SRQ, the
//! ops a driver implements for them ([`SrqOps`]), and their trampolines.

use super::{device::device_of, wr::RecvWrs, Adapter, Driver, IbBody, Udata};
use crate::sys::bindings;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_srq` at the head of a driver's SRQ.
///
/// # Invariants
///
/// Heads an SRQ of a driver that ib_core allocated (`size_ib_srq`);
/// ib_core set `device`, `uobject` and the event handler before
/// `create_srq` and does not change them while the SRQ exists.
#[repr(transparent)]
pub(crate) struct IbSrq(Opaque<bindings::ib_srq>);

// SAFETY: The methods only read fields that ib_core fixed before the
// create verb and keeps while the object exists, call ib_core functions
// that may run in any thread, or write fields under ib_core's
// serialisation of the object's verbs.
unsafe impl Send for IbSrq {}
// SAFETY: As above.
unsafe impl Sync for IbSrq {}

impl IbSrq {
    /// Raises `IB_EVENT_SRQ_LIMIT_REACHED` through the SRQ's event handler,
    /// if any. Any context.
    pub(crate) fn limit_reached(&self) {
        // SAFETY: The SRQ is live; its handler and context were set by
        // ib_core before `create_srq`.
        unsafe { bindings::rxe_glue_srq_limit_event(self.0.get()) };
    }

    /// Whether a user process owns the SRQ (its ring is mapped there).
    pub(crate) fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before `create_srq` for user
        // SRQs and stays null for kernel ones.
        unsafe { !(*self.0.get()).uobject.is_null() }
    }
}

/// What a driver's SRQ does (`Self` is the driver's SRQ struct, headed by
/// an [`IbSrq`]).
pub(crate) trait SrqOps<D: Driver>: IbBody<Raw = bindings::ib_srq> {
    /// `.create_srq`: the body of a new SRQ; writes the real sizes back to
    /// `init.attr`.
    fn create(
        dev: &D::Device,
        init: &mut bindings::ib_srq_init_attr,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<Self::Body>>;
    /// The new SRQ is initialised: makes it reachable. On an error, undoes
    /// what `create` reserved; the body is dropped after.
    fn publish(dev: &D::Device, srq: &Self) -> Result;
    /// `.modify_srq`: `mask` of `IB_SRQ_*`.
    fn modify(srq: &Self, attr: &bindings::ib_srq_attr, mask: u32, udata: Option<&Udata>)
        -> Result;
    /// `.query_srq`.
    fn query(srq: &Self, attr: &mut bindings::ib_srq_attr);
    /// `.destroy_srq`: the last QP on it is gone; unpublishes and drains
    /// the SRQ; the body is dropped after.
    fn destroy(dev: &D::Device, srq: &Self);
    /// `.post_srq_recv`: posts a kernel caller's chain of receives.
    fn post_recv(srq: &Self, wrs: &mut RecvWrs<'_>) -> Result;
}

impl<D: Driver> Adapter<D> {
    /// `.create_srq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed SRQ of `size_ib_srq` bytes
    /// whose `device` is set, init attributes writable for the call, and
    /// the call's udata or null.
    pub(super) unsafe extern "C" fn create_srq(
        ibsrq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a zeroed SRQ with `device` set, the
            // init attributes and the udata, all live for the call.
            let (dev, init, udata) = unsafe {
                (
                    device_of::<D>((*ibsrq).device),
                    &mut *init,
                    Udata::from_raw(udata),
                )
            };
            let body = D::Srq::create(dev, init, udata)?;
            // SAFETY: The body is uninitialised memory of the zeroed object
            // that ib_core never touches or moves.
            unsafe {
                super::init_and_publish::<D::Srq>(ibsrq, body, |srq| D::Srq::publish(dev, srq))
            }?;
            Ok(0)
        })
    }

    /// `.modify_srq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live SRQ that `create_srq` made, live
    /// attributes, and the call's udata or null.
    pub(super) unsafe extern "C" fn modify_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live SRQ of `D`, the attributes and
            // the call's udata.
            let (srq, attr, udata) = unsafe {
                (
                    super::object::<D::Srq>(ibsrq),
                    &*attr,
                    Udata::from_raw(udata),
                )
            };
            D::Srq::modify(srq, attr, mask, udata)?;
            Ok(0)
        })
    }

    /// `.query_srq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live SRQ that `create_srq` made and
    /// an attribute buffer writable for the call.
    pub(super) unsafe extern "C" fn query_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        // SAFETY: ib_core passes a live SRQ of `D` and a buffer.
        let (srq, attr) = unsafe { (super::object::<D::Srq>(ibsrq), &mut *attr) };
        D::Srq::query(srq, attr);
        0
    }

    /// `.destroy_srq`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per SRQ that `create_srq` made, after
    /// the last QP on it is gone; ib_core frees its memory afterwards.
    pub(super) unsafe extern "C" fn destroy_srq(
        ibsrq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: An SRQ that `create_srq` made, once.
        let (dev, srq) = unsafe {
            (
                device_of::<D>((*ibsrq).device),
                super::object::<D::Srq>(ibsrq),
            )
        };
        D::Srq::destroy(dev, srq);
        // SAFETY: Initialised in `create_srq`; unpublished and drained.
        unsafe { super::drop_body::<D::Srq>(ibsrq) };
        0
    }

    /// `.post_srq_recv`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only (`ib_post_srq_recv`), with a live SRQ that
    /// `create_srq` made, a chain of live work requests (null-ended) and a
    /// writable `bad_wr`.
    pub(super) unsafe extern "C" fn post_srq_recv(
        ibsrq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: ib_core passes a live SRQ of `D`.
        let srq = unsafe { super::object::<D::Srq>(ibsrq) };
        // SAFETY: ib_post_srq_recv's contract: a live chain.
        let mut wrs = unsafe { RecvWrs::new(wr) };
        match D::Srq::post_recv(srq, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                // SAFETY: ib_post_srq_recv's caller passes a writable
                // out-pointer.
                unsafe { *bad_wr = wrs.current() };
                e.to_errno()
            }
        }
    }
}
