//! Kernel ULPs' work requests (`src/abi/kernel_post.rs`): what is written
//! into a ring reads back, through the same copy-once validation user
//! WQEs go through, as the request that was posted; full rings and
//! oversized requests are refused before anything is written.
mod abi_support;

use abi_support::VecBuf;
use rxe_proto::abi::kernel_post::*;
use rxe_proto::abi::layout::Sge;
use rxe_proto::abi::queue::{FromClient, QueueGeometry};
use rxe_proto::abi::recv_wqe::{recv_elem_size, RecvLimits, RecvWqe};
use rxe_proto::abi::send_wqe::{
    sq_caps, Origin, Payload, RemoteAddr, SendLimits, SendOp, SendWqe, UdDest,
};
use rxe_proto::abi::values::{send_flags, QpType, WrOpcode};

const MAX_SGE: u32 = 4;
const MAX_INLINE: u32 = 64;

struct Sq {
    ring: FromClient,
    buf: VecBuf,
    post: PostLimits,
    parse: SendLimits,
}

fn sq(entries: u32) -> Sq {
    let caps = sq_caps(MAX_SGE, MAX_INLINE).unwrap();
    let s = QueueGeometry::for_request(entries, caps.elem_size, 64).unwrap();
    let buf = VecBuf::new(s.buffer_bytes);
    s.geometry.write_header(&buf, 0, 0);
    let slot_size = s.geometry.elem_size();
    Sq {
        ring: FromClient::new(s.geometry),
        buf,
        post: PostLimits {
            max_sge: caps.max_send_sge,
            max_inline: caps.max_inline_data,
            slot_size,
        },
        parse: SendLimits {
            qp_type: QpType::Rc,
            max_sge: caps.max_send_sge,
            max_inline: caps.max_inline_data,
            slot_size,
            origin: Origin::Kernel,
        },
    }
}

impl Sq {
    /// Takes the oldest posted WQE out of the ring, as the data path does.
    fn take(&mut self) -> SendWqe {
        let off = self.ring.peek(&self.buf).expect("a posted WQE");
        let w = SendWqe::read_from(&self.buf, off, &self.parse).expect("valid");
        assert!(self.ring.advance(&self.buf));
        w
    }
}

fn sges() -> [Sge; 3] {
    [
        Sge {
            addr: 0xffff_8880_0000_1000,
            length: 100,
            lkey: 0x1234,
        },
        Sge {
            addr: 0xffff_8880_0000_3000,
            length: 4096,
            lkey: 0x1234,
        },
        Sge {
            addr: 0xffff_8880_0001_0000,
            length: 1,
            lkey: 0x5678,
        },
    ]
}

#[test]
fn send_with_imm_reads_back() {
    let mut q = sq(8);
    let wr = KernelSendWr {
        wr_id: 0xdead_beef_0000_0001,
        opcode: WrOpcode::SendWithImm as u32,
        send_flags: send_flags::SIGNALED | send_flags::SOLICITED,
        ex: [0x12, 0x34, 0x56, 0x78],
        remote: Remote::None,
    };
    post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Sges(&sges())).unwrap();
    let w = q.take();
    assert_eq!(w.wr_id, wr.wr_id);
    assert_eq!(w.opcode, WrOpcode::SendWithImm);
    assert_eq!(w.send_flags, send_flags::SIGNALED | send_flags::SOLICITED);
    assert_eq!(w.total_len, 4197);
    match w.op {
        SendOp::Send { imm, .. } => assert_eq!(imm, Some([0x12, 0x34, 0x56, 0x78])),
        _ => panic!("not a send"),
    }
    match &w.payload {
        Payload::Sges(l) => assert_eq!(l.as_slice(), &sges()),
        _ => panic!("not SGEs"),
    }
}

#[test]
fn rdma_and_atomic_remote_parts_read_back() {
    let mut q = sq(8);
    let write = KernelSendWr {
        wr_id: 1,
        opcode: WrOpcode::RdmaWrite as u32,
        remote: Remote::Rdma {
            addr: 0xffff_8880_1234_5000,
            rkey: 0xabcd,
        },
        ..Default::default()
    };
    let read = KernelSendWr {
        wr_id: 2,
        opcode: WrOpcode::RdmaRead as u32,
        ..write
    };
    let cas = KernelSendWr {
        wr_id: 3,
        opcode: WrOpcode::AtomicCmpAndSwp as u32,
        remote: Remote::Atomic {
            addr: 0x1000,
            compare_add: 7,
            swap: 9,
            rkey: 0x77,
        },
        ..Default::default()
    };
    let eight = [Sge {
        addr: 0x2000,
        length: 8,
        lkey: 1,
    }];
    for wr in [&write, &read] {
        post_send(
            &q.ring,
            &q.buf,
            &q.post,
            wr,
            SendPayload::Sges(&sges()[..2]),
        )
        .unwrap();
    }
    post_send(&q.ring, &q.buf, &q.post, &cas, SendPayload::Sges(&eight)).unwrap();
    let remote = RemoteAddr {
        addr: 0xffff_8880_1234_5000,
        rkey: 0xabcd,
    };
    match q.take().op {
        SendOp::Write {
            remote: r,
            imm: None,
        } => assert_eq!(r, remote),
        _ => panic!("not a write"),
    }
    match q.take().op {
        SendOp::Read { remote: r, .. } => assert_eq!(r, remote),
        _ => panic!("not a read"),
    }
    match q.take().op {
        SendOp::Atomic {
            remote: r,
            compare_add,
            swap,
        } => {
            assert_eq!(
                r,
                RemoteAddr {
                    addr: 0x1000,
                    rkey: 0x77
                }
            );
            assert_eq!((compare_add, swap), (7, 9));
        }
        _ => panic!("not an atomic"),
    }
}

#[test]
fn inline_bytes_read_back() {
    let mut q = sq(4);
    let data: Vec<u8> = (0..MAX_INLINE as u8).collect();
    let wr = KernelSendWr {
        wr_id: 5,
        opcode: WrOpcode::Send as u32,
        ..Default::default()
    };
    post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Inline(&data)).unwrap();
    let w = q.take();
    assert_ne!(w.send_flags & send_flags::INLINE, 0);
    match &w.payload {
        Payload::Inline(d) => assert_eq!(d.as_slice(), &data[..]),
        _ => panic!("not inline"),
    }
    // One byte more than the QP's inline room is refused, nothing written.
    let long = vec![0u8; MAX_INLINE as usize + 1];
    assert_eq!(
        post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Inline(&long)),
        Err(PostError::InlineTooLong(long.len()))
    );
    assert!(q.ring.is_empty(&q.buf));
}

#[test]
fn full_ring_and_too_many_sges_are_refused_without_writing() {
    let q = sq(3); // capacity 3
    let wr = KernelSendWr {
        opcode: WrOpcode::Send as u32,
        ..Default::default()
    };
    let five = [Sge::default(); 5];
    assert_eq!(
        post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Sges(&five)),
        Err(PostError::TooManySges(5))
    );
    for _ in 0..3 {
        post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Sges(&sges())).unwrap();
    }
    let before = q.buf.bytes(0, 384);
    assert_eq!(
        post_send(&q.ring, &q.buf, &q.post, &wr, SendPayload::Sges(&sges())),
        Err(PostError::Full)
    );
    assert_eq!(
        q.buf.bytes(0, 384),
        before,
        "a refused post leaves the header alone"
    );
    assert_eq!(q.ring.count(&q.buf), 3);
}

#[test]
fn recv_reads_back_and_respects_limits() {
    let elem = recv_elem_size(MAX_SGE).unwrap();
    let s = QueueGeometry::for_request(2, elem, 64).unwrap(); // capacity 3
    let buf = VecBuf::new(s.buffer_bytes);
    s.geometry.write_header(&buf, 0, 0);
    let mut ring = FromClient::new(s.geometry);
    let post = PostLimits {
        max_sge: MAX_SGE,
        max_inline: 0,
        slot_size: s.geometry.elem_size(),
    };
    let parse = RecvLimits {
        max_sge: MAX_SGE,
        slot_size: s.geometry.elem_size(),
    };

    post_recv(&ring, &buf, &post, 42, &sges()).unwrap();
    post_recv(&ring, &buf, &post, 43, &[]).unwrap();
    post_recv(&ring, &buf, &post, 44, &sges()[..1]).unwrap();
    assert_eq!(
        post_recv(&ring, &buf, &post, 45, &sges()),
        Err(PostError::Full)
    );
    assert_eq!(
        post_recv(&ring, &buf, &post, 45, &[Sge::default(); 5]),
        Err(PostError::TooManySges(5))
    );
    for (wr_id, list, total) in [
        (42u64, &sges()[..], 4197u32),
        (43, &[][..], 0),
        (44, &sges()[..1], 100),
    ] {
        let off = ring.peek(&buf).unwrap();
        let w = RecvWqe::read_from(&buf, off, &parse).unwrap();
        assert_eq!(w.wr_id, wr_id);
        assert_eq!(w.sges.as_slice(), list);
        assert_eq!(w.total_len, total);
        assert!(ring.advance(&buf));
    }
    // Room again after the consumer moved on.
    post_recv(&ring, &buf, &post, 46, &sges()).unwrap();
}

#[test]
fn datagram_destination_reads_back() {
    // A GSI/UD send: the destination QP, Q_Key, P_Key index and AH number
    // written from an `ib_ud_wr` come back out of the slot.
    let mut q = sq(4);
    q.parse.qp_type = QpType::Gsi;
    let ud = UdDest {
        remote_qpn: 1,
        remote_qkey: 0x8001_0000,
        pkey_index: 0,
        ah_num: 42,
    };
    let wr = KernelSendWr {
        wr_id: 9,
        opcode: WrOpcode::Send as u32,
        send_flags: send_flags::SIGNALED,
        remote: Remote::Datagram(ud),
        ..Default::default()
    };
    post_send(
        &q.ring,
        &q.buf,
        &q.post,
        &wr,
        SendPayload::Sges(&sges()[..2]),
    )
    .unwrap();
    match q.take().op {
        SendOp::Send {
            ud: Some(got),
            imm: None,
            ..
        } => assert_eq!(got, ud),
        other => panic!("not a UD send: {other:?}"),
    }
}

#[test]
fn datagram_without_address_handle_is_refused_by_the_data_path() {
    // A null `ah` is posted as AH number 0, which validation refuses.
    let q = sq(4);
    let mut parse = q.parse;
    parse.qp_type = QpType::Ud;
    let wr = KernelSendWr {
        opcode: WrOpcode::Send as u32,
        remote: Remote::Datagram(UdDest {
            remote_qpn: 0x20,
            remote_qkey: 7,
            pkey_index: 0,
            ah_num: 0,
        }),
        ..Default::default()
    };
    post_send(
        &q.ring,
        &q.buf,
        &q.post,
        &wr,
        SendPayload::Sges(&sges()[..1]),
    )
    .unwrap();
    let off = q.ring.peek(&q.buf).unwrap();
    assert!(SendWqe::read_from(&q.buf, off, &parse).is_err());
}

#[test]
fn reg_mr_local_inv_and_send_with_inv_read_back() {
    let mut q = sq(8);
    let reg = KernelSendWr {
        wr_id: 1,
        opcode: WrOpcode::RegMr as u32,
        send_flags: send_flags::SIGNALED,
        ex: [0; 4],
        remote: Remote::Reg {
            mr_index: 0x1234,
            iova: 0xabcd_0000_ffff_1800,
            key: 0x0012_3457,
            access: 7,
        },
    };
    post_send(&q.ring, &q.buf, &q.post, &reg, SendPayload::Sges(&[])).unwrap();
    let w = q.take();
    assert_eq!(w.opcode, WrOpcode::RegMr);
    assert_eq!(w.payload, Payload::None);
    assert_eq!(
        w.op,
        SendOp::RegMr {
            mr_index: 0x1234,
            iova: 0xabcd_0000_ffff_1800,
            key: 0x0012_3457,
            access: 7,
        }
    );

    let inv = KernelSendWr {
        wr_id: 2,
        opcode: WrOpcode::LocalInv as u32,
        send_flags: 0,
        ex: 0x0012_3457u32.to_ne_bytes(),
        remote: Remote::None,
    };
    post_send(&q.ring, &q.buf, &q.post, &inv, SendPayload::Sges(&[])).unwrap();
    assert_eq!(q.take().op, SendOp::LocalInv { rkey: 0x0012_3457 });

    let send = KernelSendWr {
        wr_id: 3,
        opcode: WrOpcode::SendWithInv as u32,
        send_flags: 0,
        ex: 0x88_99u32.to_ne_bytes(),
        remote: Remote::None,
    };
    post_send(&q.ring, &q.buf, &q.post, &send, SendPayload::Sges(&sges())).unwrap();
    match q.take().op {
        SendOp::Send {
            invalidate_rkey, ..
        } => assert_eq!(invalidate_rkey, Some(0x88_99)),
        _ => panic!("not a send"),
    }

    // A user queue may not post REG_MR (its region is named by index: a
    // user QP must never reach a kernel ULP's region that way).
    post_send(&q.ring, &q.buf, &q.post, &reg, SendPayload::Sges(&[])).unwrap();
    let off = q.ring.peek(&q.buf).unwrap();
    let user = SendLimits {
        origin: Origin::User,
        ..q.parse
    };
    assert!(SendWqe::read_from(&q.buf, off, &user).is_err());
}
