// SPDX-License-Identifier: GPL-2.0

//! ib_core's memory-window objects: the `ib_mw` at the head of
//! [`RxeMw`] and the `ib_device_ops` adapters of `alloc_mw` and
//! `dealloc_mw`.

use super::bindings;
use crate::{mw::RxeMw, proto::window::WindowType};
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_mw` embedded at the start of [`RxeMw`].
///
/// # Invariants
///
/// Heads an [`RxeMw`] that ib_core allocated (`size_ib_mw`).
#[repr(transparent)]
pub(crate) struct IbMw(Opaque<bindings::ib_mw>);

/// `.alloc_mw`: makes the window, publishes it and hands its first rkey
/// to ib_core (which returns it to the user).
///
/// # Safety
///
/// Called by ib_core only, with a zeroed window of `size_ib_mw` bytes whose
/// `device`, `pd` and `type` are set, and the call's udata or null.
pub(super) unsafe extern "C" fn alloc_mw_callback(
    ibmw: *mut bindings::ib_mw,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    const { assert!(core::mem::offset_of!(RxeMw, ibmw) == 0) };
    from_result(|| {
        // SAFETY: ib_core passes a zeroed window with `device`, `pd` and
        // `type` set (see above).
        let (rxe, pd, kind) = unsafe {
            (
                super::ib::rxe_of((*ibmw).device),
                (*ibmw).pd as usize,
                (*ibmw).type_,
            )
        };
        let kind = match kind {
            bindings::ib_mw_type_IB_MW_TYPE_1 => WindowType::One,
            bindings::ib_mw_type_IB_MW_TYPE_2 => WindowType::Two,
            _ => return Err(EINVAL),
        };
        let (index, rkey, body) = crate::mw::create(rxe, pd, kind)?;
        let mw = ibmw.cast::<RxeMw>();
        // SAFETY: The driver part of the zeroed object is memory ib_core
        // never touches or moves; it is initialised once here and dropped
        // in `dealloc_mw_callback`.
        let Ok(()) = unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*mw).body), body) };
        // SAFETY: Initialised just above.
        let mw_ref = unsafe { &*mw };
        if let Err(e) = crate::mw::publish(rxe, mw_ref) {
            crate::mw::abandon(rxe, index);
            // SAFETY: Initialised above and never published.
            unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*mw).body)) };
            return Err(e);
        }
        // SAFETY: The window is ours until we return; ib_core reads the
        // key after the call.
        unsafe { (*ibmw).rkey = rkey.0 };
        Ok(0)
    })
}

/// `.dealloc_mw`: unpublishes the window, releases its binding and drops
/// its body.
///
/// # Safety
///
/// Called by ib_core only, once per window that `alloc_mw_callback` made;
/// no other call on the window follows, and ib_core frees its memory
/// afterwards.
pub(super) unsafe extern "C" fn dealloc_mw_callback(ibmw: *mut bindings::ib_mw) -> c_int {
    // SAFETY: ib_core deallocates only windows that `alloc_mw` initialised,
    // once.
    let (rxe, mw) = unsafe { (super::ib::rxe_of((*ibmw).device), &*ibmw.cast::<RxeMw>()) };
    crate::mw::destroy(rxe, mw);
    // SAFETY: Initialised in `alloc_mw_callback`; unpublished and drained,
    // and ib_core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibmw.cast::<RxeMw>()).body)) };
    0
}
