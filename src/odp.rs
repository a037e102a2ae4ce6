// SPDX-License-Identifier: GPL-2.0

//! On-demand-paging regions (`IB_ACCESS_ON_DEMAND`): user memory registered
//! without pinning, whose pages come in when the data path first needs
//! them and may leave whenever the process's mappings change.
//!
//! The data path runs where it cannot wait for a page, so it only copies
//! while the pages are resident ([`crate::sys::odp::OdpUmem`]). When they
//! are not, it asks for a fault ([`OdpRegion::request_fault`]) and backs
//! off: the responder answers with an RNR NAK (the peer sends the packet
//! again after its RNR timer, as an HCA answers a page fault), the
//! requester leaves the WQE in the send queue until the fault work wakes
//! it. The fault work ([`serve_faults`]) brings the asked ranges in, in
//! process context, one region at a time, then kicks the QPs that wait.
//! A range the process has no mapping for cannot come in: the next access
//! to it fails instead of waiting again.

use crate::{
    device::RxeDevice,
    sys::{
        device_box::Owner,
        odp::OdpUmem,
        work::{TxWork, WorkHandler},
    },
};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// QPs one region remembers to wake after a fault; more wake every QP of
/// the device that could be waiting.
const WAKE_MAX: usize = 8;

/// Separate ranges one region remembers to bring in; more are merged into
/// the last (a merged range spans what lies between, which may include a
/// hole the process never mapped).
const RANGES_MAX: usize = 4;

/// An on-demand-paging region's memory.
///
/// # Invariants
///
/// `rxe` is the device the region belongs to, which outlives it (ib_core
/// deregisters every MR before it frees the device).
#[pin_data]
pub(crate) struct OdpRegion {
    /// Serves the faults asked for. First, so that dropping the region
    /// stops it (waiting if it runs) before the pages go.
    #[pin]
    pub(crate) work: TxWork,
    /// Faults asked for and not yet served.
    #[pin]
    requests: SpinLockIrq<FaultRequests>,
    /// The pages.
    pub(crate) umem: OdpUmem,
    /// User address of the region's first byte.
    pub(crate) start: u64,
    /// The device the region belongs to.
    rxe: Owner<RxeDevice>,
}

/// A user range to bring in: `[first, end)`, for writing or not.
#[derive(Clone, Copy, Debug, Default)]
struct Wanted {
    first: u64,
    end: u64,
    write: bool,
}

/// What [`OdpRegion::requests`] protects.
struct FaultRequests {
    /// The ranges asked for (overlapping or touching ones merged).
    ranges: [Wanted; RANGES_MAX],
    /// How many of `ranges` are used.
    nranges: usize,
    /// QP numbers to wake once the range is in.
    wake: [u32; WAKE_MAX],
    /// How many of `wake` are used.
    nwake: usize,
    /// More QPs asked than `wake` holds: wake them all.
    wake_all: bool,
    /// A range the last fault could not bring in.
    failed: Option<(u64, u64)>,
}

/// What became of a fault request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultRequest {
    /// The fault work will bring the range in.
    Queued,
    /// A fault of this range failed since the last request: the process
    /// has no such mapping, so the access fails.
    Unmapped,
}

impl OdpRegion {
    /// Registers `[start, start + len)` of the calling process with
    /// `access` for on-demand paging, no page brought in yet.
    pub(crate) fn new(
        rxe: &RxeDevice,
        start: u64,
        len: u64,
        access: u32,
    ) -> Result<Pin<KBox<OdpRegion>>> {
        let umem = OdpUmem::register(&rxe.ib, start, len, access)?;
        // SAFETY: The region belongs to the device, which outlives it
        // (ib_core deregisters every MR before it frees the device).
        let owner = unsafe { Owner::new(rxe) };
        KBox::pin_init(
            pin_init!(OdpRegion {
                work <- TxWork::new::<OdpRegion, 0>(),
                requests <- new_spinlock_irq!(FaultRequests {
                    ranges: [Wanted::default(); RANGES_MAX],
                    nranges: 0,
                    wake: [0; WAKE_MAX],
                    nwake: 0,
                    wake_all: false,
                    failed: None,
                }),
                umem,
                start,
                rxe: owner,
            }),
            GFP_KERNEL,
        )
    }

    /// Asks for `[va, va + len)` (user addresses) to be brought in, for
    /// writing if `write`, and for the QP `wake` to be kicked when it is.
    /// Any context.
    pub(crate) fn request_fault(
        &self,
        va: u64,
        len: u64,
        write: bool,
        wake: Option<u32>,
    ) -> FaultRequest {
        let end = va.saturating_add(len.max(1));
        {
            let mut r = self.requests.lock();
            if let Some((f_first, f_end)) = r.failed {
                if va < f_end && f_first < end {
                    // Reported once; a later access may try again (the
                    // process may have mapped it since).
                    r.failed = None;
                    return FaultRequest::Unmapped;
                }
            }
            r.add(Wanted {
                first: va,
                end,
                write,
            });
            if let Some(qpn) = wake {
                let n = r.nwake;
                if !r.wake[..n].contains(&qpn) {
                    match r.wake.get_mut(n) {
                        Some(slot) => {
                            *slot = qpn;
                            r.nwake += 1;
                        }
                        None => r.wake_all = true,
                    }
                }
            }
        }
        self.work.queue_unbound();
        FaultRequest::Queued
    }

    /// The device the region belongs to.
    fn device(&self) -> &RxeDevice {
        self.rxe.get()
    }
}

impl FaultRequests {
    /// Adds `w`, merged with a range it overlaps or touches, else into a
    /// free slot, else into the last one.
    fn add(&mut self, w: Wanted) {
        let n = self.nranges;
        let slot = match self.ranges[..n]
            .iter()
            .position(|r| w.first <= r.end && r.first <= w.end)
        {
            Some(i) => i,
            None if n < RANGES_MAX => {
                self.ranges[n] = w;
                self.nranges += 1;
                return;
            }
            None => RANGES_MAX - 1,
        };
        let r = &mut self.ranges[slot];
        r.first = r.first.min(w.first);
        r.end = r.end.max(w.end);
        r.write |= w.write;
    }
}

/// The fault work: brings in what was asked for, then wakes the QPs that
/// wait, until no request is left. Process context.
pub(crate) fn serve_faults(region: &OdpRegion) {
    loop {
        let (ranges, nranges, wake, nwake, wake_all) = {
            let mut r = region.requests.lock();
            if r.nranges == 0 {
                return;
            }
            let taken = (r.ranges, r.nranges, r.wake, r.nwake, r.wake_all);
            r.nranges = 0;
            r.nwake = 0;
            r.wake_all = false;
            taken
        };
        for w in &ranges[..nranges] {
            match region.umem.fault(w.first, w.end - w.first, w.write) {
                // No such mapping (or not with the access asked): the
                // next access to it fails.
                Err(e) if e == EFAULT || e == EPERM => {
                    region.requests.lock().failed = Some((w.first, w.end));
                }
                // Anything else (the process is exiting, invalidations
                // kept racing the fault) is tried again when asked again.
                _ => {}
            }
        }
        let rxe = region.device();
        if wake_all {
            crate::rc::kick_all(rxe);
        } else {
            for &qpn in &wake[..nwake] {
                crate::rc::kick_qpn(rxe, qpn);
            }
        }
    }
}

crate::impl_has_tx_work!(OdpRegion, 0, work);

impl WorkHandler for OdpRegion {
    fn run(&self) {
        serve_faults(self);
    }
}
