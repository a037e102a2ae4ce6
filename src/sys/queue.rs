// SPDX-License-Identifier: GPL-2.0

//! Queue buffers shared with user space: one `vmalloc_user` allocation
//! per ring, bounds-checked access to its bytes and atomic indices (what
//! the driver's ring code works through), and the user mapping through
//! ib_core's mmap entries (`rdma_user_mmap_entry_insert`, the `.mmap` and
//! `.mmap_free` ops).
//!
//! Lifetime of a user queue buffer: the memory belongs to its mmap entry.
//! The queue holds the driver's reference on the entry (taken by the
//! insert); dropping the [`QueueBuf`] removes the entry
//! (`rdma_user_mmap_entry_remove`), after which no new mmap can find it.
//! ib_core calls `.mmap_free` when the last reference is gone (a concurrent
//! `.mmap` holds one while it runs), and only then is the buffer
//! `vfree`d. Pages already mapped into a process outlive that:
//! `remap_vmalloc_range` inserts them with `vm_insert_page`, which takes a
//! page reference that the VMA gives back when it is unmapped, so user
//! space never sees its mapping vanish.

use super::bindings;
use crate::ib::Ucontext;
use core::ptr::NonNull;
use kernel::{
    error::to_result,
    page::PAGE_SIZE,
    prelude::*,
    sync::atomic::{Acquire, Atomic, Relaxed, Release},
    types::Opaque,
};

/// A driver mmap entry: ib_core's entry followed by the buffer it maps.
///
/// # Invariants
///
/// Allocated as a `KBox` by [`QueueBuf::new_user`]; `buf` is a
/// `vmalloc_user` allocation of at least the entry's length that the entry
/// owns and that is freed (with the box) by `mmap_free` only.
#[repr(C)]
struct MmapEntry {
    /// ib_core's entry; must stay the first field.
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    /// The buffer.
    buf: NonNull<u8>,
}

/// One queue buffer: a zeroed `vmalloc_user` allocation, either kernel
/// only or also mappable by one user context.
///
/// # Invariants
///
/// `ptr` is valid for reads and writes of `size` bytes (page aligned, at
/// least the size asked for) for as long as `self` exists: it is either
/// owned by `self` (`entry` is `None`) or by the mmap entry `entry`, on
/// which `self` holds the driver's reference.
pub(crate) struct QueueBuf {
    ptr: NonNull<u8>,
    size: usize,
    entry: Option<NonNull<MmapEntry>>,
}

// SAFETY: The buffer is plain memory; all access goes through `&self`
// methods that use atomics for the indices and raw copies for the bytes,
// and dropping it is allowed from any thread (in process context, as all
// verbs that drop queues run).
unsafe impl Send for QueueBuf {}
// SAFETY: See `Send`; shared access only reads and writes raw memory.
unsafe impl Sync for QueueBuf {}

/// Rounds `size` up to whole pages, failing on overflow.
fn page_align(size: usize) -> Result<usize> {
    size.checked_add(PAGE_SIZE - 1)
        .map(|s| s & !(PAGE_SIZE - 1))
        .ok_or(EINVAL)
}

/// `vmalloc_user(size)`.
fn vmalloc_user(size: usize) -> Result<NonNull<u8>> {
    // SAFETY: Plain allocation; a null result is handled.
    let p = unsafe { bindings::rxe_glue_vmalloc_user(size as c_ulong) };
    NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)
}

impl QueueBuf {
    /// A zeroed buffer of at least `size` bytes for a kernel-only queue.
    pub(crate) fn new_kernel(size: usize) -> Result<Self> {
        let size = page_align(size)?;
        let ptr = vmalloc_user(size)?;
        // INVARIANT: A fresh allocation of `size` bytes, owned by us.
        Ok(Self {
            ptr,
            size,
            entry: None,
        })
    }

    /// A zeroed buffer of at least `size` bytes that `uctx` may map once it
    /// knows [`Self::mmap_info`].
    pub(crate) fn new_user(size: usize, uctx: &Ucontext) -> Result<Self> {
        let size = page_align(size)?;
        let ptr = vmalloc_user(size)?;
        let entry = match KBox::new(
            MmapEntry {
                rdma: Opaque::zeroed(),
                buf: ptr,
            },
            GFP_KERNEL,
        ) {
            Ok(e) => KBox::into_raw(e),
            Err(e) => {
                // SAFETY: Allocated above and not shared with anyone.
                unsafe { bindings::vfree(ptr.as_ptr().cast()) };
                return Err(e.into());
            }
        };
        // SAFETY: `entry` is a fresh, zeroed entry (the first field of
        // `MmapEntry`, so the pointer is also the entry's); the context is
        // live. On success ib_core owns the registration and we hold its
        // one reference.
        let res = to_result(unsafe {
            bindings::rdma_user_mmap_entry_insert(uctx.as_ptr(), entry.cast(), size)
        });
        if let Err(e) = res {
            // SAFETY: The insert failed, so nobody else knows the entry or
            // the buffer: free both.
            unsafe {
                drop(KBox::from_raw(entry));
                bindings::vfree(ptr.as_ptr().cast());
            }
            return Err(e);
        }
        // INVARIANT: The entry owns the buffer and we hold its reference.
        Ok(Self {
            ptr,
            size,
            // SAFETY: `into_raw` never returns null.
            entry: Some(unsafe { NonNull::new_unchecked(entry) }),
        })
    }

    /// What user space passes to `mmap()` for this buffer; `None` for a
    /// kernel-only buffer.
    pub(crate) fn mmap_offset(&self) -> Option<u64> {
        let entry = self.entry?;
        // SAFETY: We hold a reference on the inserted entry.
        Some(unsafe { bindings::rxe_glue_mmap_get_offset(entry.as_ptr().cast()) })
    }

    /// Pointer to `len` bytes at `off`, if they are inside the buffer.
    fn range(&self, off: usize, len: usize) -> Option<*mut u8> {
        let end = off.checked_add(len)?;
        if end > self.size {
            return None;
        }
        // SAFETY: `off + len <= size`, so the result stays inside the
        // allocation (by the type invariant).
        Some(unsafe { self.ptr.as_ptr().add(off) })
    }

    /// The aligned `u32` at `off`, as an atomic.
    fn atomic_u32(&self, off: usize) -> Option<&Atomic<u32>> {
        if off % 4 != 0 {
            return None;
        }
        let p = self.range(off, 4)?;
        // SAFETY: In bounds and 4-byte aligned (the buffer is page aligned).
        // The indices are only ever accessed atomically, by us through
        // this method and by user space with its own atomics, so there is
        // no data race on them.
        Some(unsafe { Atomic::from_ptr(p.cast::<u32>()) })
    }
}

impl QueueBuf {
    /// Size of the buffer in bytes.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The aligned `u32` at `off`, read with acquire order (0 out of bounds).
    pub(crate) fn load_acquire_u32(&self, off: usize) -> u32 {
        // smp_load_acquire()
        self.atomic_u32(off).map_or(0, |a| a.load(Acquire))
    }

    /// Writes the aligned `u32` at `off` with release order (nothing out of bounds).
    pub(crate) fn store_release_u32(&self, off: usize, v: u32) {
        // smp_store_release()
        if let Some(a) = self.atomic_u32(off) {
            a.store(v, Release);
        }
    }

    /// Writes the aligned `u32` at `off` (`WRITE_ONCE`; nothing out of bounds).
    pub(crate) fn store_u32(&self, off: usize, v: u32) {
        // WRITE_ONCE()
        if let Some(a) = self.atomic_u32(off) {
            a.store(v, Relaxed);
        }
    }

    /// Copies bytes at `off` into `dst` (zeroes out of bounds).
    pub(crate) fn read_bytes(&self, off: usize, dst: &mut [u8]) {
        match self.range(off, dst.len()) {
            // SAFETY: The source range is inside the buffer; `dst` is a
            // distinct kernel slice. The bytes may be written concurrently
            // by user space (it owns the mapping), as with any memory
            // shared with user space: they are copied once and treated as
            // untrusted values, for which every bit pattern is valid.
            Some(src) => unsafe {
                core::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len())
            },
            None => dst.fill(0),
        }
    }

    /// Copies `src` to `off` (nothing out of bounds).
    pub(crate) fn write_bytes(&self, off: usize, src: &[u8]) {
        if let Some(dst) = self.range(off, src.len()) {
            // SAFETY: The destination range is inside the buffer and does
            // not overlap `src`, a kernel slice. A concurrent write by user
            // space to the same bytes can only garble its own view.
            unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        }
    }

    /// Zeroes `len` bytes at `off` (nothing out of bounds).
    pub(crate) fn zero(&self, off: usize, len: usize) {
        if let Some(dst) = self.range(off, len) {
            // SAFETY: The range is inside the buffer.
            unsafe { core::ptr::write_bytes(dst, 0, len) };
        }
    }
}

impl Drop for QueueBuf {
    fn drop(&mut self) {
        match self.entry {
            // SAFETY: We hold the driver's reference on the inserted entry
            // and give it back once; ib_core calls `mmap_free` (which frees
            // the buffer) when the last reference goes. May sleep: queues
            // are dropped in process context.
            Some(entry) => unsafe { bindings::rdma_user_mmap_entry_remove(entry.as_ptr().cast()) },
            // SAFETY: The buffer is ours alone (type invariant).
            None => unsafe { bindings::vfree(self.ptr.as_ptr().cast()) },
        }
    }
}

/// `.mmap`: maps the queue buffer whose entry has the VMA's offset and
/// exactly its length (`rdma_user_mmap_entry_get` checks both and
/// `VM_SHARED`).
///
/// # Safety
///
/// Called by ib_core's uverbs mmap with a live context and VMA.
pub(crate) unsafe extern "C" fn mmap_callback(
    uctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: The context and VMA are live for the call.
    let entry = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
    if entry.is_null() {
        return EINVAL.to_errno();
    }
    // CAST: Every entry of this driver is the head of an `MmapEntry`.
    let ours = entry.cast::<MmapEntry>();
    // SAFETY: The lookup took a reference, so the entry and its buffer are
    // alive; the buffer is a `vmalloc_user` area of the entry's length,
    // which equals the VMA's.
    let ret = unsafe { bindings::remap_vmalloc_range(vma, (*ours).buf.as_ptr().cast(), 0) };
    // SAFETY: Gives back the lookup's reference. The mapped pages hold
    // their own page references.
    unsafe { bindings::rdma_user_mmap_entry_put(entry) };
    ret
}

/// `.mmap_free`: the last reference on one of our entries is gone.
///
/// # Safety
///
/// Called by ib_core once per entry, after which it never touches it.
pub(crate) unsafe extern "C" fn mmap_free_callback(entry: *mut bindings::rdma_user_mmap_entry) {
    // CAST: Every entry of this driver is the head of a boxed `MmapEntry`.
    // SAFETY: The box was leaked by `QueueBuf::new_user` and this is its
    // last use.
    let e = unsafe { KBox::from_raw(entry.cast::<MmapEntry>()) };
    // SAFETY: The entry owned the buffer; nobody can reach it any more.
    unsafe { bindings::vfree(e.buf.as_ptr().cast()) };
}
