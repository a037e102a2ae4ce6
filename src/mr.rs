// SPDX-License-Identifier: GPL-2.0

//! Memory regions (design §5): registration of user memory (`reg_user_mr`)
//! and of the kernel's DMA region (`get_dma_mr`), their keys in the
//! device's key table, and deregistration.
//!
//! A region is allocated by the driver (ib_core does not size MRs) and owned
//! by ib_core between registration and `dereg_mr`. The key table holds one
//! use of it; the data path takes more through
//! [`crate::sys::table::IndexTable::lookup`]. Deregistration removes the region
//! from the table first, so no new use can start, then waits until the
//! last use is dropped, and only then unpins the memory. The
//! access decisions themselves are [`crate::proto::access`]'s.

use crate::{
    device::RxeDevice,
    proto::access::{self, AccessError, Extent, MemKey, RegionKeys, MR_INDEX_MAX},
    sys::{
        mr::{random_key8, IbMr, PageList, Umem},
        table::{Counted, UseCount},
    },
    verbs,
};
use kernel::prelude::*;

/// Page size of the page list of a user region.
const PAGE_SHIFT: u32 = kernel::page::PAGE_SHIFT as u32;

/// A memory region.
#[repr(C)]
#[pin_data]
pub(crate) struct RxeMr {
    /// The ib_core object; must stay the first field.
    pub(crate) ibmr: IbMr,
    /// What key lookups check.
    pub(crate) keys: RegionKeys,
    /// The memory behind the region.
    pub(crate) memory: MrMemory,
    /// The key table's use and the data path's.
    #[pin]
    uses: UseCount,
}

impl Counted for RxeMr {
    fn uses(&self) -> &UseCount {
        &self.uses
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
        #[expect(dead_code, reason = "never read: it unpins the pages when dropped")]
        umem: Umem,
    },
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
/// returns it. `memory` is dropped (unpinned) if this fails.
fn register(
    rxe: &RxeDevice,
    pd: usize,
    access: u32,
    extent: Extent,
    memory: MrMemory,
) -> Result<Pin<KBox<RxeMr>>> {
    verbs::take_budget(&rxe.mrs, crate::params::MAX_MR)?;
    let index = match rxe.keys.reserve(1, MR_INDEX_MAX) {
        Ok(index) => index,
        Err(e) => {
            verbs::return_budget(&rxe.mrs);
            return Err(e);
        }
    };
    let key = MemKey::new(index, random_key8());
    let keys = RegionKeys {
        lkey: key,
        rkey: key,
        pd,
        access,
        extent,
    };
    let mr = KBox::pin_init(
        pin_init!(RxeMr {
            ibmr: IbMr::new(key.0, key.0),
            keys,
            memory,
            uses <- UseCount::new(),
        }),
        GFP_KERNEL,
    );
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
    register(rxe, pd, access, Extent::Whole, MrMemory::Dma)
}

/// `reg_user_mr`: pins the user range and registers it.
pub(crate) fn reg_user_mr(
    rxe: &RxeDevice,
    pd: usize,
    req: &UserMrRequest,
) -> Result<Pin<KBox<RxeMr>>> {
    let access = access::check_registration_access(req.access).map_err(registration_error)?;
    if req.length == 0 || req.iova.checked_add(req.length - 1).is_none() {
        return Err(EINVAL);
    }
    let umem = Umem::pin(rxe, req.start, req.length, access)?;
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
    let extent = Extent::Range {
        iova: req.iova,
        length: req.length,
    };
    register(rxe, pd, access, extent, memory)
}

/// `dereg_mr`: unpublishes the region, waits for its last use, then frees
/// it (unpinning user memory).
pub(crate) fn dereg_mr(rxe: &RxeDevice, mr: Pin<KBox<RxeMr>>) {
    rxe.keys.remove(mr.keys.lkey.index());
    mr.uses.drain();
    drop(mr);
    verbs::return_budget(&rxe.mrs);
}
