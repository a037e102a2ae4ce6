//! The opcode table checked row by row against rxe-abi-and-wire.md §3.4, plus the
//! requester's opcode choice.
use rxe_proto::proto::opcode::{
    ExtHeader as H, OpFamily as F, OpSuffix, Opcode, Position as P, Transport as T, OPCODE_COUNT,
    OPCODE_TABLE,
};

/// (opcode, headers after the BTH in order, total header length, payload)
/// copied from the doc's table 3.4.
const DOC: &[(u8, &[H], usize, bool)] = &[
    (0x00, &[], 12, true),
    (0x01, &[], 12, true),
    (0x02, &[], 12, true),
    (0x03, &[H::ImmDt], 16, true),
    (0x04, &[], 12, true),
    (0x05, &[H::ImmDt], 16, true),
    (0x06, &[H::Reth], 28, true),
    (0x07, &[], 12, true),
    (0x08, &[], 12, true),
    (0x09, &[H::ImmDt], 16, true),
    (0x0a, &[H::Reth], 28, true),
    (0x0b, &[H::Reth, H::ImmDt], 32, true),
    (0x0c, &[H::Reth], 28, false),
    (0x0d, &[H::Aeth], 16, true),
    (0x0e, &[], 12, true),
    (0x0f, &[H::Aeth], 16, true),
    (0x10, &[H::Aeth], 16, true),
    (0x11, &[H::Aeth], 16, false),
    (0x12, &[H::Aeth, H::AtomicAckEth], 24, false),
    (0x13, &[H::AtomicEth], 40, false),
    (0x14, &[H::AtomicEth], 40, false),
    (0x16, &[H::Ieth], 16, true),
    (0x17, &[H::Ieth], 16, true),
    (0x1c, &[H::Feth, H::Reth], 32, false),
    (0x1d, &[H::Reth], 28, true),
    (0x64, &[H::Deth], 20, true),
    (0x65, &[H::Deth, H::ImmDt], 24, true),
];

fn doc_row(v: u8) -> Option<(&'static [H], usize, bool)> {
    // UC 0x20..=0x2b are RC 0x00..=0x0b.
    let key = if (0x20..=0x2b).contains(&v) {
        v - 0x20
    } else {
        v
    };
    DOC.iter().find(|r| r.0 == key).map(|r| (r.1, r.2, r.3))
}

#[test]
fn known_opcodes_are_exactly_the_docs() {
    let mut n = 0;
    for v in 0..=255u8 {
        let op = Opcode::from_u8(v);
        assert_eq!(op.is_some(), doc_row(v).is_some(), "opcode {v:#x}");
        if let Some(op) = op {
            assert_eq!(op as u8, v);
            assert_eq!(Opcode::try_from(v), Ok(op));
            n += 1;
        } else {
            assert!(Opcode::try_from(v).is_err());
        }
    }
    assert_eq!(n, OPCODE_COUNT);
}

#[test]
fn table_rows_match_doc() {
    for (i, op) in Opcode::ALL.iter().copied().enumerate() {
        let info = op.info();
        assert_eq!(OPCODE_TABLE[i], info);
        assert_eq!(info.opcode, op);
        let (hdrs, len, payload) = doc_row(op as u8).unwrap();
        assert_eq!(op.header_len(), len, "{op:?}");
        assert_eq!(op.headers().total_len(), len, "{op:?}");
        assert_eq!(op.has_payload(), payload, "{op:?}");
        // Exactly the doc's headers, at increasing offsets in doc order.
        let mut off = 12;
        for h in hdrs {
            assert_eq!(op.offset(*h), Some(off), "{op:?} {h:?}");
            off += h.wire_len();
        }
        assert_eq!(off, len, "{op:?}");
        for h in H::ORDER {
            assert_eq!(op.headers().contains(h), hdrs.contains(&h), "{op:?} {h:?}");
            if !hdrs.contains(&h) {
                assert_eq!(op.offset(h), None);
            }
        }
        assert_eq!(op.has_immediate(), hdrs.contains(&H::ImmDt));
        assert_eq!(op.has_invalidate(), hdrs.contains(&H::Ieth));
        assert_eq!(op.is_request(), !op.is_response());
    }
}

#[test]
fn transport_family_position() {
    use Opcode::*;
    let expect: &[(Opcode, T, F, Option<P>)] = &[
        (RcSendFirst, T::Rc, F::Send, Some(P::First)),
        (RcSendMiddle, T::Rc, F::Send, Some(P::Middle)),
        (RcSendLast, T::Rc, F::Send, Some(P::Last)),
        (RcSendLastWithImmediate, T::Rc, F::Send, Some(P::Last)),
        (RcSendOnly, T::Rc, F::Send, Some(P::Only)),
        (RcSendOnlyWithImmediate, T::Rc, F::Send, Some(P::Only)),
        (RcRdmaWriteFirst, T::Rc, F::Write, Some(P::First)),
        (RcRdmaWriteMiddle, T::Rc, F::Write, Some(P::Middle)),
        (RcRdmaWriteLast, T::Rc, F::Write, Some(P::Last)),
        (RcRdmaWriteLastWithImmediate, T::Rc, F::Write, Some(P::Last)),
        (RcRdmaWriteOnly, T::Rc, F::Write, Some(P::Only)),
        (RcRdmaWriteOnlyWithImmediate, T::Rc, F::Write, Some(P::Only)),
        (RcRdmaReadRequest, T::Rc, F::ReadRequest, Some(P::Only)),
        (
            RcRdmaReadResponseFirst,
            T::Rc,
            F::ReadResponse,
            Some(P::First),
        ),
        (
            RcRdmaReadResponseMiddle,
            T::Rc,
            F::ReadResponse,
            Some(P::Middle),
        ),
        (
            RcRdmaReadResponseLast,
            T::Rc,
            F::ReadResponse,
            Some(P::Last),
        ),
        (
            RcRdmaReadResponseOnly,
            T::Rc,
            F::ReadResponse,
            Some(P::Only),
        ),
        (RcAcknowledge, T::Rc, F::Acknowledge, None),
        (RcAtomicAcknowledge, T::Rc, F::AtomicAcknowledge, None),
        (RcCompareSwap, T::Rc, F::CompareSwap, Some(P::Only)),
        (RcFetchAdd, T::Rc, F::FetchAdd, Some(P::Only)),
        (RcSendLastWithInvalidate, T::Rc, F::Send, Some(P::Last)),
        (RcSendOnlyWithInvalidate, T::Rc, F::Send, Some(P::Only)),
        (RcFlush, T::Rc, F::Flush, Some(P::Only)),
        (RcAtomicWrite, T::Rc, F::AtomicWrite, Some(P::Only)),
        (UdSendOnly, T::Ud, F::Send, Some(P::Only)),
        (UdSendOnlyWithImmediate, T::Ud, F::Send, Some(P::Only)),
    ];
    for &(op, t, f, p) in expect {
        assert_eq!(
            (op.transport(), op.family(), op.position()),
            (t, f, p),
            "{op:?}"
        );
        if op as u8 <= 0x0b {
            let uc = Opcode::from_u8(op as u8 + 0x20).unwrap();
            assert_eq!(
                (uc.transport(), uc.family(), uc.position()),
                (T::Uc, f, p),
                "{uc:?}"
            );
            assert_eq!(uc.info().completes_receive, op.completes_receive());
            assert_eq!(uc.has_immediate(), op.has_immediate());
        }
    }
    assert_eq!(expect.len() + 12, OPCODE_COUNT);
}

#[test]
fn requests_and_responses() {
    use Opcode::*;
    let responses = [
        RcRdmaReadResponseFirst,
        RcRdmaReadResponseMiddle,
        RcRdmaReadResponseLast,
        RcRdmaReadResponseOnly,
        RcAcknowledge,
        RcAtomicAcknowledge,
    ];
    for op in Opcode::ALL {
        assert_eq!(op.is_response(), responses.contains(&op), "{op:?}");
    }
}

#[test]
fn start_end_and_completion() {
    use Opcode::*;
    let completes = [
        RcSendLast,
        RcSendLastWithImmediate,
        RcSendOnly,
        RcSendOnlyWithImmediate,
        RcRdmaWriteLastWithImmediate,
        RcRdmaWriteOnlyWithImmediate,
        RcSendLastWithInvalidate,
        RcSendOnlyWithInvalidate,
        UcSendLast,
        UcSendLastWithImmediate,
        UcSendOnly,
        UcSendOnlyWithImmediate,
        UcRdmaWriteLastWithImmediate,
        UcRdmaWriteOnlyWithImmediate,
        UdSendOnly,
        UdSendOnlyWithImmediate,
    ];
    for op in Opcode::ALL {
        assert_eq!(op.completes_receive(), completes.contains(&op), "{op:?}");
        match op.position() {
            Some(P::First) => assert!(op.starts_message() && !op.ends_message()),
            Some(P::Middle) => assert!(!op.starts_message() && !op.ends_message()),
            Some(P::Last) => assert!(!op.starts_message() && op.ends_message()),
            Some(P::Only) | None => assert!(op.starts_message() && op.ends_message()),
        }
        if let Some(p) = op.position() {
            assert_eq!(P::from_flags(p.starts(), p.ends()), p);
        }
    }
}

const FAMILIES: [F; 10] = [
    F::Send,
    F::Write,
    F::ReadRequest,
    F::ReadResponse,
    F::Acknowledge,
    F::AtomicAcknowledge,
    F::CompareSwap,
    F::FetchAdd,
    F::Flush,
    F::AtomicWrite,
];
const POSITIONS: [P; 4] = [P::First, P::Middle, P::Last, P::Only];
const SUFFIXES: [OpSuffix; 3] = [
    OpSuffix::Plain,
    OpSuffix::WithImmediate,
    OpSuffix::WithInvalidate,
];

/// `for_request` equals a search of the table for the unique request row
/// with these properties.
#[test]
fn for_request_matches_table_search() {
    let mut hits = 0;
    for t in [T::Rc, T::Uc, T::Ud] {
        for f in FAMILIES {
            for p in POSITIONS {
                for s in SUFFIXES {
                    let found: Vec<Opcode> = Opcode::ALL
                        .into_iter()
                        .filter(|op| {
                            op.is_request()
                                && op.transport() == t
                                && op.family() == f
                                && op.position() == Some(p)
                                && op.has_immediate() == (s == OpSuffix::WithImmediate)
                                && op.has_invalidate() == (s == OpSuffix::WithInvalidate)
                        })
                        .collect();
                    assert!(found.len() <= 1);
                    let got = Opcode::for_request(t, f, p, s);
                    assert_eq!(got, found.first().copied(), "{t:?} {f:?} {p:?} {s:?}");
                    hits += usize::from(got.is_some());
                }
            }
        }
    }
    // Every request opcode is reachable.
    assert_eq!(hits, Opcode::ALL.iter().filter(|o| o.is_request()).count());
}

#[test]
fn read_response_choice() {
    for p in POSITIONS {
        let op = Opcode::read_response(p);
        assert_eq!(op.family(), F::ReadResponse);
        assert_eq!(op.position(), Some(p));
    }
}
