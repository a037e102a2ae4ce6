// SPDX-License-Identifier: GPL-2.0

//! Memory windows (IBTA 10.6.7): a window is an rkey that grants a peer a
//! narrower access to part of a memory region. This file decides binding
//! (`IB_WR_BIND_MW`, which librxe also uses for `ibv_bind_mw`),
//! invalidation (LOCAL_INV, SEND_WITH_INV) and every remote access made
//! through a window's rkey; the kernel layer stores windows and moves the
//! bytes in the region the window is bound to.
//!
//! Type 1 windows are bound through `ibv_bind_mw` and are Valid from
//! allocation on (bound to nothing until the first bind); they cannot be
//! invalidated. Type 2 windows (2B) start Free, are bound by a BIND_MW
//! work request to the QP that posted it, and return to Free when
//! invalidated locally or by the peer. Window keys use the indices above
//! the regions' ([`MW_INDEX_MIN`]).

use super::access::{AccessError, Extent, MemKey, SUPPORTED_MR_ACCESS};
use crate::abi::values::access;

pub use super::access::MW_INDEX_MIN;

/// Highest window index (rxe's `RXE_MAX_MW_INDEX`).
pub const MW_INDEX_MAX: u32 = 0x10_0000;

/// Access bits a bind may ask for (rxe's `RXE_ACCESS_SUPPORTED_MW`).
pub const SUPPORTED_MW_ACCESS: u32 = SUPPORTED_MR_ACCESS | access::ZERO_BASED;

/// Whether `key` names a memory window rather than a region.
pub const fn names_window(key: MemKey) -> bool {
    let i = key.index();
    i >= MW_INDEX_MIN && i <= MW_INDEX_MAX
}

/// The two kinds of window (`IB_MW_TYPE_1`, `IB_MW_TYPE_2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowType {
    /// Bound through `ibv_bind_mw`; its binding is not tied to a QP.
    One,
    /// Bound by a BIND_MW work request, usable only through that QP.
    Two,
}

/// Where a window is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowState {
    /// A type 2 window that is not bound.
    Free,
    /// Usable (a type 1 window from allocation on, a type 2 once bound).
    Valid,
    /// Deallocated.
    Invalid,
}

/// The QP that binds, invalidates or accesses through a window: its
/// protection domain (an identity, compared, never dereferenced) and its
/// QP number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowUser {
    /// The QP's protection domain.
    pub pd: usize,
    /// The QP's number.
    pub qpn: u32,
}

/// A BIND_MW work request, as posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindRequest {
    /// First address of the window (an offset when `ZERO_BASED`).
    pub addr: u64,
    /// Length of the window; 0 unbinds a type 1 window.
    pub length: u64,
    /// lkey of the region to bind to.
    pub mr_lkey: u32,
    /// The window's current rkey.
    pub mw_rkey: u32,
    /// The rkey after the bind: only its low byte (the consumer key) is
    /// taken.
    pub new_rkey: u32,
    /// `IB_ACCESS_*` bits the window grants.
    pub access: u32,
}

/// What the key table knows of the region a bind names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindTarget {
    /// The region's lkey.
    pub lkey: MemKey,
    /// Its protection domain.
    pub pd: usize,
    /// Its registered access bits.
    pub access: u32,
    /// The addresses it covers.
    pub extent: Extent,
}

/// Why a bind failed (each completes the work request with
/// `IB_WC_MW_BIND_ERR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// The window key is not the window's current key.
    StaleKey,
    /// The bind asks for access bits windows do not support.
    Unsupported,
    /// Type 1 not Valid, or type 2 not Free (o10-37.2.30).
    WrongState,
    /// A type 1 window cannot be zero based (o10-36.2.2).
    ZeroBasedType1,
    /// A type 2 bind names no region or has length 0 (o10-37.2.40).
    NoRegion,
    /// The region's lkey is not `mr_lkey`.
    StaleRegionKey,
    /// The QP, the window and the region are not in one PD (C10-72).
    WrongPd,
    /// The region is zero based, or cannot carry windows.
    NotBindable,
    /// The region was not registered with `MW_BIND` (C10-73).
    NoBindAccess,
    /// A writable or atomic window over a region without local write
    /// (C10-74).
    NeedsLocalWrite,
    /// The window does not lie inside the region (C10-75).
    OutOfRegion,
}

/// What a bind, invalidation or deallocation changed in the region
/// bindings, so that the kernel layer can keep each region's count of
/// windows bound to it (a region with windows cannot be deregistered).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindingChange {
    /// The region the window was bound to before, if any.
    pub released: Option<MemKey>,
    /// The region it is bound to now, if a bind made one.
    pub bound: Option<MemKey>,
}

/// The part of a region a window grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Binding {
    /// lkey of the region.
    mr_lkey: MemKey,
    /// First address, in the region's addresses.
    addr: u64,
    /// Length in bytes (never 0).
    length: u64,
    /// Granted access bits.
    access: u32,
    /// Whether peers address it from 0 instead of from `addr`.
    zero_based: bool,
    /// The QP it is bound to (type 2 only).
    qpn: Option<u32>,
}

/// A memory window.
///
/// # Invariants
///
/// `binding` is `None` unless `state` is Valid; a type 2 window's binding
/// always names its QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    kind: WindowType,
    state: WindowState,
    rkey: MemKey,
    pd: usize,
    binding: Option<Binding>,
}

impl Window {
    /// A new window of protection domain `pd` with key `rkey`: type 1
    /// Valid, type 2 Free (as rxe's `rxe_alloc_mw`).
    pub const fn new(kind: WindowType, rkey: MemKey, pd: usize) -> Window {
        let state = match kind {
            WindowType::One => WindowState::Valid,
            WindowType::Two => WindowState::Free,
        };
        Window {
            kind,
            state,
            rkey,
            pd,
            binding: None,
        }
    }

    /// The window's current rkey.
    pub const fn rkey(&self) -> MemKey {
        self.rkey
    }

    /// Its state.
    pub const fn state(&self) -> WindowState {
        self.state
    }

    /// Its type.
    pub const fn kind(&self) -> WindowType {
        self.kind
    }

    /// The region the window is bound to, if any.
    pub fn bound_region(&self) -> Option<MemKey> {
        self.binding.map(|b| b.mr_lkey)
    }

    /// Binds the window as `req` asks, for the QP `user`; `target` is the
    /// region `req.mr_lkey`'s index names (`None` when no live region has
    /// it). With length 0 a type 1 window is unbound. The checks follow
    /// IBTA's order as rxe applies them, so the error names the first
    /// thing wrong.
    pub fn bind(
        &mut self,
        user: WindowUser,
        req: &BindRequest,
        target: Option<&BindTarget>,
    ) -> Result<BindingChange, BindError> {
        if req.mw_rkey != self.rkey.0 {
            return Err(BindError::StaleKey);
        }
        let region = if req.length != 0 {
            let t = target.ok_or(BindError::NoRegion)?;
            if t.lkey.0 != req.mr_lkey {
                return Err(BindError::StaleRegionKey);
            }
            Some(t)
        } else {
            None
        };
        if req.access & !SUPPORTED_MW_ACCESS != 0 {
            return Err(BindError::Unsupported);
        }
        let zero_based = req.access & access::ZERO_BASED != 0;
        match self.kind {
            WindowType::One => {
                if self.state != WindowState::Valid {
                    return Err(BindError::WrongState);
                }
                if zero_based {
                    return Err(BindError::ZeroBasedType1);
                }
            }
            WindowType::Two => {
                if self.state != WindowState::Free {
                    return Err(BindError::WrongState);
                }
                if region.is_none() {
                    return Err(BindError::NoRegion);
                }
            }
        }
        if user.pd != self.pd {
            return Err(BindError::WrongPd);
        }
        if let Some(t) = region {
            check_target(t, user, req)?;
        }
        let released = self.binding.map(|b| b.mr_lkey);
        self.rkey = MemKey::new(self.rkey.index(), req.new_rkey as u8);
        self.state = WindowState::Valid;
        self.binding = region.map(|t| Binding {
            mr_lkey: t.lkey,
            addr: req.addr,
            length: req.length,
            access: req.access,
            zero_based,
            qpn: match self.kind {
                WindowType::One => None,
                WindowType::Two => Some(user.qpn),
            },
        });
        Ok(BindingChange {
            released,
            bound: self.bound_region(),
        })
    }

    /// Decides a peer's access through key `key` by the QP `user` to
    /// `[va, va + len)` with the access bits `need`. Returns the region's
    /// lkey and the address in the region's own addresses where the
    /// access starts. Unlike rxe, the range is checked against the window,
    /// not only against the region behind it.
    pub fn check(
        &self,
        key: MemKey,
        user: WindowUser,
        need: u32,
        va: u64,
        len: u64,
    ) -> Result<(MemKey, u64), AccessError> {
        if key != self.rkey {
            return Err(AccessError::StaleKey);
        }
        if self.state != WindowState::Valid {
            return Err(AccessError::NotValid);
        }
        if user.pd != self.pd {
            return Err(AccessError::WrongPd);
        }
        let b = self.binding.ok_or(AccessError::NotValid)?;
        if b.qpn.is_some_and(|qpn| qpn != user.qpn) {
            return Err(AccessError::WrongPd);
        }
        if need & !b.access != 0 {
            return Err(AccessError::NotPermitted);
        }
        if b.zero_based {
            let off = Extent::Range {
                iova: 0,
                length: b.length,
            }
            .offset_of(va, len)?;
            Ok((b.mr_lkey, b.addr + off))
        } else {
            Extent::Range {
                iova: b.addr,
                length: b.length,
            }
            .offset_of(va, len)?;
            Ok((b.mr_lkey, va))
        }
    }

    /// Invalidates a type 2 window by key `key` on behalf of the QP `user`
    /// (its LOCAL_INV, or the peer's SEND_WITH_INV arriving on it): it
    /// becomes Free. A type 1 window cannot be invalidated (o10-37.2.26);
    /// a bound type 2 window only by the QP it is bound to, and a free one
    /// only by a QP of its PD (rxe checks neither, so any QP that guesses
    /// a key could unbind another PD's window).
    pub fn invalidate(
        &mut self,
        key: MemKey,
        user: WindowUser,
    ) -> Result<BindingChange, AccessError> {
        if key != self.rkey {
            return Err(AccessError::StaleKey);
        }
        if self.state == WindowState::Invalid || self.kind == WindowType::One {
            return Err(AccessError::NotValid);
        }
        if user.pd != self.pd
            || self
                .binding
                .is_some_and(|b| b.qpn.is_some_and(|qpn| qpn != user.qpn))
        {
            return Err(AccessError::WrongPd);
        }
        let released = self.binding.take().map(|b| b.mr_lkey);
        self.state = WindowState::Free;
        Ok(BindingChange {
            released,
            bound: None,
        })
    }

    /// The QP `user` is being destroyed: a type 2 window bound to it
    /// returns to Free (no QP can use it any more, and a later QP that
    /// gets the same number must not inherit it). Returns what changed,
    /// if anything did.
    pub fn qp_destroyed(&mut self, user: WindowUser) -> Option<BindingChange> {
        let bound_here = self.pd == user.pd
            && self
                .binding
                .is_some_and(|b| b.qpn.is_some_and(|qpn| qpn == user.qpn));
        if !bound_here {
            return None;
        }
        let released = self.binding.take().map(|b| b.mr_lkey);
        self.state = WindowState::Free;
        Some(BindingChange {
            released,
            bound: None,
        })
    }

    /// Deallocates the window (`dealloc_mw`): Invalid, bound to nothing.
    pub fn deallocate(&mut self) -> BindingChange {
        let released = self.binding.take().map(|b| b.mr_lkey);
        self.state = WindowState::Invalid;
        BindingChange {
            released,
            bound: None,
        }
    }
}

/// The region checks of a bind (C10-72 to C10-75).
fn check_target(t: &BindTarget, user: WindowUser, req: &BindRequest) -> Result<(), BindError> {
    if t.pd != user.pd {
        return Err(BindError::WrongPd);
    }
    if t.access & access::ZERO_BASED != 0 {
        return Err(BindError::NotBindable);
    }
    if t.access & access::MW_BIND == 0 {
        return Err(BindError::NoBindAccess);
    }
    if req.access & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0
        && t.access & access::LOCAL_WRITE == 0
    {
        return Err(BindError::NeedsLocalWrite);
    }
    if !matches!(t.extent, Extent::Range { .. }) {
        // A DMA region has no bounds to bind inside.
        return Err(BindError::NotBindable);
    }
    // A zero-based window too covers `[addr, addr + length)` of the
    // region; peers address it from 0 (rxe checks only its length here).
    t.extent
        .offset_of(req.addr, req.length)
        .map(|_| ())
        .map_err(|_| BindError::OutOfRegion)
}
