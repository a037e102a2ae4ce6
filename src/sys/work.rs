// SPDX-License-Identifier: GPL-2.0

//! A QP's work items (`work_struct`: its transmit, reply and receive
//! work) embedded in a pinned object, queued on a chosen CPU on one of the
//! driver's per-CPU workqueues: the transmit workqueue, normal priority (so
//! a long reply shares the CPU with the tasks there, as rxe's workqueue
//! does, instead of running in softirq), or the receive workqueue, high
//! priority, for work a softirq hands to another CPU. The function runs in
//! process context on that CPU and is handed to the object that holds the
//! item ([`WorkHandler`]), found at the offset [`HasTxWork`] names.
//!
//! `kernel::workqueue` owns its items through `Arc` or `KBox`; these
//! items live inside objects that ib_core allocates and frees (a QP), and
//! are queued on a chosen CPU and disabled synchronously, which that API
//! has no way to say, so this module keeps a local wrapper in its style.

use super::bindings;
use kernel::{prelude::*, types::Opaque};

/// An object that holds a [`TxWork`] (one per `ID`).
///
/// # Safety
///
/// `OFFSET` is the byte offset of a [`TxWork`] field inside `Self`, and
/// every `Self` whose work may run lives (pinned) until that work is
/// disabled. Use [`impl_has_tx_work!`](crate::impl_has_tx_work).
pub(crate) unsafe trait HasTxWork<const ID: u64 = 0>: Sized {
    /// Offset of the work item inside `Self`.
    const OFFSET: usize;
}

/// What an object does when its work item `ID` runs (process context).
pub(crate) trait WorkHandler<const ID: u64 = 0>: HasTxWork<ID> + Sync {
    /// The work runs.
    fn run(&self);
}

/// Implements [`HasTxWork`] for a type and a (possibly nested) field.
#[macro_export]
macro_rules! impl_has_tx_work {
    ($ty:ty, $id:expr, $($field:tt).+) => {
        // SAFETY: The offset is that of the named `TxWork` field, checked
        // by the type of the `let` below; a `TxWork` disables itself
        // before its memory goes (its invariant).
        unsafe impl $crate::sys::work::HasTxWork<{ $id }> for $ty {
            const OFFSET: usize = {
                fn _check(t: &$ty) -> &$crate::sys::work::TxWork {
                    &t.$($field).+
                }
                ::core::mem::offset_of!($ty, $($field).+)
            };
        }
    };
}

/// The workqueue core's callback: hands the run to the holder.
///
/// # Safety
///
/// Called by the workqueue core only, for a work item that
/// [`TxWork::new`] set up for `T` (so it is the work `ID` of a live `T`).
unsafe extern "C" fn run_callback<T: WorkHandler<ID>, const ID: u64>(
    work: *mut bindings::work_struct,
) {
    // SAFETY: By our contract the work sits at `T::OFFSET` in a live `T`
    // (`HasTxWork`'s promise), which outlives the run (the work is
    // disabled, which waits for us, before its memory goes).
    let holder = unsafe { &*work.cast::<u8>().sub(T::OFFSET).cast::<T>() };
    holder.run();
}

/// The transmit workqueue while it exists: [`TxWork::queue_on`] queues
/// on it. Dropping it destroys it, waiting for work still on it.
pub(crate) struct TxWorkqueue(());

/// Whether a [`TxWorkqueue`] exists.
static TX_WQ_UP: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

impl TxWorkqueue {
    /// Creates the transmit workqueue.
    ///
    /// # Safety
    ///
    /// The result is dropped only after no [`TxWork`] can be queued on it
    /// again (every one is disabled).
    pub(crate) unsafe fn new() -> Result<TxWorkqueue> {
        use core::sync::atomic::Ordering;
        if TX_WQ_UP.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: The only one (checked above), before any work is queued.
        if let Err(e) = kernel::error::to_result(unsafe { bindings::rxe_glue_tx_wq_init() }) {
            TX_WQ_UP.store(false, Ordering::Release);
            return Err(e);
        }
        Ok(TxWorkqueue(()))
    }
}

impl Drop for TxWorkqueue {
    fn drop(&mut self) {
        // SAFETY: Created in `new`; nothing queues any more (`new`'s
        // contract).
        unsafe { bindings::rxe_glue_tx_wq_exit() };
        TX_WQ_UP.store(false, core::sync::atomic::Ordering::Release);
    }
}

/// Proof that bottom halves are off on this CPU (or that this is
/// softirq): an RCU read-side critical section of the `_bh` flavour, in
/// which `rcu_dereference_bh` pointers stay valid. Not `Send`: it proves
/// something of this CPU only.
pub(crate) struct BhOff(core::marker::PhantomData<*mut ()>);

impl BhOff {
    /// The proof, for code the kernel runs in softirq (timer expiry).
    ///
    /// # Safety
    ///
    /// Called in softirq context, and the result does not outlive it.
    pub(crate) unsafe fn in_softirq() -> Self {
        BhOff(core::marker::PhantomData)
    }
}

/// Runs `f` with bottom halves off on this CPU: softirqs (the receive
/// path, timers) cannot run in between, so packets `f` sends leave in the
/// order a softirq on this CPU would see them, and `f` is an RCU read-side
/// critical section.
pub(crate) fn with_bh_off<R>(f: impl FnOnce(&BhOff) -> R) -> R {
    // SAFETY: No requirements; balanced below.
    unsafe { bindings::rxe_glue_local_bh_disable() };
    let r = f(&BhOff(core::marker::PhantomData));
    // SAFETY: Balances the disable above, in the same context.
    unsafe { bindings::rxe_glue_local_bh_enable() };
    r
}

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
    /// The work item `ID` of a `T`, not queued; it runs
    /// [`WorkHandler::run`] on the `T` it is in.
    pub(crate) fn new<T: WorkHandler<ID>, const ID: u64>() -> impl PinInit<Self> {
        let f: unsafe extern "C" fn(*mut bindings::work_struct) = run_callback::<T, ID>;
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

    /// Queues the work on `cpu` on the high-priority receive workqueue,
    /// for work a softirq handed over (see [`TxWork::queue_on`]).
    pub(crate) fn queue_on_highpri(&self, cpu: u32) {
        // SAFETY: Set up by the type invariant.
        unsafe { bindings::rxe_glue_rx_work_queue_on(cpu as i32, self.as_ptr()) };
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

/// The online CPU that processes received data for `key` when the receive
/// path spreads it (`crate::recv`): the one after [`tx_cpu`]'s, so that a
/// stream's packets are built on one CPU and placed on another; the same
/// CPU on a single-CPU machine.
pub(crate) fn rx_cpu(key: u32) -> u32 {
    tx_cpu(key.wrapping_add(1))
}

/// The current CPU (stable while bottom halves are off, as under a QP lock).
pub(crate) fn this_cpu() -> u32 {
    kernel::cpu::CpuId::current().as_u32()
}
