// SPDX-License-Identifier: GPL-2.0

//! A work item (`work_struct`) embedded in a pinned object, queued on the
//! high-priority BH workqueue of a chosen CPU: its function runs in softirq
//! context on that CPU and finds its object by `container_of`.

use super::bindings;
use kernel::{prelude::*, types::Opaque};

/// The function a [`BhWork`] runs, with the `work_struct` queued.
pub(crate) type WorkFn = unsafe extern "C" fn(work: *mut bindings::work_struct);

/// A `work_struct` for the BH workqueue.
///
/// # Invariants
///
/// Set up by [`BhWork::new`]; disabled (synchronously) before its memory
/// goes away, by [`BhWork::disable`] or on drop.
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct BhWork {
    #[pin]
    inner: Opaque<bindings::work_struct>,
}

// SAFETY: The workqueue core serialises queueing, disabling and running.
unsafe impl Send for BhWork {}
// SAFETY: As above.
unsafe impl Sync for BhWork {}

impl BhWork {
    /// A work item that runs `f`, not queued.
    pub(crate) fn new(f: WorkFn) -> impl PinInit<Self> {
        pin_init!(BhWork {
            // SAFETY: `slot` is valid memory for a work_struct that is never
            // moved (pinned) and is set up exactly once here.
            inner <- Opaque::ffi_init(move |slot| unsafe { bindings::rxe_glue_work_init(slot, Some(f)) }),
        })
    }

    /// The raw `work_struct` (the function's argument identifies it).
    pub(crate) fn as_ptr(&self) -> *mut bindings::work_struct {
        self.inner.get()
    }

    /// Queues the work on `cpu` unless it is queued already (it runs once
    /// more if it is running). Any context but hard IRQ; a no-op once
    /// disabled.
    pub(crate) fn queue_on(&self, cpu: u32) {
        // SAFETY: Set up by the type invariant.
        unsafe { bindings::rxe_glue_bh_work_queue_on(cpu as i32, self.as_ptr()) };
    }

    /// Stops the work for good: cancels it if queued, waits if it runs,
    /// and makes later queueing a no-op. Process context.
    pub(crate) fn disable(&self) {
        // SAFETY: Set up by the type invariant; disabling twice is fine.
        unsafe { bindings::rxe_glue_work_disable_sync(self.as_ptr()) };
    }
}

#[pinned_drop]
impl PinnedDrop for BhWork {
    fn drop(self: Pin<&mut Self>) {
        self.disable();
    }
}

/// The online CPU that transmits for `key` (a QP number): one per QP, so
/// that its packets enter the stack, and a local receiver's backlog, in
/// order.
pub(crate) fn tx_cpu(key: u32) -> u32 {
    // SAFETY: Reads the online mask; no requirements.
    unsafe { bindings::rxe_glue_tx_cpu(key) as u32 }
}

/// The current CPU (stable while bottom halves are off, as under a QP lock).
pub(crate) fn this_cpu() -> u32 {
    // SAFETY: No requirements.
    unsafe { bindings::rxe_glue_this_cpu() as u32 }
}
