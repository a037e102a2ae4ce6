// SPDX-License-Identifier: GPL-2.0

//! Per-device index tables (rxe's pools): an xarray from a number (a key
//! index, a QP number) to a live driver object, and the counted uses that
//! keep a found object alive until its destroy verb has waited for them.
//!
//! Insertion is two steps: reserve a number (objects are built from it),
//! then publish the finished object, so a lookup never sees a half-built
//! one. The data path's lookups (a QP for every received packet, a region
//! for every packet's payload) take no lock: under RCU they load the entry
//! and take a use unless its last one is gone, as rxe's pools do. Removal
//! unpublishes first, then the owner drops the table's use, waits for the
//! uses in flight and for a grace period ([`UseCount::drain`]), after which
//! no lookup still reads the object and it may be freed.

use super::bindings;
use core::{cell::UnsafeCell, marker::PhantomData, ptr::NonNull};
use kernel::{
    prelude::*,
    sync::{Completion, Refcount},
    types::Opaque,
};

/// Uses of a table object: one for the table while the object is in it,
/// one per live [`TableRef`].
///
/// # Invariants
///
/// `drained` is completed once, when `users` drops to zero.
#[pin_data]
pub(crate) struct UseCount {
    users: Refcount,
    #[pin]
    drained: Completion,
}

impl UseCount {
    /// A count holding the table's use.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(UseCount {
            users: Refcount::new(1),
            drained <- Completion::new(),
        })
    }

    /// Takes a use unless the last one is gone (the object is being
    /// destroyed: its drain may have returned already).
    fn try_get(&self) -> bool {
        // SAFETY: `Refcount` wraps a `refcount_t`, the atomic it exposes is
        // that `refcount_t`'s, valid while `self` is.
        unsafe { bindings::rxe_glue_refcount_inc_not_zero(self.users.as_atomic().as_ptr().cast()) }
    }

    /// Takes another use of an object that holds one already.
    fn get(&self) {
        self.users.inc();
    }

    fn put(&self) {
        if self.users.dec_and_test() {
            self.drained.complete_all();
        }
    }

    /// Drops the table's use and waits until every other use is gone, and
    /// for a grace period since: a lookup that found the object before its
    /// removal may still be reading its count (to find it zero). Called
    /// once, after the object was removed from its table (or was never
    /// published), in process context; afterwards the object may be freed.
    pub(crate) fn drain(&self) {
        // SAFETY: No requirements.
        let removed = unsafe { bindings::rxe_glue_rcu_gp_cookie() };
        self.put();
        self.drained.wait_for_completion();
        // SAFETY: Process context (we just waited for a completion); the
        // cookie came from `rxe_glue_rcu_gp_cookie`. Returns at once if a
        // grace period passed while the uses drained.
        unsafe { bindings::rxe_glue_rcu_gp_wait(removed) };
    }

    /// Drops the table's use of an object that no data path ever holds
    /// (one read only under the table's lock, [`IndexTable::read`], never
    /// found by [`IndexTable::lookup`]): there is nothing to wait for, so
    /// this never sleeps.
    pub(crate) fn drop_unheld(&self) {
        self.put();
    }
}

/// An object that lives in an [`IndexTable`].
pub(crate) trait Counted {
    /// The object's use count.
    fn uses(&self) -> &UseCount;
}

/// A table of `T`s by number.
///
/// # Invariants
///
/// `xa` was initialised by [`IndexTable::init`] with `XA_FLAGS_ALLOC`.
/// Every non-null entry points to a live `T` whose use count includes one
/// for the table; entries are removed before the object is freed, and an
/// object that [`IndexTable::lookup`] may find is freed only after the
/// grace period [`UseCount::drain`] waits for. `next`
/// is only touched by `xa_alloc_cyclic` under the xarray's lock.
pub(crate) struct IndexTable<T> {
    xa: Opaque<bindings::xarray>,
    next: UnsafeCell<u32>,
    _objects: PhantomData<*const T>,
}

// SAFETY: All access goes through the xarray's lock; the objects are
// shared between contexts only through `TableRef`, which needs `T: Sync`.
unsafe impl<T: Sync> Send for IndexTable<T> {}
// SAFETY: As above.
unsafe impl<T: Sync> Sync for IndexTable<T> {}

impl<T: Counted> IndexTable<T> {
    /// Initialises the table in place.
    ///
    /// # Safety
    ///
    /// Called once, before any other method, on a table that will not move
    /// until [`IndexTable::destroy`].
    pub(crate) unsafe fn init(&self) {
        // SAFETY: Not yet initialised and not moving, by the caller's promise.
        unsafe { bindings::rxe_glue_xa_init_alloc(self.xa.get()) };
    }

    /// Reserves a free number in `[min, max]`, after the last one handed
    /// out (wrapping). A full range is `ENOMEM`. May sleep.
    pub(crate) fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        self.reserve_in(min, max, false)
    }

    /// [`IndexTable::reserve`] for a caller that may not sleep (perhaps
    /// with interrupts off): allocates with `GFP_ATOMIC`.
    pub(crate) fn reserve_atomic(&self, min: u32, max: u32) -> Result<u32> {
        self.reserve_in(min, max, true)
    }

    fn reserve_in(&self, min: u32, max: u32, atomic: bool) -> Result<u32> {
        let mut id = 0u32;
        // SAFETY: Initialised table (invariant); `next` is only used under
        // the lock the call takes.
        let ret = unsafe {
            bindings::rxe_glue_xa_reserve_cyclic(
                self.xa.get(),
                &mut id,
                min,
                max,
                self.next.get(),
                atomic,
            )
        };
        match ret {
            0 | 1 => Ok(id),
            e if e == EBUSY.to_errno() => Err(ENOMEM),
            e => Err(Error::from_errno(e)),
        }
    }

    /// Gives back a number that [`IndexTable::reserve`] returned and that
    /// was never published.
    pub(crate) fn unreserve(&self, index: u32) {
        // SAFETY: Initialised table; erasing a reserved slot frees it.
        unsafe { bindings::rxe_glue_xa_erase(self.xa.get(), index as usize) };
    }

    /// Makes `obj` findable at `index`, a reserved number.
    ///
    /// # Safety
    ///
    /// `obj` does not move and stays alive until [`IndexTable::remove`] of
    /// `index` has returned and its uses have drained.
    pub(crate) unsafe fn publish(&self, index: u32, obj: &T) -> Result {
        let entry = core::ptr::from_ref(obj).cast_mut().cast();
        // SAFETY: Initialised table; the slot is reserved, so the store
        // does not allocate.
        kernel::error::to_result(unsafe {
            bindings::rxe_glue_xa_publish(self.xa.get(), index as usize, entry)
        })
    }

    /// Removes the object at `index`; afterwards no lookup finds it.
    /// Returns whether there was one.
    pub(crate) fn remove(&self, index: u32) -> bool {
        // SAFETY: Initialised table.
        !unsafe { bindings::rxe_glue_xa_erase(self.xa.get(), index as usize) }.is_null()
    }

    /// Finds the object at `index` and takes a use of it; `None` also for
    /// an object whose removal has dropped its last use. Takes no lock:
    /// any context, with or without interrupts disabled.
    pub(crate) fn lookup(&self, index: u32) -> Option<TableRef<T>> {
        let _rcu = kernel::sync::rcu::read_lock();
        // SAFETY: Initialised table; `xa_load` may run under RCU alone.
        let entry = unsafe { bindings::xa_load(self.xa.get(), index as usize) }.cast::<T>();
        let obj = NonNull::new(entry)?;
        // SAFETY: An entry published and found under RCU is not freed
        // before a grace period after its removal (`UseCount::drain`), so
        // it is readable until `_rcu` is dropped.
        if !unsafe { obj.as_ref() }.uses().try_get() {
            return None;
        }
        // INVARIANT: We took a use of the live object.
        Some(TableRef { obj })
    }

    /// The first object at `index` or after, with its number, and a use
    /// of it (to walk the table: `next_from(found + 1)`).
    pub(crate) fn next_from(&self, index: u32) -> Option<(u32, TableRef<T>)> {
        let mut at = index as usize;
        // SAFETY: Initialised table. Under the lock no entry can be
        // removed, so a found object is live and holds the table's use
        // while we add ours.
        unsafe {
            let flags = bindings::rxe_glue_xa_lock_irqsave(self.xa.get());
            let entry = bindings::rxe_glue_xa_find_from(self.xa.get(), &mut at).cast::<T>();
            let found = NonNull::new(entry).map(|obj| {
                obj.as_ref().uses().get();
                TableRef { obj }
            });
            bindings::rxe_glue_xa_unlock_irqrestore(self.xa.get(), flags);
            found.and_then(|r| Some((u32::try_from(at).ok()?, r)))
        }
    }

    /// Runs `f` on the object at `index` under the table's lock, without
    /// taking a use: for objects whose removal must not wait (an AH, which
    /// a kernel caller may destroy with interrupts off). `f` must be short
    /// and must not sleep or take a table lock. Any context but hardirq.
    pub(crate) fn read<R>(&self, index: u32, f: impl FnOnce(&T) -> R) -> Option<R> {
        // SAFETY: Initialised table. Under the lock no entry can be
        // removed, so a found object is live until the unlock.
        unsafe {
            let flags = bindings::rxe_glue_xa_lock_irqsave(self.xa.get());
            let entry = bindings::xa_load(self.xa.get(), index as usize).cast::<T>();
            let result = NonNull::new(entry).map(|obj| f(obj.as_ref()));
            bindings::rxe_glue_xa_unlock_irqrestore(self.xa.get(), flags);
            result
        }
    }

    /// Frees the table's internal nodes.
    ///
    /// # Safety
    ///
    /// Called once, when the table is empty and no method runs or will
    /// run any more.
    pub(crate) unsafe fn destroy(&self) {
        // SAFETY: By the caller's promise.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}

/// A counted use of a table object, held by the data path while it works
/// on the object; the object's destroy verb waits for all of them.
///
/// # Invariants
///
/// `obj` is live and its use count includes this reference.
pub(crate) struct TableRef<T: Counted> {
    obj: NonNull<T>,
}

impl<T: Counted> core::ops::Deref for TableRef<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: Live while we hold a use (invariant).
        unsafe { self.obj.as_ref() }
    }
}

impl<T: Counted> Drop for TableRef<T> {
    fn drop(&mut self) {
        // SAFETY: Live while we hold a use; dropping the use may complete
        // the drain, after which this reference never touches it again.
        unsafe { self.obj.as_ref() }.uses().put();
    }
}
