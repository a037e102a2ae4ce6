// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`alloc_mw`, `dealloc_mw`, `IB_WR_BIND_MW`, their
//! invalidation and the data path's accesses through a window's rkey):
//! where windows are stored and how they reach the region they are bound
//! to. Every decision is [`crate::proto::window`]'s.
//!
//! ib_core allocates a window (`size_ib_mw`) with its `ib_mw` first and
//! frees it after `dealloc_mw`. The device's window table holds one use of
//! it and the data path takes more; `dealloc_mw` unpublishes it, waits
//! for the last use, then releases the region it was bound to. A region
//! keeps a count of the windows bound to it and refuses deregistration
//! while it is not zero, as rxe does; [`BIND_LOCK`] makes the count and the
//! region's presence in the key table change together.

use crate::{
    device::RxeDevice,
    driver::Rxe,
    ib::{self, mw::MwType, IbMw},
    mr::{MrMemory, RxeMr},
    params,
    proto::{
        access::{AccessError, Extent, KeyUse, MemKey},
        window::{
            BindError, BindRequest, BindTarget, BindingChange, Window, WindowType, WindowUser,
            MW_INDEX_MAX, MW_INDEX_MIN,
        },
    },
    sys::{
        bindings, random_u8,
        table::{Counted, TableRef, UseCount},
        work::with_bh_off,
    },
    verbs,
};
use core::sync::atomic::Ordering;
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init before first use.
    unsafe(uninit) static BIND_LOCK: SpinLock<()> = ();
}

/// Prepares the window code.
///
/// # Safety
///
/// Called once, from module init, before any device exists.
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { BIND_LOCK.init() };
}

/// A memory window.
///
/// # Invariants
///
/// `body` is initialised in place by `alloc_mw` and dropped by
/// `dealloc_mw` (both in `sys::mw`).
#[repr(C)]
#[pin_data]
pub(crate) struct RxeMw {
    /// The ib_core object; must stay the first field.
    pub(crate) ibmw: IbMw,
    /// The driver's part.
    #[pin]
    pub(crate) body: MwBody,
}

/// The driver's part of a window.
#[pin_data]
pub(crate) struct MwBody {
    /// Index in the device's window table (the rkey's upper 24 bits).
    index: u32,
    /// Key, state and binding. Bound from the send path (bottom halves
    /// off), checked from the receive softirq.
    #[pin]
    window: SpinLockIrq<Window>,
    /// The window table's use and the data path's.
    #[pin]
    uses: UseCount,
}

impl Counted for RxeMw {
    fn uses(&self) -> &UseCount {
        &self.body.uses
    }
}

/// `alloc_mw`: a window of `kind` for protection domain `pd`. Returns its
/// index, its first rkey and the initialiser of its body.
pub(crate) fn create(
    rxe: &RxeDevice,
    pd: usize,
    kind: WindowType,
) -> Result<(u32, MemKey, impl PinInit<MwBody>)> {
    verbs::take_budget(&rxe.mw_count, params::MAX_MW)?;
    let index = match rxe.windows.reserve(MW_INDEX_MIN, MW_INDEX_MAX) {
        Ok(i) => i,
        Err(e) => {
            verbs::return_budget(&rxe.mw_count);
            return Err(e);
        }
    };
    let rkey = MemKey::new(index, random_u8());
    let body = pin_init!(MwBody {
        index,
        window <- new_spinlock_irq!(Window::new(kind, rkey, pd), "MwBody::window"),
        uses <- UseCount::new(),
    });
    Ok((index, rkey, body))
}

/// Publishes a created window in the device's window table.
pub(crate) fn publish(rxe: &RxeDevice, mw: &RxeMw) -> Result {
    // SAFETY: ib_core never moves a window and frees it only after
    // `dealloc_mw`, which removes it from the table and drains its uses.
    unsafe { rxe.windows.publish(mw.body.index, mw) }
}

/// Gives back what [`create`] took when a later step failed.
pub(crate) fn abandon(rxe: &RxeDevice, index: u32) {
    rxe.windows.unreserve(index);
    verbs::return_budget(&rxe.mw_count);
}

/// `dealloc_mw`: unpublishes the window, waits for its last use, and
/// releases the region it was bound to.
pub(crate) fn destroy(rxe: &RxeDevice, mw: &RxeMw) {
    rxe.windows.remove(mw.body.index);
    mw.body.uses.drain();
    let change = mw.body.window.lock().deallocate();
    release(rxe, change);
    verbs::return_budget(&rxe.mw_count);
}

/// Forgets a region binding a window gave up: the region's count of bound
/// windows drops, if the region is still the one the window named.
fn release(rxe: &RxeDevice, change: BindingChange) {
    let Some(lkey) = change.released else {
        return;
    };
    if let Some(mr) = rxe.keys.lookup(lkey.index()) {
        if mr.lkey() == lkey {
            mr.windows.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// What a bind sees of region `mr`: user regions (pinned or on demand)
/// carry windows; a DMA or
/// fast-registration region has no fixed range to bind inside.
fn bind_target(mr: &RxeMr) -> BindTarget {
    let keys = mr.keys();
    let extent = match mr.memory {
        MrMemory::User { .. } | MrMemory::Odp(_) => keys.extent,
        MrMemory::Dma | MrMemory::Fast(_) => Extent::Whole,
    };
    BindTarget {
        lkey: keys.lkey,
        pd: keys.pd,
        access: keys.access,
        extent,
    }
}

/// IB_WR_BIND_MW, executed in send-queue order by the QP `user`.
pub(crate) fn bind(rxe: &RxeDevice, user: WindowUser, req: &BindRequest) -> Result<(), BindError> {
    let mw = rxe
        .windows
        .lookup(MemKey(req.mw_rkey).index())
        .ok_or(BindError::StaleKey)?;
    with_bh_off(|_| {
        let _bind = BIND_LOCK.lock();
        let mr = if req.length != 0 {
            rxe.keys.lookup(MemKey(req.mr_lkey).index())
        } else {
            None
        };
        let target = mr.as_deref().map(bind_target);
        let change = mw.body.window.lock().bind(user, req, target.as_ref())?;
        if let (Some(mr), Some(_)) = (&mr, change.bound) {
            mr.windows.fetch_add(1, Ordering::Relaxed);
        }
        release(rxe, change);
        Ok(())
    })
}

/// LOCAL_INV, or a peer's SEND_WITH_INV, of window key `key` by the QP
/// `user`.
pub(crate) fn invalidate(rxe: &RxeDevice, user: WindowUser, key: u32) -> Result<(), AccessError> {
    let key = MemKey(key);
    let mw = rxe
        .windows
        .lookup(key.index())
        .ok_or(AccessError::UnknownKey)?;
    let change = mw.body.window.lock().invalidate(key, user)?;
    release(rxe, change);
    Ok(())
}

/// The QP `user` is being destroyed: the type 2 windows bound to it
/// return to Free (rxe instead keeps the QP alive from the window, and
/// frees it under the window when the QP is destroyed first).
pub(crate) fn qp_destroyed(rxe: &RxeDevice, user: WindowUser) {
    let mut at = MW_INDEX_MIN;
    while let Some((index, mw)) = rxe.windows.next_from(at) {
        let change = mw.body.window.lock().qp_destroyed(user);
        if let Some(change) = change {
            release(rxe, change);
        }
        match index.checked_add(1) {
            Some(next) => at = next,
            None => break,
        }
    }
}

/// Whether region `mr` may be deregistered: not while windows are bound
/// to it (rxe: `EINVAL`). With `Ok`, the region has left the key table, so
/// no bind can find it any more.
pub(crate) fn unpublish_region(rxe: &RxeDevice, mr: &RxeMr) -> Result {
    with_bh_off(|_| {
        let _bind = BIND_LOCK.lock();
        if mr.windows.load(Ordering::Relaxed) != 0 {
            return Err(EINVAL);
        }
        rxe.keys.remove(mr.lkey().index());
        Ok(())
    })
}

/// Resolves a peer's access through window key `key` on the QP `user`:
/// the window's checks, then the region it is bound to. Returns the
/// region and the offset in it where `[va, va + len)` starts.
pub(crate) fn resolve(
    rxe: &RxeDevice,
    key: MemKey,
    user: WindowUser,
    need: u32,
    va: u64,
    len: u64,
) -> Result<(TableRef<RxeMr>, u64), AccessError> {
    let mw = rxe
        .windows
        .lookup(key.index())
        .ok_or(AccessError::UnknownKey)?;
    let (lkey, at) = mw.body.window.lock().check(key, user, need, va, len)?;
    let mr = rxe
        .keys
        .lookup(lkey.index())
        .ok_or(AccessError::UnknownKey)?;
    if !matches!(mr.memory, MrMemory::User { .. } | MrMemory::Odp(_)) {
        return Err(AccessError::NotValid);
    }
    // The window granted `need`; the region's own check is of its key, PD
    // and range only.
    let off = mr.keys().check(lkey, KeyUse::Local, user.pd, 0, at, len)?;
    Ok((mr, off))
}

crate::impl_ib_object!(RxeMw, ibmw: bindings::ib_mw, body: MwBody);

impl ib::MwOps<Rxe> for RxeMw {
    fn create(dev: &RxeDevice, pd: usize, kind: MwType) -> Result<(u32, impl PinInit<MwBody>)> {
        let kind = match kind {
            MwType::One => WindowType::One,
            MwType::Two => WindowType::Two,
        };
        let (_index, rkey, body) = create(dev, pd, kind)?;
        Ok((rkey.0, body))
    }

    fn publish(dev: &RxeDevice, mw: &Self) -> Result {
        publish(dev, mw).inspect_err(|_| abandon(dev, mw.body.index))
    }

    fn destroy(dev: &RxeDevice, mw: &Self) {
        destroy(dev, mw);
    }
}
