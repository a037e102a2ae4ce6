//! Posted send WQEs become the requester's work requests: every RC
//! operation with its target, immediate data in wire order, atomics as 8
//! bytes; local and not-yet-carried operations are told apart.
use rxe_proto::abi::send_wqe::{Payload, RemoteAddr, SendOp, SendWqe as Posted, UdDest};
use rxe_proto::abi::values::WrOpcode;
use rxe_proto::proto::replay::WqeOp;
use rxe_proto::proto::transport::{AtomicArgs, AtomicOp, Mtu};
use rxe_proto::proto::work_request::{requester_wqe, NotTransport};

const TARGET: RemoteAddr = RemoteAddr {
    addr: 0x7f00_1234_5000,
    rkey: 0x1234_56ab,
};

fn posted(opcode: WrOpcode, op: SendOp, total_len: u32) -> Posted {
    Posted {
        wr_id: 99,
        opcode,
        send_flags: 0,
        op,
        payload: Payload::None,
        total_len,
    }
}

#[test]
fn transport_operations_keep_their_targets_and_lengths() {
    let imm = Some([0x12, 0x34, 0x56, 0x78]);
    let cases = [
        (
            posted(
                WrOpcode::SendWithImm,
                SendOp::Send {
                    imm,
                    invalidate_rkey: None,
                    ud: None,
                },
                5000,
            ),
            WqeOp::Send {
                imm: Some(0x1234_5678),
                invalidate_rkey: None,
            },
            5000,
        ),
        (
            posted(
                WrOpcode::SendWithInv,
                SendOp::Send {
                    imm: None,
                    invalidate_rkey: Some(0x42),
                    ud: None,
                },
                0,
            ),
            WqeOp::Send {
                imm: None,
                invalidate_rkey: Some(0x42),
            },
            0,
        ),
        (
            posted(
                WrOpcode::RdmaWriteWithImm,
                SendOp::Write {
                    remote: TARGET,
                    imm,
                },
                1 << 31,
            ),
            WqeOp::Write {
                va: TARGET.addr,
                rkey: TARGET.rkey,
                imm: Some(0x1234_5678),
            },
            1 << 31,
        ),
        (
            posted(
                WrOpcode::RdmaRead,
                SendOp::Read {
                    remote: TARGET,
                    invalidate_rkey: None,
                },
                4096,
            ),
            WqeOp::Read {
                va: TARGET.addr,
                rkey: TARGET.rkey,
            },
            4096,
        ),
        (
            posted(
                WrOpcode::AtomicCmpAndSwp,
                SendOp::Atomic {
                    remote: TARGET,
                    compare_add: 1,
                    swap: 2,
                },
                16,
            ),
            WqeOp::Atomic(AtomicArgs {
                va: TARGET.addr,
                rkey: TARGET.rkey,
                op: AtomicOp::CompareSwap {
                    compare: 1,
                    swap: 2,
                },
            }),
            8,
        ),
        (
            posted(
                WrOpcode::AtomicFetchAndAdd,
                SendOp::Atomic {
                    remote: TARGET,
                    compare_add: 7,
                    swap: 0,
                },
                8,
            ),
            WqeOp::Atomic(AtomicArgs {
                va: TARGET.addr,
                rkey: TARGET.rkey,
                op: AtomicOp::FetchAdd { add: 7 },
            }),
            8,
        ),
    ];
    for (i, (p, op, length)) in cases.into_iter().enumerate() {
        let w = requester_wqe(i as u64, &p).unwrap();
        assert_eq!((w.id, w.op, w.length), (i as u64, op, length), "{p:?}");
    }
}

#[test]
fn local_and_uncarried_operations_are_told_apart() {
    let local = [
        posted(WrOpcode::LocalInv, SendOp::LocalInv { rkey: 1 }, 0),
        posted(
            WrOpcode::BindMw,
            SendOp::BindMw {
                addr: 0,
                length: 1,
                mr_lkey: 2,
                mw_rkey: 3,
                new_rkey: 4,
                access: 0,
            },
            0,
        ),
        posted(
            WrOpcode::RegMr,
            SendOp::RegMr {
                mr_index: 0,
                iova: 0,
                key: 1,
                access: 0,
            },
            0,
        ),
    ];
    for p in local {
        assert_eq!(requester_wqe(0, &p), Err(NotTransport::Local), "{p:?}");
    }
    let unsupported = [
        posted(
            WrOpcode::RdmaReadWithInv,
            SendOp::Read {
                remote: TARGET,
                invalidate_rkey: Some(5),
            },
            8,
        ),
        posted(
            WrOpcode::Send,
            SendOp::Send {
                imm: None,
                invalidate_rkey: None,
                ud: Some(UdDest {
                    remote_qpn: 1,
                    remote_qkey: 2,
                    pkey_index: 0,
                    ah_num: 3,
                }),
            },
            0,
        ),
    ];
    for p in unsupported {
        assert_eq!(
            requester_wqe(0, &p),
            Err(NotTransport::Unsupported),
            "{p:?}"
        );
    }
}

#[test]
fn atomic_write_and_flush_become_transport_work() {
    let aw = posted(
        WrOpcode::AtomicWrite,
        SendOp::AtomicWrite {
            remote: TARGET,
            value: 0x0102_0304_0506_0708u64.to_ne_bytes(),
        },
        8,
    );
    let w = requester_wqe(7, &aw).unwrap();
    assert_eq!(w.length, 8);
    assert_eq!(
        w.op,
        WqeOp::Atomic(AtomicArgs {
            va: TARGET.addr,
            rkey: TARGET.rkey,
            op: AtomicOp::Write {
                value: 0x0102_0304_0506_0708
            },
        })
    );
    assert!(w.op.is_read_or_atomic() && w.op.answered_by_empty_read_response());
    let flush = posted(
        WrOpcode::Flush,
        SendOp::Flush {
            remote: TARGET,
            length: 4096,
            flush_type: 1,
            level: 0,
        },
        0,
    );
    let w = requester_wqe(8, &flush).unwrap();
    assert_eq!(w.length, 4096, "the completion's byte_len");
    assert_eq!(w.packets(Mtu::MTU_256), 1);
    assert_eq!(
        w.op,
        WqeOp::Flush {
            va: TARGET.addr,
            rkey: TARGET.rkey,
            len: 4096,
            placement: 1,
            selectivity: 0,
        }
    );
    assert!(w.op.is_read_or_atomic() && w.op.answered_by_empty_read_response());
}
