// SPDX-License-Identifier: GPL-2.0

//! A device's directory in debugfs, `/sys/kernel/debug/rdma_rxe/<device>/`:
//! `faults`, its fault-injection rules (crate::fault), and `qps`, one line
//! per QP with its live PSN state.

use crate::{
    device::RxeDevice,
    fault::{self, FaultInjector},
    sys::device_box::OwnerDevice,
};
use core::fmt::{self, Write};
use kernel::{debugfs, prelude::*, str::CStr};

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init before first use.
    unsafe(uninit) static ROOT: Mutex<Option<debugfs::Dir>> = None;
}

/// Creates `/sys/kernel/debug/rdma_rxe`.
///
/// # Safety
///
/// Called once, from module init, before any device exists.
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { ROOT.init() };
    *ROOT.lock() = Some(debugfs::Dir::new(c"rdma_rxe"));
}

/// Lets go of the root directory (it goes once the devices' files do).
pub(crate) fn exit() {
    *ROOT.lock() = None;
}

/// The files of one device; the directory goes when they do.
#[pin_data]
pub(crate) struct DeviceDebugfs {
    /// `faults`: owns the device's fault rules.
    #[pin]
    faults: debugfs::File<FaultInjector>,
    /// `qps`: the QPs' PSN state, read from the device.
    #[pin]
    qps: debugfs::File<OwnerDevice>,
}

impl DeviceDebugfs {
    /// The device's fault rules.
    pub(crate) fn faults(&self) -> &FaultInjector {
        &self.faults
    }
}

/// Creates the directory of device `name` and its files.
///
/// # Safety
///
/// `rxe` is the device named `name`, and the result is dropped before
/// `rxe` is freed (the `qps` file reads it).
pub(crate) unsafe fn create(rxe: &RxeDevice, name: &CStr) -> Result<Pin<KBox<DeviceDebugfs>>> {
    let dir = ROOT.lock().as_ref().ok_or(ENOENT)?.subdir(name);
    // SAFETY: The file is dropped before the device (our contract).
    let owner = unsafe { OwnerDevice::new(rxe) };
    KBox::pin_init(
        try_pin_init!(DeviceDebugfs {
            faults <- dir.read_write_callback_file(c"faults", FaultInjector::new(), &fault::show, &fault::store),
            qps <- dir.read_callback_file(c"qps", owner, &show_qps),
        }? Error),
        GFP_KERNEL,
    )
}

/// Reads `qps`: a header, then one line per QP.
fn show_qps(owner: &OwnerDevice, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let rxe = owner.get();
    writeln!(
        out,
        "qpn type state sq_psn comp_psn expected_psn retry_left rnr_retry_left retry_timer rnr_wait outstanding"
    )?;
    let mut at = 0;
    while let Some((qpn, qp)) = rxe.qps.next_from(at) {
        let Some(next) = qpn.checked_add(1) else {
            break;
        };
        at = next;
        let inner = qp.body.state.lock();
        let req = &inner.rc.requester;
        write!(
            out,
            "{qpn} {:?} {:?} {} {} {} {} {} {} {} {}",
            qp.body.qp_type,
            inner.attrs.state,
            req.next_psn().get(),
            req.comp_psn().get(),
            inner.rc.responder.expected_psn().get(),
            req.retry_left(),
            req.rnr_retry_left(),
            if req.retry_timer_armed() { "armed" } else { "off" },
            u8::from(req.waiting_for_rnr()),
            req.outstanding_wqes(),
        )?;
        out.write_char('\n')?;
    }
    Ok(())
}
