// SPDX-License-Identifier: GPL-2.0

//! A kernel timer (`timer_list`) embedded in a pinned object, whose
//! callback runs in softirq context and finds its object by `container_of`.

use super::bindings;
use kernel::{prelude::*, types::Opaque};

/// The function a [`Timer`] calls, with the `timer_list` that fired.
pub(crate) type TimerFn = unsafe extern "C" fn(timer: *mut bindings::timer_list);

/// A `timer_list`.
///
/// # Invariants
///
/// Set up by [`Timer::new`]; shut down (synchronously) before its memory
/// goes away, by [`Timer::shutdown`] or on drop.
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct Timer {
    #[pin]
    inner: Opaque<bindings::timer_list>,
}

// SAFETY: The timer core serialises arming, cancelling and the callback.
unsafe impl Send for Timer {}
// SAFETY: As above.
unsafe impl Sync for Timer {}

impl Timer {
    /// A timer that calls `f`, not armed.
    pub(crate) fn new(f: TimerFn) -> impl PinInit<Self> {
        pin_init!(Timer {
            // SAFETY: `slot` is valid memory for a timer_list that is never
            // moved (pinned) and is set up exactly once here.
            inner <- Opaque::ffi_init(move |slot| unsafe { bindings::rxe_glue_timer_setup(slot, Some(f)) }),
        })
    }

    /// The raw `timer_list` (the callback's argument identifies the timer).
    pub(crate) fn as_ptr(&self) -> *mut bindings::timer_list {
        self.inner.get()
    }

    /// Arms (or re-arms) the timer to fire in `usecs` microseconds.
    pub(crate) fn arm_usecs(&self, usecs: u32) {
        // SAFETY: Set up by the type invariant; re-arming is allowed in any
        // context. After `shutdown` this is a no-op.
        unsafe { bindings::rxe_glue_timer_arm_usecs(self.as_ptr(), usecs) };
    }

    /// Disarms the timer (without waiting for a running callback).
    pub(crate) fn cancel(&self) {
        // SAFETY: Set up by the type invariant.
        unsafe { bindings::rxe_glue_timer_cancel(self.as_ptr()) };
    }

    /// Disarms the timer for good and waits for a running callback. Process
    /// context; the caller must not hold a lock the callback takes.
    pub(crate) fn shutdown(&self) {
        // SAFETY: Set up by the type invariant; shutting down twice is fine.
        unsafe { bindings::rxe_glue_timer_shutdown(self.as_ptr()) };
    }
}

#[pinned_drop]
impl PinnedDrop for Timer {
    fn drop(self: Pin<&mut Self>) {
        self.shutdown();
    }
}
