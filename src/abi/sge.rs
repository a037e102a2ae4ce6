// SPDX-License-Identifier: GPL-2.0

//! Scatter-gather lists copied out of a WQE slot, and the one-shot reader
//! the WQE parsers use to copy a slot's bytes into private memory.

use super::layout::Sge;
use super::queue::SharedBuf;

/// Most SGEs a send or receive WQE may carry (rxe-abi-and-wire.md §1.11).
pub const MAX_SGE: usize = 32;

/// A bounded, kernel-private list of SGEs.
///
/// # Invariants
///
/// `len <= MAX_SGE`.
#[derive(Clone, Copy, Debug, Eq)]
pub struct SgeList {
    list: [Sge; MAX_SGE],
    len: usize,
}

/// Lists are equal when their SGEs are: what a reused list holds past its
/// length is no part of it.
impl PartialEq for SgeList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Default for SgeList {
    fn default() -> Self {
        Self::new()
    }
}

impl SgeList {
    /// An empty list.
    pub const fn new() -> Self {
        Self {
            list: [Sge {
                addr: 0,
                length: 0,
                lkey: 0,
            }; MAX_SGE],
            len: 0,
        }
    }

    /// Appends `sge`; `false` if the list is full.
    pub fn push(&mut self, sge: Sge) -> bool {
        match self.list.get_mut(self.len) {
            Some(slot) => {
                *slot = sge;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// The SGEs.
    pub fn as_slice(&self) -> &[Sge] {
        self.list.get(..self.len).unwrap_or_default()
    }

    /// Number of SGEs.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sum of the lengths (cannot overflow a `u64` with at most 32 `u32`s).
    pub fn total_len(&self) -> u64 {
        self.as_slice().iter().map(|s| u64::from(s.length)).sum()
    }
}

/// The bytes of one WQE slot, read at most once per region.
pub(crate) trait SlotSource {
    /// Copies `dst.len()` bytes at `off` of the slot into `dst`; `false` if
    /// that range is not inside the slot.
    fn read(&self, off: usize, dst: &mut [u8]) -> bool;
}

/// A slot already copied into private memory.
pub(crate) struct SliceSlot<'a>(pub(crate) &'a [u8]);

impl SlotSource for SliceSlot<'_> {
    fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        let Some(end) = off.checked_add(dst.len()) else {
            return false;
        };
        match self.0.get(off..end) {
            Some(s) => {
                dst.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
}

/// A slot in a shared queue buffer, `size` bytes at `base`.
pub(crate) struct SharedSlot<'a, B: SharedBuf + ?Sized> {
    pub(crate) buf: &'a B,
    pub(crate) base: usize,
    pub(crate) size: usize,
}

impl<B: SharedBuf + ?Sized> SlotSource for SharedSlot<'_, B> {
    fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        let Some(end) = off.checked_add(dst.len()) else {
            return false;
        };
        let Some(abs) = self.base.checked_add(off) else {
            return false;
        };
        let Some(abs_end) = self.base.checked_add(end) else {
            return false;
        };
        if end > self.size || abs_end > self.buf.size() {
            return false;
        }
        self.buf.read_bytes(abs, dst);
        true
    }
}

/// Reads the WQE in the `size`-byte slot at byte `base` of `buf` into
/// `dst` with `parse`, reusing the storage of the WQE `dst` holds (made by
/// `empty` only if it holds none) instead of returning a new one: a WQE with its SGE list
/// is over 500 bytes, and each move of it costs about a microsecond under
/// TCG. `dst` is `None` after an error.
pub(crate) fn read_slot_into<B: SharedBuf + ?Sized, T, E>(
    buf: &B,
    base: usize,
    size: usize,
    dst: &mut Option<T>,
    empty: impl FnOnce() -> T,
    parse: impl FnOnce(&SharedSlot<'_, B>, &mut T) -> Result<(), E>,
) -> Result<(), E> {
    let src = SharedSlot { buf, base, size };
    let parsed = parse(&src, dst.get_or_insert_with(empty));
    if parsed.is_err() {
        *dst = None;
    }
    parsed
}

/// Reads `n` SGEs starting at `off` of the slot, each exactly once, into
/// `list`, whatever it held before (its storage is reused, not moved: a
/// list is over 500 bytes). `false`, and `list` holds some of them, if
/// they are not all inside the slot or `n > MAX_SGE`.
pub(crate) fn read_sges_into<S: SlotSource + ?Sized>(
    src: &S,
    off: usize,
    n: usize,
    list: &mut SgeList,
) -> bool {
    list.len = 0;
    if n > MAX_SGE {
        return false;
    }
    let mut raw = [0u8; Sge::SIZE];
    for i in 0..n {
        // i < 32, so this cannot overflow.
        let Some(at) = off.checked_add(i * Sge::SIZE) else {
            return false;
        };
        if !src.read(at, &mut raw) {
            return false;
        }
        let Ok(sge) = Sge::decode(&raw) else {
            return false;
        };
        if !list.push(sge) {
            return false;
        }
    }
    true
}
