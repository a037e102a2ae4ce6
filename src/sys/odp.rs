// SPDX-License-Identifier: GPL-2.0

//! [`OdpUmem`]: user memory registered for on-demand paging, whose pages
//! `src/rxe_odp.c` brings in when asked ([`OdpUmem::fault`], process
//! context) and copies to and from only while they are resident
//! ([`OdpUmem::copy_in`], [`OdpUmem::copy_out`], any context). That file
//! says why it is C and how copies and invalidations exclude each other.

use super::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// The pages a copy needs are not resident now; nothing was copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotResident;

/// A user range registered for on-demand paging (`ib_umem_odp` with the
/// driver's MMU interval notifier).
///
/// # Invariants
///
/// `ptr` was returned by `rxe_odp_get` and is released exactly once, on
/// drop.
pub(crate) struct OdpUmem {
    ptr: NonNull<bindings::rxe_odp>,
}

// SAFETY: `rxe_odp` serialises its users with its own locks; releasing it
// needs process context, which `Drop` callers guarantee (see `RxeMr`).
unsafe impl Send for OdpUmem {}
// SAFETY: As above: every operation takes the locks it needs.
unsafe impl Sync for OdpUmem {}

impl OdpUmem {
    /// Whether the kernel has on-demand paging
    /// (`CONFIG_INFINIBAND_ON_DEMAND_PAGING`).
    pub(crate) fn supported() -> bool {
        // SAFETY: No requirements.
        unsafe { bindings::rxe_odp_supported() }
    }

    /// Registers `[addr, addr + len)` of the calling process with `access`
    /// (`IB_ACCESS_*`) without bringing any page in. Process context.
    pub(crate) fn register(
        ib: &crate::ib::IbDevice,
        addr: u64,
        len: u64,
        access: u32,
    ) -> Result<OdpUmem> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: The device is live; ib_core checks the range against the
        // caller's address space.
        let ptr = unsafe { bindings::rxe_odp_get(ib.as_ptr(), addr, len, access as c_int) };
        let ptr = kernel::error::from_err_ptr(ptr)?;
        Ok(OdpUmem {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Whether the pages may be written (the registration asked for local
    /// or remote write).
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: Live (invariant).
        unsafe { bindings::rxe_odp_writable(self.ptr.as_ptr()) }
    }

    /// Brings the user range `[va, va + len)` in, writable if `write` (and
    /// the region is). `EFAULT` if the process has no such mapping. Sleeps.
    pub(crate) fn fault(&self, va: u64, len: u64, write: bool) -> Result {
        // SAFETY: Live (invariant); the caller may sleep (our contract).
        kernel::error::to_result(unsafe {
            bindings::rxe_odp_fault(self.ptr.as_ptr(), va, len, write)
        })
    }

    /// Whether a copy of `[va, va + len)` (user addresses) would find its
    /// pages resident now, for writing if `write`. Any context.
    pub(crate) fn resident(&self, va: u64, len: u64, write: bool) -> bool {
        // SAFETY: Live (invariant).
        unsafe { bindings::rxe_odp_resident(self.ptr.as_ptr(), va, len, write) }
    }

    /// Copies `src` to user address `va` of the region, if its pages are
    /// resident and writable. Any context.
    pub(crate) fn copy_in(&self, va: u64, src: &[u8]) -> Result<(), NotResident> {
        // SAFETY: Live (invariant); with `to_pages` the call only reads
        // `src.len()` bytes from the buffer.
        let ret = unsafe {
            bindings::rxe_odp_copy(
                self.ptr.as_ptr(),
                va,
                src.as_ptr().cast_mut().cast(),
                src.len(),
                true,
            )
        };
        if ret == 0 {
            Ok(())
        } else {
            Err(NotResident)
        }
    }

    /// Copies bytes at user address `va` of the region into `dst`, if its
    /// pages are resident. Any context.
    pub(crate) fn copy_out(&self, va: u64, dst: &mut [u8]) -> Result<(), NotResident> {
        // SAFETY: Live (invariant); the call writes at most `dst.len()`
        // bytes to the buffer.
        let ret = unsafe {
            bindings::rxe_odp_copy(
                self.ptr.as_ptr(),
                va,
                dst.as_mut_ptr().cast(),
                dst.len(),
                false,
            )
        };
        if ret == 0 {
            Ok(())
        } else {
            Err(NotResident)
        }
    }
}

impl Drop for OdpUmem {
    fn drop(&mut self) {
        // SAFETY: Released once (invariant), in process context.
        unsafe { bindings::rxe_odp_release(self.ptr.as_ptr()) };
    }
}
