// SPDX-License-Identifier: GPL-2.0

//! The `post_send`, `post_recv` and `post_srq_recv` verbs: librxe's
//! doorbell for user QPs, and for kernel QPs and SRQs the chains of
//! `ib_send_wr` / `ib_recv_wr` a kernel ULP passes, read here one request
//! at a time into the driver's types and handed to [`crate::rc::post`].
//! On an error the failing request is reported through `bad_wr` and the
//! ones after it are not posted.
//!
//! Kernel ULPs are trusted to pass well-formed chains (as with every
//! driver); the SGE and remote addresses in them are checked again where
//! they are used ([`super::kva`]).
//!
//! Sends may be posted with hard interrupts off (ib_mad does, under its
//! send queue's `spin_lock_irqsave`): they are written under the QP's
//! interrupt-safe `sq_post` lock and the transmit is left to the QP's work
//! item, as the QP lock disables bottom halves only and may not be taken
//! with interrupts off (`local_bh_enable`). Receives with interrupts off
//! are refused (`EINVAL`, nothing posted); ib_mad posts them from process
//! context.

use super::{bindings, kva, qp::rxe_qp, srq::rxe_srq};
use crate::abi::{
    kernel_post::{KernelSendWr, Remote, SendPayload},
    layout::Sge,
    send_wqe::{UdDest, MAX_INLINE_DATA},
    sge::MAX_SGE,
    values::{send_flags, WrOpcode},
};
use kernel::{error::from_result, prelude::*};

/// Whether hard interrupts are off here (see the module comment).
fn irqs_off() -> bool {
    // SAFETY: Reads the CPU's interrupt state.
    unsafe { bindings::rxe_glue_irqs_off() }
}

/// The SGEs of a work request, copied into `out`.
///
/// # Safety
///
/// `list` points to `num` live `ib_sge`s (or `num` is 0).
unsafe fn read_sges(
    list: *const bindings::ib_sge,
    num: c_int,
    out: &mut [Sge; MAX_SGE],
) -> Result<&[Sge]> {
    let n = usize::try_from(num).map_err(|_| EINVAL)?;
    if n > MAX_SGE {
        return Err(EINVAL);
    }
    for (i, slot) in out.iter_mut().take(n).enumerate() {
        // SAFETY: `i < num`, inside the caller's array.
        let s = unsafe { *list.add(i) };
        *slot = Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Ok(&out[..n])
}

/// The opcode-specific remote part of a send work request.
///
/// # Safety
///
/// `wr` is a live `ib_send_wr`; for RDMA opcodes it is the `wr` of an
/// `ib_rdma_wr`, for atomics of an `ib_atomic_wr`, for REG_MR of an
/// `ib_reg_wr` whose `mr`, if not null, is a live region of this device
/// (ib_verbs.h's contract).
unsafe fn read_remote(wr: *const bindings::ib_send_wr, opcode: u32) -> Remote {
    use WrOpcode::*;
    match WrOpcode::from_u32(opcode) {
        Some(RdmaWrite | RdmaWriteWithImm | RdmaRead | RdmaReadWithInv) => {
            // SAFETY: By the caller's promise the request heads an `ib_rdma_wr`.
            let r = unsafe { &*wr.cast::<bindings::ib_rdma_wr>() };
            Remote::Rdma {
                addr: r.remote_addr,
                rkey: r.rkey,
            }
        }
        Some(RegMr) => {
            // SAFETY: By the caller's promise the request heads an `ib_reg_wr`.
            let r = unsafe { &*wr.cast::<bindings::ib_reg_wr>() };
            // The region by its key-table index (read from our own,
            // never-changing part of it), so the data path follows no
            // pointer out of the ring; index 0 names no region, and the
            // request completes in error.
            let (mr_index, iova) = if r.mr.is_null() {
                (0, 0)
            } else {
                // SAFETY: A region of this device that ib_core handed the
                // ULP, live until its REG_MR completes (ib_verbs.h's
                // contract); `ibmr` heads an `RxeMr` whose lkey never
                // change, and the ULP owns `iova` while posting.
                unsafe {
                    (
                        (*r.mr.cast::<crate::mr::RxeMr>()).lkey().index(),
                        (*r.mr).iova,
                    )
                }
            };
            Remote::Reg {
                mr_index,
                iova,
                key: r.key,
                access: r.access as u32,
            }
        }
        Some(AtomicCmpAndSwp | AtomicFetchAndAdd) => {
            // SAFETY: By the caller's promise the request heads an `ib_atomic_wr`.
            let a = unsafe { &*wr.cast::<bindings::ib_atomic_wr>() };
            Remote::Atomic {
                addr: a.remote_addr,
                compare_add: a.compare_add,
                swap: a.swap,
                rkey: a.rkey,
            }
        }
        _ => Remote::None,
    }
}

/// The destination of a send on a UD or GSI QP.
///
/// # Safety
///
/// `wr` is the `wr` of a live `ib_ud_wr` whose `ah`, if not null, is an AH
/// of this device that lives for the call (ib_verbs.h's contract).
unsafe fn read_datagram(wr: *const bindings::ib_send_wr) -> Remote {
    // SAFETY: By the caller's promise the request heads an `ib_ud_wr`.
    let u = unsafe { &*wr.cast::<bindings::ib_ud_wr>() };
    let ah_num = if u.ah.is_null() {
        // Refused by the data path (no AH 0): the WR completes in error.
        0
    } else {
        // SAFETY: An AH of ours, live for the call (caller's promise),
        // whose body `create_ah` initialised.
        unsafe { (*u.ah.cast::<crate::ah::RxeAh>()).body.index }
    };
    Remote::Datagram(UdDest {
        remote_qpn: u.remote_qpn,
        remote_qkey: u.remote_qkey,
        pkey_index: u.pkey_index,
        ah_num,
    })
}

/// Posts one kernel send work request with its SGEs.
///
/// # Safety
///
/// `wr` is a live `ib_send_wr` as [`read_remote`] requires (on a UD or GSI
/// QP, as [`read_datagram`] requires), its `sg_list` holding `num_sge`
/// entries.
#[inline(never)]
unsafe fn post_one_send(qp: &crate::qp::RxeQp, wr: *const bindings::ib_send_wr) -> Result {
    // SAFETY: Live by the caller's promise.
    let w = unsafe { &*wr };
    let opcode = w.opcode;
    let remote = if qp.body.qp_type.is_datagram() {
        // SAFETY: The caller's promise.
        unsafe { read_datagram(wr) }
    } else {
        // SAFETY: The caller's promise.
        unsafe { read_remote(wr, opcode) }
    };
    let request = KernelSendWr {
        // SAFETY: Both union members are 64 bits; the bits are the cookie.
        wr_id: unsafe { w.__bindgen_anon_1.wr_id },
        opcode,
        send_flags: w.send_flags as u32,
        // SAFETY: Both union members are 32 bits; their bytes are stored.
        ex: unsafe { w.ex.invalidate_rkey }.to_ne_bytes(),
        remote,
    };
    if request.send_flags & send_flags::INLINE != 0 {
        // SAFETY: The caller's promise.
        return unsafe { post_one_inline(qp, w, &request) };
    }
    let mut sges = [Sge::default(); MAX_SGE];
    // SAFETY: The caller's promise.
    let sges = unsafe { read_sges(w.sg_list, w.num_sge, &mut sges) }?;
    crate::rc::post::post_send(qp, &request, SendPayload::Sges(sges))
}

/// Posts one inline send work request: the bytes its SGEs name are copied
/// into the WQE now, as the verbs promise (the buffers may be reused once
/// `post_send` returns).
///
/// # Safety
///
/// `w.sg_list` holds `w.num_sge` live entries.
#[inline(never)]
unsafe fn post_one_inline(
    qp: &crate::qp::RxeQp,
    w: &bindings::ib_send_wr,
    request: &KernelSendWr,
) -> Result {
    let mut sges = [Sge::default(); MAX_SGE];
    // SAFETY: The caller's promise.
    let sges = unsafe { read_sges(w.sg_list, w.num_sge, &mut sges) }?;
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
    crate::rc::post::post_send(qp, request, SendPayload::Inline(&data[..len]))
}

/// `.post_send`: queues a kernel caller's chain of send requests, or rings
/// a user QP's doorbell.
///
/// # Safety
///
/// Called by ib_core only (`ib_post_send`), with a live QP that
/// `create_qp_callback` made, a chain of live work requests (null-ended)
/// and a writable `bad_wr`.
pub(super) unsafe extern "C" fn post_send_callback(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours.
    let (rxe, qp) = unsafe { (super::ib::rxe_of((*ibqp).device), rxe_qp(ibqp)) };
    if qp.ibqp.is_user() {
        // librxe's doorbell: the work requests are in the mapped SQ ring.
        return from_result(|| crate::rc::send::doorbell(rxe, qp).map(|()| 0));
    }
    // With interrupts off the doorbell (which takes the QP lock) is left
    // to the QP's transmit work.
    let deferred = irqs_off();
    let ring = |qp| {
        if deferred {
            crate::rc::kick(qp);
            Ok(())
        } else {
            crate::rc::send::doorbell(rxe, qp)
        }
    };
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: A kernel caller passes a chain of live work requests.
        if let Err(e) = unsafe { post_one_send(qp, cur) } {
            // SAFETY: `bad_wr` is the caller's out-pointer (ib_post_send
            // substitutes a dummy for a null one).
            unsafe { *bad_wr = cur };
            // Requests before this one are posted: send them.
            let _ = ring(qp);
            return e.to_errno();
        }
        // SAFETY: As above.
        cur = unsafe { (*cur).next };
    }
    from_result(|| ring(qp).map(|()| 0))
}

/// Reads a receive work request: its cookie and SGEs.
///
/// # Safety
///
/// `wr` is a live `ib_recv_wr` whose `sg_list` holds `num_sge` entries.
unsafe fn read_recv<'a>(
    wr: *const bindings::ib_recv_wr,
    sges: &'a mut [Sge; MAX_SGE],
) -> Result<(u64, &'a [Sge])> {
    // SAFETY: Live by the caller's promise.
    let w = unsafe { &*wr };
    // SAFETY: Both union members are 64 bits; the bits are the cookie.
    let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
    // SAFETY: The caller's promise.
    Ok((wr_id, unsafe { read_sges(w.sg_list, w.num_sge, sges) }?))
}

/// Walks a receive chain, posting each request with `post`; on an error
/// the failing request goes to `bad_wr`.
///
/// # Safety
///
/// `wr` heads a chain of live `ib_recv_wr`s; `bad_wr` is writable.
unsafe fn post_recv_chain(
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
    mut post: impl FnMut(u64, &[Sge]) -> Result,
) -> c_int {
    if irqs_off() {
        // SAFETY: The caller's promise.
        unsafe { *bad_wr = wr };
        return EINVAL.to_errno();
    }
    let mut cur = wr;
    let mut sges = [Sge::default(); MAX_SGE];
    while !cur.is_null() {
        // SAFETY: The caller's promise.
        let posted = unsafe { read_recv(cur, &mut sges) }.and_then(|(wr_id, s)| post(wr_id, s));
        if let Err(e) = posted {
            // SAFETY: The caller's promise.
            unsafe { *bad_wr = cur };
            return e.to_errno();
        }
        // SAFETY: The caller's promise.
        cur = unsafe { (*cur).next };
    }
    0
}

/// `.post_recv`: queues a kernel caller's chain of receive requests.
///
/// # Safety
///
/// Called by ib_core only (`ib_post_recv`), with a live QP that
/// `create_qp_callback` made, a chain of live work requests (null-ended)
/// and a writable `bad_wr`.
pub(super) unsafe extern "C" fn post_recv_callback(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours.
    let (rxe, qp) = unsafe { (super::ib::rxe_of((*ibqp).device), rxe_qp(ibqp)) };
    if qp.ibqp.is_user() {
        // librxe writes receive WQEs into the mapped RQ ring itself; the
        // kernel must not race it as a second producer.
        // SAFETY: `bad_wr` is the caller's out-pointer.
        unsafe { *bad_wr = wr };
        return EOPNOTSUPP.to_errno();
    }
    // SAFETY: ib_post_recv's contract: a live chain and out-pointer.
    unsafe {
        post_recv_chain(wr, bad_wr, |wr_id, sges| {
            crate::rc::post::post_recv(rxe, qp, wr_id, sges)
        })
    }
}

/// `.post_srq_recv`: queues a kernel caller's chain of receive requests on
/// an SRQ.
///
/// # Safety
///
/// Called by ib_core only (`ib_post_srq_recv`), with a live SRQ that
/// `create_srq_callback` made, a chain of live work requests (null-ended)
/// and a writable `bad_wr`.
pub(super) unsafe extern "C" fn post_srq_recv_callback(
    ibsrq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: ib_core passes a live SRQ of ours.
    let srq = unsafe { rxe_srq(ibsrq) };
    if srq.ibsrq.is_user() {
        // As for a user QP's RQ.
        // SAFETY: `bad_wr` is the caller's out-pointer.
        unsafe { *bad_wr = wr };
        return EOPNOTSUPP.to_errno();
    }
    // SAFETY: ib_post_srq_recv's contract: a live chain and out-pointer.
    unsafe {
        post_recv_chain(wr, bad_wr, |wr_id, sges| {
            crate::rc::post::post_srq_recv(srq, wr_id, sges)
        })
    }
}
