// SPDX-License-Identifier: GPL-2.0

//! [`DeviceBox`]: a heap object one device owns from its creation to its
//! release, in driver memory that ib_core allocates zeroed and frees without
//! running Rust destructors; [`Owner`]: a way back from such an object
//! to the object that owns it.

use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

/// An optional pinned heap object, set while the device is created and
/// dropped by [`DeviceBox::release`].
///
/// # Invariants
///
/// The pointer is null or comes from [`KBox::into_raw`] of a pinned box
/// that only [`DeviceBox::release`] turns back into a box.
pub(crate) struct DeviceBox<T>(AtomicPtr<T>);

impl<T> DeviceBox<T> {
    /// Stores `object`; an object stored before is dropped. `&mut self`:
    /// the device is not shared yet.
    pub(crate) fn set(&mut self, object: Pin<KBox<T>>) {
        // SAFETY: The box is only turned back into a pinned box (in
        // `release`), never moved out of.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(object) });
        let old = self.0.swap(raw, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: By the type invariant, and we have exclusive access.
            drop(unsafe { Pin::new_unchecked(KBox::from_raw(old)) });
        }
    }

    /// The object, if one was stored.
    pub(crate) fn get(&self) -> Option<Pin<&T>> {
        let raw = self.0.load(Ordering::Acquire);
        // SAFETY: By the type invariant a non-null pointer is a live pinned
        // box, which stays until `release`, whose contract says no borrow
        // from `get` is left by then.
        (!raw.is_null()).then(|| unsafe { Pin::new_unchecked(&*raw) })
    }

    /// Drops the object.
    ///
    /// # Safety
    ///
    /// Nothing uses a reference [`DeviceBox::get`] returned any more, and
    /// nothing calls `get` again (the device is being freed).
    pub(crate) unsafe fn release(&self) {
        let raw = self.0.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !raw.is_null() {
            // SAFETY: By the type invariant; no borrow is left (our contract).
            drop(unsafe { Pin::new_unchecked(KBox::from_raw(raw)) });
        }
    }
}

/// The object (a device) that owns the object holding this (through a
/// [`DeviceBox`]), for that object's callbacks.
///
/// # Invariants
///
/// Points to the owner, which outlives the holder.
pub(crate) struct Owner<T: Sync>(NonNull<T>);

// SAFETY: The owner is shared between contexts anyway (`T: Sync`).
unsafe impl<T: Sync> Send for Owner<T> {}
// SAFETY: As above.
unsafe impl<T: Sync> Sync for Owner<T> {}

impl<T: Sync> Owner<T> {
    /// A way back to `owner`.
    ///
    /// # Safety
    ///
    /// The holder of the result is owned by `owner` and dropped before it.
    pub(crate) unsafe fn new(owner: &T) -> Self {
        // INVARIANT: The caller promises the owner outlives us.
        Owner(NonNull::from(owner))
    }

    /// The owner.
    pub(crate) fn get(&self) -> &T {
        // SAFETY: By the type invariant the owner is live.
        unsafe { self.0.as_ref() }
    }
}
