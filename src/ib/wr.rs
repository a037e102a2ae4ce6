// SPDX-License-Identifier: GPL-2.0

//! Work requests of kernel ULPs: the chains of `ib_send_wr` / `ib_recv_wr`
//! that `post_send`, `post_recv` and `post_srq_recv` get, read one request
//! at a time through views ([`SendWr`], [`RecvWr`]) that follow their
//! pointers here, and the trampolines of the post verbs. On an error the
//! request the driver stopped at goes to `bad_wr`.
//!
//! Kernel ULPs are trusted to pass well-formed chains (as with every
//! driver); the addresses in them are the driver's to check.

use super::{device::device_of, Adapter, Driver};
use crate::sys::bindings;
use core::marker::PhantomData;
use kernel::prelude::*;

/// The chain of send requests of one `post_send`.
///
/// # Invariants
///
/// `next` and `current` are null or live `ib_send_wr`s of the chain, which
/// the caller of `post_send` keeps live for `'a`; each is the `wr` of the
/// opcode's wrapper struct (`ib_rdma_wr`, `ib_atomic_wr`, `ib_reg_wr`, or
/// `ib_ud_wr` on a datagram QP), whose `mr` or `ah` is null or an object
/// of the driver that lives for `'a` (ib_verbs.h's contract).
pub(crate) struct SendWrs<'a, D: Driver> {
    next: *const bindings::ib_send_wr,
    current: *const bindings::ib_send_wr,
    datagram: bool,
    _p: PhantomData<(&'a bindings::ib_send_wr, D)>,
}

impl<'a, D: Driver> SendWrs<'a, D> {
    /// The request the last [`SendWrs::next`] returned (the first before).
    fn current(&self) -> *const bindings::ib_send_wr {
        self.current
    }

    /// The next request of the chain.
    #[allow(clippy::should_implement_trait)]
    pub(crate) fn next(&mut self) -> Option<SendWr<'a, D>> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: Live by the type invariant.
        let raw = unsafe { &*self.next };
        self.next = raw.next;
        Some(SendWr {
            raw,
            datagram: self.datagram,
            _p: PhantomData,
        })
    }
}

/// One send request of a kernel ULP.
///
/// # Invariants
///
/// As [`SendWrs`]'s, for `raw`.
pub(crate) struct SendWr<'a, D: Driver> {
    raw: &'a bindings::ib_send_wr,
    datagram: bool,
    _p: PhantomData<D>,
}

/// The opcode-specific part of a send request.
pub(crate) enum SendRemote<'a, D: Driver> {
    /// A send without a remote part.
    None,
    /// RDMA WRITE or READ (`ib_rdma_wr`).
    Rdma {
        /// Remote address.
        addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Compare-and-swap or fetch-and-add (`ib_atomic_wr`).
    Atomic {
        /// Remote address.
        addr: u64,
        /// Compare value or addend.
        compare_add: u64,
        /// Swap value.
        swap: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Fast registration of a region (`ib_reg_wr`).
    Reg {
        /// The region (`None`: the ULP passed none).
        mr: Option<&'a D::Mr>,
        /// The region's I/O virtual address.
        iova: u64,
        /// The new key.
        key: u32,
        /// `IB_ACCESS_*`.
        access: u32,
    },
    /// A send on a datagram QP (`ib_ud_wr`).
    Datagram {
        /// The address handle (`None`: the ULP passed none).
        ah: Option<&'a D::Ah>,
        /// Destination QP.
        remote_qpn: u32,
        /// Destination Q_Key.
        remote_qkey: u32,
        /// P_Key index.
        pkey_index: u16,
    },
}

impl<'a, D: Driver> SendWr<'a, D> {
    /// The ULP's cookie.
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: Both union members are 64 bits; the bits are the cookie.
        unsafe { self.raw.__bindgen_anon_1.wr_id }
    }

    /// `IB_WR_*`.
    pub(crate) fn opcode(&self) -> u32 {
        self.raw.opcode
    }

    /// `IB_SEND_*`.
    pub(crate) fn send_flags(&self) -> u32 {
        self.raw.send_flags as u32
    }

    /// The immediate data or the key to invalidate, as stored.
    pub(crate) fn ex(&self) -> u32 {
        // SAFETY: Both union members are 32 bits.
        unsafe { self.raw.ex.invalidate_rkey }
    }

    /// The request's SGEs.
    pub(crate) fn sges(&self) -> Result<&'a [bindings::ib_sge]> {
        let n = usize::try_from(self.raw.num_sge).map_err(|_| EINVAL)?;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: A live request's `sg_list` holds `num_sge` entries (type
        // invariant).
        Ok(unsafe { core::slice::from_raw_parts(self.raw.sg_list, n) })
    }

    /// The opcode-specific part.
    pub(crate) fn remote(&self) -> SendRemote<'a, D> {
        let wr: *const bindings::ib_send_wr = self.raw;
        if self.datagram {
            // SAFETY: On a datagram QP the request heads an `ib_ud_wr`
            // whose `ah` is null or the driver's, live for `'a` (type
            // invariant).
            return unsafe {
                let u = &*wr.cast::<bindings::ib_ud_wr>();
                SendRemote::Datagram {
                    ah: (!u.ah.is_null()).then(|| super::object::<D::Ah>(u.ah)),
                    remote_qpn: u.remote_qpn,
                    remote_qkey: u.remote_qkey,
                    pkey_index: u.pkey_index,
                }
            };
        }
        match self.raw.opcode {
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
            | bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
                // SAFETY: The request heads an `ib_rdma_wr` (invariant).
                let r = unsafe { &*wr.cast::<bindings::ib_rdma_wr>() };
                SendRemote::Rdma {
                    addr: r.remote_addr,
                    rkey: r.rkey,
                }
            }
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                // SAFETY: The request heads an `ib_atomic_wr` (invariant).
                let a = unsafe { &*wr.cast::<bindings::ib_atomic_wr>() };
                SendRemote::Atomic {
                    addr: a.remote_addr,
                    compare_add: a.compare_add,
                    swap: a.swap,
                    rkey: a.rkey,
                }
            }
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: The request heads an `ib_reg_wr` whose `mr` is
                // null or a live region of the driver, whose `iova` the
                // ULP owns while posting (invariant).
                unsafe {
                    let r = &*wr.cast::<bindings::ib_reg_wr>();
                    let (mr, iova) = if r.mr.is_null() {
                        (None, 0)
                    } else {
                        (Some(super::object::<D::Mr>(r.mr)), (*r.mr).iova)
                    };
                    SendRemote::Reg {
                        mr,
                        iova,
                        key: r.key,
                        access: r.access as u32,
                    }
                }
            }
            _ => SendRemote::None,
        }
    }
}

/// The chain of receive requests of one `post_recv` / `post_srq_recv`.
///
/// # Invariants
///
/// `next` and `current` are null or live `ib_recv_wr`s of the chain, which
/// the caller keeps live for `'a`.
pub(crate) struct RecvWrs<'a> {
    next: *const bindings::ib_recv_wr,
    current: *const bindings::ib_recv_wr,
    _p: PhantomData<&'a bindings::ib_recv_wr>,
}

impl<'a> RecvWrs<'a> {
    /// The chain from `head`.
    ///
    /// # Safety
    ///
    /// `head` heads a null-ended chain of `ib_recv_wr`s live for `'a`.
    pub(super) unsafe fn new(head: *const bindings::ib_recv_wr) -> Self {
        RecvWrs {
            next: head,
            current: head,
            _p: PhantomData,
        }
    }

    /// The request the last [`RecvWrs::next`] returned (the first before).
    pub(super) fn current(&self) -> *const bindings::ib_recv_wr {
        self.current
    }

    /// The next request: its cookie and SGEs.
    #[allow(clippy::should_implement_trait)]
    pub(crate) fn next(&mut self) -> Option<Result<(u64, &'a [bindings::ib_sge])>> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: Live by the type invariant.
        let w = unsafe { &*self.next };
        self.next = w.next;
        // SAFETY: Both union members are 64 bits; the bits are the cookie.
        let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
        let Ok(n) = usize::try_from(w.num_sge) else {
            return Some(Err(EINVAL));
        };
        let sges = if n == 0 {
            &[][..]
        } else {
            // SAFETY: A live request's `sg_list` holds `num_sge` entries.
            unsafe { core::slice::from_raw_parts(w.sg_list, n) }
        };
        Some(Ok((wr_id, sges)))
    }
}

impl<D: Driver> Adapter<D> {
    /// `.post_send`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only (`ib_post_send`), with a live QP that
    /// `create_qp` made, a chain of live work requests (null-ended, as
    /// [`SendWrs`] describes) and a writable `bad_wr`.
    pub(super) unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: ib_core passes a live QP of `D`.
        let (dev, qp, qp_type) = unsafe {
            (
                device_of::<D>((*ibqp).device),
                super::object::<D::Qp>(ibqp),
                (*ibqp).qp_type,
            )
        };
        // INVARIANT: ib_post_send's contract.
        let mut wrs = SendWrs {
            next: wr,
            current: wr,
            datagram: qp_type == bindings::ib_qp_type_IB_QPT_UD
                || qp_type == bindings::ib_qp_type_IB_QPT_GSI,
            _p: PhantomData,
        };
        match <D::Qp as super::QpOps<D>>::post_send(dev, qp, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                // SAFETY: The caller's out-pointer (ib_post_send substitutes
                // a dummy for a null one).
                unsafe { *bad_wr = wrs.current() };
                e.to_errno()
            }
        }
    }

    /// `.post_recv`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only (`ib_post_recv`), with a live QP that
    /// `create_qp` made, a chain of live work requests (null-ended) and a
    /// writable `bad_wr`.
    pub(super) unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: ib_core passes a live QP of `D`.
        let (dev, qp) = unsafe { (device_of::<D>((*ibqp).device), super::object::<D::Qp>(ibqp)) };
        // SAFETY: ib_post_recv's contract: a live chain.
        let mut wrs = unsafe { RecvWrs::new(wr) };
        match <D::Qp as super::QpOps<D>>::post_recv(dev, qp, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                // SAFETY: The caller's out-pointer.
                unsafe { *bad_wr = wrs.current() };
                e.to_errno()
            }
        }
    }
}
