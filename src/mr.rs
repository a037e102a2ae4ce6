// SPDX-License-Identifier: GPL-2.0

//! Memory regions (rxe-abi-and-wire.md §2.2): registration of user memory (`reg_user_mr`)
//! and of the kernel's DMA region (`get_dma_mr`), fast-registration regions
//! (`alloc_mr`, then `map_mr_sg`, `IB_WR_REG_MR`, `IB_WR_LOCAL_INV` and
//! remote invalidation), their keys in the device's key table, and
//! deregistration.
//!
//! A region is allocated by the driver (ib_core does not size MRs) and owned
//! by ib_core between registration and `dereg_mr`. The key table holds one
//! use of it; the data path takes more through
//! [`crate::sys::table::IndexTable::lookup`]. Deregistration removes the region
//! from the table first, so no new use can start, then waits until the
//! last use is dropped, and only then unpins the memory. The
//! access decisions themselves are [`crate::proto::access`]'s.

use crate::{
    abi::values,
    device::RxeDevice,
    driver::Rxe,
    ib::{self, mr::SgToPages, IbMr},
    odp::OdpRegion,
    proto::{
        access::{
            self, fast_reg_page_shift, AccessError, Extent, FastReg, FastRegError, MemKey,
            PageChunks, PageMap, RegionKeys, MAX_FAST_REG_PAGES, MR_INDEX_MAX,
        },
        window::{names_window, WindowUser},
    },
    sys::{
        bindings,
        odp::OdpUmem,
        random_u8,
        table::{Counted, UseCount},
        umem::{PageList, Umem},
    },
    verbs,
};
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// Page size of the page list of a user region.
const PAGE_SHIFT: u32 = kernel::page::PAGE_SHIFT as u32;

/// A memory region.
#[repr(C)]
#[pin_data]
pub(crate) struct RxeMr {
    /// The ib_core object; must stay the first field.
    pub(crate) ibmr: IbMr,
    /// What key lookups check, as registered ([`RxeMr::keys`] gives them
    /// with what `rereg_user_mr` changed since).
    registered: RegionKeys,
    /// The protection domain (an identity) since the last
    /// `rereg_user_mr` that changed it.
    pd: AtomicUsize,
    /// The access bits since the last `rereg_user_mr` that changed them.
    access: AtomicU32,
    /// The memory behind the region.
    pub(crate) memory: MrMemory,
    /// Memory windows bound to the region (see [`crate::mw`]).
    pub(crate) windows: AtomicU32,
    /// The key table's use and the data path's.
    #[pin]
    uses: UseCount,
}

impl Counted for RxeMr {
    fn uses(&self) -> &UseCount {
        &self.uses
    }
}

impl RxeMr {
    /// What key lookups check now: the registered keys and extent, with
    /// the protection domain and access `rereg_user_mr` may have changed.
    pub(crate) fn keys(&self) -> RegionKeys {
        RegionKeys {
            pd: self.pd.load(Ordering::Relaxed),
            access: self.access.load(Ordering::Relaxed),
            ..self.registered
        }
    }

    /// The region's lkey (never changed by `rereg_user_mr`).
    pub(crate) fn lkey(&self) -> MemKey {
        self.registered.lkey
    }
}

/// The memory a region's addresses refer to.
pub(crate) enum MrMemory {
    /// Kernel virtual addresses (`get_dma_mr`): the kernel consumer passes
    /// addresses of its own buffers.
    Dma,
    /// Pinned user pages.
    User {
        /// Offset of the region's first byte in its first page.
        first_page_offset: u64,
        /// The pages, in address order. Declared before `umem` so that it
        /// is dropped first.
        pages: PageList,
        /// Keeps the pages pinned.
        umem: Umem,
    },
    /// A fast-registration region (`alloc_mr`): pages a kernel ULP maps
    /// with `map_mr_sg` and registers with `IB_WR_REG_MR`.
    Fast(Pin<KBox<FastMr>>),
    /// User memory registered for on-demand paging (`IB_ACCESS_ON_DEMAND`,
    /// see [`crate::odp`]): not pinned, brought in when needed.
    Odp(Pin<KBox<OdpRegion>>),
}

/// The mutable half of a fast-registration region. The key table's entry
/// ([`RxeMr::keys`]) holds only its index; key, state, access and pages
/// are here, under an interrupt-safe lock: `map_mr_sg` may run in any
/// context, the data path runs in softirq and under the QP lock.
#[pin_data]
pub(crate) struct FastMr {
    /// State, keys, the registered pages and the ones `map_mr_sg` staged.
    #[pin]
    pub(crate) state: SpinLockIrq<FastMrState>,
    /// The staged page list while `map_mr_sg` fills it, with `state` held
    /// by that call; null otherwise (see `crate::sys::mr`).
    pub(crate) staging: AtomicPtr<StagedPages>,
}

/// What [`FastMr::state`] protects.
pub(crate) struct FastMrState {
    /// The region's state machine and key checks.
    pub(crate) reg: FastReg,
    /// Addresses (kernel virtual: rxe maps DMA to virtual addresses) of the
    /// pages of the current registration, one per page of the page map.
    pub(crate) live: KVVec<u64>,
    /// The page list `map_mr_sg` built last, which the next REG_MR
    /// registers.
    pub(crate) staged: StagedPages,
}

/// A page list built by `map_mr_sg`, waiting for REG_MR.
pub(crate) struct StagedPages {
    /// Page addresses, at most `max_num_sg` (the capacity, never grown).
    pages: KVVec<u64>,
    /// log2 of the page size they were mapped with.
    page_shift: u32,
    /// Bytes the mapping covers (`ib_mr.length` after mapping).
    length: u64,
}

impl StagedPages {
    /// Starts a new mapping with pages of `1 << page_shift` bytes.
    pub(crate) fn start(&mut self, page_shift: u32) {
        self.pages.clear();
        self.page_shift = page_shift;
        self.length = 0;
    }

    /// Appends the next page's address; `ENOMEM` when the region's
    /// `max_num_sg` pages are used (as rxe's `rxe_set_page`).
    pub(crate) fn push(&mut self, addr: u64) -> Result {
        self.pages.push_within_capacity(addr).map_err(|_| ENOMEM)
    }

    /// Records how many bytes the mapping covers.
    pub(crate) fn finish(&mut self, length: u64) {
        self.length = length;
    }
}

/// What `reg_user_mr` is asked for.
pub(crate) struct UserMrRequest {
    /// User virtual address of the first byte.
    pub(crate) start: u64,
    /// Length in bytes.
    pub(crate) length: u64,
    /// The address the region's users use for its first byte (ib_core has
    /// checked it has the same offset in its page as `start`).
    pub(crate) iova: u64,
    /// `IB_ACCESS_*` flags.
    pub(crate) access: u32,
}

/// Maps a refused registration to the errno the C driver returns.
fn registration_error(e: AccessError) -> Error {
    match e {
        AccessError::Unsupported => EOPNOTSUPP,
        _ => EINVAL,
    }
}

/// Allocates a region with fresh keys, publishes it in the key table and
/// returns it. `memory` builds what the region covers once its key is known
/// (a fast-registration region's state holds it); whatever it captures is
/// dropped (user memory unpinned) if this fails.
fn register(
    rxe: &RxeDevice,
    pd: usize,
    access: u32,
    extent: Extent,
    memory: impl FnOnce(MemKey) -> Result<MrMemory>,
) -> Result<Pin<KBox<RxeMr>>> {
    verbs::take_budget(&rxe.mrs, crate::params::MAX_MR)?;
    let index = match rxe.keys.reserve(1, MR_INDEX_MAX) {
        Ok(index) => index,
        Err(e) => {
            verbs::return_budget(&rxe.mrs);
            return Err(e);
        }
    };
    let key = MemKey::new(index, random_u8());
    let keys = RegionKeys {
        lkey: key,
        rkey: key,
        pd,
        access,
        extent,
    };
    let mr = memory(key).and_then(|memory| {
        KBox::pin_init(
            pin_init!(RxeMr {
                ibmr: IbMr::new(key.0, key.0),
                registered: keys,
                pd: AtomicUsize::new(pd),
                access: AtomicU32::new(access),
                memory,
                windows: AtomicU32::new(0),
                uses <- UseCount::new(),
            }),
            GFP_KERNEL,
        )
    });
    let published = mr.and_then(|mr| {
        // SAFETY: The region is pinned in its box, which `dereg_mr` frees
        // only after removing it from the table and draining its uses.
        unsafe { rxe.keys.publish(index, &mr) }?;
        Ok(mr)
    });
    if published.is_err() {
        rxe.keys.unreserve(index);
        verbs::return_budget(&rxe.mrs);
    }
    published
}

/// `get_dma_mr`: the region ib_core creates for each kernel PD (this
/// device does not advertise a local DMA lkey).
pub(crate) fn get_dma_mr(rxe: &RxeDevice, pd: usize, access: u32) -> Result<Pin<KBox<RxeMr>>> {
    let access = access::check_registration_access(access).map_err(registration_error)?;
    register(rxe, pd, access, Extent::Whole, |_| Ok(MrMemory::Dma))
}

/// `reg_user_mr`: pins the user range and registers it; with
/// `IB_ACCESS_ON_DEMAND` registers it for on-demand paging instead (no
/// page pinned; implicit ODP, the whole address space, is `EOPNOTSUPP` as
/// in rxe).
pub(crate) fn reg_user_mr(
    rxe: &RxeDevice,
    pd: usize,
    req: &UserMrRequest,
) -> Result<Pin<KBox<RxeMr>>> {
    let access = access::check_user_registration_access(req.access, OdpUmem::supported())
        .map_err(registration_error)?;
    if req.start == 0 && req.length == u64::MAX && access & values::access::ON_DEMAND != 0 {
        return Err(EOPNOTSUPP);
    }
    if req.length == 0 || req.iova.checked_add(req.length - 1).is_none() {
        return Err(EINVAL);
    }
    // rxe refuses FLUSH_PERSISTENT (EINVAL) on pages that are not persistent
    // memory; this driver cannot tell persistent memory apart, so it
    // promises persistence on no user region (a FLUSH asking for it then
    // fails its key check).
    if access & crate::abi::values::access::FLUSH_PERSISTENT != 0 {
        return Err(EINVAL);
    }
    let extent = Extent::Range {
        iova: req.iova,
        length: req.length,
    };
    if access & values::access::ON_DEMAND != 0 {
        let region = OdpRegion::new(rxe, req.start, req.length, access)?;
        let mr = register(rxe, pd, access, extent, |_| Ok(MrMemory::Odp(region)))?;
        rxe.odp_regions.fetch_add(1, Ordering::Relaxed);
        return Ok(mr);
    }
    let umem = Umem::pin(&rxe.ib, req.start, req.length, access)?;
    let pages = umem.pages()?;
    let first_page_offset = req.start & ((1 << PAGE_SHIFT) - 1);
    let needed = (first_page_offset + req.length).div_ceil(1 << PAGE_SHIFT);
    if pages.len() as u64 != needed {
        return Err(EFAULT);
    }
    let memory = MrMemory::User {
        first_page_offset,
        pages,
        umem,
    };
    register(rxe, pd, access, extent, |_| Ok(memory))
}

/// `dereg_mr`, first half: removes the region from the key table, so
/// that no new use can start, unless memory windows are bound to it
/// (`EINVAL`, as rxe; the region stays registered).
pub(crate) fn unpublish(rxe: &RxeDevice, mr: &RxeMr) -> Result {
    crate::mw::unpublish_region(rxe, mr)
}

/// `dereg_mr`, second half, after [`unpublish`]: waits for the region's
/// last use, then frees it (unpinning user memory).
pub(crate) fn dereg_mr(rxe: &RxeDevice, mr: Pin<KBox<RxeMr>>) {
    if let MrMemory::Fast(fast) = &mr.memory {
        fast.state.lock().reg.deallocate();
    }
    mr.uses.drain();
    let odp = matches!(mr.memory, MrMemory::Odp(_));
    drop(mr);
    if odp {
        rxe.odp_regions.fetch_sub(1, Ordering::Relaxed);
    }
    verbs::return_budget(&rxe.mrs);
}

/// What `advise_mr` (`ibv_advise_mr`) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Bring the pages in for reading.
    Prefetch,
    /// Bring the pages in for writing.
    PrefetchWrite,
    /// Map what is already there, without faulting: nothing to do here,
    /// where the data path takes what is resident anyway.
    PrefetchNoFault,
}

/// One range `advise_mr` names: an lkey and a range under it.
pub(crate) struct AdviseRange {
    /// The region's lkey.
    pub(crate) lkey: u32,
    /// First address.
    pub(crate) addr: u64,
    /// Bytes.
    pub(crate) length: u32,
}

/// `advise_mr`: brings the pages of on-demand-paging regions of `pd` in
/// before the data path needs them. Done at once (the asynchronous form
/// may be, and ib_core's flush flag asks for it). An lkey that names no
/// on-demand-paging region of `pd`, or a range outside it, is `EINVAL`;
/// prefetching for writing a region registered read-only is `EPERM`; a
/// range the process has no mapping for is `EFAULT`. Process context.
pub(crate) fn advise_mr(
    rxe: &RxeDevice,
    pd: usize,
    advice: Advice,
    ranges: &[AdviseRange],
) -> Result {
    if advice == Advice::PrefetchNoFault {
        return Ok(());
    }
    let write = advice == Advice::PrefetchWrite;
    for r in ranges {
        let key = MemKey(r.lkey);
        let mr = rxe.keys.lookup(key.index()).ok_or(EINVAL)?;
        let MrMemory::Odp(region) = &mr.memory else {
            return Err(EINVAL);
        };
        let off = mr
            .keys()
            .check(
                key,
                access::KeyUse::Local,
                pd,
                0,
                r.addr,
                u64::from(r.length),
            )
            .map_err(|_| EINVAL)?;
        if write && !region.umem.writable() {
            return Err(EPERM);
        }
        region
            .umem
            .fault(region.start.wrapping_add(off), u64::from(r.length), write)?;
    }
    Ok(())
}

/// `rereg_user_mr` flags this driver carries out (rxe's: a new protection
/// domain, new access bits; a new translation, `IB_MR_REREG_TRANS`, is
/// refused).
pub(crate) mod rereg {
    /// `IB_MR_REREG_PD`.
    pub(crate) const PD: u32 = 1 << 1;
    /// `IB_MR_REREG_ACCESS`.
    pub(crate) const ACCESS: u32 = 1 << 2;
}

/// `rereg_user_mr` of user region `mr`: with [`rereg::PD`] it moves to
/// protection domain `pd`, with [`rereg::ACCESS`] it takes the access bits
/// `access`; keys, memory and bound windows stay. A new translation
/// (`IB_MR_REREG_TRANS`) is `EOPNOTSUPP`, as in rxe; so is any access bit a
/// registration could not have; write access to pages that were pinned
/// read-only is `EACCES`. Nothing changes unless everything asked can be
/// done.
pub(crate) fn rereg_user_mr(mr: &RxeMr, flags: u32, pd: usize, access: u32) -> Result {
    if flags & !(rereg::PD | rereg::ACCESS) != 0 {
        return Err(EOPNOTSUPP);
    }
    let odp = match &mr.memory {
        // Write access to pages pinned read-only: `EACCES`.
        MrMemory::User { umem, .. } => {
            umem.check_rereg(flags, access)?;
            false
        }
        MrMemory::Odp(region) => {
            // The same for pages registered read-only; and a region stays
            // what it was registered as, on demand or pinned.
            let writes = values::access::LOCAL_WRITE
                | values::access::REMOTE_WRITE
                | values::access::REMOTE_ATOMIC;
            if flags & rereg::ACCESS != 0 {
                if access & values::access::ON_DEMAND == 0 {
                    return Err(EOPNOTSUPP);
                }
                if access & writes != 0 && !region.umem.writable() {
                    return Err(EACCES);
                }
            }
            true
        }
        _ => return Err(EOPNOTSUPP),
    };
    let access = if flags & rereg::ACCESS != 0 {
        let a = access::check_user_registration_access(access, odp).map_err(registration_error)?;
        if a & crate::abi::values::access::FLUSH_PERSISTENT != 0 {
            // As at registration: no persistent memory here.
            return Err(EINVAL);
        }
        Some(a)
    } else {
        None
    };
    if flags & rereg::PD != 0 {
        mr.pd.store(pd, Ordering::Relaxed);
    }
    if let Some(a) = access {
        mr.access.store(a, Ordering::Relaxed);
    }
    Ok(())
}

/// `alloc_mr` (`IB_MR_TYPE_MEM_REG`): a fast-registration region for up to
/// `max_num_sg` pages, Free until a REG_MR registers it. The C driver's
/// page-list limit (`max_fast_reg_page_list_len`) bounds `max_num_sg`.
pub(crate) fn alloc_mr(rxe: &RxeDevice, pd: usize, max_num_sg: u32) -> Result<Pin<KBox<RxeMr>>> {
    if max_num_sg > MAX_FAST_REG_PAGES {
        return Err(EINVAL);
    }
    let n = max_num_sg as usize;
    let live = KVVec::with_capacity(n, GFP_KERNEL)?;
    let staged = StagedPages {
        pages: KVVec::with_capacity(n, GFP_KERNEL)?,
        page_shift: kernel::page::PAGE_SHIFT as u32,
        length: 0,
    };
    // The table entry's own keys admit nothing: every access to a
    // fast-registration region is decided by its `FastReg`.
    let extent = Extent::Range { iova: 0, length: 0 };
    register(rxe, pd, 0, extent, |key| {
        let fast = KBox::pin_init(
            pin_init!(FastMr {
                state <- new_spinlock_irq!(
                    FastMrState {
                        reg: FastReg::new(key, pd),
                        live,
                        staged,
                    },
                    "FastMr::state"
                ),
                staging: AtomicPtr::new(core::ptr::null_mut()),
            }),
            GFP_KERNEL,
        )?;
        Ok(MrMemory::Fast(fast))
    })
}

/// IB_WR_REG_MR, executed in send-queue order by a QP in `qp_pd`:
/// registers the pages the last `map_mr_sg` staged on region `mr_index`
/// at `iova`, with key `key` and access `access`.
pub(crate) fn reg_mr(
    rxe: &RxeDevice,
    qp_pd: usize,
    mr_index: u32,
    iova: u64,
    key: u32,
    access: u32,
) -> Result<(), FastRegError> {
    let mr = rxe.keys.lookup(mr_index).ok_or(FastRegError::UnknownKey)?;
    let MrMemory::Fast(fast) = &mr.memory else {
        return Err(FastRegError::NotFastReg);
    };
    let mut guard = fast.state.lock();
    let st = &mut *guard;
    let map = PageMap::new(
        st.staged.page_shift,
        iova,
        st.staged.length,
        st.staged.pages.len(),
    )?;
    st.reg.register(qp_pd, key, access, map)?;
    st.live.clear();
    for &page in st.staged.pages.iter() {
        // Same capacity as `staged`: cannot fail.
        let _ = st.live.push_within_capacity(page);
    }
    Ok(())
}

/// IB_WR_LOCAL_INV or a remote invalidation (SEND_WITH_INV) of `key` by
/// the QP `user`: the fast-registration region or type 2 memory window it
/// names becomes Free. A window that cannot be invalidated is reported as
/// an unknown key (both complete with the same status).
pub(crate) fn invalidate(rxe: &RxeDevice, user: WindowUser, key: u32) -> Result<(), FastRegError> {
    if names_window(MemKey(key)) {
        return crate::mw::invalidate(rxe, user, key).map_err(|_| FastRegError::UnknownKey);
    }
    let qp_pd = user.pd;
    let mr = rxe
        .keys
        .lookup(MemKey(key).index())
        .ok_or(FastRegError::UnknownKey)?;
    let MrMemory::Fast(fast) = &mr.memory else {
        return Err(FastRegError::NotFastReg);
    };
    let result = fast.state.lock().reg.invalidate(qp_pd, key);
    result
}

/// Copies `src` into the region bytes `[offset, offset + src.len())` of
/// pinned `pages`, for a region starting `first_page_offset` into its first
/// page. The range must have been checked against the region (the copy
/// stops, returning `EFAULT`, at the end of the page list).
pub(crate) fn copy_in(pages: &PageList, first_page_offset: u64, offset: u64, src: &[u8]) -> Result {
    let mut done = 0;
    for chunk in PageChunks::new(first_page_offset, offset, src.len() as u64, PAGE_SHIFT) {
        pages.copy_to_page(chunk.page, chunk.offset, &src[done..done + chunk.len])?;
        done += chunk.len;
    }
    Ok(())
}

/// Copies the region bytes `[offset, offset + dst.len())` into `dst`; as
/// [`copy_in`] otherwise.
pub(crate) fn copy_out(
    pages: &PageList,
    first_page_offset: u64,
    offset: u64,
    dst: &mut [u8],
) -> Result {
    let mut done = 0;
    for chunk in PageChunks::new(first_page_offset, offset, dst.len() as u64, PAGE_SHIFT) {
        pages.copy_from_page(chunk.page, chunk.offset, &mut dst[done..done + chunk.len])?;
        done += chunk.len;
    }
    Ok(())
}

crate::impl_ib_object!(RxeMr, ibmr: bindings::ib_mr);

impl ib::MrOps<Rxe> for RxeMr {
    fn get_dma_mr(dev: &RxeDevice, pd: usize, access: u32) -> Result<Pin<KBox<Self>>> {
        get_dma_mr(dev, pd, access)
    }

    fn reg_user_mr(
        dev: &RxeDevice,
        pd: usize,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Pin<KBox<Self>>> {
        let req = UserMrRequest {
            start,
            length,
            iova,
            access,
        };
        reg_user_mr(dev, pd, &req)
    }

    fn rereg_user_mr(mr: &Self, flags: u32, pd: usize, access: u32) -> Result {
        rereg_user_mr(mr, flags, pd, access)
    }

    fn alloc_mr(dev: &RxeDevice, pd: usize, max_num_sg: u32) -> Result<Pin<KBox<Self>>> {
        alloc_mr(dev, pd, max_num_sg)
    }

    fn unpublish(dev: &RxeDevice, mr: &Self) -> Result {
        unpublish(dev, mr)
    }

    fn dereg(dev: &RxeDevice, mr: Pin<KBox<Self>>) {
        dereg_mr(dev, mr);
    }

    /// Builds a fast-registration region's page list from a DMA-mapped
    /// scatterlist, with the page size ib_core chose; the next
    /// `IB_WR_REG_MR` registers it.
    fn map_mr_sg(mr: &Self, sg: SgToPages<'_, Rxe>) -> Result<c_int> {
        let MrMemory::Fast(fast) = &mr.memory else {
            return Err(EINVAL);
        };
        let page_shift = fast_reg_page_shift(u64::from(sg.page_size())).map_err(|_| EINVAL)?;
        let mut guard = fast.state.lock();
        guard.staged.start(page_shift);
        let staged: *mut StagedPages = &mut guard.staged;
        fast.staging.store(staged, Ordering::Release);
        let (mapped, length) = sg.run();
        fast.staging.store(core::ptr::null_mut(), Ordering::Release);
        guard.staged.finish(length);
        Ok(mapped)
    }

    /// Appends one page address to the page list being staged.
    fn set_page(mr: &Self, addr: u64) -> Result {
        let MrMemory::Fast(fast) = &mr.memory else {
            return Err(EINVAL);
        };
        let staged = fast.staging.load(Ordering::Acquire);
        if staged.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `staging` is non-null only while `map_mr_sg` holds the
        // region's state lock and runs `ib_sg_to_pages` on this thread
        // (the only caller of `set_page`): the pointer is to the staged
        // list inside that lock, which nothing else touches meanwhile.
        unsafe { (*staged).push(addr) }
    }
}
