// SPDX-License-Identifier: GPL-2.0

//! A kernel timer (`timer_list`) embedded in a pinned object, whose
//! expiry runs in softirq context and is handed to the object that holds
//! it ([`TimerHandler`]), found at the offset [`HasTimer`] names.
//!
//! The `kernel` crate of 7.3 has `hrtimer` only; rxe's requester timers
//! are `timer_list`s (jiffies resolution, as the C driver's), so this
//! module keeps a local wrapper in the style of `kernel::time::hrtimer`'s
//! `HasHrTimer`.

use super::bindings;
use kernel::{prelude::*, types::Opaque};

/// An object that holds a [`Timer`] (one per `ID`).
///
/// # Safety
///
/// `OFFSET` is the byte offset of a [`Timer`] field inside `Self`, and
/// every `Self` whose timer runs lives (pinned) until that timer is shut
/// down. Use [`impl_has_timer!`](crate::impl_has_timer) to implement it.
pub(crate) unsafe trait HasTimer<const ID: u64 = 0>: Sized {
    /// Offset of the timer inside `Self`.
    const OFFSET: usize;
}

/// What an object does when its timer `ID` expires (softirq context).
pub(crate) trait TimerHandler<const ID: u64 = 0>: HasTimer<ID> + Sync {
    /// The timer expired; `bh` proves softirq context.
    fn expired(&self, bh: &super::work::BhOff);
}

/// Implements [`HasTimer`] for a type and a (possibly nested) timer field.
#[macro_export]
macro_rules! impl_has_timer {
    ($ty:ty, $id:expr, $($field:tt).+) => {
        // SAFETY: The offset is that of the named `Timer` field, checked by
        // the type of the `let` below; a `Timer` shuts itself down before
        // its memory goes (its invariant), so the holder outlives expiry.
        unsafe impl $crate::sys::timer::HasTimer<{ $id }> for $ty {
            const OFFSET: usize = {
                fn _check(t: &$ty) -> &$crate::sys::timer::Timer {
                    &t.$($field).+
                }
                ::core::mem::offset_of!($ty, $($field).+)
            };
        }
    };
}

/// The timer core's callback: hands the expiry to the holder.
///
/// # Safety
///
/// Called by the timer core only, for a timer that [`Timer::new`] set up
/// for `T` (so it is the timer `ID` of a live `T`).
unsafe extern "C" fn expired_callback<T: TimerHandler<ID>, const ID: u64>(
    timer: *mut bindings::timer_list,
) {
    // SAFETY: By our contract the timer sits at `T::OFFSET` in a live `T`
    // (`HasTimer`'s promise), which outlives the callback (the timer is
    // shut down, which waits for us, before its memory goes).
    let holder = unsafe { &*timer.cast::<u8>().sub(T::OFFSET).cast::<T>() };
    // SAFETY: Timer callbacks run in softirq; the proof ends with the call.
    holder.expired(&unsafe { super::work::BhOff::in_softirq() });
}

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
    /// The timer `ID` of a `T`, not armed; its expiry calls
    /// [`TimerHandler::expired`] on the `T` it is in.
    pub(crate) fn new<T: TimerHandler<ID>, const ID: u64>() -> impl PinInit<Self> {
        let f: unsafe extern "C" fn(*mut bindings::timer_list) = expired_callback::<T, ID>;
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
