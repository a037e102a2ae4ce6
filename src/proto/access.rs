// SPDX-License-Identifier: GPL-2.0

//! Memory keys and the key table's checks (seed: "Key Table; Permission and
//! Bounds Violations"): what a registration may ask for, how an lkey or rkey
//! names a region, and whether a given key, PD, access and address range may
//! touch it. The table's storage and the pages behind a region live in the
//! kernel layer; every decision is made here.
//!
//! Keys are laid out as rxe lays them out (design §5): `index << 8 | key8`,
//! MR indices in `1..=MR_INDEX_MAX`, MW indices above. `key8` is the
//! "consumer key" byte that fast registration may change.

use crate::abi::values::access;

/// Highest MR index (rxe's `RXE_MAX_MR_INDEX`, `(1 << 20) >> 1`); lkey =
/// rkey = index << 8 | key8. (Design §5 says 0x7FFFF; `rxe_param.h` of the
/// 7.3 tree says 0x80000, and that is what a peer's keys look like.)
pub const MR_INDEX_MAX: u32 = 0x8_0000;
/// Lowest memory-window index (rxe's `RXE_MIN_MW_INDEX`).
pub const MW_INDEX_MIN: u32 = MR_INDEX_MAX + 1;

/// Access bits a memory region may be registered with (rxe's
/// `RXE_ACCESS_SUPPORTED_MR`). ON_DEMAND is part of rxe's set but this driver
/// does not implement ODP and does not advertise it, so it is refused.
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
