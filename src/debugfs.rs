// SPDX-License-Identifier: GPL-2.0

//! The driver's debugfs files: `/sys/kernel/debug/rdma_rxe/` with the
//! receive path's drop counters (`rcvd_drop_*`), what receive spreading
//! and the doorbell moved between CPUs (`rcvd_spread`, with the receive
//! work wake-ups it took, `rcvd_spread_wakeups`,
//! `sent_from_posting_cpu`, `stream_posts_deferred`, and the replies the
//! receive work built for the reply work, `replies_relayed`), the
//! requesters' totals and the benchmark's `ceiling` (crate::ceiling), and a directory per
//! device with `faults`, its fault-injection rules (crate::fault), and
//! `qps`, one line per QP with its live PSN state.

use crate::{
    device::RxeDevice,
    fault::{self, FaultInjector},
    rc::send::{SENT_FROM_POSTING_CPU, STREAM_POSTS_DEFERRED},
    recv,
    sys::device_box::Owner,
};
use core::{
    fmt::{self, Write},
    sync::atomic::AtomicU64,
};
use kernel::{debugfs, prelude::*, str::CStr};

/// `/sys/kernel/debug/rdma_rxe/` and its module-wide files: the receive
/// path's drop counters and the benchmark's ceiling.
struct Root {
    dir: debugfs::Dir,
    _drops: KVec<Pin<KBox<debugfs::File<&'static AtomicU64>>>>,
    _ceiling: Option<Pin<KBox<debugfs::File<()>>>>,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init before first use.
    unsafe(uninit) static ROOT: Mutex<Option<Root>> = None;
}

/// Prepares the root's lock.
///
/// # Safety
///
/// Called once, from module init, before any use of this module.
pub(crate) unsafe fn init() {
    // SAFETY: Called once, before any use of the lock.
    unsafe { ROOT.init() };
}

/// `/sys/kernel/debug/rdma_rxe` and the module-wide files while this
/// lives; dropping it removes them and logs the module's unload.
pub(crate) struct Registration(());

impl Registration {
    /// Creates the directory and files. Without memory for them the driver
    /// works, without these files.
    pub(crate) fn new() -> Registration {
        create_root();
        Registration(())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        exit();
        pr_info!(
            "unloaded ({} datagrams dropped on receive)\n",
            recv::dropped()
        );
    }
}

/// Creates the root directory and the module-wide files.
fn create_root() {
    let dir = debugfs::Dir::new(c"rdma_rxe");
    let drops = &recv::DROPS;
    let totals = crate::rc::REQUESTER_TOTALS
        .iter()
        .zip(crate::rc::REQUESTER_TOTAL_FIELDS)
        .map(|(counter, (name, _))| (name, counter));
    let drop_counters = [
        (c"rcvd_drop_no_port", &drops.no_port),
        (c"rcvd_drop_no_qp", &drops.no_qp),
        (c"rcvd_drop_bad_icrc", &drops.bad_icrc),
        (c"rcvd_drop_malformed", &drops.malformed),
        (c"rcvd_drop_not_resident", &drops.not_resident),
        (c"rcvd_drop_backlog_full", &drops.backlog_full),
        (c"rcvd_spread", &recv::SPREAD),
        (c"rcvd_spread_wakeups", &recv::SPREAD_WAKEUPS),
        (c"rcvd_split", &recv::SPLIT),
        (c"rcvd_split_linearized", &recv::SPLIT_LINEARIZED),
        (c"sent_zero_copy", &crate::rc::wire::SENT_ZERO_COPY),
        (c"sent_from_posting_cpu", &SENT_FROM_POSTING_CPU),
        (c"stream_posts_deferred", &STREAM_POSTS_DEFERRED),
        (c"response_wakeups", &crate::rc::complete::RESPONSE_WAKEUPS),
        (
            c"replies_from_receive_cpu",
            &crate::rc::respond::REPLIES_FROM_RECEIVE_CPU,
        ),
        (c"replies_relayed", &crate::rc::relay::REPLIES_RELAYED),
        (c"rcvd_icrc_omitted", &recv::ICRC_OMITTED),
    ];
    let mut files = KVec::new();
    for (name, counter) in Iterator::chain(drop_counters.into_iter(), totals) {
        if let Ok(file) = KBox::pin_init(dir.read_only_file(name, counter), GFP_KERNEL) {
            let _ = files.push(file, GFP_KERNEL);
        }
    }
    let ceiling = KBox::pin_init(
        dir.read_callback_file(c"ceiling", (), &crate::ceiling::show),
        GFP_KERNEL,
    )
    .ok();
    *ROOT.lock() = Some(Root {
        dir,
        _drops: files,
        _ceiling: ceiling,
    });
}

/// Removes the module-wide files and lets go of the directory (it goes
/// once the devices' files do).
fn exit() {
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
    qps: debugfs::File<Owner<RxeDevice>>,
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
    let dir = ROOT.lock().as_ref().ok_or(ENOENT)?.dir.subdir(name);
    // SAFETY: The file is dropped before the device (our contract).
    let owner = unsafe { Owner::new(rxe) };
    KBox::pin_init(
        try_pin_init!(DeviceDebugfs {
            faults <- dir.read_write_callback_file(c"faults", FaultInjector::new(), &fault::show, &fault::store),
            qps <- dir.read_callback_file(c"qps", owner, &show_qps),
        }? Error),
        GFP_KERNEL,
    )
}

/// Reads `qps`: a header, then one line per QP.
fn show_qps(owner: &Owner<RxeDevice>, out: &mut fmt::Formatter<'_>) -> fmt::Result {
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
            if req.retry_timer_armed() {
                "armed"
            } else {
                "off"
            },
            u8::from(req.waiting_for_rnr()),
            req.outstanding_wqes(),
        )?;
        out.write_char('\n')?;
    }
    Ok(())
}
