// SPDX-License-Identifier: GPL-2.0

//! A QP's transmit work item (`work_struct`) embedded in a pinned object,
//! queued on the driver's per-CPU transmit workqueue on a chosen CPU: its
//! function runs in process context on that CPU (so a long reply shares
//! the CPU with the tasks there, as rxe's workqueue does, instead of
//! running in softirq) and finds its object by `container_of`.

use super::bindings;
use kernel::{prelude::*, types::Opaque};

/// Creates the transmit workqueue.
///
/// # Safety
///
/// Once, at module init, before any [`TxWork`] is queued; balanced by
/// [`exit`].
pub(crate) unsafe fn init() -> Result {
    // SAFETY: Our contract: once, before any use.
    kernel::error::to_result(unsafe { bindings::rxe_glue_tx_wq_init() })
}

/// Destroys the transmit workqueue (waiting for work still on it).
///
/// # Safety
///
/// Once, at module exit, after [`init`] succeeded and once no [`TxWork`]
/// can be queued again (every QP is gone, so every one is disabled).
pub(crate) unsafe fn exit() {
    // SAFETY: Our contract.
    unsafe { bindings::rxe_glue_tx_wq_exit() };
}

/// Runs `f` with bottom halves off on this CPU: softirqs (the receive
/// path, timers) cannot run in between, so packets `f` sends leave in the
/// order a softirq on this CPU would see them, and `f` is an RCU read-side
/// critical section.
pub(crate) fn with_bh_off<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: No requirements; balanced below.
    unsafe { bindings::rxe_glue_local_bh_disable() };
    let r = f();
    // SAFETY: Balances the disable above, in the same context.
    unsafe { bindings::rxe_glue_local_bh_enable() };
    r
}

/// The function a [`TxWork`] runs, with the `work_struct` queued.
pub(crate) type WorkFn = unsafe extern "C" fn(work: *mut bindings::work_struct);

/// A `work_struct` for the transmit workqueue.
///
/// # Invariants
///
/// Set up by [`TxWork::new`]; disabled (synchronously) before its memory
/// goes away, by [`TxWork::disable`] or on drop.
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct TxWork {
    #[pin]
    inner: Opaque<bindings::work_struct>,
}

// SAFETY: The workqueue core serialises queueing, disabling and running.
unsafe impl Send for TxWork {}
// SAFETY: As above.
unsafe impl Sync for TxWork {}

impl TxWork {
    /// A work item that runs `f`, not queued.
    pub(crate) fn new(f: WorkFn) -> impl PinInit<Self> {
        pin_init!(TxWork {
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
        unsafe { bindings::rxe_glue_tx_work_queue_on(cpu as i32, self.as_ptr()) };
    }

    /// Queues the work on the kernel's unbound workqueue (any CPU; for
    /// work that sleeps, such as bringing pages in) unless it is queued
    /// already. Any context but hard IRQ; a no-op once disabled.
    pub(crate) fn queue_unbound(&self) {
        // SAFETY: Set up by the type invariant.
        unsafe { bindings::rxe_glue_work_queue_unbound(self.as_ptr()) };
    }

    /// Stops the work for good: cancels it if queued, waits if it runs,
    /// and makes later queueing a no-op. Process context.
    pub(crate) fn disable(&self) {
        // SAFETY: Set up by the type invariant; disabling twice is fine.
        unsafe { bindings::rxe_glue_work_disable_sync(self.as_ptr()) };
    }
}

#[pinned_drop]
impl PinnedDrop for TxWork {
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
