//! Strategies shared by the packet tests: valid headers and packets for
//! every opcode.
use proptest::prelude::*;
use rxe_proto::proto::aeth::{Aeth, Syndrome};
use rxe_proto::proto::headers::{AtomicAckEth, AtomicEth, Bth, Deth, Feth, Ieth, ImmDt, Reth};
use rxe_proto::proto::opcode::{ExtHeader, Opcode};
use rxe_proto::proto::packet::{build, ExtHeaders};
use rxe_proto::proto::psn::Psn;

pub fn arb_opcode() -> impl Strategy<Value = Opcode> {
    proptest::sample::select(Opcode::ALL.to_vec())
}

/// Random values for all extension headers; `for_opcode` keeps those the
/// opcode carries.
pub fn arb_all_ext() -> impl Strategy<Value = ExtHeaders> {
    (
        (any::<u32>(), 0u32..0x100_0000),
        (0u8..4, 0u8..16),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (any::<u8>(), 0u32..0x100_0000),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(d, f, r, a, ae, aa, imm, ie)| ExtHeaders {
            deth: Some(Deth {
                qkey: d.0,
                src_qp: d.1,
            }),
            feth: Some(Feth {
                selectivity: f.0,
                placement: f.1,
            }),
            reth: Some(Reth {
                va: r.0,
                rkey: r.1,
                len: r.2,
            }),
            atomic_eth: Some(AtomicEth {
                va: a.0,
                rkey: a.1,
                swap_add: a.2,
                compare: a.3,
            }),
            aeth: Some(Aeth {
                syndrome: Syndrome::from_u8(ae.0),
                msn: ae.1,
            }),
            atomic_ack_eth: Some(AtomicAckEth { orig: aa }),
            immdt: Some(ImmDt { imm }),
            ieth: Some(Ieth { rkey: ie }),
        })
}

pub fn for_opcode(all: ExtHeaders, op: Opcode) -> ExtHeaders {
    let h = op.headers();
    ExtHeaders {
        deth: all.deth.filter(|_| h.contains(ExtHeader::Deth)),
        feth: all.feth.filter(|_| h.contains(ExtHeader::Feth)),
        reth: all.reth.filter(|_| h.contains(ExtHeader::Reth)),
        atomic_eth: all.atomic_eth.filter(|_| h.contains(ExtHeader::AtomicEth)),
        aeth: all.aeth.filter(|_| h.contains(ExtHeader::Aeth)),
        atomic_ack_eth: all
            .atomic_ack_eth
            .filter(|_| h.contains(ExtHeader::AtomicAckEth)),
        immdt: all.immdt.filter(|_| h.contains(ExtHeader::ImmDt)),
        ieth: all.ieth.filter(|_| h.contains(ExtHeader::Ieth)),
    }
}

/// A valid BTH for `op` (TVer 0, DestQP ≠ 0); pad count is set by the builder.
pub fn arb_bth(op: Opcode) -> impl Strategy<Value = Bth> {
    (
        any::<[bool; 5]>(),
        any::<u16>(),
        1u32..0x100_0000,
        0u32..0x100_0000,
    )
        .prop_map(move |(f, pkey, dest_qp, psn)| Bth {
            opcode: op as u8,
            se: f[0],
            mig_req: f[1],
            pad_count: 0,
            tver: 0,
            pkey,
            fecn: f[2],
            becn: f[3],
            dest_qp,
            ack_req: f[4],
            psn: Psn::new(psn),
        })
}

/// A payload length the opcode allows.
pub fn payload_len_for(op: Opcode, raw: usize) -> usize {
    if op == Opcode::RcAtomicWrite {
        8
    } else if op.has_payload() {
        raw
    } else {
        0
    }
}

/// A valid packet: (opcode, bth as given, ext, payload, built bytes).
pub fn arb_packet() -> impl Strategy<Value = (Opcode, Bth, ExtHeaders, Vec<u8>, Vec<u8>)> {
    arb_opcode().prop_flat_map(|op| {
        (
            Just(op),
            arb_bth(op),
            arb_all_ext(),
            proptest::collection::vec(any::<u8>(), 0..300),
        )
            .prop_map(|(op, bth, all, mut payload)| {
                payload.truncate(payload_len_for(op, payload.len()));
                payload.resize(payload_len_for(op, payload.len()), 0xa5);
                let ext = for_opcode(all, op);
                let mut buf = vec![0u8; 400];
                let n = build(&mut buf, &bth, &ext, &payload).unwrap();
                buf.truncate(n);
                (op, bth, ext, payload, buf)
            })
    })
}
