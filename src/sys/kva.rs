// SPDX-License-Identifier: GPL-2.0

//! Kernel virtual addresses a kernel ULP hands the device: the SGE and
//! remote addresses of its work requests under the PD's DMA MR. rxe does
//! DMA by CPU copy, so `ib_dma_map_*` returns the buffer's kernel virtual
//! address and these functions copy to and from it.
//!
//! The ULP is trusted as the C driver trusts it, with one check the C
//! driver does not make: every page of a range must be in the linear map
//! (`virt_addr_valid`), so a bad address from a ULP or from a peer holding
//! the PD's global rkey fails the access instead of faulting.

use super::bindings;
use kernel::ffi::c_ulong;

/// `[va, va + len)` is not all in the linear map.
#[derive(Debug)]
pub(crate) struct BadAddress;

fn check(va: u64, len: usize) -> Result<(), BadAddress> {
    // SAFETY: Only inspects the page tables' description of the addresses.
    if unsafe { bindings::rxe_glue_kva_range_valid(va as c_ulong, len as c_ulong) } {
        Ok(())
    } else {
        Err(BadAddress)
    }
}

/// Copies `dst.len()` bytes from kernel virtual address `va` into `dst`.
pub(crate) fn read(va: u64, dst: &mut [u8]) -> Result<(), BadAddress> {
    check(va, dst.len())?;
    // SAFETY: Every page of the source is mapped kernel memory (checked
    // above); `dst` is a distinct Rust buffer of the same length. The bytes
    // may change under us (the ULP owns them), which a byte copy tolerates.
    unsafe {
        core::ptr::copy_nonoverlapping(va as usize as *const u8, dst.as_mut_ptr(), dst.len())
    };
    Ok(())
}

/// Copies `src` to kernel virtual address `va`.
pub(crate) fn write(va: u64, src: &[u8]) -> Result<(), BadAddress> {
    check(va, src.len())?;
    // SAFETY: Every page of the destination is mapped kernel memory
    // (checked above), registered for this access by the ULP through its
    // DMA MR; `src` is a distinct Rust buffer of the same length.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), va as usize as *mut u8, src.len()) };
    Ok(())
}
