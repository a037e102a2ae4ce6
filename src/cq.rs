// SPDX-License-Identifier: GPL-2.0

//! Completion queues (rxe-abi-and-wire.md §1.2-1.6, §1.9, §1.10).
//!
//! A CQ is one ring of 128-byte slots (sized as rxe sizes it) in a
//! `vmalloc_user` buffer. For a user CQ the buffer is also mapped by the
//! process: the kernel is the producer (`ToClient`, private producer index)
//! and librxe the consumer, polling without system calls; each slot starts
//! with the 48-byte `ib_uverbs_wc`. For a kernel CQ the same ring lives in
//! kernel memory only and `poll_cq` is the consumer; each slot is a
//! [`KernelCqe`] (the `ib_uverbs_wc` plus the `ib_wc` extras).
//!
//! Locking: `RxeCq::state` is a `SpinLockIrq` (interrupts off while held)
//! because [`RxeCq::post`] runs from the data path in softirq context while
//! `req_notify_cq`, `poll_cq` and `resize_cq` run in process context (and
//! `poll_cq` possibly with interrupts already off). It protects the ring's
//! private producer index, the buffer (swapped by resize) and the
//! notification arming. The completion handler is called with it held, as
//! rxe does; ib_core's handlers only queue work or wake waiters and never
//! call back into this CQ. Nothing else is taken inside it. A replaced or
//! destroyed buffer is dropped only after the lock is released (dropping a
//! user buffer removes its mmap entry, which may sleep).
//!
//! Overflow: [`RxeCq::post`] never overwrites an entry; on a full ring it
//! returns [`CqOverflow`] and the caller handles the lost completion (a
//! receive completion moves its QP to ERROR, as rxe). The CQ raises
//! `IB_EVENT_CQ_ERR` ([`IbCq::error_event`]) once, at its
//! first lost completion, not once per loss: ib_uverbs allocates an event
//! for each until the process reads it, and a CQ nobody polls would let a
//! peer's traffic grow that list without bound. A resize re-arms it.

use crate::{
    abi::{
        cq::{kernel_pop, CqNotify, KernelCqe, KernelWcExtra, CQE_ELEM_SIZE},
        cqe::Completion,
        layout::{CreateCqResp, ResizeCqResp},
        queue::{QueueError, QueueGeometry, ToClient},
    },
    device::RxeDevice,
    driver::Rxe,
    ib::{self, IbCq, Udata},
    params,
    sys::{bindings, queue::QueueBuf},
    verbs,
};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// A completion queue. ib_core allocates it (`size_ib_cq`, zeroed) with the
/// `ib_cq` first and frees it after `destroy_cq`.
///
/// # Invariants
///
/// `state` is initialised in place by `create_cq` and dropped by
/// `destroy_cq` (both in `sys::cq`, the only code that touches the field
/// directly).
#[repr(C)]
#[pin_data]
pub(crate) struct RxeCq {
    /// The ib_core object; must stay the first field.
    pub(crate) ibcq: IbCq,
    /// The ring and its arming, see the lock notes at the top of the file.
    #[pin]
    pub(crate) state: SpinLockIrq<CqState>,
}

/// What `RxeCq::state` protects.
pub(crate) struct CqState {
    /// Producer side of the ring (private index, driver-owned geometry).
    ring: ToClient,
    /// The buffer the ring lives in.
    buf: QueueBuf,
    /// `req_notify_cq` arming.
    notify: CqNotify,
    /// Whether user space consumes (slots are `ib_uverbs_wc`).
    user: bool,
    /// A completion was lost and `IB_EVENT_CQ_ERR` raised (until a resize).
    overflowed: bool,
}

/// The attributes of `create_cq` the driver looks at.
pub(crate) struct CqCreate {
    /// Requested number of entries.
    pub(crate) cqe: u32,
    /// `ib_cq_init_attr.flags` (none supported).
    pub(crate) flags: u32,
}

/// The CQ was full: the completion was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CqOverflow;

/// Sizes a ring for `cqe` entries: rxe's element size and the CPU's cache
/// line.
fn cq_sizing(rxe: &RxeDevice, cqe: u32) -> Result<crate::abi::queue::QueueSizing> {
    if cqe > rxe.attr.max_cqe {
        return Err(EINVAL);
    }
    QueueGeometry::for_request(cqe, CQE_ELEM_SIZE, crate::sys::cache_line_size()).map_err(|e| {
        match e {
            QueueError::TooLarge => ENOMEM,
            _ => EINVAL,
        }
    })
}

/// A buffer for a CQ ring of `bytes`, mappable by the caller of `udata`.
fn new_buf(bytes: usize, udata: Option<&Udata>) -> Result<QueueBuf> {
    match udata {
        Some(u) => QueueBuf::new_user(bytes, u.ucontext()?),
        None => QueueBuf::new_kernel(bytes),
    }
}

/// `create_cq`: validates, allocates and maps the ring, answers librxe,
/// and returns the initialiser of the CQ's locked state.
pub(crate) fn create(
    rxe: &RxeDevice,
    ibcq: &IbCq,
    req: &CqCreate,
    udata: Option<&Udata>,
) -> Result<impl PinInit<SpinLockIrq<CqState>>> {
    if let Some(u) = udata {
        if u.outlen() < CreateCqResp::SIZE {
            return Err(EINVAL);
        }
    }
    if req.flags != 0 {
        return Err(EOPNOTSUPP);
    }
    let sizing = cq_sizing(rxe, req.cqe)?;
    verbs::take_budget(&rxe.cqs, params::MAX_CQ)?;
    let res = (|| {
        let buf = new_buf(sizing.buffer_bytes, udata)?;
        sizing.geometry.write_header(&buf, 0, 0);
        if let (Some(u), Some(mi)) = (udata, crate::ring::mmap_info(&buf)) {
            let mut resp = [0u8; CreateCqResp::SIZE];
            CreateCqResp { mi }.encode(&mut resp).map_err(|_| EINVAL)?;
            u.respond(&resp)?;
        }
        Ok(buf)
    })();
    let buf = match res {
        Ok(buf) => buf,
        Err(e) => {
            verbs::return_budget(&rxe.cqs);
            return Err(e);
        }
    };
    ibcq.set_cqe(sizing.capacity);
    Ok(new_spinlock_irq!(
        CqState {
            ring: ToClient::new(sizing.geometry),
            buf,
            notify: CqNotify::new(),
            user: udata.is_some(),
            overflowed: false,
        },
        "RxeCq::state"
    ))
}

/// `destroy_cq`: ib_core has checked that no QP uses the CQ any more; the
/// state (and with it the buffer) is dropped by the caller.
pub(crate) fn destroy(rxe: &RxeDevice, _cq: &RxeCq) {
    verbs::return_budget(&rxe.cqs);
}

impl RxeCq {
    /// `resize_cq`: moves the queued completions into a new ring of at
    /// least `cqe` entries and answers librxe with the new buffer's mmap
    /// info. Fewer entries than are queued: `EINVAL`.
    pub(crate) fn resize(&self, rxe: &RxeDevice, cqe: u32, udata: Option<&Udata>) -> Result {
        if let Some(u) = udata {
            if u.outlen() < ResizeCqResp::SIZE {
                return Err(EINVAL);
            }
        }
        let sizing = cq_sizing(rxe, cqe)?;
        {
            let st = self.state.lock();
            if cqe < st.ring.count(&st.buf) {
                return Err(EINVAL);
            }
        }
        let new = new_buf(sizing.buffer_bytes, udata)?;
        if let (Some(u), Some(mi)) = (udata, crate::ring::mmap_info(&new)) {
            let mut resp = [0u8; ResizeCqResp::SIZE];
            ResizeCqResp { mi }.encode(&mut resp).map_err(|_| EINVAL)?;
            u.respond(&resp)?;
        }
        // Swap under the lock; whichever buffer is left over is dropped
        // after it (removing an mmap entry may sleep).
        let outcome = {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            match st.ring.resize_into(&st.buf, sizing.geometry, &new) {
                Ok(ring) => {
                    st.ring = ring;
                    // The consumer made room: a later loss is news again.
                    st.overflowed = false;
                    Ok(core::mem::replace(&mut st.buf, new))
                }
                Err(_) => Err(new),
            }
        };
        match outcome {
            Ok(old) => {
                drop(old);
                self.ibcq.set_cqe(sizing.capacity);
                Ok(())
            }
            Err(new) => {
                drop(new);
                Err(EINVAL)
            }
        }
    }

    /// `req_notify_cq`: arms the CQ. Returns whether completions may have
    /// been missed (only with `IB_CQ_REPORT_MISSED_EVENTS`, when the CQ is
    /// not empty).
    pub(crate) fn req_notify(&self, flags: u32) -> bool {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let empty = st.ring.count(&st.buf) == 0;
        st.notify.arm(flags, empty)
    }

    /// Whether the CQ holds completions its consumer has not polled yet.
    pub(crate) fn holds_unpolled(&self) -> bool {
        let st = self.state.lock();
        st.ring.count(&st.buf) > 0
    }

    /// `poll_cq` for a kernel CQ: fills up to `wcs.len()` work completions,
    /// oldest first, and returns how many. A user CQ is polled by user
    /// space only: 0.
    pub(crate) fn poll(&self, wcs: &mut [bindings::ib_wc]) -> usize {
        let st = self.state.lock();
        if st.user {
            return 0;
        }
        let mut n = 0;
        let mut slot = [0u8; KernelCqe::SIZE];
        for wc in wcs.iter_mut() {
            if !kernel_pop(&st.ring, &st.buf, &mut slot) {
                break;
            }
            // A slot of a kernel CQ was written by `post` and is always
            // decodable; the buffer is not mapped anywhere.
            let k = KernelCqe::decode(&slot).unwrap_or_default();
            fill_wc(wc, &k);
            n += 1;
        }
        n
    }

    /// Queues a completion (from the data path, any context) and calls the
    /// completion handler if the CQ is armed for it. `kernel` carries the
    /// `ib_wc` extras for kernel CQs (ignored for user CQs). Never
    /// overwrites: a full CQ gives [`CqOverflow`], and the first loss
    /// raises `IB_EVENT_CQ_ERR` (after the lock is released, as rxe).
    pub(crate) fn post(
        &self,
        completion: &Completion,
        kernel: &KernelWcExtra,
        solicited: bool,
    ) -> core::result::Result<(), CqOverflow> {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let pushed = if st.user {
            st.ring.push(&st.buf, &completion.to_bytes())
        } else {
            st.ring
                .push(&st.buf, &KernelCqe::new(completion, kernel).to_bytes())
        };
        if pushed.is_err() {
            let first = !st.overflowed;
            st.overflowed = true;
            drop(guard);
            if first {
                self.ibcq.error_event();
            }
            return Err(CqOverflow);
        }
        if st.notify.fire(solicited) {
            self.ibcq.completion_event();
        }
        Ok(())
    }
}

/// `IB_WC_WITH_NETWORK_HDR_TYPE` of `enum ib_wc_flags`.
const IB_WC_WITH_NETWORK_HDR_TYPE: c_int = 1 << 6;

/// Fills a kernel work completion from a kernel CQ slot.
fn fill_wc(wc: &mut bindings::ib_wc, k: &KernelCqe) {
    *wc = bindings::ib_wc::default();
    wc.__bindgen_anon_1.wr_id = k.wc.wr_id;
    wc.status = k.wc.status;
    wc.opcode = k.wc.opcode;
    wc.vendor_err = k.wc.vendor_err;
    wc.byte_len = k.wc.byte_len;
    // The cookie is the `struct ib_qp *` the data path posted with; it is
    // handed back, never dereferenced here.
    wc.qp = k.extra.qp as usize as *mut bindings::ib_qp;
    wc.ex.invalidate_rkey = u32::from_ne_bytes(k.wc.ex);
    wc.src_qp = k.wc.src_qp;
    wc.slid = u32::from(k.wc.slid);
    wc.wc_flags = k.wc.wc_flags as c_int;
    wc.pkey_index = k.wc.pkey_index;
    wc.sl = k.wc.sl;
    wc.dlid_path_bits = k.wc.dlid_path_bits;
    wc.port_num = u32::from(k.wc.port_num);
    wc.smac = k.extra.smac;
    wc.vlan_id = k.extra.vlan_id;
    wc.network_hdr_type = k.extra.network_hdr_type;
    if k.extra.network_hdr_type != 0 {
        wc.wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
    }
}

crate::impl_ib_object!(RxeCq, ibcq: bindings::ib_cq, state: SpinLockIrq<CqState>);

impl ib::CqOps<Rxe> for RxeCq {
    fn create(
        dev: &RxeDevice,
        cq: &IbCq,
        cqe: u32,
        flags: u32,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<SpinLockIrq<CqState>>> {
        create(dev, cq, &CqCreate { cqe, flags }, udata)
    }

    fn destroy(dev: &RxeDevice, cq: &Self) {
        destroy(dev, cq);
    }

    fn resize(dev: &RxeDevice, cq: &Self, cqe: u32, udata: Option<&Udata>) -> Result {
        cq.resize(dev, cqe, udata)
    }

    fn poll(cq: &Self, wc: &mut [bindings::ib_wc]) -> usize {
        cq.poll(wc)
    }

    fn req_notify(cq: &Self, flags: u32) -> bool {
        cq.req_notify(flags)
    }
}
