// SPDX-License-Identifier: GPL-2.0

//! The guest's own ceiling for the benchmark (`scripts/bench.sh`): what a
//! CPU copy and a CRC-32 of a message cost on this machine, measured in the
//! kernel when `/sys/kernel/debug/rdma_rxe/ceiling` is read. Every payload
//! byte an RDMA WRITE moves is copied twice (gathered from the sender's
//! pages into an skb, placed from the skb into the receiver's pages) and
//! run through the ICRC twice (built and checked), so a driver's bandwidth
//! is stated as a fraction of `bytes / (2 * memcpy + 2 * crc)`.

use crate::{proto::icrc::crc32_update, sys::crc::crc32_le};
use core::{fmt, hint::black_box};
use kernel::{
    prelude::*,
    time::{Instant, Monotonic},
};

/// Bytes per measured message (perftest's 64 KiB).
const MESSAGE: usize = 64 * 1024;
/// Messages per timed batch.
const ROUNDS: u32 = 16;
/// Timed batches per measurement.
const BATCHES: u32 = 8;

/// Nanoseconds `f` takes per call: the fastest of [`BATCHES`] batches of
/// [`ROUNDS`] calls. A ceiling is what the machine can do: one batch that
/// an interrupt or a preemption stretched (a copy once timed at 22 MB/s
/// against 400 in the rounds before) must not lower it.
fn per_round(mut f: impl FnMut()) -> u64 {
    (0..BATCHES)
        .map(|_| {
            let start = Instant::<Monotonic>::now();
            for _ in 0..ROUNDS {
                f();
            }
            start.elapsed().as_nanos().max(0) as u64 / u64::from(ROUNDS)
        })
        .min()
        .unwrap_or(0)
}

/// MB/s for [`MESSAGE`] bytes in `ns` nanoseconds.
fn mbps(ns: u64) -> u64 {
    (MESSAGE as u64 * 1000) / ns.max(1)
}

/// Reads `ceiling`: one `name value` line each for the message size, the
/// nanoseconds per message of a copy, of the kernel's `crc32_le` and of
/// the protocol layer's table CRC, whether the two CRCs agree, and the
/// resulting one-message ceilings in MB/s.
pub(crate) fn show(_: &(), out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (Ok(mut src), Ok(mut dst)) = (
        KVVec::<u8>::from_elem(0, MESSAGE, GFP_KERNEL),
        KVVec::<u8>::from_elem(0, MESSAGE, GFP_KERNEL),
    ) else {
        return writeln!(out, "error no memory");
    };
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
    }
    let copy_ns = per_round(|| {
        dst.copy_from_slice(black_box(&src[..]));
        black_box(&mut dst[..]);
    });
    let mut kernel_crc = 0;
    let kernel_crc_ns = per_round(|| kernel_crc = black_box(crc32_le(!0, black_box(&src[..]))));
    let mut table_crc = 0;
    let table_crc_ns = per_round(|| table_crc = black_box(crc32_update(!0, black_box(&src[..]))));
    let crc_ns = kernel_crc_ns.min(table_crc_ns);
    writeln!(out, "bytes {MESSAGE}")?;
    writeln!(out, "memcpy_ns {copy_ns}")?;
    writeln!(out, "crc32_le_ns {kernel_crc_ns}")?;
    writeln!(out, "table_crc_ns {table_crc_ns}")?;
    writeln!(out, "crc_agree {}", u8::from(kernel_crc == table_crc))?;
    writeln!(out, "memcpy_MBps {}", mbps(copy_ns))?;
    writeln!(out, "crc32_le_MBps {}", mbps(kernel_crc_ns))?;
    writeln!(out, "table_crc_MBps {}", mbps(table_crc_ns))?;
    // Two copies and two CRCs per byte (today's path), one copy and two
    // CRCs (a zero-copy transmit).
    writeln!(out, "ceiling_2copy_MBps {}", mbps(2 * copy_ns + 2 * crc_ns))?;
    writeln!(out, "ceiling_1copy_MBps {}", mbps(copy_ns + 2 * crc_ns))
}
