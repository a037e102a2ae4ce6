// SPDX-License-Identifier: GPL-2.0

//! Memory the data path reads and writes: a send WQE's payload (inline bytes
//! or SGEs under lkeys), a receive WQE's SGEs, and ranges named by an rkey.
//! Every access is decided by the key table ([`RegionKeys::check`]: key,
//! protection domain, permission, bounds) before a byte moves. An
//! on-demand-paging region moves bytes only while its pages are resident
//! (else [`AccessError::NotResident`], and a fault is asked for); the
//! `*_resident` functions let a caller find out first, and wait.

use crate::{
    abi::{
        send_wqe::{Payload, SendOp, SendWqe as PostedWqe, SgeList},
        values::access,
    },
    device::RxeDevice,
    mr::{MrMemory, RxeMr},
    odp::FaultRequest,
    proto::{
        access::{AccessError, FastReg, KeyUse, MemKey, RegionKeys},
        window::{names_window, WindowUser},
    },
    sys::{odp::NotResident, table::TableRef, umem::PageSpan},
};
use kernel::page::{PAGE_SHIFT, PAGE_SIZE};

/// Which way bytes move between a buffer and a region.
enum Io<'a> {
    /// From the region into the buffer.
    Read(&'a mut [u8]),
    /// From the buffer into the region.
    Write(&'a [u8]),
}

impl Io<'_> {
    fn len(&self) -> usize {
        match self {
            Io::Read(b) => b.len(),
            Io::Write(b) => b.len(),
        }
    }
}

/// What an access asks of a key: the QP `user` wants `need` (region
/// access bits; 0 to read its own memory) at `va` through `key`, used as
/// `key_use` (its own lkey, or a remote rkey). The length goes with the
/// bytes that move.
#[derive(Clone, Copy)]
struct KeyAccess {
    key: MemKey,
    key_use: KeyUse,
    user: WindowUser,
    need: u32,
    va: u64,
}

impl KeyAccess {
    /// Through an lkey of the QP's protection domain `pd` (the QP's own
    /// keys never name a window, so its number does not matter).
    fn local(lkey: u32, pd: usize, need: u32, va: u64) -> KeyAccess {
        KeyAccess {
            key: MemKey(lkey),
            key_use: KeyUse::Local,
            user: WindowUser { pd, qpn: 0 },
            need,
            va,
        }
    }

    /// Through an rkey (a region's or a memory window's) by the QP `user`.
    fn remote(rkey: u32, user: WindowUser, need: u32, va: u64) -> KeyAccess {
        KeyAccess {
            key: MemKey(rkey),
            key_use: KeyUse::Remote,
            user,
            need,
            va,
        }
    }

    /// The key table's check of `len` bytes of this access against the
    /// keys a region holds: the offset in the region they start at.
    fn check(&self, keys: &RegionKeys, len: u64) -> Result<u64, AccessError> {
        keys.check(
            self.key,
            self.key_use,
            self.user.pd,
            self.need,
            self.va,
            len,
        )
    }

    /// [`KeyAccess::check`] against a fast-registration region's current
    /// registration (its lock held by the caller).
    fn check_fast(&self, reg: &FastReg, len: u64) -> Result<u64, AccessError> {
        reg.check(
            self.key,
            self.key_use,
            self.user.pd,
            self.need,
            self.va,
            len,
        )
    }
}

/// A key resolved to the region it names, for an access the key table
/// allows.
enum Resolved {
    /// A region whose pages stay as they are while it is held (user, DMA,
    /// on-demand paging; a window's region is one of these): the access
    /// is decided and starts `off` bytes into it.
    Placed { mr: TableRef<RxeMr>, off: u64 },
    /// A fast-registration region: a new registration or an invalidation
    /// can change it at any time, so its key check and the access itself
    /// belong under its lock, together (see [`fast_io`]).
    Fast { mr: TableRef<RxeMr> },
}

/// Resolves the key of `access` (a region's, or for a remote key a memory
/// window's) for `len` bytes. The one place a key becomes a region: every
/// access and every check goes through it.
fn resolve(rxe: &RxeDevice, access: &KeyAccess, len: u64) -> Result<Resolved, AccessError> {
    if names_window(access.key) {
        // A QP's own lkeys never name a window.
        if access.key_use == KeyUse::Local {
            return Err(AccessError::UnknownKey);
        }
        let (mr, off) =
            crate::mw::resolve(rxe, access.key, access.user, access.need, access.va, len)?;
        return Ok(Resolved::Placed { mr, off });
    }
    let mr = rxe
        .keys
        .lookup(access.key.index())
        .ok_or(AccessError::UnknownKey)?;
    if matches!(mr.memory, MrMemory::Fast(_)) {
        return Ok(Resolved::Fast { mr });
    }
    let off = access.check(&mr.keys(), len)?;
    Ok(Resolved::Placed { mr, off })
}

/// [`resolve`] for a caller that moves no bytes: a fast-registration
/// region's key is checked too (under its lock, released again), and the
/// region and the access's offset in it are returned.
fn decide(
    rxe: &RxeDevice,
    access: &KeyAccess,
    len: u64,
) -> Result<(TableRef<RxeMr>, u64), AccessError> {
    match resolve(rxe, access, len)? {
        Resolved::Placed { mr, off } => Ok((mr, off)),
        Resolved::Fast { mr } => {
            let MrMemory::Fast(fast) = &mr.memory else {
                return Err(AccessError::NotValid);
            };
            let off = access.check_fast(&fast.state.lock().reg, len)?;
            Ok((mr, off))
        }
    }
}

/// Moves bytes between `io` and the region the key of `access` names
/// (directly, or for a remote key through a memory window), if the key
/// table allows it.
fn region_io(rxe: &RxeDevice, access: &KeyAccess, io: Io<'_>) -> Result<(), AccessError> {
    match resolve(rxe, access, io.len() as u64)? {
        Resolved::Placed { mr, off } => placed_io(&mr, off, access.va, io),
        Resolved::Fast { mr } => fast_io(&mr, access, io),
    }
}

/// Moves bytes between `io` and the user or DMA region `mr`, at offset
/// `off` in the region (kernel virtual address `va` for a DMA region), once
/// the access is decided.
fn placed_io(mr: &RxeMr, off: u64, va: u64, io: Io<'_>) -> Result<(), AccessError> {
    let len = io.len();
    match &mr.memory {
        MrMemory::User {
            first_page_offset,
            pages,
            ..
        } => match io {
            Io::Read(buf) => crate::mr::copy_out(pages, *first_page_offset, off, buf),
            Io::Write(buf) => crate::mr::copy_in(pages, *first_page_offset, off, buf),
        }
        .map_err(|_| AccessError::OutOfBounds),
        // The addresses are kernel virtual addresses (a kernel ULP's).
        MrMemory::Dma => match io {
            Io::Read(buf) => crate::sys::kva::read(va, buf),
            Io::Write(buf) => crate::sys::kva::write(va, buf),
        }
        .map_err(|_| AccessError::OutOfBounds),
        MrMemory::Fast(_) => Err(AccessError::NotValid),
        MrMemory::Odp(region) => {
            let uva = region.start.wrapping_add(off);
            let (copied, write) = match io {
                Io::Read(buf) => (region.umem.copy_out(uva, buf), false),
                Io::Write(buf) => (region.umem.copy_in(uva, buf), true),
            };
            copied.map_err(
                |NotResident| match region.request_fault(uva, len as u64, write, None) {
                    FaultRequest::Queued => AccessError::NotResident,
                    FaultRequest::Unmapped => AccessError::OutOfBounds,
                },
            )
        }
    }
}

/// The `len` bytes of `access`'s region (directly, or for a remote key
/// through a memory window), lent without a copy with a reference on
/// their page, where the key table allows the access and they lie in one
/// page: of pinned user
/// memory, or of a kernel ULP's page-allocator memory in the linear map
/// (DMA and fast-registration regions; not slab nor large kmalloc
/// memory, see [`PageSpan::at_kernel_address`]). `None` where they are to
/// be copied instead: an on-demand-paging region, bytes across a page
/// boundary, or an access the key table refuses (the copy then refuses
/// it the same way, and says why).
fn region_page(rxe: &RxeDevice, access: &KeyAccess, len: usize) -> Option<PageSpan> {
    let (mr, off) = match resolve(rxe, access, len as u64).ok()? {
        Resolved::Placed { mr, off } => (mr, off),
        Resolved::Fast { mr } => return fast_page(&mr, access, len),
    };
    match &mr.memory {
        MrMemory::User {
            first_page_offset,
            pages,
            ..
        } => {
            let at = first_page_offset.checked_add(off)?;
            let page = usize::try_from(at >> PAGE_SHIFT).ok()?;
            let in_page = (at & (PAGE_SIZE as u64 - 1)) as usize;
            // The span takes its own reference on the page while the
            // region (so its pin) is held here: it stays valid if the
            // region goes next.
            pages.span(page, in_page, len)
        }
        // The addresses are kernel virtual addresses (a kernel ULP's).
        MrMemory::Dma => PageSpan::at_kernel_address(access.va, len),
        MrMemory::Fast(_) | MrMemory::Odp(_) => None,
    }
}

/// [`region_page`] on a fast-registration region: the key check and the
/// page reference under the region's lock, so that no invalidation or
/// new registration comes between them (its pages are kernel virtual
/// addresses, see [`fast_io`]).
fn fast_page(mr: &RxeMr, access: &KeyAccess, len: usize) -> Option<PageSpan> {
    let MrMemory::Fast(fast) = &mr.memory else {
        return None;
    };
    let state = fast.state.lock();
    let off = access.check_fast(&state.reg, len as u64).ok()?;
    let mut chunks = state.reg.map().chunks(off, len as u64);
    let chunk = chunks.next()?;
    if chunk.len != len || chunks.next().is_some() {
        return None;
    }
    let page = *state.live.get(chunk.page)?;
    PageSpan::at_kernel_address(page.wrapping_add(chunk.offset as u64), len)
}

/// Bytes `[offset, offset + len)` of a send WQE's payload, lent without a
/// copy (see [`region_page`]), where they lie in one SGE, in one page of
/// pinned user memory; `None` where [`gather`] is to copy them.
pub(crate) fn gather_page(
    rxe: &RxeDevice,
    pd: usize,
    wqe: &PostedWqe,
    offset: u32,
    len: usize,
) -> Option<PageSpan> {
    let Payload::Sges(sges) = &wqe.payload else {
        return None;
    };
    let mut piece = None;
    sge_walk(sges, offset, len, |lkey, va, done, n| {
        piece = (done == 0 && n == len).then_some((lkey, va));
        Ok(())
    })
    .ok()?;
    let (lkey, va) = piece?;
    region_page(rxe, &KeyAccess::local(lkey, pd, 0, va), len)
}

/// The bytes [`remote_read`] would copy, lent without a copy (see
/// [`region_page`]) where they lie in one page of pinned user memory;
/// `None` where `remote_read` is to copy them (and for no bytes at all).
pub(crate) fn remote_read_page(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    va: u64,
    len: usize,
) -> Option<PageSpan> {
    if len == 0 {
        return None;
    }
    let read = KeyAccess::remote(rkey, user, access::REMOTE_READ, va);
    region_page(rxe, &read, len)
}

/// Whether `[off, off + len)` of region `mr` can be accessed (written if
/// `write`) without waiting for pages; if not, a fault is asked for that
/// kicks the QP `wake` when done. `Err` when the pages cannot come in.
fn region_resident(
    mr: &RxeMr,
    off: u64,
    len: u64,
    write: bool,
    wake: Option<u32>,
) -> Result<bool, AccessError> {
    let MrMemory::Odp(region) = &mr.memory else {
        return Ok(true);
    };
    let uva = region.start.wrapping_add(off);
    if region.umem.resident(uva, len, write) {
        return Ok(true);
    }
    match region.request_fault(uva, len, write, wake) {
        FaultRequest::Queued => Ok(false),
        FaultRequest::Unmapped => Err(AccessError::OutOfBounds),
    }
}

/// [`region_io`] on a fast-registration region: the key check and the copy
/// under the region's lock, so that no invalidation or new registration
/// comes between them. The page list holds kernel virtual addresses (rxe
/// maps DMA to virtual addresses), copied to and from as the DMA region's.
fn fast_io(mr: &RxeMr, access: &KeyAccess, io: Io<'_>) -> Result<(), AccessError> {
    let MrMemory::Fast(fast) = &mr.memory else {
        return Err(AccessError::NotValid);
    };
    let state = fast.state.lock();
    let len = io.len();
    let off = access.check_fast(&state.reg, len as u64)?;
    let mut done = 0usize;
    let mut io = io;
    for chunk in state.reg.map().chunks(off, len as u64) {
        let page = *state.live.get(chunk.page).ok_or(AccessError::OutOfBounds)?;
        let addr = page.wrapping_add(chunk.offset as u64);
        let end = done + chunk.len;
        let copied = match &mut io {
            Io::Read(buf) => buf
                .get_mut(done..end)
                .map(|part| crate::sys::kva::read(addr, part).is_ok()),
            Io::Write(buf) => buf
                .get(done..end)
                .map(|part| crate::sys::kva::write(addr, part).is_ok()),
        };
        if copied != Some(true) {
            return Err(AccessError::OutOfBounds);
        }
        done = end;
    }
    Ok(())
}

/// Walks the bytes `[offset, offset + total)` of the concatenation of
/// `sges`: `f(lkey, va, done, n)` for each piece of `n` bytes at `va` under
/// `lkey`, the `done` bytes before it already walked. `OutOfBounds` if the
/// SGEs end first.
fn sge_walk(
    sges: &SgeList,
    offset: u32,
    total: usize,
    mut f: impl FnMut(u32, u64, usize, usize) -> Result<(), AccessError>,
) -> Result<(), AccessError> {
    let mut done = 0usize;
    let mut pos = 0u64;
    let start = u64::from(offset);
    for sge in sges.as_slice() {
        if done == total {
            break;
        }
        let sge_end = pos + u64::from(sge.length);
        let at = start + done as u64;
        if at < sge_end {
            let in_sge = at - pos;
            let n = ((sge_end - at) as usize).min(total - done);
            f(sge.lkey, sge.addr.wrapping_add(in_sge), done, n)?;
            done += n;
        }
        pos = sge_end;
    }
    if done == total {
        Ok(())
    } else {
        Err(AccessError::OutOfBounds)
    }
}

/// Walks the bytes `[offset, offset + io.len())` of the concatenation of
/// `sges` (lkeys of `pd`), moving each piece with `need` access.
fn sge_io(
    rxe: &RxeDevice,
    pd: usize,
    sges: &SgeList,
    need: u32,
    offset: u32,
    mut io: Io<'_>,
) -> Result<(), AccessError> {
    sge_walk(sges, offset, io.len(), |lkey, va, done, n| {
        let piece = match &mut io {
            Io::Read(b) => Io::Read(&mut b[done..done + n]),
            Io::Write(b) => Io::Write(&b[done..done + n]),
        };
        region_io(rxe, &KeyAccess::local(lkey, pd, need, va), piece)
    })
}

/// Whether bytes `[offset, offset + len)` of the buffers `sges` describe
/// (`pd`'s lkeys) can be accessed (written if `write`) without waiting for
/// pages. For pieces in on-demand-paging regions that cannot, a fault is
/// asked for that kicks the QP `wake` when done. A piece the key table
/// refuses counts as resident: the access itself reports the error. `Err`
/// when pages cannot come in.
pub(crate) fn sges_resident(
    rxe: &RxeDevice,
    pd: usize,
    sges: &SgeList,
    offset: u32,
    len: u32,
    write: bool,
    wake: Option<u32>,
) -> Result<bool, AccessError> {
    if !rxe.has_odp_regions() {
        return Ok(true);
    }
    let mut resident = true;
    let walked = sge_walk(sges, offset, len as usize, |lkey, va, _, n| {
        let Ok((mr, off)) = decide(rxe, &KeyAccess::local(lkey, pd, 0, va), n as u64) else {
            return Ok(());
        };
        resident &= region_resident(&mr, off, n as u64, write, wake)?;
        Ok(())
    });
    match walked {
        Err(AccessError::OutOfBounds) | Ok(()) => Ok(resident),
        Err(e) => Err(e),
    }
}

/// [`sges_resident`] for the whole payload of a send WQE (read for
/// SEND/WRITE, written for READ and atomics: `write`).
pub(crate) fn wqe_resident(
    rxe: &RxeDevice,
    pd: usize,
    wqe: &PostedWqe,
    write: bool,
    wake: u32,
) -> Result<bool, AccessError> {
    let Payload::Sges(sges) = &wqe.payload else {
        return Ok(true);
    };
    if !rxe.has_odp_regions() {
        return Ok(true);
    }
    let total: u64 = sges.as_slice().iter().map(|s| u64::from(s.length)).sum();
    let len = u32::try_from(total).unwrap_or(u32::MAX);
    sges_resident(rxe, pd, sges, 0, len, write, Some(wake))
}

/// Whether `[va, va + len)` of the region or window `rkey` names can be
/// accessed (written if `write`) by the QP `user` without waiting for
/// pages; if not, a fault is asked for. A range the key table refuses
/// counts as resident (the access check reports it). `Err` when pages
/// cannot come in.
pub(crate) fn remote_resident(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    va: u64,
    len: u64,
    write: bool,
) -> Result<bool, AccessError> {
    if !rxe.has_odp_regions() {
        return Ok(true);
    }
    let Ok((mr, off)) = decide(rxe, &KeyAccess::remote(rkey, user, 0, va), len) else {
        return Ok(true);
    };
    region_resident(&mr, off, len, write, None)
}

/// Copies bytes `[offset, offset + dst.len())` of a send WQE's payload into
/// `dst`.
pub(crate) fn gather(
    rxe: &RxeDevice,
    pd: usize,
    wqe: &PostedWqe,
    offset: u32,
    dst: &mut [u8],
) -> Result<(), AccessError> {
    match &wqe.payload {
        Payload::Inline(data) => {
            let start = offset as usize;
            let src = data
                .as_slice()
                .get(start..start + dst.len())
                .ok_or(AccessError::OutOfBounds)?;
            dst.copy_from_slice(src);
            Ok(())
        }
        Payload::Sges(sges) => sge_io(rxe, pd, sges, 0, offset, Io::Read(dst)),
        // ATOMIC_WRITE's payload is the value the WQE carries.
        Payload::None => match wqe.op {
            SendOp::AtomicWrite { value, .. } => {
                let start = offset as usize;
                let src = value
                    .get(start..start + dst.len())
                    .ok_or(AccessError::OutOfBounds)?;
                dst.copy_from_slice(src);
                Ok(())
            }
            _ if dst.is_empty() => Ok(()),
            _ => Err(AccessError::OutOfBounds),
        },
    }
}

/// Checks that every SGE of a send WQE names memory the QP may read: the
/// lkey, the PD and the range (a WQE that fails completes with a local
/// protection error before any packet leaves). `write` asks for local write
/// access (READ and atomic responses land there).
pub(crate) fn check_sges(
    rxe: &RxeDevice,
    pd: usize,
    wqe: &PostedWqe,
    write: bool,
) -> Result<(), AccessError> {
    let Payload::Sges(sges) = &wqe.payload else {
        return Ok(());
    };
    let need = if write { access::LOCAL_WRITE } else { 0 };
    for sge in sges.as_slice().iter().filter(|s| s.length != 0) {
        let read = KeyAccess::local(sge.lkey, pd, need, sge.addr);
        decide(rxe, &read, u64::from(sge.length))?;
    }
    Ok(())
}

/// Copies `src` to bytes `[offset, offset + src.len())` of the buffers
/// `sges` describe (receive WQEs, READ responses, atomic results).
pub(crate) fn scatter(
    rxe: &RxeDevice,
    pd: usize,
    sges: &SgeList,
    offset: u32,
    src: &[u8],
) -> Result<(), AccessError> {
    sge_io(rxe, pd, sges, access::LOCAL_WRITE, offset, Io::Write(src))
}

/// Writes `src` at `va` of the region `rkey` names (RDMA WRITE).
pub(crate) fn remote_write(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    va: u64,
    src: &[u8],
) -> Result<(), AccessError> {
    let write = KeyAccess::remote(rkey, user, access::REMOTE_WRITE, va);
    region_io(rxe, &write, Io::Write(src))
}

/// Reads `dst.len()` bytes at `va` of the region `rkey` names (RDMA READ).
pub(crate) fn remote_read(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    va: u64,
    dst: &mut [u8],
) -> Result<(), AccessError> {
    if dst.is_empty() {
        // A zero-length READ names no memory and checks no key (rxe answers
        // it with an empty response whatever its rkey).
        return Ok(());
    }
    let read = KeyAccess::remote(rkey, user, access::REMOTE_READ, va);
    region_io(rxe, &read, Io::Read(dst))
}

/// Whether the key table lets the QP `user` access `[va, va + len)` of `rkey` with
/// `need` (checked once per message, before anything is placed).
pub(crate) fn check_remote(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    need: u32,
    va: u64,
    len: u64,
) -> Result<(), AccessError> {
    decide(rxe, &KeyAccess::remote(rkey, user, need, va), len).map(|_| ())
}

/// Executes an 8-byte atomic at `va` of `rkey` with `need` access
/// (`REMOTE_ATOMIC`; `REMOTE_WRITE` for ATOMIC_WRITE): `op` maps the
/// original value to the new one. Returns the original value. Atomics of
/// all QPs are serialised by `lock`; the 8 aligned bytes lie in one page
/// and are read and written as one piece each.
pub(crate) fn remote_atomic(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    need: u32,
    va: u64,
    op: impl FnOnce(u64) -> u64,
) -> Result<u64, AccessError> {
    let _guard = crate::rc::ATOMIC_LOCK.lock();
    let word = KeyAccess::remote(rkey, user, need, va);
    let mut orig = [0u8; 8];
    region_io(rxe, &word, Io::Read(&mut orig))?;
    let orig = u64::from_ne_bytes(orig);
    let new = op(orig).to_ne_bytes();
    region_io(rxe, &word, Io::Write(&new))?;
    Ok(orig)
}

/// FLUSH of `[va, va + len)` of `rkey` with `need` access
/// (`FLUSH_GLOBAL` and/or `FLUSH_PERSISTENT`); with `len` 0 the whole
/// region: its key, PD and access are checked, not the range (rxe's
/// `IB_FLUSH_MR`). Every write this driver makes to a region is a CPU
/// copy finished before the FLUSH is processed, so a write barrier makes
/// them globally visible, as rxe does. Persistence needs persistent
/// memory: `reg_user_mr` refuses `FLUSH_PERSISTENT` on user memory
/// ([`crate::mr::reg_user_mr`]), so only a kernel DMA region can carry it,
/// and for it the same barrier is all this driver does.
pub(crate) fn remote_flush(
    rxe: &RxeDevice,
    user: WindowUser,
    rkey: u32,
    need: u32,
    va: u64,
    len: u64,
) -> Result<(), AccessError> {
    match check_remote(rxe, user, rkey, need, va, len) {
        Ok(()) => {}
        Err(AccessError::OutOfBounds) if len == 0 => {}
        Err(e) => return Err(e),
    }
    kernel::sync::barrier::mb(kernel::sync::barrier::Write);
    Ok(())
}
