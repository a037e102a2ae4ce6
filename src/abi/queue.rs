// SPDX-License-Identifier: GPL-2.0

//! The rings shared with user space (rxe-abi-and-wire.md §1.6), as the kernel sees them.
//!
//! A queue buffer is a 384-byte header followed by `2^k` slots of
//! `2^log2_elem_size` bytes. The kernel owns one index of each ring and
//! keeps the authoritative copy in private memory ([`FromClient`] for the
//! SQ/RQ/SRQ it consumes, [`ToClient`] for the CQ it produces); the other
//! index is written by an untrusted process at any time, so it is read once
//! per decision and masked before use. The geometry (slot size and index
//! mask) is computed by the driver ([`QueueGeometry::for_request`]) and
//! never read back from the header.
//!
//! The memory itself is reached through [`SharedBuf`], which the kernel
//! implements over the `vmalloc_user` pages (with `smp_load_acquire` /
//! `smp_store_release`) and the host tests over a `Vec`.

use super::layout::queue_hdr;

/// Access to one queue buffer shared with user space.
///
/// Offsets handed in by this module are always inside the buffer
/// (`off + len <= self.size()`) and `u32` offsets are 4-byte aligned.
/// Implementations must still never panic or touch memory outside the
/// buffer if that is violated (read zeros, drop the write).
pub trait SharedBuf {
    /// Size of the buffer in bytes.
    fn size(&self) -> usize;
    /// Loads the `u32` at `off` with acquire ordering (`smp_load_acquire`).
    fn load_acquire_u32(&self, off: usize) -> u32;
    /// Stores `v` at `off` with release ordering (`smp_store_release`).
    fn store_release_u32(&self, off: usize, v: u32);
    /// Stores `v` at `off` without ordering (`WRITE_ONCE`).
    fn store_u32(&self, off: usize, v: u32);
    /// Copies `dst.len()` bytes starting at `off` into `dst`.
    fn read_bytes(&self, off: usize, dst: &mut [u8]);
    /// Copies `src` into the buffer starting at `off`.
    fn write_bytes(&self, off: usize, src: &[u8]);
    /// Zeroes `len` bytes starting at `off`.
    fn zero(&self, off: usize, len: usize);
}

/// Largest number of entries a caller may ask for (rxe-abi-and-wire.md §1.11: work
/// requests and CQEs are limited to 2^20).
pub const MAX_QUEUE_ENTRIES: u32 = 1 << 20;
/// Largest slot size (the biggest SQ slot is 208 + 512 bytes, rounded up
/// to 1024).
pub const MAX_ELEM_SIZE: usize = 4096;
/// Largest buffer, header included. Keeps the page-aligned size in the
/// `u32` of `mminfo.size`.
pub const MAX_QUEUE_BYTES: usize = 1 << 31;

/// Why a queue could not be sized, written or resized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The cache-line size is 0, not a power of two, or above
    /// [`MAX_ELEM_SIZE`].
    BadCacheLine,
    /// The element size rounds up beyond [`MAX_ELEM_SIZE`].
    ElemTooLarge,
    /// More than [`MAX_QUEUE_ENTRIES`] entries requested.
    TooManyEntries,
    /// The buffer would exceed [`MAX_QUEUE_BYTES`].
    TooLarge,
    /// The ring is full (CQ overflow).
    Full,
    /// The bytes to push are longer than a slot.
    ElemOverflow,
    /// A resize target cannot hold the entries currently queued.
    NoRoom,
    /// The user's producer index moved back over entries the kernel had
    /// already seen posted (a bad doorbell: they may be in flight).
    ProducerRewound,
}

/// Slot size and index mask of one ring, as computed by the driver.
///
/// # Invariants
///
/// `index_mask + 1` is a power of two no larger than `2 * MAX_QUEUE_ENTRIES`,
/// `1 << log2_elem_size` is no larger than [`MAX_ELEM_SIZE`], and
/// [`buffer_bytes`](Self::buffer_bytes) is no larger than
/// [`MAX_QUEUE_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    log2_elem_size: u32,
    index_mask: u32,
}

/// What [`QueueGeometry::for_request`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSizing {
    /// The geometry.
    pub geometry: QueueGeometry,
    /// Usable entries (`slots - 1`), to report back to the caller.
    pub capacity: u32,
    /// Buffer size in bytes, header included (before page alignment).
    pub buffer_bytes: usize,
}

impl QueueGeometry {
    /// Sizes a ring for `requested` entries of `elem_size` bytes, as rxe
    /// does: slot = next power of two of `max(elem_size, cache_line)`,
    /// slots = next power of two of `requested + 1`, capacity = slots - 1.
    pub fn for_request(
        requested: u32,
        elem_size: usize,
        cache_line: usize,
    ) -> Result<QueueSizing, QueueError> {
        if cache_line == 0 || !cache_line.is_power_of_two() || cache_line > MAX_ELEM_SIZE {
            return Err(QueueError::BadCacheLine);
        }
        if elem_size > MAX_ELEM_SIZE {
            return Err(QueueError::ElemTooLarge);
        }
        if requested > MAX_QUEUE_ENTRIES {
            return Err(QueueError::TooManyEntries);
        }
        // Both are <= MAX_ELEM_SIZE, so the rounding cannot overflow.
        let slot = elem_size.max(cache_line).next_power_of_two();
        if slot > MAX_ELEM_SIZE {
            return Err(QueueError::ElemTooLarge);
        }
        // requested <= 2^20, so requested + 1 rounds to at most 2^21.
        let slots = (requested + 1).next_power_of_two();
        let geometry = QueueGeometry {
            log2_elem_size: slot.trailing_zeros(),
            index_mask: slots - 1,
        };
        let buffer_bytes = (slots as usize)
            .checked_mul(slot)
            .and_then(|d| d.checked_add(queue_hdr::DATA))
            .ok_or(QueueError::TooLarge)?;
        if buffer_bytes > MAX_QUEUE_BYTES {
            return Err(QueueError::TooLarge);
        }
        Ok(QueueSizing {
            geometry,
            capacity: geometry.index_mask,
            buffer_bytes,
        })
    }

    /// `log2` of the slot size.
    pub const fn log2_elem_size(&self) -> u32 {
        self.log2_elem_size
    }

    /// Index mask (`slots - 1`).
    pub const fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// Slot size in bytes.
    pub const fn elem_size(&self) -> usize {
        1usize << self.log2_elem_size
    }

    /// Number of slots.
    pub const fn slots(&self) -> u32 {
        self.index_mask + 1
    }

    /// Usable entries: one slot always stays empty.
    pub const fn capacity(&self) -> u32 {
        self.index_mask
    }

    /// Buffer size in bytes, header included.
    pub const fn buffer_bytes(&self) -> usize {
        queue_hdr::DATA + ((self.slots() as usize) << self.log2_elem_size)
    }

    /// Masks an index into `[0, index_mask]`.
    pub const fn mask(&self, index: u32) -> u32 {
        index & self.index_mask
    }

    /// Byte offset in the buffer of the slot for `index` (masked first, so
    /// any `u32` gives an in-range offset).
    pub const fn slot_offset(&self, index: u32) -> usize {
        queue_hdr::DATA + (((index & self.index_mask) as usize) << self.log2_elem_size)
    }

    /// Writes the header of a fresh buffer: the geometry copy for user space
    /// and both indices set to `producer` / `consumer` (masked).
    pub fn write_header<B: SharedBuf + ?Sized>(&self, buf: &B, producer: u32, consumer: u32) {
        buf.store_u32(queue_hdr::LOG2_ELEM_SIZE, self.log2_elem_size);
        buf.store_u32(queue_hdr::INDEX_MASK, self.index_mask);
        buf.store_u32(queue_hdr::PRODUCER_INDEX, self.mask(producer));
        buf.store_u32(queue_hdr::CONSUMER_INDEX, self.mask(consumer));
    }

    /// Zeroes the slots, leaving the header and indices alone (what rxe does
    /// when a QP goes to RESET).
    pub fn zero_data<B: SharedBuf + ?Sized>(&self, buf: &B) {
        buf.zero(queue_hdr::DATA, self.buffer_bytes() - queue_hdr::DATA);
    }
}

/// Copies `count` slots starting at index `start` of `src` to slots
/// `0..count` of `dst`, `min` of the two slot sizes each, through a small
/// stack buffer.
fn copy_slots<A, B>(
    src_geo: &QueueGeometry,
    src: &A,
    start: u32,
    count: u32,
    dst_geo: &QueueGeometry,
    dst: &B,
) where
    A: SharedBuf + ?Sized,
    B: SharedBuf + ?Sized,
{
    let len = src_geo.elem_size().min(dst_geo.elem_size());
    let mut chunk = [0u8; 64];
    // `count` is at most the source mask: bounded.
    for i in 0..count {
        let from = src_geo.slot_offset(start.wrapping_add(i));
        let to = dst_geo.slot_offset(i);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(chunk.len());
            if let Some(c) = chunk.get_mut(..n) {
                src.read_bytes(from + done, c);
                dst.write_bytes(to + done, c);
            }
            done += n;
        }
    }
}

/// The kernel side of a ring user space produces into (SQ, RQ, SRQ).
///
/// The consumer index is private; the user's producer index is read with
/// acquire ordering and masked on every use.
///
/// # Invariants
///
/// `seen` is the last producer index [`checked_producer`] accepted; the
/// entries from `index` up to `seen` were posted, so `index` never passes
/// `seen` (`mask(seen - index)` is the number of entries known posted).
///
/// [`checked_producer`]: Self::checked_producer
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FromClient {
    geo: QueueGeometry,
    index: u32,
    seen: u32,
}

impl FromClient {
    /// A consumer at index 0 of a ring with geometry `geo`.
    pub const fn new(geo: QueueGeometry) -> Self {
        Self {
            geo,
            index: 0,
            seen: 0,
        }
    }

    /// For a consumer that works ahead of its consumer index (the RC
    /// requester takes WQEs before they complete): reads the producer index
    /// and returns the number of entries posted, unless the producer moved
    /// back over entries already seen posted — some of them may be taken
    /// and in flight, and reading their slots again would execute them
    /// twice. Then nothing is accepted: the caller treats it as a bad
    /// doorbell.
    pub fn checked_producer<B: SharedBuf + ?Sized>(&mut self, buf: &B) -> Result<u32, QueueError> {
        let producer = self.producer(buf);
        let posted = self.geo.mask(producer.wrapping_sub(self.index));
        if posted < self.known_posted() {
            return Err(QueueError::ProducerRewound);
        }
        self.seen = producer;
        Ok(posted)
    }

    /// Entries known posted: up to the last producer index accepted.
    fn known_posted(&self) -> u32 {
        self.geo.mask(self.seen.wrapping_sub(self.index))
    }

    /// Consumes an entry the caller took after [`checked_producer`] showed
    /// it posted: advances the consumer index whatever the user's producer
    /// index says now (a rewind must not hold back the consumer of an entry
    /// already executed). Returns `false` (and does nothing) if no entry is
    /// known posted.
    ///
    /// [`checked_producer`]: Self::checked_producer
    pub fn release_taken<B: SharedBuf + ?Sized>(&mut self, buf: &B) -> bool {
        if self.known_posted() == 0 {
            return false;
        }
        self.index = self.geo.mask(self.index.wrapping_add(1));
        buf.store_release_u32(queue_hdr::CONSUMER_INDEX, self.index);
        true
    }

    /// The geometry.
    pub const fn geometry(&self) -> &QueueGeometry {
        &self.geo
    }

    /// The private consumer index (always masked).
    pub const fn index(&self) -> u32 {
        self.index
    }

    /// The user's producer index, loaded with acquire ordering and masked.
    pub fn producer<B: SharedBuf + ?Sized>(&self, buf: &B) -> u32 {
        self.geo
            .mask(buf.load_acquire_u32(queue_hdr::PRODUCER_INDEX))
    }

    /// Entries posted and not consumed, from one read of the producer
    /// index; always `<= index_mask`.
    pub fn count<B: SharedBuf + ?Sized>(&self, buf: &B) -> u32 {
        self.geo.mask(self.producer(buf).wrapping_sub(self.index))
    }

    /// Whether nothing is posted.
    pub fn is_empty<B: SharedBuf + ?Sized>(&self, buf: &B) -> bool {
        self.count(buf) == 0
    }

    /// Offset of the slot at the consumer index, if an entry is posted.
    pub fn peek<B: SharedBuf + ?Sized>(&self, buf: &B) -> Option<usize> {
        self.peek_nth(buf, 0)
    }

    /// Offset of the slot `n` entries after the consumer index, if that many
    /// are posted (the requester works ahead of the completer this way).
    pub fn peek_nth<B: SharedBuf + ?Sized>(&self, buf: &B, n: u32) -> Option<usize> {
        if n < self.count(buf) {
            Some(self.geo.slot_offset(self.index.wrapping_add(n)))
        } else {
            None
        }
    }

    /// Consumes one entry: advances the private index and publishes it with
    /// release ordering. Returns `false` (and does nothing) if the ring is
    /// empty, so the consumer never passes the producer.
    pub fn advance<B: SharedBuf + ?Sized>(&mut self, buf: &B) -> bool {
        if self.is_empty(buf) {
            return false;
        }
        if self.known_posted() == 0 {
            // Consumed past the last checked producer (a ring consumed
            // without `checked_producer`): keep `seen` with the consumer.
            self.seen = self.geo.mask(self.seen.wrapping_add(1));
        }
        self.index = self.geo.mask(self.index.wrapping_add(1));
        buf.store_release_u32(queue_hdr::CONSUMER_INDEX, self.index);
        true
    }

    /// For a ring the kernel fills itself (a kernel ULP's SQ, RQ or SRQ):
    /// the offset of the free slot at the producer index, or `None` when
    /// the ring is full (by the consumer index the consumer published, so
    /// any copy of the consumer with the ring's geometry will do). The
    /// caller writes the slot, then [`publish`](Self::publish)es it, both
    /// under the lock that serialises the ring's producers.
    pub fn free_slot<B: SharedBuf + ?Sized>(&self, buf: &B) -> Option<usize> {
        // The consumer's published index, not `self.index`: the producer
        // may run outside the lock that guards the consumer.
        let consumer = self
            .geo
            .mask(buf.load_acquire_u32(queue_hdr::CONSUMER_INDEX));
        if self.geo.mask(self.producer(buf).wrapping_sub(consumer)) >= self.geo.capacity() {
            return None;
        }
        Some(self.geo.slot_offset(self.producer(buf)))
    }

    /// Makes the slot [`free_slot`](Self::free_slot) returned visible to
    /// the consumer: the producer index advances with release ordering.
    pub fn publish<B: SharedBuf + ?Sized>(&self, buf: &B) {
        let next = self.geo.mask(self.producer(buf).wrapping_add(1));
        buf.store_release_u32(queue_hdr::PRODUCER_INDEX, next);
    }

    /// QP reset: zeroes the slots; indices are left as they are.
    pub fn reset<B: SharedBuf + ?Sized>(&self, buf: &B) {
        self.geo.zero_data(buf);
    }

    /// Moves the posted entries into a new buffer of geometry `new_geo`
    /// (SRQ resize): writes `new`'s header with producer = number moved and
    /// consumer = 0, and returns the consumer for it. `NoRoom` if the
    /// entries do not fit.
    pub fn resize_into<A, B>(
        &self,
        old: &A,
        new_geo: QueueGeometry,
        new: &B,
    ) -> Result<FromClient, QueueError>
    where
        A: SharedBuf + ?Sized,
        B: SharedBuf + ?Sized,
    {
        let count = self.count(old);
        if count > new_geo.capacity() {
            return Err(QueueError::NoRoom);
        }
        copy_slots(&self.geo, old, self.index, count, &new_geo, new);
        new_geo.write_header(new, count, 0);
        Ok(FromClient {
            seen: count,
            ..FromClient::new(new_geo)
        })
    }
}

/// The kernel side of a ring it produces into for user space (CQ).
///
/// The producer index is private; the user's consumer index is read with
/// acquire ordering and masked on every use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToClient {
    geo: QueueGeometry,
    index: u32,
}

impl ToClient {
    /// A producer at index 0 of a ring with geometry `geo`.
    pub const fn new(geo: QueueGeometry) -> Self {
        Self { geo, index: 0 }
    }

    /// The geometry.
    pub const fn geometry(&self) -> &QueueGeometry {
        &self.geo
    }

    /// The private producer index (always masked).
    pub const fn index(&self) -> u32 {
        self.index
    }

    /// The user's consumer index, loaded with acquire ordering and masked.
    pub fn consumer<B: SharedBuf + ?Sized>(&self, buf: &B) -> u32 {
        self.geo
            .mask(buf.load_acquire_u32(queue_hdr::CONSUMER_INDEX))
    }

    /// Entries produced and not yet retired by user space; `<= index_mask`.
    pub fn count<B: SharedBuf + ?Sized>(&self, buf: &B) -> u32 {
        self.geo.mask(self.index.wrapping_sub(self.consumer(buf)))
    }

    /// Whether no further entry fits.
    pub fn is_full<B: SharedBuf + ?Sized>(&self, buf: &B) -> bool {
        self.geo.mask(self.index.wrapping_add(1)) == self.consumer(buf)
    }

    /// Writes `bytes` into the next slot and publishes it (store-release of
    /// the producer index). The rest of the slot is left as it was.
    pub fn push<B: SharedBuf + ?Sized>(&mut self, buf: &B, bytes: &[u8]) -> Result<(), QueueError> {
        if bytes.len() > self.geo.elem_size() {
            return Err(QueueError::ElemOverflow);
        }
        if self.is_full(buf) {
            return Err(QueueError::Full);
        }
        buf.write_bytes(self.geo.slot_offset(self.index), bytes);
        self.index = self.geo.mask(self.index.wrapping_add(1));
        buf.store_release_u32(queue_hdr::PRODUCER_INDEX, self.index);
        Ok(())
    }

    /// Zeroes the slots; indices are left as they are.
    pub fn reset<B: SharedBuf + ?Sized>(&self, buf: &B) {
        self.geo.zero_data(buf);
    }

    /// Moves the entries user space has not retired into a new buffer of
    /// geometry `new_geo` (CQ resize): writes `new`'s header with producer =
    /// number moved and consumer = 0, and returns the producer for it.
    /// `NoRoom` if they do not fit (resize_cq then fails with EINVAL).
    pub fn resize_into<A, B>(
        &self,
        old: &A,
        new_geo: QueueGeometry,
        new: &B,
    ) -> Result<ToClient, QueueError>
    where
        A: SharedBuf + ?Sized,
        B: SharedBuf + ?Sized,
    {
        let consumer = self.consumer(old);
        let count = self.geo.mask(self.index.wrapping_sub(consumer));
        if count > new_geo.capacity() {
            return Err(QueueError::NoRoom);
        }
        copy_slots(&self.geo, old, consumer, count, &new_geo, new);
        new_geo.write_header(new, count, 0);
        Ok(ToClient {
            geo: new_geo,
            index: new_geo.mask(count),
        })
    }
}
