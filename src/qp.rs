// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (rxe-abi-and-wire.md §1.2, §1.11, §4.5): creation with the send and
//! receive rings librxe maps, QP numbers from the device's QP table,
//! `modify_qp` through ib_core's state table and rxe's attribute rules,
//! `query_qp`, and destruction.
//!
//! RC, UC, UD and the kernel's GSI QP (QP number 1, which ib_mad creates
//! for the port) are created.
//!
//! Locking: `QpBody::state` is a [`SpinLockBh`]: the data path runs in
//! softirq (receive, timers) and in process context (the doorbell), and no
//! hard-IRQ path takes it; packets are built and routed under it, which may
//! re-enable bottom halves but must not run with IRQs off. The verbs here
//! hold it only to copy attributes in or out. Ring
//! buffers are dropped with the QP, after its uses have drained, never
//! under the lock. The SQ buffer lives outside the state lock: a kernel
//! ULP posts into it under `QpBody::sq_post`, a `SpinLockIrq`, because
//! ib_mad posts with interrupts off, where a BH lock may not be taken.

use crate::{
    abi::{
        layout::CreateQpResp,
        queue::{FromClient, QueueError, QueueGeometry, QueueSizing},
        recv_wqe::recv_elem_size,
        send_wqe::sq_caps,
    },
    attrs::transition_ok,
    device::RxeDevice,
    driver::Rxe,
    ib::{
        self,
        attr::QpAttr,
        wr::{RecvWrs, SendWrs},
        IbQp, Udata,
    },
    params,
    proto::{
        access::SUPPORTED_MR_ACCESS,
        qp_attr::{
            check_caps, udp_source_port, CapLimits, ModifyRequest, QpAttrError, QpAttrs, QpCaps,
            QpLimits, QpState, QpType,
        },
    },
    rc::RcState,
    sys::{
        bindings,
        queue::QueueBuf,
        skb::{RouteCache, RxBacklog, TxLink, TxOwner},
        table::{Counted, UseCount},
        timer::{Timer, TimerHandler},
        work::{BhOff, TxWork, WorkHandler},
    },
    verbs,
};
use crate::{new_spinlock_bh, rc::wire::Outbox, sys::lock::SpinLockBh};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// A queue pair. ib_core allocates it (`size_ib_qp`, zeroed) with the
/// `ib_qp` first and frees it after `destroy_qp`.
///
/// # Invariants
///
/// `body` is initialised in place by `create_qp` and dropped by
/// `destroy_qp` (the trampolines of `ib::qp`, the only code that touches
/// the field directly).
#[repr(C)]
#[pin_data]
pub(crate) struct RxeQp {
    /// The ib_core object; must stay the first field.
    pub(crate) ibqp: IbQp<Rxe>,
    /// The driver's part.
    #[pin]
    pub(crate) body: QpBody,
}

/// The driver's part of a QP.
#[pin_data]
pub(crate) struct QpBody {
    /// QP number (also its index in the device's QP table).
    pub(crate) qpn: u32,
    /// Transport type.
    pub(crate) qp_type: QpType,
    /// Capacities as reported to the creator.
    pub(crate) caps: QpCaps,
    /// `IB_SIGNAL_ALL_WR`: every send WQE completes with a CQE.
    pub(crate) sq_sig_all: bool,
    /// The send ring's buffer. Its consumer side (`QpInner::sq`) is under
    /// `state`; a kernel ULP's producer side under `sq_post`.
    pub(crate) sq_buf: QueueBuf,
    /// The send ring's geometry.
    pub(crate) sq_geometry: QueueGeometry,
    /// Serialises a kernel ULP's posts to the SQ (and a QP reset's zeroing
    /// of the slots). Interrupts off: ib_mad posts with them off.
    #[pin]
    pub(crate) sq_post: SpinLockIrq<()>,
    /// The QP state as last set under `state`, for the post path, which
    /// does not take `state` (a [`QpState`] value).
    pub(crate) post_state: AtomicU8,
    /// Attributes and the rest of the rings.
    #[pin]
    pub(crate) state: SpinLockBh<QpInner>,
    /// The QP table's use and the data path's.
    #[pin]
    pub(crate) uses: UseCount,
    /// The requester's retransmission timer.
    #[pin]
    pub(crate) retry_timer: Timer,
    /// The requester's RNR back-off timer.
    #[pin]
    pub(crate) rnr_timer: Timer,
    /// Transmits for the QP on its transmit CPU ([`crate::sys::work::tx_cpu`]).
    #[pin]
    pub(crate) tx_work: TxWork,
    /// What picks the transmit CPU: the QP number, and once a connected QP
    /// has a destination, the smaller of its own and the destination's
    /// (see [`QpBody::tx_key`]).
    pub(crate) tx_key: AtomicU32,
    /// Skbs handed to the stack and not yet freed by it, a packet chain
    /// counting as one (counted through `tx_link` while the QP is
    /// attached to it).
    pub(crate) tx_inflight: AtomicU32,
    /// What the QP's packets in flight point at (see [`TxLink`]).
    pub(crate) tx_link: Arc<TxLink>,
    /// Transmission stopped at [`QpBody::tx_inflight_high`]; the packet
    /// that brings `tx_inflight` below [`QpBody::tx_inflight_low`] queues
    /// `tx_work`.
    pub(crate) tx_blocked: AtomicBool,
    /// The QP's last packet went to this host over the driver's loopback
    /// path (see [`TX_INFLIGHT_HIGH_TO_HOST`]).
    pub(crate) tx_to_host: AtomicBool,
    /// After the requester's last step (a transmit, a response, a
    /// timer), every request packet it had sent was acknowledged: a hint,
    /// read without the QP lock, that a doorbell finding the lock taken
    /// (the receive path finishing the message that the poster just
    /// saw complete) may wait for it and send from the posting CPU
    /// (`crate::rc::send`).
    pub(crate) all_acked: AtomicBool,
    /// The responder took a whole SEND or WRITE of the peer's, in order,
    /// since the requester last took a SEND or WRITE: one posted now
    /// answers it (a ping-pong; see `crate::rc::send`).
    pub(crate) answer_due: AtomicBool,
    /// Transmits for the QP on its transmit CPU, as `tx_work` does, when
    /// the receive path asks from another CPU (high priority; see
    /// [`crate::rc::transmit_or_kick`]).
    #[pin]
    pub(crate) reply_work: TxWork,
    /// Reply packets the receive work built for the reply work to send
    /// (`crate::rc::relay`); taken after `state` when both are.
    #[pin]
    pub(crate) relay: SpinLockBh<Outbox>,
    /// The reply work was queued for the requester too (a response let it
    /// send), not only for the responder's replies (`crate::rc::relay`).
    pub(crate) reply_pump_wanted: AtomicBool,
    /// `rx_work` is processing the backlog (`crate::rc::relay`).
    pub(crate) rx_working: AtomicBool,
    /// The reply work left the replies to `rx_work` (`crate::rc::relay`).
    pub(crate) relay_wanted: AtomicBool,
    /// Received datagrams left for `rx_work` (receive spreading, see
    /// `crate::recv`).
    #[pin]
    pub(crate) rx_backlog: RxBacklog,
    /// Processes `rx_backlog` on the QP's receive CPU
    /// ([`crate::sys::work::rx_cpu`]).
    #[pin]
    pub(crate) rx_work: TxWork,
    /// Datagrams pushed to `rx_backlog` and not yet processed to the end:
    /// while any is, the QP's later datagrams queue behind it, so they are
    /// processed in the order they arrived.
    pub(crate) rx_pending: AtomicU32,
    /// Payload packets the receive path has seen, while the backlog was
    /// empty, since the QP last took a SEND or WRITE to send, or a READ
    /// with nothing outstanding (see `crate::recv`).
    pub(crate) rx_run: AtomicU32,
}

/// Skbs of a QP in flight at which its requester stops transmitting (a
/// packet chain is one skb; what the outbox holds counts by packet).
/// Every skb waits in the receiver's backlog until the receiving side
/// has taken it, so this bounds a QP's share of that queue (1000 skbs
/// by default): go-back-N bursts that overflow it are lost whole, and
/// their retransmissions with them. rxe stops at the same count.
pub(crate) const TX_INFLIGHT_HIGH: u32 = 64;

/// [`TX_INFLIGHT_HIGH`] for a QP whose packets go to this host over the
/// driver's loopback path, where no packet chain carries a run of them
/// (each is one skb) and the queues they wait in are the driver's own:
/// its per-CPU loopback queue and the receiving QP's backlog, each of
/// several times this size. With 64, a stream's sender could run at most
/// one 64 KiB message ahead of its receiver, stopped and woken once per
/// 48 packets, and `ib_write_bw` over loopback ran at 0.88x the C driver
/// (Documentation/benchmarks.md).
pub(crate) const TX_INFLIGHT_HIGH_TO_HOST: u32 = 128;

impl QpBody {
    /// Skbs in flight at which the QP's requester stops transmitting.
    pub(crate) fn tx_inflight_high(&self) -> u32 {
        if self.tx_to_host.load(Ordering::Relaxed) {
            TX_INFLIGHT_HIGH_TO_HOST
        } else {
            TX_INFLIGHT_HIGH
        }
    }

    /// Skbs in flight below which a stopped requester starts again: a
    /// quarter of [`QpBody::tx_inflight_high`].
    pub(crate) fn tx_inflight_low(&self) -> u32 {
        self.tx_inflight_high() / 4
    }

    /// The key of the QP's transmit CPU ([`crate::sys::work::tx_cpu`]).
    ///
    /// Both QPs of a connection within one host (rdma_cm and perftest on
    /// one device, NVMe over loopback) have the same key, so one CPU sends
    /// both directions: each ACK would otherwise cross to the other CPU to
    /// be sent and each next request cross back, two wake-ups of the
    /// transmit work per round trip. Connections still spread over CPUs
    /// by their QP numbers (the smaller of the two: a sum would put every
    /// pair of equal numbers, as two hosts' first QPs, on the same CPU).
    /// It changes only when the destination is set (INIT to RTR), before
    /// the QP has sent anything.
    pub(crate) fn tx_key(&self) -> u32 {
        self.tx_key.load(Ordering::Relaxed)
    }

    /// The QP's transmit CPU: [`crate::sys::work::tx_cpu`] of its
    /// [`QpBody::tx_key`].
    pub(crate) fn tx_cpu(&self) -> u32 {
        crate::sys::work::tx_cpu(self.tx_key())
    }

    /// Records the state the post path checks; called under `state`
    /// whenever the state changes.
    pub(crate) fn set_post_state(&self, s: QpState) {
        self.post_state.store(s as u8, Ordering::Release);
    }

    /// The state as last recorded by [`QpBody::set_post_state`].
    pub(crate) fn post_state(&self) -> Option<QpState> {
        QpState::from_raw(u32::from(self.post_state.load(Ordering::Acquire)))
    }

    /// The `wr_id` of the SQ slot at `off` (its first 8 bytes), for
    /// completing a WQE that did not validate or is flushed.
    pub(crate) fn sq_slot_wr_id(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        self.sq_buf.read_bytes(off, &mut b);
        u64::from_ne_bytes(b)
    }
}

impl Counted for RxeQp {
    fn uses(&self) -> &UseCount {
        &self.body.uses
    }
}

/// One ring user space (or a kernel consumer) posts work into.
pub(crate) struct WorkQueue {
    /// Consumer side (private index, driver-owned geometry).
    pub(crate) ring: FromClient,
    /// The buffer the ring lives in.
    pub(crate) buf: QueueBuf,
}

/// What `QpBody::state` protects.
pub(crate) struct QpInner {
    /// Attributes set by `modify_qp`.
    pub(crate) attrs: QpAttrs,
    /// Send queue consumer (its buffer is `QpBody::sq_buf`).
    pub(crate) sq: FromClient,
    /// Receive queue (`None` with an SRQ).
    pub(crate) rq: Option<WorkQueue>,
    /// UDP source port of the QP's packets.
    pub(crate) src_port: u16,
    /// The routes of an RC or UC QP's packets, cached per CPU (reset when
    /// `modify_qp` sets a new path); `None` for UD and GSI QPs, whose
    /// packets each name their own destination.
    pub(crate) routes: Option<RouteCache>,
    /// The data path (requester, responder, private WQE copies).
    pub(crate) rc: KBox<RcState>,
}

/// The attributes of `create_qp` the driver looks at.
pub(crate) struct QpCreate {
    /// Raw `ib_qp_type`.
    pub(crate) qp_type: u32,
    /// Requested capacities.
    pub(crate) cap: QpCaps,
    /// `create_flags` (none supported).
    pub(crate) create_flags: u32,
    /// Both CQs are given.
    pub(crate) has_cqs: bool,
    /// An SRQ is given.
    pub(crate) has_srq: bool,
    /// `sq_sig_type == IB_SIGNAL_ALL_WR`.
    pub(crate) sq_sig_all: bool,
}

/// The device's capacity limits.
fn cap_limits(rxe: &RxeDevice) -> CapLimits {
    CapLimits {
        max_wr: rxe.attr.max_qp_wr,
        max_send_sge: rxe.attr.max_send_sge,
        max_recv_sge: rxe.attr.max_recv_sge,
        max_inline_data: crate::abi::send_wqe::MAX_INLINE_DATA as u32,
    }
}

/// The device's attribute limits.
fn qp_limits(rxe: &RxeDevice) -> QpLimits {
    QpLimits {
        max_path_mtu: bindings::ib_mtu_IB_MTU_4096 as u8,
        max_rd_atomic: rxe.attr.max_qp_rd_atom,
        gid_tbl_len: params::PORT_GID_TBL_LEN as u32,
        supported_access: SUPPORTED_MR_ACCESS,
    }
}

fn sizing_error(e: QueueError) -> Error {
    match e {
        QueueError::TooLarge => ENOMEM,
        _ => EINVAL,
    }
}

/// A ring buffer of `sizing`, mappable by the caller of `udata`, with its
/// header written.
fn new_buffer(sizing: &QueueSizing, udata: Option<&Udata>) -> Result<QueueBuf> {
    let buf = match udata {
        Some(u) => QueueBuf::new_user(sizing.buffer_bytes, u.ucontext()?)?,
        None => QueueBuf::new_kernel(sizing.buffer_bytes)?,
    };
    sizing.geometry.write_header(&buf, 0, 0);
    Ok(buf)
}

/// A ring of `sizing` with its consumer (see [`new_buffer`]).
fn new_queue(sizing: &QueueSizing, udata: Option<&Udata>) -> Result<WorkQueue> {
    Ok(WorkQueue {
        ring: FromClient::new(sizing.geometry),
        buf: new_buffer(sizing, udata)?,
    })
}

/// `create_qp`: validates, allocates the rings and a QP number, answers
/// librxe and returns the initialiser of the QP's body. The caller sets
/// `ibqp.qp_num` and the reported caps from it and publishes the QP.
pub(crate) fn create(
    rxe: &RxeDevice,
    req: &QpCreate,
    udata: Option<&Udata>,
) -> Result<(u32, QpCaps, impl PinInit<QpBody>)> {
    if let Some(u) = udata {
        if u.inlen() != 0 || u.outlen() < CreateQpResp::SIZE {
            return Err(EINVAL);
        }
    }
    if req.create_flags != 0 {
        return Err(EOPNOTSUPP);
    }
    let qp_type = match QpType::from_raw(req.qp_type) {
        Some(t @ (QpType::Rc | QpType::Uc | QpType::Ud)) => t,
        // Only ib_mad creates the GSI QP.
        Some(QpType::Gsi) if udata.is_none() => QpType::Gsi,
        Some(QpType::Gsi) => return Err(EINVAL),
        _ => return Err(EOPNOTSUPP),
    };
    if !req.has_cqs {
        return Err(EINVAL);
    }
    check_caps(&req.cap, &cap_limits(rxe), req.has_srq).map_err(|_| EINVAL)?;

    let line = crate::sys::cache_line_size();
    let sq_layout = sq_caps(req.cap.max_send_sge, req.cap.max_inline_data).ok_or(EINVAL)?;
    let sq_sizing = QueueGeometry::for_request(req.cap.max_send_wr, sq_layout.elem_size, line)
        .map_err(sizing_error)?;
    // With an SRQ the QP has no receive ring of its own.
    let rq_sizing = if req.has_srq {
        None
    } else {
        let rq_elem = recv_elem_size(req.cap.max_recv_sge).ok_or(EINVAL)?;
        Some(QueueGeometry::for_request(req.cap.max_recv_wr, rq_elem, line).map_err(sizing_error)?)
    };

    verbs::take_budget(&rxe.qp_count, params::MAX_QP)?;
    // QP numbers 0 and 1 are the special QPs; the GSI QP is always 1.
    let reserved = match qp_type {
        QpType::Gsi => rxe.qps.reserve(1, 1).map_err(|_| EBUSY),
        _ => rxe.qps.reserve(params::MIN_QP_INDEX, params::MAX_QP_INDEX),
    };
    let qpn = match reserved {
        Ok(qpn) => qpn,
        Err(e) => {
            verbs::return_budget(&rxe.qp_count);
            return Err(e);
        }
    };
    let queues = (|| {
        let sq = new_buffer(&sq_sizing, udata)?;
        let rq = match &rq_sizing {
            Some(sizing) => Some(new_queue(sizing, udata)?),
            None => None,
        };
        if let Some(u) = udata {
            let resp = CreateQpResp {
                // All zero with an SRQ: librxe then maps no RQ.
                rq_mi: rq
                    .as_ref()
                    .and_then(|rq| crate::ring::mmap_info(&rq.buf))
                    .unwrap_or_default(),
                sq_mi: crate::ring::mmap_info(&sq).unwrap_or_default(),
            };
            let mut bytes = [0u8; CreateQpResp::SIZE];
            resp.encode(&mut bytes).map_err(|_| EINVAL)?;
            u.respond(&bytes)?;
        }
        Ok((sq, rq))
    })();
    let (sq, rq) = match queues {
        Ok(q) => q,
        Err(e) => {
            rxe.qps.unreserve(qpn);
            verbs::return_budget(&rxe.qp_count);
            return Err(e);
        }
    };
    let caps = QpCaps {
        max_send_wr: sq_sizing.capacity,
        max_send_sge: sq_layout.max_send_sge,
        max_inline_data: sq_layout.max_inline_data,
        max_recv_wr: rq_sizing.as_ref().map_or(0, |s| s.capacity),
        max_recv_sge: if req.has_srq { 0 } else { req.cap.max_recv_sge },
    };
    let attrs = QpAttrs {
        // rxe starts every QP at path MTU 256 (IB_MTU_256 = 1).
        path_mtu: 1,
        ..QpAttrs::default()
    };
    let src_port = udp_source_port(0, qpn, 0);
    let sq_sig_all = req.sq_sig_all;
    let made = RcState::new(qp_type)
        .and_then(|rc| Ok((rc, TxLink::new()?)))
        .and_then(|(rc, link)| {
            let routes = if qp_type.is_connected() {
                Some(RouteCache::new()?)
            } else {
                None
            };
            Ok((rc, link, routes))
        });
    let (rc, tx_link, routes) = match made {
        Ok(made) => made,
        Err(e) => {
            rxe.qps.unreserve(qpn);
            verbs::return_budget(&rxe.qp_count);
            return Err(e);
        }
    };
    let sq_geometry = sq_sizing.geometry;
    let sq_ring = FromClient::new(sq_geometry);
    let body = pin_init!(QpBody {
        qpn,
        qp_type,
        caps,
        sq_sig_all,
        sq_buf: sq,
        sq_geometry,
        sq_post <- new_spinlock_irq!((), "RxeQp::sq_post"),
        post_state: AtomicU8::new(QpState::Reset as u8),
        state <- new_spinlock_bh!(
            QpInner {
                attrs,
                sq: sq_ring,
                rq,
                src_port,
                routes,
                rc,
            },
            "RxeQp::state"
        ),
        uses <- UseCount::new(),
        retry_timer <- Timer::new::<RxeQp, RETRY_TIMER>(),
        rnr_timer <- Timer::new::<RxeQp, RNR_TIMER>(),
        tx_work <- TxWork::new::<RxeQp, 0>(),
        tx_key: AtomicU32::new(*qpn),
        tx_inflight: AtomicU32::new(0),
        tx_link,
        tx_blocked: AtomicBool::new(false),
        tx_to_host: AtomicBool::new(false),
        all_acked: AtomicBool::new(false),
        answer_due: AtomicBool::new(false),
        reply_work <- TxWork::new::<RxeQp, REPLY_WORK>(),
        relay <- new_spinlock_bh!(Outbox::new(), "RxeQp::relay"),
        reply_pump_wanted: AtomicBool::new(false),
        rx_working: AtomicBool::new(false),
        relay_wanted: AtomicBool::new(false),
        rx_backlog <- RxBacklog::new(),
        rx_work <- TxWork::new::<RxeQp, RX_WORK>(),
        rx_pending: AtomicU32::new(0),
        rx_run: AtomicU32::new(0),
    });
    Ok((qpn, caps, body))
}

/// Publishes a created QP in the device's QP table.
pub(crate) fn publish(rxe: &RxeDevice, qp: &RxeQp) -> Result {
    // SAFETY: ib_core never moves a QP and frees it only after
    // `destroy_qp` (or, if publishing fails, after the caller drops the
    // body), which detaches the link first.
    unsafe { qp.body.tx_link.attach(qp) };
    // SAFETY: ib_core never moves a QP and frees it only after
    // `destroy_qp`, which removes it from the table and drains its uses.
    let published = unsafe { rxe.qps.publish(qp.body.qpn, qp) };
    if published.is_err() {
        qp.body.tx_link.detach();
    }
    published
}

/// How long `destroy_qp` waits for the QP's packets in flight, in steps of
/// [`TX_DRAIN_STEP_MS`]: a packet normally leaves within microseconds, but
/// a qdisc may hold one for any time (netem delays it by minutes), and the
/// QP may not wait for it without bound (rxe waits, then warns and goes on).
const TX_DRAIN_STEPS: u32 = 200;
/// One step of the wait, in milliseconds.
const TX_DRAIN_STEP_MS: i64 = 10;

/// Undoes [`create`] and [`publish`] before ib_core frees the QP: removes
/// it from the table and waits for the data path to let go of it.
pub(crate) fn destroy(rxe: &RxeDevice, qp: &RxeQp) {
    // Out of its multicast groups first, so that no group names the QP
    // number once it is free for another QP.
    if let Some(groups) = rxe.multicast.get() {
        groups.qp_destroyed(rxe, qp.body.qpn);
    }
    rxe.qps.remove(qp.body.qpn);
    // No new packet reaches the QP. Stop the timers and the transmit work
    // (waiting for a running callback), so nothing sends any more, then
    // wait for the receive path's uses.
    qp.body.retry_timer.shutdown();
    qp.body.rnr_timer.shutdown();
    qp.body.tx_work.disable();
    qp.body.reply_work.disable();
    qp.body.rx_work.disable();
    qp.body.uses.drain();
    // What the receive path left for the disabled receive work goes unread,
    // as if lost on the way, counted as datagrams for a QP that is gone.
    let unread = qp.body.rx_backlog.purge();
    crate::recv::backlog_done(qp, unread);
    crate::recv::dropped_for_gone_qp(unread);
    // Nothing else touches the QP now. The ACKs it owes go out (the
    // transmit work may have been disabled before it sent them): a peer
    // whose last message we received must learn it, or its send never
    // completes, as the C driver lets its responder task finish.
    crate::rc::send_owed_acks(rxe, qp);
    crate::rc::send_posted_datagrams(rxe, qp);
    crate::rc::add_requester_totals(qp);
    crate::mw::qp_destroyed(rxe, qp.key_user());
    // Packets still in flight point at the QP's link, which they keep
    // alive, not at the QP: give them a moment to leave, then let them go.
    let mut steps = 0;
    while qp.body.tx_inflight.load(Ordering::SeqCst) != 0 && steps < TX_DRAIN_STEPS {
        kernel::time::delay::fsleep(kernel::time::Delta::from_millis(TX_DRAIN_STEP_MS));
        steps += 1;
    }
    qp.body.tx_link.detach();
    let left = qp.body.tx_inflight.load(Ordering::SeqCst);
    if left != 0 {
        pr_warn!(
            "qp#{}: destroyed with {} packet(s) still queued in the network stack\n",
            qp.body.qpn,
            left
        );
    }
    verbs::return_budget(&rxe.qp_count);
}

/// The device is about to go (its netdev is being unregistered, `rdma
/// link del`, module unload). Every QP but the GSI QP (ib_mad's, which
/// the unregistration takes down itself) enters ERROR now, so that the work
/// requests it holds complete with `WR_FLUSH_ERR` while their owner can
/// still see them: a process whose device goes away learns it from its CQ
/// (ib_core destroys the QPs later, in the queued unregistration, and a
/// destroyed QP completes nothing). The C driver flushes nothing here: a
/// process with all its work outstanding then waits on its CQ for ever
/// (t_teardown cases 4-6).
pub(crate) fn fail_all_for_removal(rxe: &RxeDevice) {
    let mut at = 0;
    while let Some((qpn, qp)) = rxe.qps.next_from(at) {
        if qp.body.qp_type != QpType::Gsi {
            let mut guard = qp.body.state.lock();
            let inner = &mut *guard;
            let old = inner.attrs.state;
            if !matches!(old, QpState::Reset | QpState::Err) {
                inner.attrs.state = QpState::Err;
                qp.body.set_post_state(QpState::Err);
                crate::rc::state_changed(rxe, &qp, inner, old);
            }
        }
        let Some(next) = qpn.checked_add(1) else {
            break;
        };
        at = next;
    }
}

/// Gives back what [`create`] took when ib_core's part failed after it.
pub(crate) fn abandon(rxe: &RxeDevice, qpn: u32) {
    rxe.qps.unreserve(qpn);
    verbs::return_budget(&rxe.qp_count);
}

impl RxeQp {
    /// `modify_qp`: ib_core's transition table, then rxe's rules, then the
    /// attributes are stored. A move to RESET clears the rings.
    pub(crate) fn modify(&self, rxe: &RxeDevice, req: &ModifyRequest) -> Result {
        let body = &self.body;
        let mut guard = body.state.lock();
        let inner = &mut *guard;
        let to_error = |e: QpAttrError| match e {
            QpAttrError::UnsupportedMask => EOPNOTSUPP,
            QpAttrError::Invalid => EINVAL,
        };
        inner
            .attrs
            .check(
                body.qp_type,
                req,
                &qp_limits(rxe),
                &cap_limits(rxe),
                inner.rq.is_none(),
            )
            .map_err(to_error)?;
        if !transition_ok(&inner.attrs, body.qp_type, req) {
            return Err(EINVAL);
        }
        let old_state = inner.attrs.state;
        inner.attrs.apply(req);
        if req.mask & crate::proto::qp_attr::mask::AV != 0 {
            inner.src_port = udp_source_port(req.av.flow_label, body.qpn, inner.attrs.dest_qpn);
            if let Some(routes) = inner.routes.as_mut() {
                routes.reset();
            }
        }
        if req.mask & crate::proto::qp_attr::mask::DEST_QPN != 0 && body.qp_type.is_connected() {
            let key = body.qpn.min(inner.attrs.dest_qpn);
            body.tx_key.store(key, Ordering::Relaxed);
        }
        body.set_post_state(inner.attrs.state);
        if req.mask & crate::proto::qp_attr::mask::STATE != 0 && inner.attrs.state == QpState::Reset
        {
            {
                let _posts = body.sq_post.lock();
                inner.sq.reset(&body.sq_buf);
            }
            if let Some(rq) = &inner.rq {
                rq.ring.reset(&rq.buf);
            }
        }
        crate::rc::state_changed(rxe, self, inner, old_state);
        Ok(())
    }

    /// The attributes for `query_qp`.
    pub(crate) fn attrs(&self) -> QpAttrs {
        self.body.state.lock().attrs
    }

    /// Who this QP is to the key table: its PD, and its number for the
    /// memory windows bound to it.
    pub(crate) fn key_user(&self) -> crate::proto::window::WindowUser {
        crate::proto::window::WindowUser {
            pd: self.ibqp.pd_id(),
            qpn: self.body.qpn,
        }
    }
}

/// The [`Timer`] id of a QP's retransmission timer.
const RETRY_TIMER: u64 = 0;
/// The [`Timer`] id of a QP's RNR timer.
const RNR_TIMER: u64 = 1;

crate::impl_has_timer!(RxeQp, RETRY_TIMER, body.retry_timer);
crate::impl_has_timer!(RxeQp, RNR_TIMER, body.rnr_timer);
/// The work id of a QP's receive work (its transmit work is 0).
const RX_WORK: u64 = 1;
/// The work id of a QP's reply work.
const REPLY_WORK: u64 = 2;

crate::impl_has_tx_work!(RxeQp, 0, body.tx_work);
crate::impl_has_tx_work!(RxeQp, RX_WORK, body.rx_work);
crate::impl_has_tx_work!(RxeQp, REPLY_WORK, body.reply_work);

impl RxeQp {
    /// A requester timer fired (softirq): hands it to the completer if the
    /// netdev is still there.
    fn timer_fired(&self, kind: crate::rc::complete::TimerKind, bh: &BhOff) {
        let rxe = self.ibqp.device();
        if let Some(ndev) = rxe.ib.netdev_bh(bh) {
            crate::rc::complete::timer_expired(rxe, self, ndev, kind);
        }
    }

    /// A packet is about to be sent: counts it in flight and returns the
    /// link reference it keeps until the stack frees it.
    pub(crate) fn tx_hold(&self) -> Arc<TxLink> {
        self.body.tx_inflight.fetch_add(1, Ordering::SeqCst);
        self.body.tx_link.clone()
    }
}

impl TimerHandler<RETRY_TIMER> for RxeQp {
    fn expired(&self, bh: &BhOff) {
        self.timer_fired(crate::rc::complete::TimerKind::Retry, bh);
    }
}

impl TimerHandler<RNR_TIMER> for RxeQp {
    fn expired(&self, bh: &BhOff) {
        self.timer_fired(crate::rc::complete::TimerKind::Rnr, bh);
    }
}

impl RxeQp {
    /// The transmit and reply work (process context, on the QP's transmit
    /// CPU): transmits with bottom halves off, as a softirq would (so the
    /// two never interleave on that CPU).
    fn transmit_from_work(&self) {
        crate::sys::work::with_bh_off(|bh| {
            let rxe = self.ibqp.device();
            if let Some(ndev) = rxe.ib.netdev_bh(bh) {
                crate::rc::transmit(rxe, self, ndev);
            }
        });
    }
}

impl WorkHandler for RxeQp {
    fn run(&self) {
        self.transmit_from_work();
    }
}

impl WorkHandler<REPLY_WORK> for RxeQp {
    fn run(&self) {
        crate::rc::relay::reply_work(self);
    }
}

/// The receive work (process context, on the QP's receive CPU) processes
/// the QP's backlog with bottom halves off, as the softirq it left would.
impl WorkHandler<RX_WORK> for RxeQp {
    fn run(&self) {
        crate::recv::process_backlog(self);
    }
}

/// The stack freed one of the QP's packets: takes no QP lock (this may
/// run inside `send`, under the QP lock).
impl TxOwner for RxeQp {
    fn packet_freed(&self) {
        let left = self
            .body
            .tx_inflight
            .fetch_sub(1, Ordering::SeqCst)
            .wrapping_sub(1);
        if left < self.body.tx_inflight_low() && self.body.tx_blocked.swap(false, Ordering::SeqCst)
        {
            // Transmit from the QP's work rather than here (a no-op once
            // `destroy_qp` disabled it).
            crate::rc::kick(self);
        }
    }
}

crate::impl_ib_object!(RxeQp, ibqp: bindings::ib_qp, body: QpBody);

impl ib::QpOps<Rxe> for RxeQp {
    fn create(
        dev: &RxeDevice,
        init: &mut bindings::ib_qp_init_attr,
        udata: Option<&Udata>,
    ) -> Result<(u32, impl PinInit<QpBody>)> {
        let req = QpCreate {
            qp_type: init.qp_type,
            cap: crate::attrs::caps_of(&init.cap),
            create_flags: init.create_flags,
            has_cqs: !init.send_cq.is_null() && !init.recv_cq.is_null(),
            has_srq: !init.srq.is_null(),
            sq_sig_all: init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
        };
        let (qpn, caps, body) = create(dev, &req, udata)?;
        crate::attrs::write_caps(&caps, !req.has_srq, &mut init.cap);
        Ok((qpn, body))
    }

    fn publish(dev: &RxeDevice, qp: &Self) -> Result {
        publish(dev, qp).inspect_err(|_| abandon(dev, qp.body.qpn))
    }

    fn modify(dev: &RxeDevice, qp: &Self, attr: &QpAttr, mask: u32) -> Result {
        let req = crate::attrs::read_request(attr, mask)?;
        qp.modify(dev, &req)
    }

    fn query(qp: &Self, attr: &mut bindings::ib_qp_attr, init: &mut bindings::ib_qp_init_attr) {
        let body = &qp.body;
        let has_rq = qp.ibqp.srq().is_none();
        crate::attrs::write_attrs(&qp.attrs(), &body.caps, has_rq, attr);
        crate::attrs::write_caps(&body.caps, has_rq, &mut init.cap);
        if !has_rq {
            // ib_core hands us `init` from an unzeroed allocation and
            // copies it to user space: a QP on an SRQ reports no receive
            // queue rather than stale kernel memory (which is what the C
            // driver returns).
            init.cap.max_recv_wr = 0;
            init.cap.max_recv_sge = 0;
        }
        init.sq_sig_type = if body.sq_sig_all {
            bindings::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            bindings::ib_sig_type_IB_SIGNAL_REQ_WR
        };
    }

    fn destroy(dev: &RxeDevice, qp: &Self) {
        destroy(dev, qp);
    }

    fn post_send(dev: &RxeDevice, qp: &Self, wrs: &mut SendWrs<'_, Rxe>) -> Result {
        crate::rc::post::post_send_wrs(dev, qp, wrs)
    }

    fn post_recv(dev: &RxeDevice, qp: &Self, wrs: &mut RecvWrs<'_>) -> Result {
        crate::rc::post::post_recv_wrs(dev, qp, wrs)
    }
}
