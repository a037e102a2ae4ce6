// SPDX-License-Identifier: GPL-2.0

//! Memory-region plumbing: the `ib_mr` at the head of [`RxeMr`], pinned user
//! memory (`ib_umem`) and its page list, the per-device key table (an
//! xarray indexed by key index, locked with bottom halves off so that the
//! receive path may look keys up), references that keep a region alive
//! while the data path uses it, and the `ib_device_ops` adapters of the MR
//! verbs.

use super::bindings;
use crate::{
    mr::{self, RxeMr},
    proto::access::PageChunks,
};
use core::{cell::UnsafeCell, ptr::NonNull};
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
    pub(crate) fn pin(rxe: &crate::device::RxeDevice, addr: u64, len: u64, access: u32) -> Result<Umem> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: The device is live; `ib_umem_get_va` checks the range
        // against the caller's address space and limits.
        let ptr = unsafe {
            bindings::rxe_glue_umem_get(rxe.ib.as_ptr(), addr as _, len, access as c_int)
        };
        let ptr = kernel::error::from_err_ptr(ptr)?;
        Ok(Umem { ptr: NonNull::new(ptr).ok_or(ENOMEM)? })
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
    #[allow(dead_code, reason = "the receive path places payload with it")]
    pub(crate) fn copy_in(&self, first_page_offset: u64, offset: u64, src: &[u8]) -> Result {
        let mut done = 0;
        for chunk in PageChunks::new(first_page_offset, offset, src.len() as u64, PAGE_SHIFT) {
            let page = *self.pages.get(chunk.page).ok_or(EFAULT)?;
            let part = &src[done..done + chunk.len];
            // SAFETY: `page` is pinned (invariant); the chunk lies within
            // one page; `part` is readable for its length.
            unsafe {
                bindings::rxe_glue_memcpy_to_page(page, chunk.offset, part.as_ptr().cast(), chunk.len)
            };
            done += chunk.len;
        }
        Ok(())
    }

    /// Copies the region bytes `[offset, offset + dst.len())` into `dst`;
    /// as [`PageList::copy_in`] otherwise.
    #[allow(dead_code, reason = "the transmit path gathers payload with it")]
    pub(crate) fn copy_out(&self, first_page_offset: u64, offset: u64, dst: &mut [u8]) -> Result {
        let mut done = 0;
        for chunk in PageChunks::new(first_page_offset, offset, dst.len() as u64, PAGE_SHIFT) {
            let page = *self.pages.get(chunk.page).ok_or(EFAULT)?;
            let part = &mut dst[done..done + chunk.len];
            // SAFETY: As in `copy_in`; `part` is writable for its length.
            unsafe {
                bindings::rxe_glue_memcpy_from_page(part.as_mut_ptr().cast(), page, chunk.offset, chunk.len)
            };
            done += chunk.len;
        }
        Ok(())
    }
}

/// The per-device key table: key index → live [`RxeMr`].
///
/// Indices are handed out cyclically (as rxe's pools do), so a stale key is
/// unlikely to name a new region. Insertion is two steps: reserve an index
/// (to build the keys from it), then publish the finished region.
///
/// # Invariants
///
/// `xa` was initialised by [`KeyTable::init`] with `XA_FLAGS_ALLOC`. Every
/// non-null entry points to a live [`RxeMr`] whose `users` count includes
/// one for the table; entries are removed before the region is freed.
/// `next` is only touched by `xa_alloc_cyclic` under the xarray's lock.
pub(crate) struct KeyTable {
    xa: Opaque<bindings::xarray>,
    next: UnsafeCell<u32>,
}

// SAFETY: All access goes through the xarray's lock or its RCU-safe reads.
unsafe impl Send for KeyTable {}
// SAFETY: As above.
unsafe impl Sync for KeyTable {}

impl KeyTable {
    /// Initialises the table in place.
    ///
    /// # Safety
    ///
    /// Called once, before any other method, on a table that will not move
    /// until [`KeyTable::destroy`].
    pub(crate) unsafe fn init(&self) {
        // SAFETY: Not yet initialised and not moving, by the caller's promise.
        unsafe { bindings::rxe_glue_xa_init_alloc(self.xa.get()) };
    }

    /// Reserves a free index in `[min, max]`.
    pub(crate) fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        let mut id = 0u32;
        // SAFETY: Initialised table (invariant); `next` is only used under
        // the lock the call takes.
        let ret = unsafe {
            bindings::rxe_glue_xa_reserve_cyclic(self.xa.get(), &mut id, min, max, self.next.get())
        };
        match ret {
            0 | 1 => Ok(id),
            // The C driver reports a full pool as EINVAL; -EBUSY is the xarray's "full".
            e if e == EBUSY.to_errno() => Err(ENOMEM),
            e => Err(Error::from_errno(e)),
        }
    }

    /// Gives back an index that [`KeyTable::reserve`] returned and that was
    /// never published.
    pub(crate) fn unreserve(&self, index: u32) {
        // SAFETY: Initialised table; erasing a reserved slot frees it.
        unsafe { bindings::rxe_glue_xa_erase(self.xa.get(), index as _) };
    }

    /// Makes `mr` findable at `index`, a reserved index.
    ///
    /// # Safety
    ///
    /// `mr` is pinned and stays alive until [`KeyTable::remove`] of `index`
    /// has returned and its table reference is gone (see [`RxeMr`]).
    pub(crate) unsafe fn publish(&self, index: u32, mr: &RxeMr) -> Result {
        let entry = core::ptr::from_ref(mr).cast_mut().cast();
        // SAFETY: Initialised table; the slot is reserved, so the store does
        // not allocate and cannot fail for memory.
        kernel::error::to_result(unsafe {
            bindings::rxe_glue_xa_publish(self.xa.get(), index as _, entry)
        })
    }

    /// Removes the region at `index`; afterwards no lookup finds it.
    /// Returns whether there was one.
    pub(crate) fn remove(&self, index: u32) -> bool {
        // SAFETY: Initialised table.
        !unsafe { bindings::rxe_glue_xa_erase(self.xa.get(), index as _) }.is_null()
    }

    /// Finds the region at `index` and takes a reference on it.
    #[allow(dead_code, reason = "the receive and transmit paths look keys up")]
    pub(crate) fn lookup(&self, index: u32) -> Option<MrRef> {
        // SAFETY: Initialised table. Under the lock no entry can be removed,
        // so a found region is live and its `users` count is at least one
        // (the table's) while we add ours.
        unsafe {
            bindings::rxe_glue_xa_lock(self.xa.get());
            let entry = bindings::xa_load(self.xa.get(), index as _).cast::<RxeMr>();
            let found = NonNull::new(entry).map(|mr| {
                mr.as_ref().get_user();
                MrRef { mr }
            });
            bindings::rxe_glue_xa_unlock(self.xa.get());
            found
        }
    }

    /// Frees the table's internal nodes.
    ///
    /// # Safety
    ///
    /// Called once, when no region is in the table and no method runs or
    /// will run any more.
    pub(crate) unsafe fn destroy(&self) {
        // SAFETY: By the caller's promise.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}

/// A counted reference to a registered region, held by the data path while
/// it uses the region's memory; deregistration waits for all of them.
///
/// # Invariants
///
/// `mr` is live and its `users` count includes this reference.
pub(crate) struct MrRef {
    mr: NonNull<RxeMr>,
}

impl core::ops::Deref for MrRef {
    type Target = RxeMr;

    fn deref(&self) -> &RxeMr {
        // SAFETY: Live while we hold a use (invariant).
        unsafe { self.mr.as_ref() }
    }
}

impl Drop for MrRef {
    fn drop(&mut self) {
        // SAFETY: Live while we hold a use; `put_user` may complete the
        // region's drain, after which we never touch it again.
        unsafe { self.mr.as_ref() }.put_user();
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

pub(super) unsafe extern "C" fn dereg_mr_callback(
    ibmr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a region that `into_ib` handed out, once, after
    // its last user in ib_core; the box is ours again.
    let (rxe, mr) = unsafe {
        (
            super::ib::rxe_of((*ibmr).device),
            Pin::new_unchecked(KBox::from_raw(ibmr.cast::<RxeMr>())),
        )
    };
    mr::dereg_mr(rxe, mr);
    0
}
