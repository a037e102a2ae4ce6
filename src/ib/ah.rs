// SPDX-License-Identifier: GPL-2.0

//! Address handles: the `ib_ah` at the head of a driver's AH, the ops a
//! driver implements for them ([`AhOps`]), and their trampolines.

use super::{attr::AhAttr, device::device_of, Adapter, Driver, IbBody, Udata};
use crate::sys::bindings;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_ah` at the head of a driver's AH.
///
/// # Invariants
///
/// Heads an AH of a driver that ib_core allocated (`size_ib_ah`).
#[repr(transparent)]
pub(crate) struct IbAh(Opaque<bindings::ib_ah>);

// SAFETY: The methods only read fields that ib_core fixed before the
// create verb and keeps while the object exists, call ib_core functions
// that may run in any thread, or write fields under ib_core's
// serialisation of the object's verbs.
unsafe impl Send for IbAh {}
// SAFETY: As above.
unsafe impl Sync for IbAh {}

/// What a driver's AH does (`Self` is the driver's AH struct, headed by an
/// [`IbAh`]).
pub(crate) trait AhOps<D: Driver>: IbBody<Raw = bindings::ib_ah> {
    /// `.create_ah` / `.create_user_ah`: the body of an AH for `attr` in
    /// PD `pd` (an identity); `sleepable` unless the caller is atomic.
    fn create(
        dev: &D::Device,
        attr: &AhAttr,
        pd: usize,
        sleepable: bool,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<Self::Body>>;
    /// The new AH is initialised: makes it reachable. On an error, undoes
    /// what `create` reserved; the body is dropped after.
    fn publish(dev: &D::Device, ah: &Self) -> Result;
    /// `.query_ah`: writes the AH's address to `attr` (zeroed).
    fn query(ah: &Self, attr: &mut bindings::rdma_ah_attr);
    /// `.destroy_ah`: unpublishes the AH; the body is dropped after.
    fn destroy(dev: &D::Device, ah: &Self);
}

impl<D: Driver> Adapter<D> {
    /// `.create_ah` and `.create_user_ah`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed AH of `size_ib_ah` bytes whose
    /// `device` and `pd` are set, live init attributes holding a resolved
    /// AH attribute, and the call's udata or null.
    pub(super) unsafe extern "C" fn create_ah(
        ibah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a zeroed AH with `device` and `pd`
            // set, the init attributes with a resolved AH attribute (its
            // source GID attribute held for the call), and the udata.
            let (dev, init, udata, pd) = unsafe {
                (
                    device_of::<D>((*ibah).device),
                    &*init,
                    Udata::from_raw(udata),
                    (*ibah).pd as usize,
                )
            };
            // SAFETY: `ah_attr` and its source GID attribute are held for
            // the call (see above).
            let attr = unsafe { AhAttr::from_raw(init.ah_attr) };
            let sleepable =
                init.flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let body = D::Ah::create(dev, attr, pd, sleepable, udata)?;
            // SAFETY: The body is uninitialised memory of the zeroed object
            // that ib_core never touches or moves.
            unsafe { super::init_and_publish::<D::Ah>(ibah, body, |ah| D::Ah::publish(dev, ah)) }?;
            Ok(0)
        })
    }

    /// `.query_ah`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with an AH that `create_ah` made and that is
    /// not destroyed, and an attribute buffer writable for the call.
    pub(super) unsafe extern "C" fn query_ah(
        ibah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_attr,
    ) -> c_int {
        // SAFETY: ib_core passes a live AH of `D` and a buffer.
        let (ah, attr) = unsafe { (super::object::<D::Ah>(ibah), &mut *attr) };
        *attr = bindings::rdma_ah_attr::default();
        D::Ah::query(ah, attr);
        0
    }

    /// `.destroy_ah`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per AH that `create_ah` made; no other
    /// call on the AH follows, and ib_core frees its memory afterwards.
    pub(super) unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: An AH that `create_ah` made, once.
        let (dev, ah) = unsafe { (device_of::<D>((*ibah).device), super::object::<D::Ah>(ibah)) };
        D::Ah::destroy(dev, ah);
        // SAFETY: Initialised in `create_ah`; unpublished and drained.
        unsafe { super::drop_body::<D::Ah>(ibah) };
        0
    }
}
