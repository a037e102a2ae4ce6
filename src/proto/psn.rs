// SPDX-License-Identifier: GPL-2.0

//! 24-bit packet sequence numbers with the IBTA wrapping comparison.

use core::cmp::Ordering;

/// Mask of the 24 bits a PSN occupies in the BTH.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// A packet sequence number: 24 bits, arithmetic modulo 2^24.
///
/// # Invariants
///
/// The inner value is always `<= PSN_MASK`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    /// The PSN whose low 24 bits are those of `raw`; higher bits are dropped.
    pub const fn new(raw: u32) -> Self {
        // INVARIANT: masked to 24 bits.
        Psn(raw & PSN_MASK)
    }

    /// The 24-bit value.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// `self + n`, modulo 2^24.
    pub const fn add(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_add(n))
    }

    /// `self - n`, modulo 2^24.
    pub const fn sub(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The PSN after this one.
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// Forward distance from `earlier` to `self`, modulo 2^24 (`0..2^24`).
    pub const fn distance_from(self, earlier: Psn) -> u32 {
        self.0.wrapping_sub(earlier.0) & PSN_MASK
    }

    /// Signed difference `self - other`, the 24-bit difference read as a
    /// two's-complement number (range `-2^23..2^23`), as IBTA compares PSNs.
    pub const fn diff(self, other: Psn) -> i32 {
        (self.0.wrapping_sub(other.0) << 8) as i32 >> 8
    }

    /// IBTA ordering of `self` against `other`: `Less` if `self` is before it.
    pub fn compare(self, other: Psn) -> Ordering {
        self.diff(other).cmp(&0)
    }

    /// Whether `self` comes strictly before `other` in sequence space.
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// Whether `self` comes strictly after `other` in sequence space.
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }

    /// Whether `self` lies in `[first, last]` in sequence space.
    pub const fn within(self, first: Psn, last: Psn) -> bool {
        self.diff(first) >= 0 && self.diff(last) <= 0
    }
}
