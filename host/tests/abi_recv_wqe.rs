//! Copy-once validation of receive WQEs (`src/abi/recv_wqe.rs`).
mod abi_support;

use abi_support::{write_recv_wqe, VecBuf};
use proptest::prelude::*;
use rxe_proto::abi::layout::{queue_hdr, RawRecvWqe, Sge};
use rxe_proto::abi::queue::{FromClient, QueueGeometry};
use rxe_proto::abi::recv_wqe::*;
use rxe_proto::abi::values::WcStatus;

fn sge(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

fn check_invariants(w: &RecvWqe, l: &RecvLimits) {
    assert!(w.sges.len() <= (l.max_sge as usize).min(32));
    assert!(40 + 16 * w.sges.len() <= l.slot_size);
    assert_eq!(w.sges.total_len(), u64::from(w.total_len));
}

#[test]
fn valid_rq_wqe() {
    let l = RecvLimits {
        max_sge: 4,
        slot_size: 128,
    };
    let mut slot = vec![0u8; 128];
    write_recv_wqe(&mut slot, 77, &[sge(0x1000, 40, 1), sge(0x2000, 1000, 2)]);
    let w = RecvWqe::parse(&slot, &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(w.wr_id, 77);
    assert_eq!(w.total_len, 1040);
    assert_eq!(
        w.sges.as_slice(),
        &[sge(0x1000, 40, 1), sge(0x2000, 1000, 2)]
    );
    // Zero SGEs is a valid (zero-length) receive.
    write_recv_wqe(&mut slot, 78, &[]);
    assert_eq!(RecvWqe::parse(&slot, &l).unwrap().total_len, 0);
}

/// One storage read into in turn, as the responder's receive WQE is: each
/// read gives what a fresh parse gives (fewer SGEs over more never show the
/// old ones), and an error leaves no WQE.
#[test]
fn read_into_one_storage_in_turn() {
    let l = RecvLimits {
        max_sge: 4,
        slot_size: 128,
    };
    let lists: [&[Sge]; 4] = [
        &[sge(0x1000, 40, 1), sge(0x2000, 1000, 2), sge(0x3000, 7, 3)],
        &[sge(0x4000, 5, 4)],
        &[],
        &[sge(0x5000, 9, 5), sge(0x6000, 1, 6)],
    ];
    let mut dst = None;
    for (i, list) in lists.iter().enumerate() {
        let mut slot = vec![0u8; 128];
        write_recv_wqe(&mut slot, i as u64, list);
        let buf = VecBuf::new(queue_hdr::DATA + 128);
        buf.set_bytes(queue_hdr::DATA, &slot);
        RecvWqe::read_into(&buf, queue_hdr::DATA, &l, &mut dst).unwrap();
        let w = dst.as_ref().unwrap();
        check_invariants(w, &l);
        assert_eq!(w.sges.as_slice(), *list);
        assert_eq!(dst, Some(RecvWqe::parse(&slot, &l).unwrap()));
        assert_eq!(buf.max_reads(), 1);
    }
    let mut slot = vec![0u8; 128];
    write_recv_wqe(&mut slot, 9, &[sge(0, 1, 1)]);
    let mut raw = RawRecvWqe::decode(&slot).unwrap();
    raw.dma.num_sge = 5;
    raw.encode(&mut slot).unwrap();
    let buf = VecBuf::new(queue_hdr::DATA + 128);
    buf.set_bytes(queue_hdr::DATA, &slot);
    assert_eq!(
        RecvWqe::read_into(&buf, queue_hdr::DATA, &l, &mut dst),
        Err(RecvWqeError::TooManySges(5))
    );
    assert_eq!(dst, None);
}

#[test]
fn hostile_rq_wqes() {
    let l = RecvLimits {
        max_sge: 4,
        slot_size: 104,
    }; // room for 4 SGEs
    let mut slot = vec![0u8; 104];
    write_recv_wqe(&mut slot, 1, &[sge(0, 1, 1); 4]);
    let mut raw = RawRecvWqe::decode(&slot).unwrap();
    raw.dma.num_sge = 5;
    raw.encode(&mut slot).unwrap();
    let e = RecvWqe::parse(&slot, &l).unwrap_err();
    assert_eq!(e, RecvWqeError::TooManySges(5));
    assert_eq!(e.wc_status(), WcStatus::LocQpOpErr);
    raw.dma.num_sge = u32::MAX;
    raw.encode(&mut slot).unwrap();
    assert_eq!(
        RecvWqe::parse(&slot, &l),
        Err(RecvWqeError::TooManySges(u32::MAX))
    );
    // Limit says 8 but the slot holds 4.
    let wide = RecvLimits {
        max_sge: 8,
        slot_size: 104,
    };
    raw.dma.num_sge = 5;
    raw.encode(&mut slot).unwrap();
    assert_eq!(
        RecvWqe::parse(&slot, &wide),
        Err(RecvWqeError::SgesExceedSlot)
    );
    // Lengths that overflow a u32.
    write_recv_wqe(&mut slot, 1, &[sge(0, u32::MAX, 1), sge(0, 1, 1)]);
    let e = RecvWqe::parse(&slot, &l).unwrap_err();
    assert_eq!(e, RecvWqeError::LengthOverflow(1 << 32));
    assert_eq!(e.wc_status(), WcStatus::LocLenErr);
    // Cursor fields are ignored.
    write_recv_wqe(&mut slot, 1, &[sge(0, 10, 1)]);
    let mut raw = RawRecvWqe::decode(&slot).unwrap();
    raw.dma.length = 0;
    raw.dma.resid = u32::MAX;
    raw.dma.cur_sge = 1000;
    raw.encode(&mut slot).unwrap();
    assert_eq!(RecvWqe::parse(&slot, &l).unwrap().total_len, 10);
    // Truncated.
    assert_eq!(
        RecvWqe::parse(&slot[..39], &l),
        Err(RecvWqeError::Truncated)
    );
}

#[test]
fn srq_ring_read_once() {
    let s = QueueGeometry::for_request(7, 40 + 16 * 27, 64).unwrap();
    let geo = s.geometry;
    let buf = VecBuf::new(s.buffer_bytes);
    geo.write_header(&buf, 0, 0);
    let l = RecvLimits {
        max_sge: 27,
        slot_size: geo.elem_size(),
    };
    for i in 0..7u32 {
        let mut slot = vec![0u8; geo.elem_size()];
        let sges: Vec<Sge> = (0..=i).map(|k| sge(u64::from(k) << 12, 100, i)).collect();
        write_recv_wqe(&mut slot, u64::from(i), &sges);
        buf.set_bytes(geo.slot_offset(i), &slot);
    }
    buf.set_producer(7);
    let mut q = FromClient::new(geo);
    let mut n = 0;
    while let Some(off) = q.peek(&buf) {
        buf.clear_reads();
        let w = RecvWqe::read_from(&buf, off, &l).unwrap();
        assert!(buf.max_reads() <= 1);
        check_invariants(&w, &l);
        assert_eq!(w.wr_id, n);
        assert_eq!(w.total_len, 100 * (n as u32 + 1));
        assert!(q.advance(&buf));
        n += 1;
    }
    assert_eq!(n, 7);
    assert_eq!(buf.get_u32(queue_hdr::CONSUMER_INDEX), 7);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(mut slot in prop::collection::vec(any::<u8>(), 0..600), nsge in 0u32..40,
                       max_sge in 0u32..40, slot_size in 0usize..600) {
        if slot.len() >= 40 {
            slot[28..32].copy_from_slice(&nsge.to_le_bytes());
        }
        let l = RecvLimits { max_sge, slot_size };
        let r = RecvWqe::parse(&slot, &l);
        if let Ok(w) = &r {
            check_invariants(w, &RecvLimits { slot_size: slot_size.min(slot.len()), ..l });
        }
        let buf = VecBuf::new(queue_hdr::DATA + slot.len());
        buf.set_bytes(queue_hdr::DATA, &slot);
        let r2 = RecvWqe::read_from(&buf, queue_hdr::DATA, &RecvLimits { slot_size: slot_size.min(slot.len()), ..l });
        prop_assert_eq!(r2, r);
        prop_assert!(buf.max_reads() <= 1);
    }

    #[test]
    fn round_trip(wr_id in any::<u64>(), sges in prop::collection::vec((any::<u64>(), 0u32..0x0800_0000, any::<u32>()), 0..=27)) {
        let sges: Vec<Sge> = sges.into_iter().map(|(a, n, k)| sge(a, n, k)).collect();
        let l = RecvLimits { max_sge: 27, slot_size: 512 };
        let mut slot = vec![0u8; 512];
        write_recv_wqe(&mut slot, wr_id, &sges);
        let w = RecvWqe::parse(&slot, &l).unwrap();
        check_invariants(&w, &l);
        prop_assert_eq!(w.wr_id, wr_id);
        prop_assert_eq!(w.sges.as_slice(), &sges[..]);
    }
}

#[test]
fn recv_elem_sizes() {
    assert_eq!(recv_elem_size(1), Some(56));
    assert_eq!(recv_elem_size(27), Some(40 + 27 * 16));
    assert_eq!(recv_elem_size(32), Some(552));
    assert_eq!(recv_elem_size(33), None);
    assert_eq!(recv_elem_size(u32::MAX), None);
}
