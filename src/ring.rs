// SPDX-License-Identifier: GPL-2.0

//! The rings' memory as the pure ring code sees it: a
//! [`QueueBuf`](crate::sys::queue::QueueBuf) is the
//! [`SharedBuf`] of `abi::queue`, and what librxe passes to `mmap()` for
//! it is an [`MmapInfo`].

use crate::{
    abi::{layout::MmapInfo, queue::SharedBuf},
    sys::queue::QueueBuf,
};

impl SharedBuf for QueueBuf {
    fn size(&self) -> usize {
        QueueBuf::size(self)
    }

    fn load_acquire_u32(&self, off: usize) -> u32 {
        QueueBuf::load_acquire_u32(self, off)
    }

    fn store_release_u32(&self, off: usize, v: u32) {
        QueueBuf::store_release_u32(self, off, v)
    }

    fn store_u32(&self, off: usize, v: u32) {
        QueueBuf::store_u32(self, off, v)
    }

    fn read_bytes(&self, off: usize, dst: &mut [u8]) {
        QueueBuf::read_bytes(self, off, dst)
    }

    fn write_bytes(&self, off: usize, src: &[u8]) {
        QueueBuf::write_bytes(self, off, src)
    }

    fn zero(&self, off: usize, len: usize) {
        QueueBuf::zero(self, off, len)
    }
}

/// What user space passes to `mmap()` for `buf`; `None` for a kernel-only
/// buffer.
pub(crate) fn mmap_info(buf: &QueueBuf) -> Option<MmapInfo> {
    Some(MmapInfo {
        offset: buf.mmap_offset()?,
        size: u32::try_from(buf.size()).unwrap_or(u32::MAX),
    })
}
