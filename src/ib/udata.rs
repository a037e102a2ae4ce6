// SPDX-License-Identifier: GPL-2.0

//! The user data of a verb (`ib_udata`: the driver's part of a uverbs
//! command and of its response) and the user context (`ib_ucontext`) the
//! call came from.

use crate::sys::bindings;
use kernel::{error::to_result, prelude::*, types::Opaque};

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

    /// Copies the driver input into `cmd`: at least `cmd.len()` bytes must
    /// have been passed, and any beyond must be zero
    /// (`ib_copy_validate_udata_in`).
    pub(crate) fn read_validated(&self, cmd: &mut [u8]) -> Result {
        // SAFETY: The udata is live; `cmd` is writable for its length,
        // which is also the minimum size.
        to_result(unsafe {
            bindings::_ib_copy_validate_udata_in(
                self.0.get(),
                cmd.as_mut_ptr().cast(),
                cmd.len(),
                cmd.len(),
            )
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

/// The user context a verb was called in.
///
/// # Invariants
///
/// Wraps a live `ib_ucontext`.
#[repr(transparent)]
pub(crate) struct Ucontext(Opaque<bindings::ib_ucontext>);

impl Ucontext {
    /// Borrows a user context.
    ///
    /// # Safety
    ///
    /// `ptr` is a live `ib_ucontext` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_ucontext) -> &'a Self {
        // CAST: `Ucontext` is a transparent wrapper of the C struct.
        // SAFETY: Valid for `'a` by the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for the `sys` wrappers' C calls.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_ucontext {
        self.0.get()
    }
}
