// SPDX-License-Identifier: GPL-2.0

//! [`SpinLockBh`]: a `spinlock_t` taken with `spin_lock_bh()`, for state the
//! softirq receive path and timers share with process context.
//!
//! The `kernel` crate offers plain and IRQ-disabling spin locks. A QP's
//! state needs neither: no hard-IRQ path touches it, and while it is held
//! the transmit path routes packets, which may enable bottom halves again
//! (`ip_route_output` takes `_bh` locks), something that warns with IRQs
//! off. Disabling bottom halves is exactly the exclusion needed.

use super::bindings;
use kernel::sync::lock::{Backend, Lock};

/// A spin lock that disables bottom halves while held.
pub(crate) type SpinLockBh<T> = Lock<T, SpinLockBhBackend>;

/// Creates a [`SpinLockBh`] initialiser with a new lock class.
#[macro_export]
macro_rules! new_spinlock_bh {
    ($inner:expr, $name:literal $(,)?) => {
        $crate::sys::lock::SpinLockBh::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}

/// The `spin_lock_bh` backend of [`SpinLockBh`].
pub(crate) struct SpinLockBhBackend;

// SAFETY: `spin_lock_bh` gives mutual exclusion like `spin_lock` (and
// keeps softirqs off the local CPU while held); `relock` uses the default,
// which takes the lock the same way.
unsafe impl Backend for SpinLockBhBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for writes and
        // `name` and `key` valid for reads indefinitely.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees `ptr` is an initialised lock; the
        // C type is the same `spinlock_t` under another binding.
        unsafe { bindings::rxe_glue_spin_lock_bh(ptr.cast()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken by `lock` above.
        unsafe { bindings::rxe_glue_spin_unlock_bh(ptr.cast()) }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: The caller guarantees `ptr` is an initialised lock.
        let taken = unsafe { bindings::rxe_glue_spin_trylock_bh(ptr.cast()) };
        (taken != 0).then_some(())
    }

    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees `ptr` is an initialised lock.
        unsafe { kernel::bindings::spin_assert_is_held(ptr) }
    }
}
