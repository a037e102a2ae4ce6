// SPDX-License-Identifier: GPL-2.0

//! User contexts and protection domains: ib_core's objects, of which the
//! driver only counts how many there are (per-device budgets).

use crate::{device::RxeDevice, params};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Takes one unit of a per-device object budget, failing past `max`.
pub(crate) fn take_budget(count: &core::sync::atomic::AtomicU32, max: u32) -> Result {
    count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| ENOMEM)
}

/// Gives one unit of a per-device object budget back.
pub(crate) fn return_budget(count: &core::sync::atomic::AtomicU32) {
    let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

/// `alloc_ucontext`: librxe sends no request data and expects no response.
pub(crate) fn alloc_ucontext(rxe: &RxeDevice) -> Result {
    take_budget(&rxe.ucontexts, params::MAX_UCONTEXT)
}

/// `dealloc_ucontext`.
pub(crate) fn dealloc_ucontext(rxe: &RxeDevice) {
    return_budget(&rxe.ucontexts);
}

/// `alloc_pd`.
pub(crate) fn alloc_pd(rxe: &RxeDevice) -> Result {
    take_budget(&rxe.pds, params::MAX_PD)
}

/// `dealloc_pd`.
pub(crate) fn dealloc_pd(rxe: &RxeDevice) {
    return_budget(&rxe.pds);
}
