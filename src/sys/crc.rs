// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 (`crc32_le`, the architecture's accelerated routine
//! where there is one: PCLMULQDQ folding on x86), the polynomial of the
//! RoCE ICRC.

use super::bindings;

/// Advances the raw CRC-32 state `crc` (reflected, polynomial 0xEDB88320)
/// over `data`, with no inversion at either end: the same function as
/// the protocol layer's table-driven `crc32_update`.
pub(crate) fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is `data.len()` readable bytes for the whole call.
    unsafe { bindings::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}
