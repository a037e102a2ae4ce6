// SPDX-License-Identifier: GPL-2.0

//! ib_core's completion-queue objects: the `ib_cq` at the head of
//! [`RxeCq`], user data (`ib_udata`) of the CQ verbs, the kernel `ib_wc`
//! that `poll_cq` fills, and the `ib_device_ops` adapters for the CQ verbs.

use super::{bindings, queue::Ucontext};
use crate::abi::cq::KernelCqe;
use crate::cq::{CqCreate, RxeCq};
use kernel::{error::from_result, error::to_result, prelude::*, types::Opaque};

/// The `ib_cq` embedded at the start of [`RxeCq`].
///
/// # Invariants
///
/// Heads an [`RxeCq`] that ib_core allocated (`size_ib_cq`) and that
/// `create_cq_callback` initialised; ib_core set `device` and the handlers
/// before `create_cq` and does not change them while the CQ exists.
#[repr(transparent)]
pub(crate) struct IbCq(Opaque<bindings::ib_cq>);

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

    /// Raises `IB_EVENT_CQ_ERR` through the CQ's event handler, if any (for
    /// the first overflow [`RxeCq::post`] sees).
    pub(crate) fn error_event(&self) {
        // SAFETY: As for `completion_event`.
        unsafe { bindings::rxe_glue_cq_err_event(self.as_ptr()) };
    }
}

/// The driver part of a verb's user data.
///
/// # Invariants
///
/// Wraps a live `ib_udata` that ib_core embedded in the call's
/// `uverbs_attr_bundle`.
#[repr(transparent)]
pub(crate) struct Udata(Opaque<bindings::ib_udata>);

impl Udata {
    /// Borrows a udata, or `None` for a kernel caller.
    ///
    /// # Safety
    ///
    /// `ptr` is null or a live udata of a uverbs call, valid for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_udata) -> Option<&'a Self> {
        // CAST: Transparent wrapper.
        // SAFETY: Valid for `'a` by the caller's promise.
        (!ptr.is_null()).then(|| unsafe { &*ptr.cast::<Self>() })
    }

    /// Bytes of driver input the caller passed.
    pub(crate) fn inlen(&self) -> usize {
        // SAFETY: Live udata (invariant); ib_core does not change it.
        unsafe { (*self.0.get()).inlen }
    }

    /// Bytes the caller has room for in the driver response.
    pub(crate) fn outlen(&self) -> usize {
        // SAFETY: Live udata (invariant); ib_core does not change it.
        unsafe { (*self.0.get()).outlen }
    }

    /// Copies `resp` to the start of the driver response; `EINVAL` if it
    /// does not fit, `EFAULT` if user memory is not writable.
    pub(crate) fn respond(&self, resp: &[u8]) -> Result {
        if resp.len() > self.outlen() {
            return Err(EINVAL);
        }
        // SAFETY: The udata is live; `resp` is readable for its length,
        // which fits in `outbuf` (checked above).
        to_result(unsafe {
            bindings::rxe_glue_copy_to_udata(self.0.get(), resp.as_ptr().cast(), resp.len())
        })
    }

    /// The user context of the call.
    pub(crate) fn ucontext(&self) -> Result<&Ucontext> {
        // SAFETY: A udata of a uverbs call is embedded in its attribute
        // bundle.
        let uctx = unsafe { bindings::rxe_glue_udata_ucontext(self.0.get()) };
        if uctx.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: The bundle's context is live for the call, which is
        // shorter than the borrow of `self`.
        Ok(unsafe { Ucontext::from_raw(uctx) })
    }
}

/// `IB_WC_WITH_NETWORK_HDR_TYPE` of `enum ib_wc_flags`.
const IB_WC_WITH_NETWORK_HDR_TYPE: c_int = 1 << 6;

/// Fills a kernel work completion from a kernel CQ slot.
pub(crate) fn fill_wc(wc: &mut bindings::ib_wc, k: &KernelCqe) {
    *wc = bindings::ib_wc::default();
    wc.__bindgen_anon_1.wr_id = k.wc.wr_id;
    wc.status = k.wc.status;
    wc.opcode = k.wc.opcode;
    wc.vendor_err = k.wc.vendor_err;
    wc.byte_len = k.wc.byte_len;
    // The cookie is the `struct ib_qp *` the data path posted with; it is
    // handed back, never dereferenced here.
    wc.qp = k.extra.qp as usize as *mut bindings::ib_qp;
    wc.ex.invalidate_rkey = u32::from_ne_bytes(k.wc.ex);
    wc.src_qp = k.wc.src_qp;
    wc.slid = u32::from(k.wc.slid);
    wc.wc_flags = k.wc.wc_flags as c_int;
    wc.pkey_index = k.wc.pkey_index;
    wc.sl = k.wc.sl;
    wc.dlid_path_bits = k.wc.dlid_path_bits;
    wc.port_num = u32::from(k.wc.port_num);
    wc.smac = k.extra.smac;
    wc.vlan_id = k.extra.vlan_id;
    wc.network_hdr_type = k.extra.network_hdr_type;
    if k.extra.network_hdr_type != 0 {
        wc.wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
    }
}

/// Borrows the driver CQ around an `ib_cq`.
///
/// # Safety
///
/// `ibcq` heads a live [`RxeCq`] initialised by `create_cq_callback`.
pub(super) unsafe fn rxe_cq<'a>(ibcq: *mut bindings::ib_cq) -> &'a RxeCq {
    // CAST: `ibcq` is the first field of the `#[repr(C)]` `RxeCq`.
    // SAFETY: Live and initialised by the caller's promise.
    unsafe { &*ibcq.cast::<RxeCq>() }
}

/// `.create_cq`: sizes the ring and initialises the CQ.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed CQ of `size_ib_cq` bytes whose
/// `device` and handlers are set, live init attributes, and the call's
/// attribute bundle (null for a kernel caller).
pub(super) unsafe extern "C" fn create_cq_callback(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    const { assert!(core::mem::offset_of!(RxeCq, ibcq) == 0) };
    from_result(|| {
        // SAFETY: ib_core passes a zeroed object of `size_ib_cq` bytes with
        // `device` and the handlers set, the attributes, and the bundle
        // (null for a kernel caller), all live for the call.
        let (rxe, attr, udata) = unsafe {
            (
                super::ib::rxe_of((*ibcq).device),
                &*attr,
                Udata::from_raw(bindings::rxe_glue_attrs_udata(attrs)),
            )
        };
        let req = CqCreate {
            cqe: attr.cqe,
            flags: attr.flags,
        };
        // CAST: `IbCq` is a transparent wrapper of the C struct.
        // SAFETY: The `ib_cq` is live for the call and beyond.
        let ib = unsafe { &*ibcq.cast::<IbCq>() };
        let init = crate::cq::create(rxe, ib, &req, udata)?;
        let cq = ibcq.cast::<RxeCq>();
        // SAFETY: The driver part of the zeroed object is uninitialised
        // memory that ib_core never touches and never moves; it is
        // initialised exactly once here and dropped in `destroy_cq`.
        match unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*cq).state), init) } {
            Ok(()) => Ok(0),
            Err(never) => match never {},
        }
    })
}

/// `.destroy_cq`: drops the CQ's state.
///
/// # Safety
///
/// Called by ib_core only, once per CQ that `create_cq_callback` made,
/// after its last user (QP, poller) is gone; ib_core frees its memory
/// afterwards.
pub(super) unsafe extern "C" fn destroy_cq_callback(
    ibcq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core destroys only CQs that `create_cq` initialised, once,
    // after the last user (QP, poller) has gone.
    let (rxe, cq) = unsafe { (super::ib::rxe_of((*ibcq).device), rxe_cq(ibcq)) };
    crate::cq::destroy(rxe, cq);
    // SAFETY: Initialised in `create_cq_callback`; nothing uses the CQ any
    // more, and ib_core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibcq.cast::<RxeCq>()).state)) };
    0
}

/// `.resize_user_cq`: moves the CQ to a ring of `cqe` entries.
///
/// # Safety
///
/// Called by ib_core only, with a live CQ that `create_cq_callback` made
/// and the call's udata or null.
pub(super) unsafe extern "C" fn resize_cq_callback(
    ibcq: *mut bindings::ib_cq,
    cqe: c_uint,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core passes a live CQ of ours.
        let (rxe, cq) = unsafe { (super::ib::rxe_of((*ibcq).device), rxe_cq(ibcq)) };
        // SAFETY: ib_core passes the call's udata, live for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        cq.resize(rxe, cqe, udata)?;
        Ok(0)
    })
}

/// `.poll_cq`: moves up to `num_entries` completions to `wc`.
///
/// # Safety
///
/// Called by ib_core only (`ib_poll_cq`), with a live CQ that
/// `create_cq_callback` made and, unless null, an array of `num_entries`
/// work completions the caller owns for the call.
pub(super) unsafe extern "C" fn poll_cq_callback(
    ibcq: *mut bindings::ib_cq,
    num_entries: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    let n = usize::try_from(num_entries).unwrap_or(0);
    if n == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: ib_poll_cq's caller passes an array of `num_entries` work
    // completions that it owns for the call, and a live CQ of ours.
    let (cq, wcs) = unsafe { (rxe_cq(ibcq), core::slice::from_raw_parts_mut(wc, n)) };
    // At most `num_entries`, which is a c_int.
    cq.poll(wcs) as c_int
}

/// `.req_notify_cq`: arms the CQ's completion event.
///
/// # Safety
///
/// Called by ib_core only, with a live CQ that `create_cq_callback` made.
pub(super) unsafe extern "C" fn req_notify_cq_callback(
    ibcq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: ib_core passes a live CQ of ours.
    let cq = unsafe { rxe_cq(ibcq) };
    c_int::from(cq.req_notify(flags))
}
