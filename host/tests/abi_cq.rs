//! CQ notification arming, the kernel-CQ slot format and the kernel-side
//! consumer of `src/abi/cq.rs`.
mod abi_support;

use abi_support::VecBuf;
use rxe_proto::abi::cq::*;
use rxe_proto::abi::cqe::{Completion, CqeEx};
use rxe_proto::abi::layout::queue_hdr;
use rxe_proto::abi::queue::*;
use rxe_proto::abi::values::{WcOpcode, WcStatus, WrOpcode};

use notify_flags::*;

#[test]
fn notify_values_are_the_kernel_enum() {
    // enum ib_cq_notify_flags in include/rdma/ib_verbs.h
    assert_eq!(SOLICITED, 1);
    assert_eq!(NEXT_COMP, 2);
    assert_eq!(SOLICITED_MASK, 3);
    assert_eq!(REPORT_MISSED_EVENTS, 4);
}

#[test]
fn unarmed_never_fires() {
    let mut n = CqNotify::new();
    assert!(!n.fire(false));
    assert!(!n.fire(true));
}

#[test]
fn next_comp_fires_once_on_any_completion() {
    let mut n = CqNotify::new();
    assert!(!n.arm(NEXT_COMP, true));
    assert!(n.fire(false));
    assert_eq!(n.armed(), 0);
    assert!(!n.fire(false));
    assert!(!n.fire(true));
}

#[test]
fn solicited_fires_only_on_solicited() {
    let mut n = CqNotify::new();
    n.arm(SOLICITED, true);
    assert!(!n.fire(false));
    assert!(!n.fire(false));
    assert!(n.fire(true));
    assert!(!n.fire(true));
}

#[test]
fn arming_accumulates_and_ignores_other_bits() {
    let mut n = CqNotify::new();
    n.arm(SOLICITED | 0x100, true);
    assert_eq!(n.armed(), SOLICITED);
    n.arm(NEXT_COMP, true);
    assert_eq!(n.armed(), SOLICITED | NEXT_COMP);
    assert!(n.fire(false));
    assert_eq!(n.armed(), 0);
}

#[test]
fn report_missed_events_only_when_not_empty() {
    let mut n = CqNotify::new();
    assert!(!n.arm(NEXT_COMP | REPORT_MISSED_EVENTS, true));
    assert!(n.arm(NEXT_COMP | REPORT_MISSED_EVENTS, false));
    assert!(!n.arm(NEXT_COMP, false));
    // Still armed either way.
    assert_eq!(n.armed(), NEXT_COMP);
}

fn sample() -> KernelCqe {
    let c = Completion::recv(
        0x1122_3344_5566_7788,
        0x12,
        true,
        1000,
        CqeEx::Imm([1, 2, 3, 4]),
        7,
        1,
    );
    KernelCqe::new(
        &c,
        &KernelWcExtra {
            qp: 0xffff_8880_1234_5678,
            network_hdr_type: 3,
            vlan_id: 0x123,
            smac: [2, 0, 0, 0, 0, 0xa],
        },
    )
}

#[test]
fn kernel_cqe_round_trips_and_starts_with_the_user_cqe() {
    let k = sample();
    let b = k.to_bytes();
    const { assert!(KernelCqe::SIZE <= CQE_ELEM_SIZE) };
    assert_eq!(KernelCqe::decode(&b).unwrap(), k);
    let c = Completion::recv(
        0x1122_3344_5566_7788,
        0x12,
        true,
        1000,
        CqeEx::Imm([1, 2, 3, 4]),
        7,
        1,
    );
    assert_eq!(&b[..48], &c.to_bytes()[..]);
    assert_eq!(&b[48..56], &0xffff_8880_1234_5678u64.to_le_bytes());
    assert_eq!(b[56], 3);
    assert_eq!(&b[58..60], &0x123u16.to_le_bytes());
    assert_eq!(&b[60..66], &[2, 0, 0, 0, 0, 0xa]);
    assert!(KernelCqe::decode(&b[..65]).is_err());
    assert!(k.encode(&mut [0u8; 10]).is_err());
}

fn kernel_cq(requested: u32) -> (ToClient, VecBuf) {
    let s = QueueGeometry::for_request(requested, CQE_ELEM_SIZE, 64).unwrap();
    assert_eq!(s.geometry.elem_size(), 128);
    let buf = VecBuf::new(s.buffer_bytes);
    s.geometry.write_header(&buf, 0, 0);
    (ToClient::new(s.geometry), buf)
}

#[test]
fn kernel_poll_is_fifo_and_stops_when_empty() {
    let (mut ring, buf) = kernel_cq(3);
    let mut out = [0u8; KernelCqe::SIZE];
    assert!(!kernel_pop(&ring, &buf, &mut out));
    for round in 0..5u64 {
        for i in 0..3u64 {
            let c = Completion::send(round * 10 + i, 1, WcStatus::Success, WrOpcode::Send, 4);
            ring.push(
                &buf,
                &KernelCqe::new(&c, &KernelWcExtra::default()).to_bytes(),
            )
            .unwrap();
        }
        // Full: the fourth is refused, nothing overwritten.
        let c = Completion::flush(99, 1);
        assert_eq!(ring.push(&buf, &c.to_bytes()), Err(QueueError::Full));
        assert_eq!(ring.count(&buf), 3);
        for i in 0..3u64 {
            assert!(kernel_pop(&ring, &buf, &mut out));
            let k = KernelCqe::decode(&out).unwrap();
            assert_eq!(k.wc.wr_id, round * 10 + i);
            assert_eq!(k.wc.opcode, WcOpcode::Send.as_u32());
        }
        assert!(!kernel_pop(&ring, &buf, &mut out));
        assert_eq!(buf.get_u32(queue_hdr::CONSUMER_INDEX), ring.index());
    }
}

#[test]
fn kernel_poll_with_a_scribbled_consumer_stays_in_range() {
    let (mut ring, buf) = kernel_cq(7);
    let c = Completion::flush(5, 1);
    ring.push(&buf, &c.to_bytes()).unwrap();
    for bad in [u32::MAX, 1 << 31, 12345, 8, 9] {
        buf.set_u32(queue_hdr::CONSUMER_INDEX, bad);
        let mut out = [0u8; 200];
        // Never out of range (VecBuf asserts), and the stored index is masked.
        if kernel_pop(&ring, &buf, &mut out) {
            // A retired entry stores a masked index.
            assert!(buf.get_u32(queue_hdr::CONSUMER_INDEX) <= ring.geometry().index_mask());
        }
    }
}
