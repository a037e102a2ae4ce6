// SPDX-License-Identifier: GPL-2.0

//! ib_core's shared-receive-queue objects: the `ib_srq` at the head of
//! [`RxeSrq`], the driver command of `modify_srq` and the user address its
//! answer goes to, and the `ib_device_ops` adapters of the SRQ verbs.

use super::{bindings, cq::Udata};
use crate::{
    abi::layout::{MmapInfo, ModifySrqCmd},
    srq::{MmapInfoSink, RxeSrq, SrqAttr},
};
use kernel::{
    error::from_result,
    prelude::*,
    types::Opaque,
    uaccess::{UserPtr, UserSlice},
};

/// The `ib_srq` embedded at the start of [`RxeSrq`].
///
/// # Invariants
///
/// Heads an [`RxeSrq`] that ib_core allocated (`size_ib_srq`).
#[repr(transparent)]
pub(crate) struct IbSrq(Opaque<bindings::ib_srq>);

/// Borrows the driver SRQ around an `ib_srq`.
///
/// # Safety
///
/// `ibsrq` heads a live [`RxeSrq`] whose body `create_srq_callback`
/// initialised.
pub(super) unsafe fn rxe_srq<'a>(ibsrq: *mut bindings::ib_srq) -> &'a RxeSrq {
    // CAST: `ibsrq` is the first field of the `#[repr(C)]` `RxeSrq`.
    // SAFETY: Live and initialised by the caller's promise.
    unsafe { &*ibsrq.cast::<RxeSrq>() }
}

/// A user `mminfo` at an address the command named (librxe's convention
/// for the resized ring); written with `copy_to_user`, so a bad address is
/// `EFAULT`, never a fault in the kernel.
struct UserMmapInfo(u64);

impl MmapInfoSink for UserMmapInfo {
    fn put(&self, mi: &MmapInfo) -> Result {
        let mut bytes = [0u8; MmapInfo::SIZE];
        mi.encode(&mut bytes).map_err(|_| EINVAL)?;
        let addr = usize::try_from(self.0).map_err(|_| EFAULT)?;
        UserSlice::new(UserPtr::from_addr(addr), bytes.len())
            .writer()
            .write_slice(&bytes)
    }
}

/// Copies the driver command of `modify_srq` out of the udata: at least
/// its 8 bytes, anything beyond zero (`ib_copy_validate_udata_in`).
fn read_modify_cmd(udata: *mut bindings::ib_udata) -> Result<ModifySrqCmd> {
    let mut bytes = [0u8; ModifySrqCmd::SIZE];
    // SAFETY: ib_core passes the live udata of the call; `bytes` is
    // writable for its length, which is also the minimum size.
    kernel::error::to_result(unsafe {
        bindings::_ib_copy_validate_udata_in(
            udata,
            bytes.as_mut_ptr().cast(),
            bytes.len(),
            bytes.len(),
        )
    })?;
    ModifySrqCmd::decode(&bytes).map_err(|_| EINVAL)
}

/// `.create_srq`: makes the SRQ and publishes its number.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed SRQ of `size_ib_srq` bytes whose
/// `device` is set, init attributes writable for the call, and the call's
/// udata or null.
pub(super) unsafe extern "C" fn create_srq_callback(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const { assert!(core::mem::offset_of!(RxeSrq, ibsrq) == 0) };
    from_result(|| {
        // SAFETY: ib_core passes a zeroed SRQ of `size_ib_srq` bytes with
        // `device` set, the init attributes (updated with the real caps)
        // and the udata, all live for the call.
        let (rxe, init, udata) = unsafe {
            (
                super::ib::rxe_of((*ibsrq).device),
                &mut *init,
                Udata::from_raw(udata),
            )
        };
        let mut attr = SrqAttr {
            max_wr: init.attr.max_wr,
            max_sge: init.attr.max_sge,
            srq_limit: init.attr.srq_limit,
        };
        let basic = init.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC;
        let (srq_num, body) = crate::srq::create(rxe, basic, &mut attr, udata)?;
        let srq = ibsrq.cast::<RxeSrq>();
        // SAFETY: The driver part of the zeroed object is memory ib_core
        // never touches or moves; it is initialised once here and dropped in
        // `destroy_srq`.
        let Ok(()) = unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*srq).body), body) };
        // SAFETY: Initialised just above.
        let srq = unsafe { &*srq };
        if let Err(e) = crate::srq::publish(rxe, srq) {
            crate::srq::abandon(rxe, srq_num);
            // SAFETY: Initialised above and never published.
            unsafe {
                core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibsrq.cast::<RxeSrq>()).body))
            };
            return Err(e);
        }
        init.attr.max_wr = attr.max_wr;
        init.attr.max_sge = attr.max_sge;
        Ok(0)
    })
}

/// `.modify_srq`: resizes the SRQ or sets its limit, as `mask` selects.
///
/// # Safety
///
/// Called by ib_core only, with a live SRQ that `create_srq_callback`
/// made, live attributes, and the call's udata or null.
pub(super) unsafe extern "C" fn modify_srq_callback(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let cmd = if udata.is_null() {
            None
        } else {
            Some(read_modify_cmd(udata)?)
        };
        // SAFETY: ib_core passes a live SRQ of ours, the attributes and the
        // call's udata.
        let (srq, attr, udata_ref) = unsafe { (rxe_srq(ibsrq), &*attr, Udata::from_raw(udata)) };
        let attr = SrqAttr {
            max_wr: attr.max_wr,
            max_sge: attr.max_sge,
            srq_limit: attr.srq_limit,
        };
        let resize = mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0;
        let set_limit = mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0;
        let sink = cmd.map(|c| UserMmapInfo(c.mmap_info_addr));
        srq.modify(
            &attr,
            resize,
            set_limit,
            udata_ref,
            sink.as_ref().map(|s| s as &dyn MmapInfoSink),
        )?;
        Ok(0)
    })
}

/// `.query_srq`: the SRQ's attributes.
///
/// # Safety
///
/// Called by ib_core only, with a live SRQ that `create_srq_callback` made
/// and an attribute buffer writable for the call.
pub(super) unsafe extern "C" fn query_srq_callback(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    // SAFETY: ib_core passes a live SRQ of ours and a buffer for the answer.
    let (srq, out) = unsafe { (rxe_srq(ibsrq), &mut *attr) };
    let a = srq.query();
    out.max_wr = a.max_wr;
    out.max_sge = a.max_sge;
    out.srq_limit = a.srq_limit;
    0
}

/// `.destroy_srq`: unpublishes and drains the SRQ, then drops its body.
///
/// # Safety
///
/// Called by ib_core only, once per SRQ that `create_srq_callback` made,
/// after the last QP on it is gone; ib_core frees its memory afterwards.
pub(super) unsafe extern "C" fn destroy_srq_callback(
    ibsrq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core destroys only SRQs that `create_srq` initialised, once,
    // after the last QP using it is gone.
    let (rxe, srq) = unsafe { (super::ib::rxe_of((*ibsrq).device), rxe_srq(ibsrq)) };
    crate::srq::destroy(rxe, srq);
    // SAFETY: Initialised in `create_srq_callback`; unpublished and
    // drained; ib_core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibsrq.cast::<RxeSrq>()).body)) };
    0
}

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
