// SPDX-License-Identifier: GPL-2.0

//! Posting by kernel ULPs: `ib_post_send`, `ib_post_recv` and
//! `ib_post_srq_recv` on kernel QPs and SRQs write each work request into
//! the queue's kernel-owned ring in librxe's slot format
//! ([`crate::abi::kernel_post`]); the data path then takes it out and
//! validates it exactly as it does a user's. Sends are written under the
//! QP's `sq_post` lock, not its state lock, so that ib_mad may post with
//! interrupts off (the caller then defers the transmit to the QP's work). The state rules are rxe's:
//! sends need RTS or later (in ERROR they are flushed), receives INIT or
//! later (in ERROR they are flushed), and a QP on an SRQ has no RQ to
//! post to.

use crate::{
    abi::kernel_post::{self, KernelSendWr, PostError, PostLimits, Remote, SendPayload},
    abi::layout::Sge,
    abi::queue::FromClient,
    abi::{
        send_wqe::{UdDest, MAX_INLINE_DATA},
        sge::MAX_SGE,
        values::send_flags,
    },
    device::RxeDevice,
    driver::Rxe,
    ib::wr::{RecvWrs, SendRemote, SendWr, SendWrs},
    proto::qp_attr::QpState,
    qp::RxeQp,
    srq::RxeSrq,
    sys::{bindings, kva},
};
use kernel::prelude::*;

fn post_error(e: PostError) -> Error {
    match e {
        PostError::Full => ENOMEM,
        PostError::TooManySges(_) | PostError::InlineTooLong(_) => EINVAL,
    }
}

/// Writes one send work request into a kernel QP's SQ ring. The caller
/// rings the doorbell ([`super::send::doorbell`]) after the last one, or
/// queues the QP's transmit work ([`super::kick`]) when it may not.
pub(crate) fn post_send(qp: &RxeQp, wr: &KernelSendWr, payload: SendPayload<'_>) -> Result {
    let body = &qp.body;
    if !matches!(
        body.post_state(),
        Some(QpState::Rts | QpState::Sqd | QpState::Sqe | QpState::Err)
    ) {
        return Err(EINVAL);
    }
    let limits = PostLimits {
        max_sge: body.caps.max_send_sge,
        max_inline: body.caps.max_inline_data,
        slot_size: body.sq_geometry.elem_size(),
    };
    // The producer side needs only the geometry; the free-slot check reads
    // the consumer's published index.
    let producer = FromClient::new(body.sq_geometry);
    let _posts = body.sq_post.lock();
    kernel_post::post_send(&producer, &body.sq_buf, &limits, wr, payload).map_err(post_error)
}

/// Writes one receive work request into a kernel QP's RQ ring; in ERROR it
/// is flushed at once.
pub(crate) fn post_recv(rxe: &RxeDevice, qp: &RxeQp, wr_id: u64, sges: &[Sge]) -> Result {
    let mut guard = qp.body.state.lock();
    let inner = &mut *guard;
    if inner.attrs.state == QpState::Reset {
        return Err(EINVAL);
    }
    let rq = inner.rq.as_ref().ok_or(EINVAL)?;
    let limits = PostLimits {
        max_sge: qp.body.caps.max_recv_sge,
        max_inline: 0,
        slot_size: rq.ring.geometry().elem_size(),
    };
    kernel_post::post_recv(&rq.ring, &rq.buf, &limits, wr_id, sges).map_err(post_error)?;
    if inner.attrs.state == QpState::Err {
        super::complete::flush_rq(rxe, qp, inner);
    }
    Ok(())
}

/// Writes one receive work request into a kernel SRQ's ring.
pub(crate) fn post_srq_recv(srq: &RxeSrq, wr_id: u64, sges: &[Sge]) -> Result {
    let st = srq.body.state.lock();
    let limits = PostLimits {
        max_sge: srq.body.max_sge,
        max_inline: 0,
        slot_size: st.ring.geometry().elem_size(),
    };
    kernel_post::post_recv(&st.ring, &st.buf, &limits, wr_id, sges).map_err(post_error)
}

/// The SGEs of a kernel work request, copied into `out`; `EINVAL` past
/// [`MAX_SGE`].
fn read_sges<'a>(list: &[bindings::ib_sge], out: &'a mut [Sge; MAX_SGE]) -> Result<&'a [Sge]> {
    if list.len() > MAX_SGE {
        return Err(EINVAL);
    }
    for (slot, s) in out.iter_mut().zip(list) {
        *slot = Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Ok(&out[..list.len()])
}

/// The remote part of a kernel send request in the ring's terms.
fn read_remote(wr: &SendWr<'_, Rxe>) -> Remote {
    match wr.remote() {
        SendRemote::None => Remote::None,
        SendRemote::Rdma { addr, rkey } => Remote::Rdma { addr, rkey },
        SendRemote::Atomic {
            addr,
            compare_add,
            swap,
            rkey,
        } => Remote::Atomic {
            addr,
            compare_add,
            swap,
            rkey,
        },
        // The region by its key-table index (its own, never-changing part),
        // so the data path follows no pointer out of the ring; index 0
        // names no region, and the request completes in error.
        SendRemote::Reg {
            mr,
            iova,
            key,
            access,
        } => Remote::Reg {
            mr_index: mr.map_or(0, |mr| mr.lkey().index()),
            iova,
            key,
            access,
        },
        // No AH: refused by the data path (there is no AH 0), the request
        // completes in error.
        SendRemote::Datagram {
            ah,
            remote_qpn,
            remote_qkey,
            pkey_index,
        } => Remote::Datagram(UdDest {
            remote_qpn,
            remote_qkey,
            pkey_index,
            ah_num: ah.map_or(0, |ah| ah.body.index),
        }),
    }
}

/// Writes one kernel send request into the QP's SQ ring. An inline
/// request's bytes are copied into the WQE now, as the verbs promise (the
/// buffers may be reused once `post_send` returns).
#[inline(never)]
fn post_one_send(qp: &RxeQp, wr: &SendWr<'_, Rxe>) -> Result {
    let request = KernelSendWr {
        wr_id: wr.wr_id(),
        opcode: wr.opcode(),
        send_flags: wr.send_flags(),
        ex: wr.ex().to_ne_bytes(),
        remote: read_remote(wr),
    };
    let mut sges = [Sge::default(); MAX_SGE];
    let sges = read_sges(wr.sges()?, &mut sges)?;
    if request.send_flags & send_flags::INLINE == 0 {
        return post_send(qp, &request, SendPayload::Sges(sges));
    }
    let mut data = [0u8; MAX_INLINE_DATA];
    let mut len = 0usize;
    for s in sges {
        let end = len
            .checked_add(s.length as usize)
            .filter(|&e| e <= data.len())
            .ok_or(EINVAL)?;
        kva::read(s.addr, &mut data[len..end]).map_err(|_| EFAULT)?;
        len = end;
    }
    post_send(qp, &request, SendPayload::Inline(&data[..len]))
}

/// `post_send`: librxe's doorbell for a user QP (its requests are in the
/// mapped SQ ring); for a kernel QP its chain of requests, written one by
/// one, then the doorbell. With hard interrupts off (ib_mad posts under
/// its `spin_lock_irqsave`) the doorbell, which takes the QP lock, is left
/// to the QP's transmit work. On an error the requests before the failing
/// one are sent.
pub(crate) fn post_send_wrs(rxe: &RxeDevice, qp: &RxeQp, wrs: &mut SendWrs<'_, Rxe>) -> Result {
    if qp.ibqp.is_user() {
        return super::send::doorbell(rxe, qp);
    }
    let deferred = crate::sys::irqs_off();
    let ring = |qp| {
        if deferred {
            super::kick(qp);
            Ok(())
        } else {
            super::send::doorbell(rxe, qp)
        }
    };
    while let Some(wr) = wrs.next() {
        if let Err(e) = post_one_send(qp, &wr) {
            let _ = ring(qp);
            return Err(e);
        }
    }
    ring(qp)
}

/// Posts a chain of kernel receive requests with `post`. Receives with
/// interrupts off are refused (`EINVAL`, nothing posted); ib_mad posts
/// them from process context.
fn post_recv_chain(wrs: &mut RecvWrs<'_>, mut post: impl FnMut(u64, &[Sge]) -> Result) -> Result {
    if crate::sys::irqs_off() {
        return Err(EINVAL);
    }
    let mut sges = [Sge::default(); MAX_SGE];
    while let Some(wr) = wrs.next() {
        let (wr_id, list) = wr?;
        post(wr_id, read_sges(list, &mut sges)?)?;
    }
    Ok(())
}

/// `post_recv`: a kernel QP's chain of receives. librxe writes a user
/// QP's receive WQEs into the mapped ring itself; the kernel must not race
/// it as a second producer (`EOPNOTSUPP`).
pub(crate) fn post_recv_wrs(rxe: &RxeDevice, qp: &RxeQp, wrs: &mut RecvWrs<'_>) -> Result {
    if qp.ibqp.is_user() {
        return Err(EOPNOTSUPP);
    }
    post_recv_chain(wrs, |wr_id, sges| post_recv(rxe, qp, wr_id, sges))
}

/// `post_srq_recv`: as [`post_recv_wrs`], on an SRQ.
pub(crate) fn post_srq_recv_wrs(srq: &RxeSrq, wrs: &mut RecvWrs<'_>) -> Result {
    if srq.ibsrq.is_user() {
        return Err(EOPNOTSUPP);
    }
    post_recv_chain(wrs, |wr_id, sges| post_srq_recv(srq, wr_id, sges))
}
