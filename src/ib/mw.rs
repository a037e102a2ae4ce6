// SPDX-License-Identifier: GPL-2.0

//! Memory windows: the `ib_mw` at the head of a driver's window, the ops a
//! driver implements for them ([`MwOps`]), and their trampolines.

use super::{device::device_of, Adapter, Driver, IbBody};
use crate::sys::bindings;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The `ib_mw` at the head of a driver's window.
///
/// # Invariants
///
/// Heads a window of a driver that ib_core allocated (`size_ib_mw`).
#[repr(transparent)]
pub(crate) struct IbMw(Opaque<bindings::ib_mw>);

// SAFETY: The methods only read fields that ib_core fixed before the
// create verb and keeps while the object exists, call ib_core functions
// that may run in any thread, or write fields under ib_core's
// serialisation of the object's verbs.
unsafe impl Send for IbMw {}
// SAFETY: As above.
unsafe impl Sync for IbMw {}

/// The type of a memory window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MwType {
    /// Type 1: bound with `ibv_bind_mw`, invalidated by unbinding.
    One,
    /// Type 2: bound with a send WR, tied to its QP.
    Two,
}

/// What a driver's window does (`Self` is the driver's window struct,
/// headed by an [`IbMw`]).
pub(crate) trait MwOps<D: Driver>: IbBody<Raw = bindings::ib_mw> {
    /// `.alloc_mw`: the window's first rkey and its body, in PD `pd` (an
    /// identity).
    fn create(dev: &D::Device, pd: usize, kind: MwType) -> Result<(u32, impl PinInit<Self::Body>)>;
    /// The new window is initialised: makes it reachable. On an error,
    /// undoes what `create` reserved; the body is dropped after.
    fn publish(dev: &D::Device, mw: &Self) -> Result;
    /// `.dealloc_mw`: unpublishes the window; the body is dropped after.
    fn destroy(dev: &D::Device, mw: &Self);
}

impl<D: Driver> Adapter<D> {
    /// `.alloc_mw`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a zeroed window of `size_ib_mw` bytes
    /// whose `device`, `pd` and `type` are set, and the call's udata or
    /// null.
    pub(super) unsafe extern "C" fn alloc_mw(
        ibmw: *mut bindings::ib_mw,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a zeroed window with `device`, `pd` and
            // `type` set.
            let (dev, pd, kind) = unsafe {
                (
                    device_of::<D>((*ibmw).device),
                    (*ibmw).pd as usize,
                    (*ibmw).type_,
                )
            };
            let kind = match kind {
                bindings::ib_mw_type_IB_MW_TYPE_1 => MwType::One,
                bindings::ib_mw_type_IB_MW_TYPE_2 => MwType::Two,
                _ => return Err(EINVAL),
            };
            let (rkey, body) = D::Mw::create(dev, pd, kind)?;
            // SAFETY: The body is uninitialised memory of the zeroed object
            // that ib_core never touches or moves.
            unsafe { super::init_and_publish::<D::Mw>(ibmw, body, |mw| D::Mw::publish(dev, mw)) }?;
            // SAFETY: The window is ours until we return; ib_core reads the
            // key after the call.
            unsafe { (*ibmw).rkey = rkey };
            Ok(0)
        })
    }

    /// `.dealloc_mw`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, once per window that `alloc_mw` made; no
    /// other call on the window follows, and ib_core frees its memory
    /// afterwards.
    pub(super) unsafe extern "C" fn dealloc_mw(ibmw: *mut bindings::ib_mw) -> c_int {
        // SAFETY: A window that `alloc_mw` made, once.
        let (dev, mw) = unsafe { (device_of::<D>((*ibmw).device), super::object::<D::Mw>(ibmw)) };
        D::Mw::destroy(dev, mw);
        // SAFETY: Initialised in `alloc_mw`; unpublished and drained.
        unsafe { super::drop_body::<D::Mw>(ibmw) };
        0
    }
}
