//! Parsed headers to machine inputs and back: every RC request opcode
//! round-trips through `RequestPacket`.
use rxe_proto::proto::headers::{AtomicEth, Bth, Feth, Ieth, ImmDt, Reth};
use rxe_proto::proto::opcode::{OpFamily, Opcode, Transport};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::requester::{ResponseOp, ResponsePacket};
use rxe_proto::proto::translate::RequestHeaders;
use rxe_proto::proto::transport::{RequestOp, RequestPacket};

#[test]
fn rc_request_opcodes_round_trip() {
    let mut n = 0;
    for op in Opcode::ALL {
        if op.transport() != Transport::Rc || !op.is_request() {
            continue;
        }
        let bth = Bth {
            opcode: op.as_u8(),
            psn: Psn::new(77),
            ack_req: true,
            ..Bth::default()
        };
        let headers = RequestHeaders {
            reth: Some(Reth {
                va: 1,
                rkey: 2,
                len: 3,
            }),
            atomic: Some(AtomicEth {
                va: 8,
                rkey: 9,
                swap_add: 10,
                compare: 11,
            }),
            imm: op.has_immediate().then_some(ImmDt { imm: 5 }),
            ieth: op.has_invalidate().then_some(Ieth { rkey: 6 }),
            feth: (op.family() == OpFamily::Flush).then_some(Feth {
                selectivity: 1,
                placement: 2,
            }),
            atomic_write: (op.family() == OpFamily::AtomicWrite).then_some(0x1122),
        };
        let pkt = RequestPacket::from_headers(op, &bth, &headers, 0).unwrap();
        assert_eq!(pkt.psn, Psn::new(77));
        assert_eq!(pkt.opcode(), Some(op), "{op:?}");
        match op.family() {
            OpFamily::CompareSwap | OpFamily::FetchAdd => {
                let a = pkt.atomic_header().unwrap();
                assert_eq!((a.va, a.rkey, a.swap_add), (8, 9, 10));
            }
            OpFamily::AtomicWrite => {
                // The target from the RETH, the value from the payload; no
                // AtomicETH on the wire.
                assert_eq!(pkt.op, RequestOp::AtomicWrite);
                assert_eq!(pkt.atomic_write_value(), Some(0x1122));
                assert_eq!(pkt.atomic_header(), None);
                let a = pkt.atomic.unwrap();
                assert_eq!((a.va, a.rkey), (1, 2));
            }
            OpFamily::Flush => {
                assert_eq!(
                    pkt.op,
                    RequestOp::Flush {
                        placement: 2,
                        selectivity: 1
                    }
                );
                assert_eq!(
                    pkt.flush_header(),
                    Some(Feth {
                        selectivity: 1,
                        placement: 2
                    })
                );
            }
            _ => assert_eq!(pkt.flush_header(), None),
        }
        n += 1;
    }
    assert_eq!(n, 19);
}

#[test]
fn flush_and_atomic_write_without_their_headers_are_unsupported() {
    let plain = RequestHeaders {
        reth: Some(Reth {
            va: 8,
            rkey: 2,
            len: 8,
        }),
        ..RequestHeaders::default()
    };
    for op in [Opcode::RcFlush, Opcode::RcAtomicWrite] {
        let pkt = RequestPacket::from_headers(op, &Bth::default(), &plain, 8).unwrap();
        assert_eq!(pkt.op, RequestOp::Unsupported, "{op:?}");
        assert_eq!(pkt.opcode(), None);
    }
}

#[test]
fn uc_request_opcodes_round_trip() {
    let mut n = 0;
    for op in Opcode::ALL {
        if op.transport() != Transport::Uc || !op.is_request() {
            continue;
        }
        let bth = Bth {
            opcode: op.as_u8(),
            psn: Psn::new(9),
            ..Bth::default()
        };
        let headers = RequestHeaders {
            reth: Some(Reth {
                va: 1,
                rkey: 2,
                len: 3,
            }),
            imm: op.has_immediate().then_some(ImmDt { imm: 5 }),
            ..RequestHeaders::default()
        };
        let pkt = RequestPacket::from_headers(op, &bth, &headers, 0).unwrap();
        assert_eq!(pkt.opcode_on(Transport::Uc), Some(op), "{op:?}");
        assert_ne!(pkt.opcode(), Some(op), "{op:?} is not an RC opcode");
        n += 1;
    }
    assert_eq!(n, 12);
    // UC has no READ and no SEND with invalidate.
    let read = RequestPacket::from_headers(
        Opcode::RcRdmaReadRequest,
        &Bth::default(),
        &RequestHeaders::default(),
        0,
    )
    .unwrap();
    assert_eq!(read.opcode_on(Transport::Uc), None);
    let mut inv = RequestPacket::from_headers(
        Opcode::UcSendOnly,
        &Bth::default(),
        &RequestHeaders::default(),
        0,
    )
    .unwrap();
    inv.invalidate_rkey = Some(1);
    assert_eq!(inv.opcode_on(Transport::Uc), None);
}

#[test]
fn responses_translate() {
    let bth = Bth {
        opcode: Opcode::RcRdmaReadResponseMiddle.as_u8(),
        psn: Psn::new(3),
        ..Bth::default()
    };
    let p = ResponsePacket::from_headers(Opcode::RcRdmaReadResponseMiddle, &bth, None, None, 256)
        .unwrap();
    assert!(matches!(p.op, ResponseOp::ReadResponse(_)));
    assert_eq!(p.syndrome, None);
    assert!(ResponsePacket::from_headers(Opcode::RcSendOnly, &bth, None, None, 0).is_none());
}
