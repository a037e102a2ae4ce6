// SPDX-License-Identifier: GPL-2.0

//! Memory keys and the key table's checks (seed: "Key Table; Permission and
//! Bounds Violations"): what a registration may ask for, how an lkey or rkey
//! names a region, and whether a given key, PD, access and address range may
//! touch it. The table's storage and the pages behind a region live in the
//! kernel layer; every decision is made here.
//!
//! Keys are laid out as rxe lays them out (rxe-abi-and-wire.md §2.2): `index << 8 | key8`,
//! MR indices in `1..=MR_INDEX_MAX`, MW indices above. `key8` is the
//! "consumer key" byte that fast registration may change.

use crate::abi::values::{access, WcStatus};

/// Highest MR index (rxe's `RXE_MAX_MR_INDEX`, `(1 << 20) >> 1`); lkey =
/// rkey = index << 8 | key8. (Design §5 says 0x7FFFF; `rxe_param.h` of the
/// 7.3 tree says 0x80000, and that is what a peer's keys look like.)
pub const MR_INDEX_MAX: u32 = 0x8_0000;
/// Lowest memory-window index (rxe's `RXE_MIN_MW_INDEX`).
pub const MW_INDEX_MIN: u32 = MR_INDEX_MAX + 1;

/// Access bits a memory region may be registered with (rxe's
/// `RXE_ACCESS_SUPPORTED_MR`). ON_DEMAND, also in rxe's set, is only for
/// user memory, and only when the kernel has on-demand paging
/// ([`check_user_registration_access`]).
pub const SUPPORTED_MR_ACCESS: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::MW_BIND
    | access::FLUSH_GLOBAL
    | access::FLUSH_PERSISTENT
    | OPTIONAL_ACCESS;

/// The "optional" access bits (`IB_ACCESS_OPTIONAL`, bits 20..=29): a
/// device that does not implement one may ignore it.
pub const OPTIONAL_ACCESS: u32 = 0x3ff << 20;

/// Why a key, registration or access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// The registration asks for an access bit the driver does not support.
    Unsupported,
    /// Remote write or atomic access without local write (IBTA o10-37.2.30;
    /// ib_core checks it too).
    NeedsLocalWrite,
    /// The key's index names no live region, or names a memory window where
    /// a region is required.
    UnknownKey,
    /// The index is live but the key byte or the key itself differs (a stale
    /// or forged key).
    StaleKey,
    /// The region belongs to another protection domain.
    WrongPd,
    /// The region was not registered with the access the operation needs.
    NotPermitted,
    /// The range is not inside the region, or wraps around.
    OutOfBounds,
    /// A fast-registration region that is not in the Valid state: never
    /// registered, or invalidated since (rxe's `lookup_mr` refuses it).
    NotValid,
    /// The access is allowed but an on-demand-paging region's pages are not
    /// resident now: nothing was moved, and a fault was asked for.
    NotResident,
}

/// An lkey or rkey: `index << 8 | key8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemKey(pub u32);

impl MemKey {
    /// A key from its table index and consumer key byte. The index must fit
    /// in 24 bits; higher bits are dropped.
    pub const fn new(index: u32, key8: u8) -> MemKey {
        MemKey((index << 8) | key8 as u32)
    }

    /// The table index.
    pub const fn index(self) -> u32 {
        self.0 >> 8
    }

    /// The consumer key byte.
    pub const fn key8(self) -> u8 {
        self.0 as u8
    }

    /// Whether the index is in the memory-region range (not a window, not 0).
    pub const fn names_region(self) -> bool {
        let i = self.index();
        i >= 1 && i <= MR_INDEX_MAX
    }
}

/// Checks the access flags of a registration (`reg_user_mr`, `get_dma_mr`)
/// and returns the ones the region keeps (optional bits dropped).
pub fn check_registration_access(flags: u32) -> Result<u32, AccessError> {
    if flags & !SUPPORTED_MR_ACCESS != 0 {
        return Err(AccessError::Unsupported);
    }
    let remote_needs_local = access::REMOTE_WRITE | access::REMOTE_ATOMIC;
    if flags & remote_needs_local != 0 && flags & access::LOCAL_WRITE == 0 {
        return Err(AccessError::NeedsLocalWrite);
    }
    Ok(flags & !OPTIONAL_ACCESS)
}

/// Checks the access flags of a user memory registration (`reg_user_mr`):
/// as [`check_registration_access`], and `ON_DEMAND` (kept) if the kernel
/// has on-demand paging (`on_demand`).
pub fn check_user_registration_access(flags: u32, on_demand: bool) -> Result<u32, AccessError> {
    let odp = flags & access::ON_DEMAND;
    if odp != 0 && !on_demand {
        return Err(AccessError::Unsupported);
    }
    check_registration_access(flags & !access::ON_DEMAND).map(|kept| kept | odp)
}

/// Where a region's addresses are valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// A DMA region (`get_dma_mr`): kernel virtual addresses, any range.
    Whole,
    /// A registered range `[iova, iova + length)`.
    Range {
        /// First valid address (the `iova` of the registration).
        iova: u64,
        /// Length in bytes.
        length: u64,
    },
}

impl Extent {
    /// The offset of `[va, va + len)` from the start of the extent, if the
    /// range lies inside it. An empty range is inside when `va` is inside or
    /// one past the end.
    pub fn offset_of(&self, va: u64, len: u64) -> Result<u64, AccessError> {
        match *self {
            Extent::Whole => va
                .checked_add(len)
                .map(|_| va)
                .ok_or(AccessError::OutOfBounds),
            Extent::Range { iova, length } => {
                let off = va.checked_sub(iova).ok_or(AccessError::OutOfBounds)?;
                if len > length || off > length - len {
                    return Err(AccessError::OutOfBounds);
                }
                Ok(off)
            }
        }
    }
}

/// Whether a key is used by this side's own work requests (lkey) or by a
/// packet from the peer (rkey).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyUse {
    /// An SGE of a local work request.
    Local,
    /// A RETH or AtomicETH of a received request.
    Remote,
}

/// What the key table knows of a registered region: enough to decide any
/// access. `pd` is the identity of the protection domain (its address in the
/// kernel); it is compared, never dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionKeys {
    /// The key handed out as lkey.
    pub lkey: MemKey,
    /// The key handed out as rkey (equal to `lkey` for user and DMA MRs).
    pub rkey: MemKey,
    /// The owning protection domain.
    pub pd: usize,
    /// Registered access flags (after [`check_registration_access`]).
    pub access: u32,
    /// Valid addresses.
    pub extent: Extent,
}

impl RegionKeys {
    /// Decides whether `key`, used as `key_use` from protection domain `pd`,
    /// may access `[va, va + len)` with the access bits `need`
    /// (`access::*`; `0` for a local read). Returns the offset of `va` in
    /// the region.
    ///
    /// The caller found this region by `key.index()`; the order of the
    /// checks follows rxe's `lookup_mr` then `mr_check_range`, so the error
    /// says the first thing wrong.
    pub fn check(
        &self,
        key: MemKey,
        key_use: KeyUse,
        pd: usize,
        need: u32,
        va: u64,
        len: u64,
    ) -> Result<u64, AccessError> {
        let expected = match key_use {
            KeyUse::Local => self.lkey,
            KeyUse::Remote => self.rkey,
        };
        if key.index() != expected.index() {
            return Err(AccessError::UnknownKey);
        }
        if key != expected {
            return Err(AccessError::StaleKey);
        }
        if pd != self.pd {
            return Err(AccessError::WrongPd);
        }
        if need & !self.access != 0 {
            return Err(AccessError::NotPermitted);
        }
        self.extent.offset_of(va, len)
    }
}

/// One contiguous piece of a region access that lies within one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageChunk {
    /// Index of the page in the region's page list.
    pub page: usize,
    /// Offset inside that page.
    pub offset: usize,
    /// Bytes in this chunk (at least 1).
    pub len: usize,
}

/// Splits an access at region offset `offset` of `len` bytes into per-page
/// chunks, for a region whose first byte sits at `first_page_offset` in its
/// first page and whose pages are `1 << page_shift` bytes.
#[derive(Clone, Debug)]
pub struct PageChunks {
    pos: u64,
    left: u64,
    page_shift: u32,
}

impl PageChunks {
    /// The chunks of `[offset, offset + len)`; the caller has bounds-checked
    /// the range with [`RegionKeys::check`].
    pub fn new(first_page_offset: u64, offset: u64, len: u64, page_shift: u32) -> PageChunks {
        PageChunks {
            pos: first_page_offset.saturating_add(offset),
            left: len,
            page_shift,
        }
    }
}

impl Iterator for PageChunks {
    type Item = PageChunk;

    fn next(&mut self) -> Option<PageChunk> {
        if self.left == 0 {
            return None;
        }
        let page_size = 1u64 << self.page_shift;
        let in_page = self.pos & (page_size - 1);
        let len = self.left.min(page_size - in_page);
        let chunk = PageChunk {
            page: (self.pos >> self.page_shift) as usize,
            offset: in_page as usize,
            len: len as usize,
        };
        self.pos += len;
        self.left -= len;
        Some(chunk)
    }
}

/// Most pages one fast-registration region maps (rxe's
/// `RXE_MAX_FMR_PAGE_LIST_LEN`, reported as `max_fast_reg_page_list_len`).
pub const MAX_FAST_REG_PAGES: u32 = 512;

/// Smallest page size (log2) of a fast registration: the lowest bit of the
/// device's `page_size_cap` (rxe's `RXE_PAGE_SIZE_CAP`, `0xfffff000`).
pub const FAST_REG_PAGE_SHIFT_MIN: u32 = 12;

/// Largest page size (log2) of a fast registration: the highest bit of
/// `page_size_cap`.
pub const FAST_REG_PAGE_SHIFT_MAX: u32 = 31;

/// The states of a fast-registration region (IBA 10.6.1, rxe's
/// `RXE_MR_STATE_*`). `alloc_mr` makes a region Free; REG_MR takes it from
/// Free to Valid; LOCAL_INV or a remote invalidation (SEND_WITH_INV) takes
/// it back to Free; deallocation leaves it Invalid. Only a Valid region
/// admits data accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrState {
    /// Deallocated: no operation applies.
    Invalid,
    /// Allocated, not registered: REG_MR may register it.
    Free,
    /// Registered: its key grants access to its pages.
    Valid,
}

/// Why a REG_MR, LOCAL_INV or remote invalidation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastRegError {
    /// REG_MR on a region that is not Free (rxe: "not free").
    NotFree,
    /// The REG_MR key's index is not the region's: only the low 8 bits,
    /// the consumer key, may change.
    WrongIndex,
    /// The QP and the region belong to different protection domains.
    WrongPd,
    /// The registration's access flags are refused.
    Access(AccessError),
    /// The page list does not cover `[iova, iova + length)`, or its page
    /// size is outside the device's `page_size_cap`.
    BadMapping,
    /// Invalidation of a key whose index names no region.
    UnknownKey,
    /// Invalidation with a key other than the region's current one (a
    /// stale consumer key byte).
    StaleKey,
    /// Invalidation of a region that is not a fast-registration region
    /// (a user or DMA MR).
    NotFastReg,
    /// The region is Invalid (deallocated).
    Deallocated,
}

/// Who asks for an invalidation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidation {
    /// This QP's own LOCAL_INV work request.
    Local,
    /// The peer, by SEND_WITH_INV (the responder invalidates).
    Remote,
}

impl FastRegError {
    /// The completion status a failed REG_MR or LOCAL_INV work request
    /// gets (rxe: `IB_WC_LOC_QP_OP_ERR` for both).
    pub const fn local_wc_status(self) -> WcStatus {
        WcStatus::LocQpOpErr
    }

    /// The status of the receive completion of a SEND_WITH_INV whose
    /// invalidation failed (rxe: class J, `IB_WC_REM_INV_REQ_ERR`).
    pub const fn remote_wc_status(self) -> WcStatus {
        WcStatus::RemInvReqErr
    }

    /// The status for an invalidation by `by`.
    pub const fn wc_status(self, by: Invalidation) -> WcStatus {
        match by {
            Invalidation::Local => self.local_wc_status(),
            Invalidation::Remote => self.remote_wc_status(),
        }
    }
}

/// The log2 of a fast registration's page size, if the device supports it
/// (a power of two inside `page_size_cap`).
pub fn fast_reg_page_shift(page_size: u64) -> Result<u32, FastRegError> {
    if !page_size.is_power_of_two() {
        return Err(FastRegError::BadMapping);
    }
    let shift = page_size.trailing_zeros();
    if !(FAST_REG_PAGE_SHIFT_MIN..=FAST_REG_PAGE_SHIFT_MAX).contains(&shift) {
        return Err(FastRegError::BadMapping);
    }
    Ok(shift)
}

/// How a fast-registration region's addresses map onto its page list: the
/// region is `[iova, iova + length)`; page `i` of the list holds the
/// addresses from `(iova & !(page_size - 1)) + i * page_size` on, so the
/// first byte sits `iova % page_size` into page 0 (`map_mr_sg` gives the
/// pages, page size and length; REG_MR the iova).
///
/// # Invariants
///
/// `page_shift` is within the device's page sizes, `iova + length` does
/// not overflow, and `first_page_offset() + length <= pages << page_shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMap {
    page_shift: u32,
    iova: u64,
    length: u64,
    pages: usize,
}

impl PageMap {
    /// A map of no bytes (a region never mapped).
    pub const EMPTY: PageMap = PageMap {
        page_shift: FAST_REG_PAGE_SHIFT_MIN,
        iova: 0,
        length: 0,
        pages: 0,
    };

    /// A map of `pages` pages of `1 << page_shift` bytes holding
    /// `[iova, iova + length)`, if they do hold it.
    pub fn new(
        page_shift: u32,
        iova: u64,
        length: u64,
        pages: usize,
    ) -> Result<Self, FastRegError> {
        if !(FAST_REG_PAGE_SHIFT_MIN..=FAST_REG_PAGE_SHIFT_MAX).contains(&page_shift)
            || pages > MAX_FAST_REG_PAGES as usize
        {
            return Err(FastRegError::BadMapping);
        }
        iova.checked_add(length).ok_or(FastRegError::BadMapping)?;
        let first = iova & ((1u64 << page_shift) - 1);
        // pages <= 512 and page_shift <= 31: no overflow.
        let capacity = (pages as u64) << page_shift;
        if first + length > capacity {
            return Err(FastRegError::BadMapping);
        }
        Ok(PageMap {
            page_shift,
            iova,
            length,
            pages,
        })
    }

    /// log2 of the page size.
    pub const fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// First address of the region.
    pub const fn iova(&self) -> u64 {
        self.iova
    }

    /// Length of the region in bytes.
    pub const fn length(&self) -> u64 {
        self.length
    }

    /// Number of pages in the list.
    pub const fn pages(&self) -> usize {
        self.pages
    }

    /// Offset of the region's first byte in page 0.
    pub const fn first_page_offset(&self) -> u64 {
        self.iova & ((1u64 << self.page_shift) - 1)
    }

    /// The same pages and length at another iova (REG_MR's `mr->iova`,
    /// which a ULP may change after mapping: rpcrdma puts its XID in the
    /// upper 32 bits), if the pages still hold the range.
    pub fn at_iova(&self, iova: u64) -> Result<Self, FastRegError> {
        PageMap::new(self.page_shift, iova, self.length, self.pages)
    }

    /// The valid addresses.
    pub const fn extent(&self) -> Extent {
        Extent::Range {
            iova: self.iova,
            length: self.length,
        }
    }

    /// The per-page pieces of the region bytes `[offset, offset + len)`
    /// (`offset` from [`FastReg::check`], so inside the region). Every
    /// chunk's page is below [`PageMap::pages`].
    pub fn chunks(&self, offset: u64, len: u64) -> PageChunks {
        PageChunks::new(self.first_page_offset(), offset, len, self.page_shift)
    }
}

/// What the key table knows of a fast-registration region: its state, its
/// current key (lkey = rkey, index fixed, consumer key byte set by
/// REG_MR), protection domain, access and page map. Each operation checks
/// what rxe's `rxe_reg_fast_mr`, `rxe_invalidate_mr` and `lookup_mr` check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastReg {
    state: MrState,
    key: MemKey,
    pd: usize,
    access: u32,
    map: PageMap,
}

impl FastReg {
    /// A region just allocated (`alloc_mr`) with key `key` in `pd`: Free,
    /// nothing mapped.
    pub const fn new(key: MemKey, pd: usize) -> Self {
        FastReg {
            state: MrState::Free,
            key,
            pd,
            access: 0,
            map: PageMap::EMPTY,
        }
    }

    /// The state.
    pub const fn state(&self) -> MrState {
        self.state
    }

    /// The current key (lkey and rkey).
    pub const fn key(&self) -> MemKey {
        self.key
    }

    /// The page map of the registration.
    pub const fn map(&self) -> &PageMap {
        &self.map
    }

    /// The access flags of the registration.
    pub const fn access(&self) -> u32 {
        self.access
    }

    /// REG_MR from a QP in `qp_pd`: gives the region the key `key` (same
    /// index, new consumer key byte), the access `access` and the page map
    /// `map`, and makes it Valid. The region must be Free.
    pub fn register(
        &mut self,
        qp_pd: usize,
        key: u32,
        access: u32,
        map: PageMap,
    ) -> Result<(), FastRegError> {
        match self.state {
            MrState::Free => {}
            MrState::Valid => return Err(FastRegError::NotFree),
            MrState::Invalid => return Err(FastRegError::Deallocated),
        }
        if qp_pd != self.pd {
            return Err(FastRegError::WrongPd);
        }
        let key = MemKey(key);
        if key.index() != self.key.index() {
            return Err(FastRegError::WrongIndex);
        }
        let access = check_registration_access(access).map_err(FastRegError::Access)?;
        self.key = key;
        self.access = access;
        self.map = map;
        self.state = MrState::Valid;
        Ok(())
    }

    /// LOCAL_INV or remote invalidation of `key` from a QP in `qp_pd`:
    /// makes the region Free (from Valid, or again from Free, as rxe).
    /// The key must be the current one, consumer byte included.
    pub fn invalidate(&mut self, qp_pd: usize, key: u32) -> Result<(), FastRegError> {
        let key = MemKey(key);
        if key.index() != self.key.index() {
            return Err(FastRegError::UnknownKey);
        }
        if self.state == MrState::Invalid {
            return Err(FastRegError::Deallocated);
        }
        if key != self.key {
            return Err(FastRegError::StaleKey);
        }
        if qp_pd != self.pd {
            return Err(FastRegError::WrongPd);
        }
        self.state = MrState::Free;
        Ok(())
    }

    /// Deallocation (`dereg_mr`): the region becomes Invalid for good.
    pub fn deallocate(&mut self) {
        self.state = MrState::Invalid;
    }

    /// Whether `key`, used as `key_use` from `pd`, may access
    /// `[va, va + len)` with `need`: [`RegionKeys::check`] on a Valid
    /// region, [`AccessError::NotValid`] otherwise. Returns the offset of
    /// `va` in the region (for [`PageMap::chunks`]).
    pub fn check(
        &self,
        key: MemKey,
        key_use: KeyUse,
        pd: usize,
        need: u32,
        va: u64,
        len: u64,
    ) -> Result<u64, AccessError> {
        if key.index() != self.key.index() {
            return Err(AccessError::UnknownKey);
        }
        if self.state != MrState::Valid {
            return Err(AccessError::NotValid);
        }
        RegionKeys {
            lkey: self.key,
            rkey: self.key,
            pd: self.pd,
            access: self.access,
            extent: self.map.extent(),
        }
        .check(key, key_use, pd, need, va, len)
    }
}
