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
    abi::kernel_post::{self, KernelSendWr, PostError, PostLimits, SendPayload},
    abi::layout::Sge,
    abi::queue::FromClient,
    device::RxeDevice,
    proto::qp_attr::QpState,
    qp::RxeQp,
    srq::RxeSrq,
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
