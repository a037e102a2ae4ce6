//! The shared rings of `src/abi/queue.rs`: sizing, empty/full/count/wrap,
//! and hostile user indices (any `u32`, changing between reads) never
//! giving an out-of-range slot or a consumer that passes the producer.
mod abi_support;

use abi_support::VecBuf;
use proptest::prelude::*;
use rxe_proto::abi::layout::queue_hdr;
use rxe_proto::abi::queue::*;

fn ring(requested: u32, elem: usize) -> (QueueGeometry, VecBuf) {
    let s = QueueGeometry::for_request(requested, elem, 64).unwrap();
    let buf = VecBuf::new(s.buffer_bytes);
    s.geometry.write_header(&buf, 0, 0);
    (s.geometry, buf)
}

#[test]
fn sizing_follows_rxe() {
    // Design §1.6 examples (64-byte cache lines).
    let cq = QueueGeometry::for_request(100, 72, 64).unwrap();
    assert_eq!(cq.geometry.elem_size(), 128);
    assert_eq!(cq.geometry.log2_elem_size(), 7);
    assert_eq!(cq.geometry.slots(), 128);
    assert_eq!(cq.capacity, 127);
    assert_eq!(cq.buffer_bytes, 384 + 128 * 128);
    assert_eq!(
        QueueGeometry::for_request(1, 224, 64)
            .unwrap()
            .geometry
            .elem_size(),
        256
    );
    assert_eq!(
        QueueGeometry::for_request(1, 56, 64)
            .unwrap()
            .geometry
            .elem_size(),
        64
    );
    // Small elements still get a cache line.
    assert_eq!(
        QueueGeometry::for_request(1, 8, 64)
            .unwrap()
            .geometry
            .elem_size(),
        64
    );
    assert_eq!(
        QueueGeometry::for_request(1, 0, 64)
            .unwrap()
            .geometry
            .elem_size(),
        64
    );
    // slots = pow2(requested + 1)
    for (req, slots) in [
        (0, 1),
        (1, 2),
        (2, 4),
        (3, 4),
        (4, 8),
        (7, 8),
        (8, 16),
        (1 << 20, 1 << 21),
    ] {
        let s = QueueGeometry::for_request(req, 64, 64).unwrap();
        assert_eq!(s.geometry.slots(), slots, "requested {req}");
        assert_eq!(s.capacity, slots - 1);
        assert_eq!(s.geometry.index_mask(), slots - 1);
        assert_eq!(s.buffer_bytes, s.geometry.buffer_bytes());
        assert!(s.capacity >= req);
    }
}

#[test]
fn sizing_limits() {
    assert_eq!(
        QueueGeometry::for_request(1, 64, 0),
        Err(QueueError::BadCacheLine)
    );
    assert_eq!(
        QueueGeometry::for_request(1, 64, 48),
        Err(QueueError::BadCacheLine)
    );
    assert_eq!(
        QueueGeometry::for_request(1, 64, 8192),
        Err(QueueError::BadCacheLine)
    );
    assert_eq!(
        QueueGeometry::for_request(1, 4097, 64),
        Err(QueueError::ElemTooLarge)
    );
    assert_eq!(
        QueueGeometry::for_request(1, usize::MAX, 64),
        Err(QueueError::ElemTooLarge)
    );
    assert_eq!(
        QueueGeometry::for_request((1 << 20) + 1, 64, 64),
        Err(QueueError::TooManyEntries)
    );
    assert_eq!(
        QueueGeometry::for_request(u32::MAX, 64, 64),
        Err(QueueError::TooManyEntries)
    );
    // 2^21 slots of 4096 bytes = 8 GiB: refused.
    assert_eq!(
        QueueGeometry::for_request(1 << 20, 4096, 64),
        Err(QueueError::TooLarge)
    );
    // Largest accepted SQ: 2^20 WRs of 1024-byte slots is 2 GiB + header: refused.
    assert_eq!(
        QueueGeometry::for_request(1 << 20, 720, 64),
        Err(QueueError::TooLarge)
    );
    assert!(QueueGeometry::for_request((1 << 19) - 1, 720, 64).is_ok());
}

#[test]
fn header_written_for_user_space() {
    let (geo, buf) = ring(5, 100);
    assert_eq!(buf.get_u32(queue_hdr::LOG2_ELEM_SIZE), 7);
    assert_eq!(buf.get_u32(queue_hdr::INDEX_MASK), 7);
    assert_eq!(buf.get_u32(queue_hdr::PRODUCER_INDEX), 0);
    assert_eq!(buf.get_u32(queue_hdr::CONSUMER_INDEX), 0);
    geo.write_header(&buf, 9, 0xffff_ffff);
    assert_eq!(buf.get_u32(queue_hdr::PRODUCER_INDEX), 1);
    assert_eq!(buf.get_u32(queue_hdr::CONSUMER_INDEX), 7);
}

#[test]
fn from_client_empty_count_wrap() {
    let (geo, buf) = ring(3, 64); // 4 slots, capacity 3
    let mut q = FromClient::new(geo);
    assert!(q.is_empty(&buf));
    assert_eq!(q.peek(&buf), None);
    assert!(!q.advance(&buf));
    let mut prod = 0u32;
    // Many laps around the ring.
    for lap in 0..20u32 {
        let n = lap % 4; // 0..=3 entries per round
        for k in 0..n {
            let off = geo.slot_offset(prod);
            buf.set_bytes(off, &[(lap * 4 + k) as u8; 4]);
            prod = (prod + 1) & geo.index_mask();
            buf.set_producer(prod);
        }
        assert_eq!(q.count(&buf), n);
        for k in 0..n {
            assert!(q.peek_nth(&buf, n - 1 - k).is_some());
            assert!(q.peek_nth(&buf, n - k).is_none());
            let off = q.peek(&buf).unwrap();
            assert_eq!(off, geo.slot_offset(q.index()));
            assert_eq!(buf.bytes(off, 1)[0], (lap * 4 + k) as u8);
            assert!(q.advance(&buf));
            assert_eq!(buf.get_u32(queue_hdr::CONSUMER_INDEX), q.index());
        }
        assert!(q.is_empty(&buf));
        assert!(!q.advance(&buf), "the consumer never passes the producer");
        assert_eq!(q.peek_nth(&buf, 0), None);
    }
}

#[test]
fn to_client_push_full_wrap() {
    let (geo, buf) = ring(3, 48); // 4 slots of 64 bytes
    let mut cq = ToClient::new(geo);
    let mut cons = 0u32;
    for round in 0..10u8 {
        for k in 0..3u8 {
            assert!(!cq.is_full(&buf));
            cq.push(&buf, &[round * 3 + k; 48]).unwrap();
            assert_eq!(buf.get_u32(queue_hdr::PRODUCER_INDEX), cq.index());
        }
        assert!(cq.is_full(&buf));
        assert_eq!(cq.count(&buf), 3);
        assert_eq!(cq.push(&buf, &[0; 48]), Err(QueueError::Full));
        // User space retires the three entries in order.
        for k in 0..3u8 {
            assert_eq!(
                buf.bytes(geo.slot_offset(cons), 48),
                vec![round * 3 + k; 48]
            );
            cons = (cons + 1) & geo.index_mask();
            buf.set_consumer(cons);
        }
        assert_eq!(cq.count(&buf), 0);
    }
    assert_eq!(cq.push(&buf, &[0; 65]), Err(QueueError::ElemOverflow));
    cq.push(&buf, &[1; 64]).unwrap();
}

#[test]
fn reset_zeroes_data_only() {
    let (geo, buf) = ring(3, 64);
    let mut cq = ToClient::new(geo);
    cq.push(&buf, &[0xee; 64]).unwrap();
    buf.set_consumer(0);
    cq.reset(&buf);
    assert!(buf
        .bytes(queue_hdr::DATA, geo.buffer_bytes() - queue_hdr::DATA)
        .iter()
        .all(|&b| b == 0));
    assert_eq!(buf.get_u32(queue_hdr::PRODUCER_INDEX), 1);
    assert_eq!(buf.get_u32(queue_hdr::INDEX_MASK), 3);
    assert_eq!(cq.index(), 1);
    FromClient::new(geo).reset(&buf);
}

#[test]
fn cq_resize_moves_pending_entries() {
    let (geo, old) = ring(3, 48);
    let mut cq = ToClient::new(geo);
    // Offset the ring so the pending entries wrap.
    for i in 0..3u8 {
        cq.push(&old, &[i; 48]).unwrap();
    }
    old.set_consumer(3);
    for i in 10..13u8 {
        cq.push(&old, &[i; 48]).unwrap();
    }
    old.set_consumer(3);
    assert_eq!(cq.count(&old), 3);
    let s = QueueGeometry::for_request(7, 48, 64).unwrap();
    let new = VecBuf::new(s.buffer_bytes);
    let ncq = cq.resize_into(&old, s.geometry, &new).unwrap();
    assert_eq!(ncq.index(), 3);
    assert_eq!(new.get_u32(queue_hdr::PRODUCER_INDEX), 3);
    assert_eq!(new.get_u32(queue_hdr::CONSUMER_INDEX), 0);
    assert_eq!(new.get_u32(queue_hdr::INDEX_MASK), 7);
    for i in 0..3u32 {
        assert_eq!(
            new.bytes(s.geometry.slot_offset(i), 48),
            vec![10 + i as u8; 48]
        );
    }
    assert_eq!(ncq.count(&new), 3);
    // Too small a target.
    let small = QueueGeometry::for_request(1, 48, 64).unwrap();
    let sbuf = VecBuf::new(small.buffer_bytes);
    assert_eq!(
        cq.resize_into(&old, small.geometry, &sbuf),
        Err(QueueError::NoRoom)
    );
}

#[test]
fn srq_resize_moves_posted_entries() {
    let (geo, old) = ring(3, 64);
    let mut q = FromClient::new(geo);
    for i in 0..3u32 {
        old.set_bytes(geo.slot_offset(i), &[i as u8 + 1; 64]);
    }
    old.set_producer(3);
    assert!(q.advance(&old));
    let s = QueueGeometry::for_request(15, 64, 64).unwrap();
    let new = VecBuf::new(s.buffer_bytes);
    let nq = q.resize_into(&old, s.geometry, &new).unwrap();
    assert_eq!(nq.index(), 0);
    assert_eq!(new.get_u32(queue_hdr::PRODUCER_INDEX), 2);
    assert_eq!(nq.count(&new), 2);
    assert_eq!(new.bytes(s.geometry.slot_offset(0), 64), vec![2; 64]);
    assert_eq!(new.bytes(s.geometry.slot_offset(1), 64), vec![3; 64]);
}

fn geo_strategy() -> impl Strategy<Value = (u32, usize)> {
    (
        0u32..64,
        prop_oneof![Just(48usize), Just(72), Just(224), Just(720)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Any sequence of user producer values (including out-of-range and
    /// values that change between two reads) keeps every slot offset in
    /// range, the count at most the mask, and the consumer from passing
    /// what was produced.
    #[test]
    fn hostile_producer((req, elem) in geo_strategy(),
                        values in prop::collection::vec(any::<u32>(), 1..16),
                        ops in prop::collection::vec(0u8..4, 1..64)) {
        let (geo, buf) = ring(req, elem);
        buf.hostile_off.set(Some(queue_hdr::PRODUCER_INDEX));
        *buf.hostile.borrow_mut() = values;
        let mut q = FromClient::new(geo);
        let lo = queue_hdr::DATA;
        let hi = geo.buffer_bytes() - geo.elem_size();
        for op in ops {
            match op {
                0 => prop_assert!(q.count(&buf) <= geo.index_mask()),
                1 => if let Some(off) = q.peek(&buf) {
                    prop_assert!(off >= lo && off <= hi);
                    prop_assert_eq!((off - lo) % geo.elem_size(), 0);
                },
                2 => {
                    let before = q.index();
                    let advanced = q.advance(&buf);
                    prop_assert!(q.index() <= geo.index_mask());
                    if advanced {
                        prop_assert_eq!(q.index(), (before + 1) & geo.index_mask());
                    } else {
                        prop_assert_eq!(q.index(), before);
                    }
                }
                _ => {
                    for n in [0, 1, geo.index_mask(), u32::MAX] {
                        if let Some(off) = q.peek_nth(&buf, n) {
                            prop_assert!(off >= lo && off <= hi);
                        }
                    }
                }
            }
        }
    }

    /// With a fixed (masked) producer, advancing stops exactly at it.
    #[test]
    fn consumer_stops_at_producer((req, elem) in geo_strategy(), prod in any::<u32>(), start in any::<u32>()) {
        let (geo, buf) = ring(req, elem);
        let mut q = FromClient::new(geo);
        // Move the consumer to `start` first.
        buf.set_producer(start & geo.index_mask());
        while q.advance(&buf) {}
        prop_assert_eq!(q.index(), start & geo.index_mask());
        buf.set_producer(prod);
        let expected = (prod & geo.index_mask()).wrapping_sub(q.index()) & geo.index_mask();
        prop_assert_eq!(q.count(&buf), expected);
        let mut n = 0;
        while q.advance(&buf) {
            n += 1;
            prop_assert!(n <= geo.index_mask());
        }
        prop_assert_eq!(n, expected);
        prop_assert_eq!(q.index(), prod & geo.index_mask());
    }

    /// Any user consumer values: pushes stay in range and never exceed the
    /// ring's capacity relative to the consumer value seen.
    #[test]
    fn hostile_consumer((req, elem) in geo_strategy(),
                        values in prop::collection::vec(any::<u32>(), 1..16),
                        pushes in 1usize..200) {
        let (geo, buf) = ring(req, elem.min(64));
        buf.hostile_off.set(Some(queue_hdr::CONSUMER_INDEX));
        *buf.hostile.borrow_mut() = values;
        let mut cq = ToClient::new(geo);
        for _ in 0..pushes {
            let _ = cq.push(&buf, &[0xab; 48]);
            prop_assert!(cq.index() <= geo.index_mask());
            prop_assert!(cq.count(&buf) <= geo.index_mask());
        }
        // CQ resize with hostile consumer stays in range too.
        let s = QueueGeometry::for_request(req, 48, 64).unwrap();
        let new = VecBuf::new(s.buffer_bytes);
        if let Ok(n) = cq.resize_into(&buf, s.geometry, &new) {
            prop_assert!(n.index() <= s.geometry.index_mask());
        }
    }
}

#[test]
fn kernel_producer_fills_to_capacity_and_wraps() {
    // A kernel ULP's ring: the kernel is producer and consumer.
    let (geo, buf) = ring(3, 64); // 4 slots, capacity 3
    let mut q = FromClient::new(geo);
    for lap in 0..10u8 {
        for k in 0..3u8 {
            let off = q.free_slot(&buf).expect("room below capacity");
            assert_eq!(off, geo.slot_offset(buf.get_u32(queue_hdr::PRODUCER_INDEX)));
            buf.set_bytes(off, &[lap * 3 + k; 4]);
            q.publish(&buf);
        }
        assert_eq!(
            q.free_slot(&buf),
            None,
            "full at capacity, one slot stays empty"
        );
        assert_eq!(q.count(&buf), 3);
        for k in 0..3u8 {
            let off = q.peek(&buf).unwrap();
            assert_eq!(buf.bytes(off, 1)[0], lap * 3 + k, "FIFO order across laps");
            assert!(q.advance(&buf));
        }
        assert!(q.is_empty(&buf));
        assert!(buf.get_u32(queue_hdr::PRODUCER_INDEX) <= geo.index_mask());
    }
}

#[test]
fn kernel_producer_apart_from_consumer_sees_published_consumer_index() {
    // A kernel ULP posts through its own copy of the ring (outside the lock
    // that guards the consumer): room is judged by the consumer index the
    // consumer published, not by the copy's private index.
    let (geo, buf) = ring(3, 64); // 4 slots, capacity 3
    let producer = FromClient::new(geo);
    let mut consumer = FromClient::new(geo);
    for lap in 0..5 {
        for _ in 0..3 {
            producer.free_slot(&buf).expect("room below capacity");
            producer.publish(&buf);
        }
        assert_eq!(producer.free_slot(&buf), None, "lap {lap}: full");
        assert!(consumer.advance(&buf));
        assert!(
            producer.free_slot(&buf).is_some(),
            "lap {lap}: a slot consumed is free"
        );
        assert!(consumer.advance(&buf) && consumer.advance(&buf));
        assert!(consumer.is_empty(&buf));
    }
}

/// Posts `n` entries the way librxe does: bumps the producer index.
fn post(geo: &QueueGeometry, buf: &VecBuf, n: u32) {
    let p = buf.load_acquire_u32(queue_hdr::PRODUCER_INDEX);
    buf.store_release_u32(queue_hdr::PRODUCER_INDEX, geo.mask(p.wrapping_add(n)));
}

#[test]
fn a_producer_rewound_under_taken_entries_is_refused() {
    let (geo, buf) = ring(7, 64);
    let mut q = FromClient::new(geo);
    post(&geo, &buf, 3);
    assert_eq!(q.checked_producer(&buf), Ok(3));
    // The requester takes two (in flight); user space puts the producer
    // back to 1, under the second.
    buf.store_release_u32(queue_hdr::PRODUCER_INDEX, 1);
    assert_eq!(q.checked_producer(&buf), Err(QueueError::ProducerRewound));
    // Each entry taken is released even though the producer now says the
    // ring is short: the consumer stays with what was executed.
    assert!(q.release_taken(&buf));
    assert!(q.release_taken(&buf));
    assert_eq!(q.index(), 2);
    assert_eq!(buf.load_acquire_u32(queue_hdr::CONSUMER_INDEX), 2);
    // Moved forward again over the executed ones: still refused (the third
    // entry, seen posted, is behind the producer), never re-read.
    buf.store_release_u32(queue_hdr::PRODUCER_INDEX, 2);
    assert_eq!(q.checked_producer(&buf), Err(QueueError::ProducerRewound));
    buf.store_release_u32(queue_hdr::PRODUCER_INDEX, 3);
    assert_eq!(q.checked_producer(&buf), Ok(1));
    assert_eq!(q.peek_nth(&buf, 0), Some(geo.slot_offset(2)));
    assert!(q.release_taken(&buf));
    // Nothing known posted: nothing to release.
    assert!(!q.release_taken(&buf));
    assert_eq!(q.index(), 3);
}

#[test]
fn the_producer_may_move_forward_over_the_whole_ring() {
    let (geo, buf) = ring(7, 64); // 8 slots, capacity 7
    let mut q = FromClient::new(geo);
    for lap in 0..5u32 {
        post(&geo, &buf, 7);
        assert_eq!(q.checked_producer(&buf), Ok(7), "lap {lap}");
        for _ in 0..7 {
            assert!(q.release_taken(&buf));
        }
        assert_eq!(q.checked_producer(&buf), Ok(0));
    }
}

proptest! {
    /// Whatever user space writes into the producer index between the
    /// kernel's reads, the entries the kernel took are never offered again
    /// before they are released, and the consumer never passes what was
    /// accepted as posted.
    #[test]
    fn taken_entries_are_never_offered_again(writes in proptest::collection::vec((any::<u32>(), 0u32..4, 0u32..4), 1..64)) {
        let (geo, buf) = ring(15, 64);
        let mut q = FromClient::new(geo);
        let mut taken = 0u32;
        for (producer, take, release) in writes {
            buf.store_release_u32(queue_hdr::PRODUCER_INDEX, producer);
            if let Ok(posted) = q.checked_producer(&buf) {
                prop_assert!(posted >= taken);
                for _ in 0..take {
                    if taken < posted {
                        let off = q.peek_nth(&buf, taken);
                        // A slot offered for taking is never one already taken.
                        prop_assert_eq!(off, Some(geo.slot_offset(q.index().wrapping_add(taken))));
                        taken += 1;
                    }
                }
            }
            for _ in 0..release.min(taken) {
                prop_assert!(q.release_taken(&buf));
                taken -= 1;
            }
        }
    }
}
