//! Copy-once validation of send WQEs (`src/abi/send_wqe.rs`): every opcode
//! librxe posts is accepted with the right fields, hostile WQEs are
//! rejected with the documented status, arbitrary bytes never panic, and
//! whatever is accepted satisfies the documented invariants.
mod abi_support;

use abi_support::{write_send_wqe, VecBuf};
use proptest::prelude::*;
use rxe_proto::abi::layout::{queue_hdr, send_wqe, RawSendWqe, RawSendWr, Sge};
use rxe_proto::abi::queue::{FromClient, QueueGeometry};
use rxe_proto::abi::send_wqe::*;
use rxe_proto::abi::values::{send_flags, QpType, WcOpcode, WcStatus, WrOpcode};

const SLOT: usize = 1024;

fn limits(qp_type: QpType) -> SendLimits {
    SendLimits {
        qp_type,
        max_sge: 32,
        max_inline: 512,
        slot_size: SLOT,
        origin: Origin::User,
    }
}

fn hdr(opcode: WrOpcode, flags: u32) -> RawSendWqe {
    RawSendWqe {
        wr: RawSendWr {
            wr_id: 0xc0ffee,
            opcode: opcode.as_u32(),
            send_flags: flags,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn sge(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

fn build(h: &RawSendWqe, sges: &[Sge], inline: Option<&[u8]>) -> Vec<u8> {
    let mut slot = vec![0u8; SLOT];
    write_send_wqe(&mut slot, h, sges, inline);
    slot
}

fn parse(slot: &[u8], l: &SendLimits) -> Result<SendWqe, SendWqeError> {
    SendWqe::parse(slot, l)
}

/// The invariants `SendWqe` documents.
fn check_invariants(w: &SendWqe, l: &SendLimits) {
    assert!(opcode_valid_for(w.opcode, l.qp_type));
    if l.origin == Origin::User {
        assert!(opcode_valid_for_user(w.opcode));
    }
    assert!(!matches!(
        w.opcode,
        WrOpcode::Tso | WrOpcode::MaskedAtomicCmpAndSwp | WrOpcode::MaskedAtomicFetchAndAdd
    ));
    assert!(u64::from(w.total_len) <= MAX_MSG_LEN);
    assert_eq!(w.send_flags & !send_flags::ALL, 0);
    match &w.payload {
        Payload::Sges(list) => {
            assert!(list.len() <= l.max_sge.min(32) as usize);
            assert!(send_wqe::DATA + 16 * list.len() <= l.slot_size);
            assert_eq!(list.total_len(), u64::from(w.total_len));
            assert_eq!(w.send_flags & send_flags::INLINE, 0);
        }
        Payload::Inline(d) => {
            assert!(d.len() <= l.max_inline.min(512) as usize);
            assert!(send_wqe::DATA + d.len() <= l.slot_size);
            assert_eq!(d.len() as u32, w.total_len);
            assert_ne!(w.send_flags & send_flags::INLINE, 0);
        }
        Payload::None => match w.opcode {
            WrOpcode::AtomicWrite => assert_eq!(w.total_len, 8),
            _ => assert_eq!(w.total_len, 0),
        },
    }
    match w.op {
        SendOp::Atomic { remote, .. } => {
            assert_eq!(remote.addr & 7, 0);
            assert!(w.total_len >= 8);
            if l.origin == Origin::Kernel {
                assert_eq!(w.total_len, 8);
            }
            assert!(matches!(w.payload, Payload::Sges(_)));
        }
        SendOp::Send {
            ud,
            imm,
            invalidate_rkey,
        } => {
            assert_eq!(ud.is_some(), matches!(l.qp_type, QpType::Ud | QpType::Gsi));
            if let Some(ud) = ud {
                assert!(ud.remote_qpn <= MAX_QPN);
                assert_ne!(ud.ah_num, 0);
            }
            assert_eq!(imm.is_some(), w.opcode == WrOpcode::SendWithImm);
            assert_eq!(invalidate_rkey.is_some(), w.opcode == WrOpcode::SendWithInv);
        }
        SendOp::Write { imm, .. } => {
            assert_eq!(imm.is_some(), w.opcode == WrOpcode::RdmaWriteWithImm)
        }
        SendOp::Read { .. } => assert!(matches!(w.payload, Payload::Sges(_))),
        SendOp::RegMr { .. } => assert_eq!(l.origin, Origin::Kernel),
        _ => {}
    }
    assert!(w.wc_opcode().is_some());
}

#[test]
fn rc_write_with_sges() {
    let mut h = hdr(
        WrOpcode::RdmaWriteWithImm,
        send_flags::SIGNALED | 0x8000_0000,
    );
    h.wr.set_rdma(0x7000_0000, 0x1234);
    h.wr.ex = [1, 2, 3, 4];
    let slot = build(&h, &[sge(0x1000, 100, 7), sge(0x2000, 28, 8)], None);
    let l = limits(QpType::Rc);
    let w = parse(&slot, &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(w.wr_id, 0xc0ffee);
    assert_eq!(w.opcode, WrOpcode::RdmaWriteWithImm);
    assert_eq!(
        w.send_flags,
        send_flags::SIGNALED,
        "unknown flag bits cleared"
    );
    assert_eq!(w.total_len, 128);
    assert_eq!(
        w.op,
        SendOp::Write {
            remote: RemoteAddr {
                addr: 0x7000_0000,
                rkey: 0x1234
            },
            imm: Some([1, 2, 3, 4])
        }
    );
    let Payload::Sges(list) = w.payload else {
        panic!()
    };
    assert_eq!(list.as_slice(), &[sge(0x1000, 100, 7), sge(0x2000, 28, 8)]);
    assert!(w.signaled(false));
    assert_eq!(w.wc_opcode(), Some(WcOpcode::RdmaWrite));
}

/// One slot's storage reused for a sequence of WQEs of every payload kind,
/// as the requester's WQE slots are: each read gives exactly what a fresh
/// parse gives, the earlier WQE's bytes and SGEs never showing through.
#[test]
fn read_into_one_slot_in_turn() {
    let l = limits(QpType::Rc);
    let long: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let three = [sge(0x1000, 10, 1), sge(0x2000, 20, 2), sge(0x3000, 30, 3)];
    let slots = [
        build(&hdr(WrOpcode::Send, send_flags::INLINE), &[], Some(&long)),
        build(&hdr(WrOpcode::RdmaWrite, 0), &three, None),
        build(&hdr(WrOpcode::Send, 0), &three[2..], None),
        build(
            &hdr(WrOpcode::Send, send_flags::INLINE),
            &[],
            Some(&long[..7]),
        ),
        build(&hdr(WrOpcode::LocalInv, 0), &[], None),
        build(&hdr(WrOpcode::Send, 0), &three[..2], None),
    ];
    let mut dst = None;
    for slot in &slots {
        let buf = VecBuf::new(queue_hdr::DATA + SLOT);
        buf.set_bytes(queue_hdr::DATA, slot);
        SendWqe::read_into(&buf, queue_hdr::DATA, &l, &mut dst).unwrap();
        assert_eq!(dst, Some(parse(slot, &l).unwrap()));
        check_invariants(dst.as_ref().unwrap(), &l);
    }
    // An error leaves no WQE behind.
    let mut bad = hdr(WrOpcode::Send, 0);
    bad.wr.opcode = 0xff;
    let buf = VecBuf::new(queue_hdr::DATA + SLOT);
    buf.set_bytes(queue_hdr::DATA, &build(&bad, &[], None));
    assert!(SendWqe::read_into(&buf, queue_hdr::DATA, &l, &mut dst).is_err());
    assert_eq!(dst, None);
}

#[test]
fn inline_send() {
    let data: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
    let h = hdr(WrOpcode::Send, send_flags::INLINE | send_flags::SOLICITED);
    let slot = build(&h, &[], Some(&data));
    let l = limits(QpType::Rc);
    let w = parse(&slot, &l).unwrap();
    check_invariants(&w, &l);
    let Payload::Inline(d) = w.payload else {
        panic!()
    };
    assert_eq!(d.as_slice(), &data[..]);
    assert_eq!(w.total_len, 200);
    assert!(w.solicited());
    assert!(!w.signaled(false));
    assert!(w.signaled(true));
}

#[test]
fn read_and_atomics() {
    let l = limits(QpType::Rc);
    let mut h = hdr(WrOpcode::RdmaRead, 0);
    h.wr.set_rdma(0x10, 0x20);
    let w = parse(&build(&h, &[sge(0x1000, 4096, 1)], None), &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(
        w.op,
        SendOp::Read {
            remote: RemoteAddr {
                addr: 0x10,
                rkey: 0x20
            },
            invalidate_rkey: None
        }
    );

    for op in [WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicFetchAndAdd] {
        let mut h = hdr(op, 0);
        h.wr.set_atomic(0x8000, 5, 6, 0x99);
        let w = parse(&build(&h, &[sge(0x1000, 8, 1)], None), &l).unwrap();
        check_invariants(&w, &l);
        assert_eq!(
            w.op,
            SendOp::Atomic {
                remote: RemoteAddr {
                    addr: 0x8000,
                    rkey: 0x99
                },
                compare_add: 5,
                swap: 6
            }
        );
        // librxe accepts a longer local buffer; so do we for user QPs.
        assert!(parse(&build(&h, &[sge(0x1000, 16, 1)], None), &l).is_ok());
        let k = SendLimits {
            origin: Origin::Kernel,
            ..l
        };
        assert_eq!(
            parse(&build(&h, &[sge(0x1000, 16, 1)], None), &k),
            Err(SendWqeError::AtomicLength(16))
        );
        assert_eq!(
            parse(&build(&h, &[sge(0x1000, 4, 1)], None), &l),
            Err(SendWqeError::AtomicLength(4))
        );
        assert_eq!(
            parse(&build(&h, &[], None), &l),
            Err(SendWqeError::AtomicLength(0))
        );
        h.wr.set_atomic(0x8004, 5, 6, 0x99);
        let e = parse(&build(&h, &[sge(0x1000, 8, 1)], None), &l).unwrap_err();
        assert_eq!(e, SendWqeError::AtomicMisaligned(0x8004));
        assert_eq!(e.wc_status(), WcStatus::LocQpOpErr);
    }
}

#[test]
fn atomic_write_flush_local_ops() {
    let l = limits(QpType::Rc);
    // ATOMIC_WRITE as the ibv_wr_atomic_write builder lays it out.
    let mut slot = vec![0u8; SLOT];
    let mut h = hdr(WrOpcode::AtomicWrite, 0);
    h.wr.set_rdma(0x4000, 0x44);
    h.dma.length = 8;
    h.dma.resid = 8;
    h.encode(&mut slot).unwrap();
    slot[208..216].copy_from_slice(&[9, 8, 7, 6, 5, 4, 3, 2]);
    let w = parse(&slot, &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(
        w.op,
        SendOp::AtomicWrite {
            remote: RemoteAddr {
                addr: 0x4000,
                rkey: 0x44
            },
            value: [9, 8, 7, 6, 5, 4, 3, 2]
        }
    );
    assert_eq!(w.total_len, 8);
    h.dma.length = 16;
    h.encode(&mut slot).unwrap();
    let e = parse(&slot, &l).unwrap_err();
    assert_eq!(e, SendWqeError::AtomicWriteLength(16));
    assert_eq!(e.wc_status(), WcStatus::LocLenErr);

    let mut h = hdr(WrOpcode::Flush, 0);
    h.wr.set_flush(0x5000, 64, 0x55, 1, 1);
    let w = parse(&build(&h, &[], None), &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(
        w.op,
        SendOp::Flush {
            remote: RemoteAddr {
                addr: 0x5000,
                rkey: 0x55
            },
            length: 64,
            flush_type: 1,
            level: 1
        }
    );

    let mut h = hdr(WrOpcode::LocalInv, send_flags::INLINE);
    h.wr.ex = 0xabcdu32.to_le_bytes();
    let w = parse(&build(&h, &[], None), &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(w.op, SendOp::LocalInv { rkey: 0xabcd });
    assert_eq!(
        w.send_flags & send_flags::INLINE,
        0,
        "INLINE dropped on local ops"
    );

    let mut h = hdr(WrOpcode::BindMw, send_flags::SIGNALED);
    h.wr.set_mw(0x1000, 0x2000, 3, 0x400, 0x401, 0x6);
    for qp in [QpType::Rc, QpType::Uc] {
        let lq = limits(qp);
        let w = parse(&build(&h, &[], None), &lq).unwrap();
        check_invariants(&w, &lq);
        assert_eq!(
            w.op,
            SendOp::BindMw {
                addr: 0x1000,
                length: 0x2000,
                mr_lkey: 3,
                mw_rkey: 0x400,
                new_rkey: 0x401,
                access: 6
            }
        );
    }
}

#[test]
fn ud_send() {
    let l = limits(QpType::Ud);
    let mut h = hdr(WrOpcode::SendWithImm, 0);
    h.wr.set_ud(0x00ab_cdef, 0x1111_1111, 0, 3);
    h.wr.ex = [0xde, 0xad, 0xbe, 0xef];
    let w = parse(&build(&h, &[sge(0x1000, 256, 1)], None), &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(
        w.op,
        SendOp::Send {
            imm: Some([0xde, 0xad, 0xbe, 0xef]),
            invalidate_rkey: None,
            ud: Some(UdDest {
                remote_qpn: 0x00ab_cdef,
                remote_qkey: 0x1111_1111,
                pkey_index: 0,
                ah_num: 3
            })
        }
    );
    h.wr.set_ud(0x0100_0000, 0, 0, 3);
    assert_eq!(
        parse(&build(&h, &[], None), &l),
        Err(SendWqeError::BadRemoteQpn(0x0100_0000))
    );
    h.wr.set_ud(1, 0, 0, 0);
    assert_eq!(
        parse(&build(&h, &[], None), &l),
        Err(SendWqeError::NoAddressHandle)
    );
    // On RC the UD fields are not looked at.
    let w = parse(&build(&h, &[], None), &limits(QpType::Rc)).unwrap();
    assert!(matches!(w.op, SendOp::Send { ud: None, .. }));
}

#[test]
fn opcode_gates() {
    let l = limits(QpType::Rc);
    for bad in [16u32, 17, 0x1f, 0x21, 0xffff_ffff] {
        let mut h = hdr(WrOpcode::Send, 0);
        h.wr.opcode = bad;
        let e = parse(&build(&h, &[], None), &l).unwrap_err();
        assert_eq!(e, SendWqeError::UnknownOpcode(bad));
        assert_eq!(e.wc_status(), WcStatus::LocQpOpErr);
    }
    for op in [
        WrOpcode::Tso,
        WrOpcode::MaskedAtomicCmpAndSwp,
        WrOpcode::MaskedAtomicFetchAndAdd,
    ] {
        assert_eq!(
            parse(&build(&hdr(op, 0), &[], None), &l),
            Err(SendWqeError::OpcodeNotSupported(op))
        );
    }
    // Kernel-only opcodes, never from a user SQ (REG_MR carries a pointer).
    for op in [WrOpcode::RegMr, WrOpcode::RdmaReadWithInv] {
        assert_eq!(
            parse(&build(&hdr(op, 0), &[], None), &l),
            Err(SendWqeError::OpcodeNotAllowedForUser(op))
        );
        let k = SendLimits {
            origin: Origin::Kernel,
            ..l
        };
        let w = parse(&build(&hdr(op, 0), &[], None), &k).unwrap();
        check_invariants(&w, &k);
    }
    // Per QP type.
    let rc_only = [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::LocalInv,
        WrOpcode::Flush,
        WrOpcode::AtomicWrite,
    ];
    for op in rc_only {
        for qp in [QpType::Uc, QpType::Ud] {
            assert_eq!(
                parse(&build(&hdr(op, 0), &[], None), &limits(qp)),
                Err(SendWqeError::OpcodeNotAllowedForQpType(op))
            );
        }
    }
    for op in [
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteWithImm,
        WrOpcode::BindMw,
        WrOpcode::SendWithInv,
    ] {
        assert_eq!(
            parse(&build(&hdr(op, 0), &[], None), &limits(QpType::Ud)),
            Err(SendWqeError::OpcodeNotAllowedForQpType(op))
        );
        assert!(opcode_valid_for(op, QpType::Uc));
    }
}

#[test]
fn length_and_count_limits() {
    let l = SendLimits {
        max_sge: 2,
        max_inline: 64,
        ..limits(QpType::Rc)
    };
    let h = hdr(WrOpcode::Send, 0);
    let three = [sge(0, 1, 1), sge(0, 1, 1), sge(0, 1, 1)];
    assert_eq!(
        parse(&build(&h, &three, None), &l),
        Err(SendWqeError::TooManySges(3))
    );
    // num_sge beyond what the slot holds.
    let small = SendLimits {
        max_sge: 32,
        slot_size: 256,
        ..limits(QpType::Rc)
    };
    let mut slot = build(&h, &three, None);
    let mut raw = RawSendWqe::decode(&slot).unwrap();
    raw.dma.num_sge = 4;
    raw.encode(&mut slot).unwrap();
    assert_eq!(parse(&slot, &small), Err(SendWqeError::SgesExceedSlot));
    raw.dma.num_sge = u32::MAX;
    raw.encode(&mut slot).unwrap();
    assert_eq!(
        parse(&slot, &small),
        Err(SendWqeError::TooManySges(u32::MAX))
    );
    // Inline.
    let hi = hdr(WrOpcode::Send, send_flags::INLINE);
    let e = parse(&build(&hi, &[], Some(&[0; 65])), &l).unwrap_err();
    assert_eq!(e, SendWqeError::InlineTooLong(65));
    assert_eq!(e.wc_status(), WcStatus::LocLenErr);
    let tiny = SendLimits {
        max_inline: 512,
        slot_size: 256,
        ..limits(QpType::Rc)
    };
    assert_eq!(
        parse(&build(&hi, &[], Some(&[0; 49])), &tiny),
        Err(SendWqeError::InlineExceedsSlot)
    );
    assert!(parse(&build(&hi, &[], Some(&[0; 48])), &tiny).is_ok());
    let mut slot = build(&hi, &[], Some(&[0; 8]));
    let mut raw = RawSendWqe::decode(&slot).unwrap();
    raw.dma.length = u32::MAX;
    raw.encode(&mut slot).unwrap();
    assert_eq!(
        parse(&slot, &limits(QpType::Rc)),
        Err(SendWqeError::InlineTooLong(u32::MAX))
    );
    let hr = hdr(WrOpcode::RdmaRead, send_flags::INLINE);
    assert_eq!(
        parse(&build(&hr, &[], Some(&[0; 8])), &l),
        Err(SendWqeError::InlineNotAllowed(WrOpcode::RdmaRead))
    );
    // Message length: 2^31 is fine, one more is not; u32 wrap is caught.
    let ok = [sge(0, 0x4000_0000, 1), sge(0, 0x4000_0000, 1)];
    assert_eq!(
        parse(&build(&h, &ok, None), &l).unwrap().total_len,
        0x8000_0000
    );
    let over = [sge(0, 0x8000_0000, 1), sge(0, 1, 1)];
    let e = parse(&build(&h, &over, None), &l).unwrap_err();
    assert_eq!(e, SendWqeError::MessageTooLong(0x8000_0001));
    assert_eq!(e.wc_status(), WcStatus::LocLenErr);
    let wrap = [sge(0, 0xffff_ffff, 1), sge(0, 2, 1)];
    assert_eq!(
        parse(&build(&h, &wrap, None), &l),
        Err(SendWqeError::MessageTooLong(0x1_0000_0001))
    );
    // Truncated slot.
    assert_eq!(
        parse(&build(&h, &[], None)[..207], &l),
        Err(SendWqeError::Truncated)
    );
    let short = SendLimits {
        slot_size: 100,
        ..l
    };
    assert_eq!(
        parse(&build(&h, &[], None), &short),
        Err(SendWqeError::Truncated)
    );
}

#[test]
fn dma_length_is_not_trusted_for_sges() {
    let l = limits(QpType::Rc);
    let mut slot = build(&hdr(WrOpcode::Send, 0), &[sge(0, 10, 1)], None);
    let mut raw = RawSendWqe::decode(&slot).unwrap();
    raw.dma.length = 0xffff_ffff;
    raw.dma.resid = 7;
    raw.dma.cur_sge = 99;
    raw.dma.sge_offset = 12345;
    raw.state = 3;
    raw.has_rd_atomic = 1;
    raw.encode(&mut slot).unwrap();
    let w = parse(&slot, &l).unwrap();
    assert_eq!(w.total_len, 10);
}

#[test]
fn read_from_shared_ring_reads_each_byte_once() {
    let s = QueueGeometry::for_request(3, 720, 64).unwrap();
    let geo = s.geometry;
    let buf = VecBuf::new(s.buffer_bytes);
    geo.write_header(&buf, 0, 0);
    let mut slot = vec![0u8; geo.elem_size()];
    let mut h = hdr(WrOpcode::RdmaWrite, 0);
    h.wr.set_rdma(0x100, 0x200);
    let sges: Vec<Sge> = (0..32).map(|i| sge(i * 0x1000, 16, 5)).collect();
    write_send_wqe(&mut slot, &h, &sges, None);
    buf.set_bytes(geo.slot_offset(0), &slot);
    let data: Vec<u8> = (0..=255u8).cycle().take(512).collect();
    let mut slot2 = vec![0u8; geo.elem_size()];
    write_send_wqe(
        &mut slot2,
        &hdr(WrOpcode::Send, send_flags::INLINE),
        &[],
        Some(&data),
    );
    buf.set_bytes(geo.slot_offset(1), &slot2);
    buf.set_producer(2);

    let l = SendLimits {
        qp_type: QpType::Rc,
        max_sge: 32,
        max_inline: 512,
        slot_size: geo.elem_size(),
        origin: Origin::User,
    };
    let mut q = FromClient::new(geo);
    buf.clear_reads();
    let off = q.peek(&buf).unwrap();
    let w = SendWqe::read_from(&buf, off, &l).unwrap();
    check_invariants(&w, &l);
    assert_eq!(w.total_len, 512);
    assert!(buf.max_reads() <= 1, "a slot byte was read twice");
    assert!(q.advance(&buf));
    buf.clear_reads();
    let off = q.peek(&buf).unwrap();
    let w = SendWqe::read_from(&buf, off, &l).unwrap();
    let Payload::Inline(d) = w.payload else {
        panic!()
    };
    assert_eq!(d.as_slice(), &data[..]);
    assert!(buf.max_reads() <= 1);
    // Nothing outside the slot was read.
    let reads = buf.reads.borrow();
    let lo = geo.slot_offset(1);
    assert!(reads
        .iter()
        .enumerate()
        .all(|(i, &r)| r == 0 || (i >= lo && i < lo + geo.elem_size())));
    drop(reads);
    // A slot offset near the end of the buffer never reads past it.
    let last = geo.slot_offset(geo.index_mask());
    let _ = SendWqe::read_from(&buf, last, &l);
    let _ = SendWqe::read_from(&buf, last + 1, &l);
    let _ = SendWqe::read_from(&buf, usize::MAX - 10, &l);
    assert!(buf.bytes(queue_hdr::DATA, 1).len() == 1);
}

// ---------------------------------------------------------------------------
// Properties

fn arb_qp() -> impl Strategy<Value = QpType> {
    prop_oneof![
        Just(QpType::Rc),
        Just(QpType::Uc),
        Just(QpType::Ud),
        Just(QpType::Gsi)
    ]
}

fn arb_limits() -> impl Strategy<Value = SendLimits> {
    (
        arb_qp(),
        0u32..40,
        0u32..600,
        prop_oneof![
            Just(0usize),
            Just(100),
            Just(208),
            Just(256),
            Just(512),
            Just(1024)
        ],
        any::<bool>(),
    )
        .prop_map(
            |(qp_type, max_sge, max_inline, slot_size, user)| SendLimits {
                qp_type,
                max_sge,
                max_inline,
                slot_size,
                origin: if user { Origin::User } else { Origin::Kernel },
            },
        )
}

/// Bytes biased towards interesting headers: random opcode 0..=0x21,
/// random small num_sge / lengths, then arbitrary noise.
fn arb_slot() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u8>(), 0..1100),
        0u32..0x22,
        any::<u32>(),
        0u32..40,
        any::<u32>(),
        any::<bool>(),
    )
        .prop_map(|(mut b, op, flags, nsge, len, small)| {
            if b.len() >= 208 {
                b[12..16].copy_from_slice(&op.to_le_bytes());
                b[16..20].copy_from_slice(&flags.to_le_bytes());
                b[196..200].copy_from_slice(&nsge.to_le_bytes());
                let len = if small { len % 700 } else { len };
                b[184..188].copy_from_slice(&len.to_le_bytes());
            }
            b
        })
}

fn cases() -> u32 {
    std::env::var("RXE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Arbitrary slot bytes and limits: never a panic; anything accepted
    /// satisfies every invariant; the shared-ring path agrees with the
    /// private-copy path and reads nothing twice.
    #[test]
    fn arbitrary_bytes(slot in arb_slot(), l in arb_limits()) {
        let r = SendWqe::parse(&slot, &l);
        if let Ok(w) = &r {
            check_invariants(w, &l);
        }
        // Same bytes through a shared buffer.
        let buf = VecBuf::new(queue_hdr::DATA + l.slot_size.max(slot.len()));
        buf.set_bytes(queue_hdr::DATA, &slot);
        let from_ring = SendWqe::read_from(&buf, queue_hdr::DATA, &SendLimits { slot_size: l.slot_size.min(slot.len()), ..l });
        prop_assert_eq!(&from_ring, &r);
        prop_assert!(buf.max_reads() <= 1);
    }

    /// Reading into storage that held another WQE (or an error) gives what
    /// reading afresh gives: nothing of the earlier payload shows through
    /// (SGEs over inline data, fewer SGEs over more), and an error leaves
    /// no WQE.
    #[test]
    fn read_into_reuses_storage(first in arb_slot(), second in arb_slot(), l in arb_limits()) {
        let size = l.slot_size.max(first.len()).max(second.len());
        let buf = VecBuf::new(queue_hdr::DATA + size);
        buf.set_bytes(queue_hdr::DATA, &first);
        let l1 = SendLimits { slot_size: l.slot_size.min(first.len()), ..l };
        let mut dst = None;
        let r1 = SendWqe::read_into(&buf, queue_hdr::DATA, &l1, &mut dst);
        prop_assert_eq!(r1.map(|()| dst), SendWqe::read_from(&buf, queue_hdr::DATA, &l1).map(Some));
        let buf = VecBuf::new(queue_hdr::DATA + size);
        buf.set_bytes(queue_hdr::DATA, &second);
        let l2 = SendLimits { slot_size: l.slot_size.min(second.len()), ..l };
        let r2 = SendWqe::read_into(&buf, queue_hdr::DATA, &l2, &mut dst);
        prop_assert!(buf.max_reads() <= 1);
        match SendWqe::parse(&second, &l2) {
            Ok(w) => {
                prop_assert_eq!(r2, Ok(()));
                prop_assert_eq!(dst, Some(w));
            }
            Err(e) => {
                prop_assert_eq!(r2, Err(e));
                prop_assert_eq!(dst, None);
            }
        }
    }

    /// WQEs laid out the way librxe lays them out round-trip.
    #[test]
    fn valid_round_trip(qp in arb_qp(), op in 0u32..16, wr_id in any::<u64>(), flags in 0u32..32,
                        sges in prop::collection::vec((any::<u64>(), 0u32..0x0400_0000, any::<u32>()), 0..32),
                        inline in prop::collection::vec(any::<u8>(), 0..512),
                        remote in any::<u64>(), rkey in any::<u32>(), ex in any::<[u8; 4]>(),
                        qpn in 0u32..0x0100_0000, ah in 1u32..100) {
        let Some(opcode) = WrOpcode::from_u32(op) else { return Ok(()) };
        let l = SendLimits { qp_type: qp, max_sge: 32, max_inline: 512, slot_size: 1024, origin: Origin::User };
        let mut h = hdr(opcode, flags);
        h.wr.wr_id = wr_id;
        h.wr.ex = ex;
        let atomic = matches!(opcode, WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd);
        let remote = if atomic { remote & !7 } else { remote };
        if atomic {
            h.wr.set_atomic(remote, 1, 2, rkey);
        } else if matches!(qp, QpType::Ud | QpType::Gsi) {
            h.wr.set_ud(qpn, 0x1234, 0, ah);
        } else {
            h.wr.set_rdma(remote, rkey);
        }
        let sges: Vec<Sge> = sges.into_iter().map(|(a, len, k)| sge(a, len, k)).collect();
        let use_inline = flags & send_flags::INLINE != 0;
        let mut slot = vec![0u8; 1024];
        write_send_wqe(&mut slot, &h, &sges, if use_inline { Some(&inline) } else { None });
        let r = SendWqe::parse(&slot, &l);
        match r {
            Ok(w) => {
                check_invariants(&w, &l);
                prop_assert_eq!(w.wr_id, wr_id);
                prop_assert_eq!(w.opcode, opcode);
                match w.payload {
                    Payload::Sges(list) => prop_assert_eq!(list.as_slice(), &sges[..]),
                    Payload::Inline(d) => prop_assert_eq!(d.as_slice(), &inline[..]),
                    Payload::None => {}
                }
                match w.op {
                    SendOp::Write { remote: ra, .. } | SendOp::Read { remote: ra, .. } => {
                        prop_assert_eq!(ra, RemoteAddr { addr: remote, rkey });
                    }
                    SendOp::Atomic { remote: ra, compare_add, swap } => {
                        prop_assert_eq!(ra, RemoteAddr { addr: remote, rkey });
                        prop_assert_eq!((compare_add, swap), (1, 2));
                    }
                    SendOp::Send { ud: Some(ud), .. } => {
                        prop_assert_eq!(ud, UdDest { remote_qpn: qpn, remote_qkey: 0x1234, pkey_index: 0, ah_num: ah });
                    }
                    _ => {}
                }
            }
            Err(e) => {
                // Only these rejections are possible for librxe-shaped WQEs.
                let expected = !opcode_valid_for(opcode, qp)
                    || matches!(opcode, WrOpcode::Tso | WrOpcode::MaskedAtomicCmpAndSwp
                        | WrOpcode::MaskedAtomicFetchAndAdd | WrOpcode::RdmaReadWithInv)
                    || matches!(e, SendWqeError::InlineNotAllowed(_) | SendWqeError::MessageTooLong(_)
                        | SendWqeError::AtomicLength(_) | SendWqeError::AtomicWriteLength(_));
                prop_assert!(expected, "unexpected rejection {:?} of {:?}", e, opcode);
            }
        }
    }
}

#[test]
fn sq_caps_follow_rxe() {
    // Design §1.6 example: sge=1, inline=0 -> 224-byte element.
    assert_eq!(
        sq_caps(1, 0),
        Some(SqCaps {
            elem_size: 224,
            max_send_sge: 1,
            max_inline_data: 16
        })
    );
    assert_eq!(
        sq_caps(2, 100),
        Some(SqCaps {
            elem_size: 308,
            max_send_sge: 6,
            max_inline_data: 100
        })
    );
    assert_eq!(
        sq_caps(32, 0),
        Some(SqCaps {
            elem_size: 720,
            max_send_sge: 32,
            max_inline_data: 512
        })
    );
    assert_eq!(
        sq_caps(0, 512),
        Some(SqCaps {
            elem_size: 720,
            max_send_sge: 32,
            max_inline_data: 512
        })
    );
    assert_eq!(
        sq_caps(0, 0),
        Some(SqCaps {
            elem_size: 208,
            max_send_sge: 0,
            max_inline_data: 0
        })
    );
    assert_eq!(sq_caps(33, 0), None);
    assert_eq!(sq_caps(0, 513), None);
    assert_eq!(sq_caps(u32::MAX, u32::MAX), None);
    // A WQE that uses every reported cap fits in the slot the caps size.
    for (nsge, inl) in [(1, 0), (3, 60), (32, 512), (0, 17)] {
        let caps = sq_caps(nsge, inl).unwrap();
        let geo = QueueGeometry::for_request(1, caps.elem_size, 64)
            .unwrap()
            .geometry;
        let l = SendLimits {
            qp_type: QpType::Rc,
            max_sge: caps.max_send_sge,
            max_inline: caps.max_inline_data,
            slot_size: geo.elem_size(),
            origin: Origin::User,
        };
        let sges = vec![sge(0, 1, 1); caps.max_send_sge as usize];
        let mut slot = vec![0u8; geo.elem_size()];
        write_send_wqe(&mut slot, &hdr(WrOpcode::Send, 0), &sges, None);
        assert!(SendWqe::parse(&slot, &l).is_ok());
        let data = vec![7u8; caps.max_inline_data as usize];
        write_send_wqe(
            &mut slot,
            &hdr(WrOpcode::Send, send_flags::INLINE),
            &[],
            Some(&data),
        );
        assert!(SendWqe::parse(&slot, &l).is_ok());
    }
}
