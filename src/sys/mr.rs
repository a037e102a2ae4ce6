// SPDX-License-Identifier: GPL-2.0

//! Memory-region plumbing: the `ib_mr` at the head of [`RxeMr`], pinned user
//! memory (`ib_umem`) and its page list, and the `ib_device_ops` adapters
//! of the MR verbs. The key table is a [`super::table::IndexTable`].

use super::bindings;
use crate::{
    mr::{self, MrMemory, RxeMr, StagedPages},
    proto::access::{fast_reg_page_shift, PageChunks},
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{prelude::*, types::Opaque};

/// The `ib_mr` embedded at the start of [`RxeMr`].
///
/// # Invariants
///
/// Heads an [`RxeMr`]; the driver writes `lkey`/`rkey` before returning the
/// region to ib_core and ib_core fills the rest after.
#[repr(transparent)]
pub(crate) struct IbMr(Opaque<bindings::ib_mr>);

impl IbMr {
    /// A zeroed `ib_mr` with the given keys.
    pub(crate) fn new(lkey: u32, rkey: u32) -> IbMr {
        let mr = bindings::ib_mr {
            lkey,
            rkey,
            ..Default::default()
        };
        IbMr(Opaque::new(mr))
    }

    fn as_ptr(&self) -> *mut bindings::ib_mr {
        self.0.get()
    }
}

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
// `RxeMr`).
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads its page list.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process for `access`
    /// (`IB_ACCESS_*`: write access makes the pages writable).
    pub(crate) fn pin(
        rxe: &crate::device::RxeDevice,
        addr: u64,
        len: u64,
        access: u32,
    ) -> Result<Umem> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: The device is live; `ib_umem_get_va` checks the range
        // against the caller's address space and limits.
        let ptr =
            unsafe { bindings::rxe_glue_umem_get(rxe.ib.as_ptr(), addr, len, access as c_int) };
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

/// log2 of the kernel page size.
const PAGE_SHIFT: u32 = kernel::page::PAGE_SHIFT as u32;

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

    /// Copies `src` into the region bytes `[offset, offset + src.len())`
    /// of a region starting `first_page_offset` into the first page. The
    /// range must have been checked against the region (the copy stops,
    /// returning `EFAULT`, at the end of the page list).
    pub(crate) fn copy_in(&self, first_page_offset: u64, offset: u64, src: &[u8]) -> Result {
        let mut done = 0;
        for chunk in PageChunks::new(first_page_offset, offset, src.len() as u64, PAGE_SHIFT) {
            let page = *self.pages.get(chunk.page).ok_or(EFAULT)?;
            let part = &src[done..done + chunk.len];
            // SAFETY: `page` is pinned (invariant); the chunk lies within
            // one page; `part` is readable for its length.
            unsafe {
                bindings::rxe_glue_memcpy_to_page(
                    page,
                    chunk.offset,
                    part.as_ptr().cast(),
                    chunk.len,
                )
            };
            done += chunk.len;
        }
        Ok(())
    }

    /// Copies the region bytes `[offset, offset + dst.len())` into `dst`;
    /// as [`PageList::copy_in`] otherwise.
    pub(crate) fn copy_out(&self, first_page_offset: u64, offset: u64, dst: &mut [u8]) -> Result {
        let mut done = 0;
        for chunk in PageChunks::new(first_page_offset, offset, dst.len() as u64, PAGE_SHIFT) {
            let page = *self.pages.get(chunk.page).ok_or(EFAULT)?;
            let part = &mut dst[done..done + chunk.len];
            // SAFETY: As in `copy_in`; `part` is writable for its length.
            unsafe {
                bindings::rxe_glue_memcpy_from_page(
                    part.as_mut_ptr().cast(),
                    page,
                    chunk.offset,
                    chunk.len,
                )
            };
            done += chunk.len;
        }
        Ok(())
    }
}

/// Random byte for the consumer-key part of a new key (`get_random_u8`).
pub(crate) fn random_key8() -> u8 {
    // SAFETY: Always safe to call.
    unsafe { bindings::get_random_u8() }
}

/// Hands a finished region to ib_core.
fn into_ib(mr: Pin<KBox<RxeMr>>) -> *mut bindings::ib_mr {
    const { assert!(core::mem::offset_of!(RxeMr, ibmr) == 0) };
    // SAFETY: The region is never moved out of the box: `dereg_mr` turns the
    // pointer back into the same pinned box.
    let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(mr) });
    // SAFETY: `raw` is valid; `ibmr` is its first field.
    unsafe { (*raw).ibmr.as_ptr() }
}

/// `.get_dma_mr`: a region over all of kernel memory.
///
/// # Safety
///
/// Called by ib_core only, with a live PD of one of our devices.
pub(super) unsafe extern "C" fn get_dma_mr_callback(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: ib_core passes a live PD of one of our devices.
    let rxe = unsafe { super::ib::rxe_of((*pd).device) };
    match mr::get_dma_mr(rxe, pd as usize, access as u32) {
        Ok(mr) => into_ib(mr),
        Err(e) => e.to_ptr(),
    }
}

/// `.reg_user_mr`: pins and registers a range of the calling process.
///
/// # Safety
///
/// Called by ib_core only, in the registering process's context, with a
/// live PD of one of our devices.
pub(super) unsafe extern "C" fn reg_user_mr_callback(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    dmah: *mut bindings::ib_dmah,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    if !dmah.is_null() {
        return EOPNOTSUPP.to_ptr();
    }
    // SAFETY: ib_core passes a live PD of one of our devices, in the
    // context of the registering process.
    let rxe = unsafe { super::ib::rxe_of((*pd).device) };
    let req = mr::UserMrRequest {
        start,
        length,
        iova,
        access: access as u32,
    };
    match mr::reg_user_mr(rxe, pd as usize, &req) {
        Ok(mr) => into_ib(mr),
        Err(e) => e.to_ptr(),
    }
}

/// `.rereg_user_mr`: a new protection domain and/or new access bits for a
/// user region, in place (null: ib_core keeps the same `ib_mr` and keys).
///
/// # Safety
///
/// Called by ib_core only, with a live user region of ours that it holds
/// for writing, and, with `IB_MR_REREG_PD`, a live PD of the same device.
pub(super) unsafe extern "C" fn rereg_user_mr_callback(
    ibmr: *mut bindings::ib_mr,
    flags: c_int,
    _start: u64,
    _length: u64,
    _virt_addr: u64,
    access: c_int,
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: ib_core passes a live region of ours (see above).
    let region = unsafe { &*ibmr.cast::<RxeMr>() };
    match mr::rereg_user_mr(region, flags as u32, pd as usize, access as u32) {
        Ok(()) => core::ptr::null_mut(),
        Err(e) => e.to_ptr(),
    }
}

/// `.dereg_mr`: takes back and frees a region, unless memory windows are
/// bound to it (`EINVAL`: the region stays registered and ib_core may try
/// again).
///
/// # Safety
///
/// Called by ib_core only, with a region that `get_dma_mr_callback`,
/// `reg_user_mr_callback` or `alloc_mr_callback` returned and that no
/// earlier call freed, after ib_core's last use of it.
pub(super) unsafe extern "C" fn dereg_mr_callback(
    ibmr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live region of ours (see above).
    let (rxe, region) = unsafe { (super::ib::rxe_of((*ibmr).device), &*ibmr.cast::<RxeMr>()) };
    if let Err(e) = mr::unpublish(rxe, region) {
        return e.to_errno();
    }
    // SAFETY: `into_ib` handed the box out; ib_core is done with it and
    // nothing else frees it, so it is ours again.
    let mr = unsafe { Pin::new_unchecked(KBox::from_raw(ibmr.cast::<RxeMr>())) };
    mr::dereg_mr(rxe, mr);
    0
}

/// `.alloc_mr`: a fast-registration region (`IB_MR_TYPE_MEM_REG` only, as
/// rxe) for up to `max_num_sg` pages.
///
/// # Safety
///
/// Called by ib_core only, with a live PD of one of our devices.
pub(super) unsafe extern "C" fn alloc_mr_callback(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return EINVAL.to_ptr();
    }
    // SAFETY: ib_core passes a live PD of one of our devices.
    let rxe = unsafe { super::ib::rxe_of((*pd).device) };
    match mr::alloc_mr(rxe, pd as usize, max_num_sg) {
        Ok(mr) => into_ib(mr),
        Err(e) => e.to_ptr(),
    }
}

/// The `set_page` callback `map_mr_sg_callback` gives `ib_sg_to_pages`:
/// appends one page address to the page list being staged.
///
/// # Safety
///
/// Called by `ib_sg_to_pages` only, with the region `map_mr_sg_callback`
/// passed it.
unsafe extern "C" fn set_page_callback(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
    // SAFETY: `ibmr` heads a live `RxeMr` (the caller's promise).
    let mr = unsafe { &*ibmr.cast::<RxeMr>() };
    let MrMemory::Fast(fast) = &mr.memory else {
        return EINVAL.to_errno();
    };
    let staged = fast.staging.load(Ordering::Acquire);
    if staged.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `staging` is non-null only while `map_mr_sg_callback` holds
    // the region's state lock and runs `ib_sg_to_pages` on this thread
    // (the only caller of this function): the pointer is to the staged
    // list inside that lock, which nothing else touches meanwhile.
    match unsafe { (*staged).push(addr) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `.map_mr_sg`: builds a fast-registration region's page list from a
/// DMA-mapped scatterlist, with the page size ib_core put in
/// `ib_mr.page_size`; the next `IB_WR_REG_MR` registers it. Returns the
/// number of scatterlist entries mapped (`ib_sg_to_pages`).
///
/// # Safety
///
/// Called by ib_core only (`ib_map_mr_sg`), with a live region that
/// `alloc_mr_callback` made and a scatterlist of `sg_nents` entries
/// mapped for this device.
pub(super) unsafe extern "C" fn map_mr_sg_callback(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut c_uint,
) -> c_int {
    // SAFETY: `ibmr` heads a live `RxeMr` (ib_core's promise).
    let mr = unsafe { &*ibmr.cast::<RxeMr>() };
    let MrMemory::Fast(fast) = &mr.memory else {
        return EINVAL.to_errno();
    };
    // SAFETY: Live region; ib_map_mr_sg has just set the page size.
    let page_size = unsafe { (*ibmr).page_size };
    let Ok(page_shift) = fast_reg_page_shift(u64::from(page_size)) else {
        return EINVAL.to_errno();
    };
    let mut guard = fast.state.lock();
    guard.staged.start(page_shift);
    let staged: *mut StagedPages = &mut guard.staged;
    fast.staging.store(staged, Ordering::Release);
    // SAFETY: ib_core's promise for `ibmr`, `sg`, `sg_nents` and
    // `sg_offset`; `set_page_callback` only touches the staged list, which
    // `staging` lends it for this call while the lock is held here.
    let mapped =
        unsafe { bindings::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(set_page_callback)) };
    fast.staging.store(core::ptr::null_mut(), Ordering::Release);
    // SAFETY: Live region; `ib_sg_to_pages` set its length.
    let length = unsafe { (*ibmr).length };
    guard.staged.finish(length);
    mapped
}

/// `.advise_mr` (`ibv_advise_mr`; set only when the kernel has on-demand
/// paging): prefetches on-demand-paging regions.
///
/// # Safety
///
/// Called by ib_core only, in process context, with a live PD of one of our
/// devices and `num_sge` SGEs at `sg_list`.
pub(super) unsafe extern "C" fn advise_mr_callback(
    pd: *mut bindings::ib_pd,
    advice: bindings::ib_uverbs_advise_mr_advice,
    _flags: u32,
    sg_list: *mut bindings::ib_sge,
    num_sge: u32,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    let advice = match advice {
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
            mr::Advice::Prefetch
        }
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
            mr::Advice::PrefetchWrite
        }
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
            mr::Advice::PrefetchNoFault
        }
        _ => return EOPNOTSUPP.to_errno(),
    };
    // SAFETY: ib_core passes a live PD of one of our devices.
    let rxe = unsafe { super::ib::rxe_of((*pd).device) };
    let sges: &[bindings::ib_sge] = if num_sge == 0 || sg_list.is_null() {
        &[]
    } else {
        // SAFETY: ib_core passes `num_sge` SGEs at `sg_list`, valid for
        // the call.
        unsafe { core::slice::from_raw_parts(sg_list, num_sge as usize) }
    };
    let mut ranges = KVec::new();
    for s in sges {
        let range = mr::AdviseRange {
            lkey: s.lkey,
            addr: s.addr,
            length: s.length,
        };
        if ranges.push(range, GFP_KERNEL).is_err() {
            return ENOMEM.to_errno();
        }
    }
    match mr::advise_mr(rxe, pd as usize, advice, &ranges) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
