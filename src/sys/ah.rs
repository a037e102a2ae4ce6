// SPDX-License-Identifier: GPL-2.0

//! ib_core's address-handle objects: the `ib_ah` at the head of [`RxeAh`]
//! and the `ib_device_ops` adapters of the AH verbs.

use super::{bindings, cq::Udata};
use crate::ah::RxeAh;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_ah` embedded at the start of [`RxeAh`].
///
/// # Invariants
///
/// Heads an [`RxeAh`] that ib_core allocated (`size_ib_ah`).
#[repr(transparent)]
pub(crate) struct IbAh(Opaque<bindings::ib_ah>);

/// Borrows the driver AH around an `ib_ah`.
///
/// # Safety
///
/// `ibah` heads a live [`RxeAh`] whose body `create_ah_callback` initialised.
unsafe fn rxe_ah<'a>(ibah: *mut bindings::ib_ah) -> &'a RxeAh {
    // CAST: `ibah` is the first field of the `#[repr(C)]` `RxeAh`.
    // SAFETY: Live and initialised by the caller's promise.
    unsafe { &*ibah.cast::<RxeAh>() }
}

/// `.create_ah` and `.create_user_ah`: makes the AH and publishes its
/// number.
///
/// # Safety
///
/// Called by ib_core only, with a zeroed AH of `size_ib_ah` bytes whose
/// `device` and `pd` are set, live init attributes holding a resolved AH
/// attribute, and the call's udata or null.
pub(super) unsafe extern "C" fn create_ah_callback(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const { assert!(core::mem::offset_of!(RxeAh, ibah) == 0) };
    from_result(|| {
        // SAFETY: ib_core passes a zeroed AH of `size_ib_ah` bytes with
        // `device` set, the init attributes with a resolved AH attribute
        // (its source GID attribute held for the call), and the udata.
        let (rxe, init, udata) = unsafe {
            (
                super::ib::rxe_of((*ibah).device),
                &*init,
                Udata::from_raw(udata),
            )
        };
        // SAFETY: `ah_attr` is valid for the call (see above).
        let av = super::qp::read_av(unsafe { &*init.ah_attr })?;
        let sleepable = init.flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
        // SAFETY: ib_core set the AH's PD before the call.
        let pd = unsafe { (*ibah).pd } as usize;
        let (index, body) = crate::ah::create(rxe, av, pd, sleepable, udata)?;
        let ah = ibah.cast::<RxeAh>();
        // SAFETY: The driver part of the zeroed object is memory ib_core
        // never touches or moves; it is initialised once here and dropped
        // in `destroy_ah`.
        let Ok(()) = unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*ah).body), body) };
        // SAFETY: Initialised just above.
        let ah = unsafe { &*ah };
        if let Err(e) = crate::ah::publish(rxe, ah) {
            crate::ah::abandon(rxe, index);
            // SAFETY: Initialised above and never published.
            unsafe {
                core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibah.cast::<RxeAh>()).body))
            };
            return Err(e);
        }
        Ok(0)
    })
}

/// `.query_ah`: the AH's address vector.
///
/// # Safety
///
/// Called by ib_core only, with an AH that `create_ah_callback` made and
/// that is not destroyed, and an attribute buffer writable for the call.
pub(super) unsafe extern "C" fn query_ah_callback(
    ibah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: ib_core passes a live AH of ours and a buffer for the answer.
    let (ah, attr) = unsafe { (rxe_ah(ibah), &mut *attr) };
    *attr = bindings::rdma_ah_attr::default();
    super::qp::write_av(&ah.body.av, attr);
    0
}

/// `.destroy_ah`: unpublishes the AH and drops its body.
///
/// # Safety
///
/// Called by ib_core only, once per AH that `create_ah_callback` made; no
/// other call on the AH follows, and ib_core frees its memory afterwards.
pub(super) unsafe extern "C" fn destroy_ah_callback(
    ibah: *mut bindings::ib_ah,
    _flags: u32,
) -> c_int {
    // SAFETY: ib_core destroys only AHs that `create_ah` initialised, once.
    // Destroying does not sleep, so the caller's context does not matter.
    let (rxe, ah) = unsafe { (super::ib::rxe_of((*ibah).device), rxe_ah(ibah)) };
    crate::ah::destroy(rxe, ah);
    // SAFETY: Initialised in `create_ah_callback`; unpublished and drained,
    // and ib_core frees the memory after we return.
    unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ibah.cast::<RxeAh>()).body)) };
    0
}
