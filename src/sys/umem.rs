// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`ib_umem`) and the list of its pages, with copies
//! to and from one page at a time, and spans of one page lent, with a
//! reference of their own, to packets sent without a copy. The copies go through the C helpers
//! `memcpy_to_page`/`memcpy_from_page` (which map highmem pages) rather
//! than `kernel::page::BorrowedPage`, whose 7.3 copies are `unsafe` raw
//! pointer calls with the same checks left to the caller.

use super::bindings;
use core::ptr::NonNull;
use kernel::{ffi::c_ulong, page::PAGE_SIZE, prelude::*};

/// A range of user memory pinned by `ib_umem_get`.
///
/// # Invariants
///
/// `ptr` is a umem returned by `ib_umem_get_va`, released exactly once, on
/// drop.
pub(crate) struct Umem {
    ptr: NonNull<bindings::ib_umem>,
}

// SAFETY: A umem is a description of pinned pages; releasing it from any
// thread is fine (in process context, which `Drop` callers guarantee: see
// the driver's region that owns it).
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads its page list.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process for `access`
    /// (`IB_ACCESS_*`: write access makes the pages writable).
    pub(crate) fn pin(ib: &crate::ib::IbDevice, addr: u64, len: u64, access: u32) -> Result<Umem> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: The device is live; `ib_umem_get_va` checks the range
        // against the caller's address space and limits.
        let ptr = unsafe { bindings::rxe_glue_umem_get(ib.as_ptr(), addr, len, access as c_int) };
        let ptr = kernel::error::from_err_ptr(ptr)?;
        Ok(Umem {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Whether a `rereg_user_mr` with `flags` (`IB_MR_REREG_*`) may give
    /// the region the access bits `access` over these pages
    /// (`ib_umem_check_rereg`: `EACCES` for write access to pages pinned
    /// read-only).
    pub(crate) fn check_rereg(&self, flags: u32, access: u32) -> Result {
        // SAFETY: Live umem (invariant); the call only reads it.
        kernel::error::to_result(unsafe {
            bindings::ib_umem_check_rereg(self.ptr.as_ptr(), flags as c_int, access as c_int)
        })
    }

    /// The pinned pages, in address order.
    pub(crate) fn pages(&self) -> Result<PageList> {
        // SAFETY: Live umem (invariant).
        let n = unsafe { bindings::rxe_glue_umem_num_pages(self.ptr.as_ptr()) };
        let mut pages = KVVec::with_capacity(n, GFP_KERNEL)?;
        // SAFETY: `spare_capacity_mut` has room for `n` pointers, which is
        // the most the call writes; it returns how many it wrote.
        let written = unsafe {
            bindings::rxe_glue_umem_pages(
                self.ptr.as_ptr(),
                pages.spare_capacity_mut().as_mut_ptr().cast(),
                n,
            )
        };
        if written != n {
            return Err(EFAULT);
        }
        // SAFETY: The first `n` elements were just initialised.
        unsafe { pages.inc_len(n) };
        Ok(PageList { pages })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Released once (invariant).
        unsafe { bindings::ib_umem_release(self.ptr.as_ptr()) };
    }
}

/// The pages of a [`Umem`], in address order.
///
/// # Invariants
///
/// Every pointer is a page pinned by the umem the list was made from; the
/// owner keeps that umem alive as long as the list.
pub(crate) struct PageList {
    pages: KVVec<*mut bindings::page>,
}

// SAFETY: The list only holds addresses of pinned pages.
unsafe impl Send for PageList {}
// SAFETY: As above; it is never changed after creation.
unsafe impl Sync for PageList {}

impl PageList {
    /// Number of pages.
    pub(crate) fn len(&self) -> usize {
        self.pages.len()
    }

    /// Copies `src` into page `page` of the list at byte `offset`;
    /// `EFAULT` past the list or the page.
    pub(crate) fn copy_to_page(&self, page: usize, offset: usize, src: &[u8]) -> Result {
        let page = *self.pages.get(page).ok_or(EFAULT)?;
        if offset
            .checked_add(src.len())
            .is_none_or(|end| end > PAGE_SIZE)
        {
            return Err(EFAULT);
        }
        // SAFETY: `page` is pinned (invariant); the range lies within the
        // page (checked above); `src` is readable for its length.
        unsafe { bindings::rxe_glue_memcpy_to_page(page, offset, src.as_ptr().cast(), src.len()) };
        Ok(())
    }

    /// Copies bytes at `offset` of page `page` of the list into `dst`;
    /// `EFAULT` past the list or the page.
    pub(crate) fn copy_from_page(&self, page: usize, offset: usize, dst: &mut [u8]) -> Result {
        let page = *self.pages.get(page).ok_or(EFAULT)?;
        if offset
            .checked_add(dst.len())
            .is_none_or(|end| end > PAGE_SIZE)
        {
            return Err(EFAULT);
        }
        // SAFETY: As in `copy_to_page`; `dst` is writable for its length.
        unsafe {
            bindings::rxe_glue_memcpy_from_page(dst.as_mut_ptr().cast(), page, offset, dst.len())
        };
        Ok(())
    }

    /// `len` bytes at `offset` of page `page` of the list, with a
    /// reference of their own on the page (which then outlives the pin,
    /// as long as the span, or the skb it is given to, holds it). `None`
    /// past the list or the page, or for a highmem page (no kernel
    /// address to send it from).
    pub(crate) fn span(&self, page: usize, offset: usize, len: usize) -> Option<PageSpan> {
        let page = NonNull::new(*self.pages.get(page)?)?;
        if offset.checked_add(len)? > PAGE_SIZE {
            return None;
        }
        // SAFETY: `page` is pinned (invariant), so alive; the glue takes a
        // reference, or none for a highmem page.
        let addr =
            NonNull::new(unsafe { bindings::rxe_glue_page_get(page.as_ptr()) })?.cast::<u8>();
        // INVARIANT: A reference taken above on a lowmem page at `addr`;
        // the range lies within the page (checked above).
        Some(PageSpan {
            page,
            addr,
            offset,
            len,
        })
    }
}

/// Bytes within one page, with a reference on the page.
///
/// # Invariants
///
/// We hold one reference on `page`, a lowmem page whose kernel address is
/// `addr`; `offset + len <= PAGE_SIZE`.
pub(crate) struct PageSpan {
    page: NonNull<bindings::page>,
    addr: NonNull<u8>,
    offset: usize,
    len: usize,
}

// SAFETY: A page reference may be held and given up on any CPU.
unsafe impl Send for PageSpan {}

impl PageSpan {
    /// `len` bytes at kernel virtual address `va` (a kernel ULP's buffer,
    /// see [`super::kva`]), with a reference on their page, where they
    /// lie in one page of the linear map from the page allocator (not
    /// slab nor large kmalloc memory, which take no page references);
    /// `None` for any other range.
    pub(crate) fn at_kernel_address(va: u64, len: usize) -> Option<PageSpan> {
        let mut page: *mut bindings::page = core::ptr::null_mut();
        // SAFETY: The glue only inspects the address before it takes a
        // reference on a page it found in the linear map; `page` is a
        // valid out-pointer.
        let addr =
            unsafe { bindings::rxe_glue_kva_page_get(va as c_ulong, len as c_ulong, &mut page) };
        let addr = NonNull::new(addr)?.cast::<u8>();
        let page = NonNull::new(page)?;
        // INVARIANT: The glue took a reference on `page`, a lowmem page at
        // `addr` holding the `len` bytes at `va`, in it from
        // `offset_in_page(va)`.
        Some(PageSpan {
            page,
            addr,
            offset: (va & (PAGE_SIZE as u64 - 1)) as usize,
            len,
        })
    }

    /// Number of bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes. They are user memory, which the application may change
    /// meanwhile (RDMA leaves the data sent from a buffer rewritten before
    /// its completion undefined): read them once, for what they are now.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: The page is alive while we hold our reference
        // (invariant) and mapped at `addr`; the range lies within it.
        unsafe { core::slice::from_raw_parts(self.addr.as_ptr().add(self.offset), self.len) }
    }

    /// The page, offset and length, and our reference with them: the
    /// caller gives it up.
    pub(crate) fn into_raw(self) -> (NonNull<bindings::page>, usize, usize) {
        let this = core::mem::ManuallyDrop::new(self);
        (this.page, this.offset, this.len)
    }
}

impl Drop for PageSpan {
    fn drop(&mut self) {
        // SAFETY: We hold one reference (invariant), given up once, here.
        unsafe { bindings::rxe_glue_page_put(self.page.as_ptr()) };
    }
}
