//! BTH and extension header codecs: fixed vectors, truncation, round trips.
use proptest::prelude::*;
use rxe_proto::proto::error::{BuildError, ParseError};
use rxe_proto::proto::headers::{AtomicAckEth, AtomicEth, Bth, Deth, Feth, Ieth, ImmDt, Reth};
use rxe_proto::proto::psn::Psn;

#[test]
fn bth_fixed_vector() {
    let b = Bth {
        opcode: 0x04,
        se: true,
        mig_req: false,
        pad_count: 3,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: true,
        dest_qp: 0x000011,
        ack_req: true,
        psn: Psn::new(0xabcdef),
    };
    let bytes = [
        0x04, 0xb0, 0xff, 0xff, 0x40, 0x00, 0x00, 0x11, 0x80, 0xab, 0xcd, 0xef,
    ];
    assert_eq!(b.to_bytes(), bytes);
    assert_eq!(Bth::parse(&bytes), Ok(b));
    // Reserved bits are ignored on parse.
    let mut noisy = bytes;
    noisy[4] |= 0x3f;
    noisy[8] |= 0x7f;
    assert_eq!(Bth::parse(&noisy), Ok(b));
    // All flags and tver.
    let all = Bth::parse(&[0xff; 12]).unwrap();
    assert!(all.se && all.mig_req && all.fecn && all.becn && all.ack_req);
    assert_eq!(
        (all.pad_count, all.tver, all.dest_qp, all.psn.get()),
        (3, 15, 0xffffff, 0xffffff)
    );
}

#[test]
fn ext_fixed_vectors() {
    let r = Reth {
        va: 0x0102030405060708,
        rkey: 0x090a0b0c,
        len: 0x0d0e0f10,
    };
    let rb: Vec<u8> = (1..=16).collect();
    assert_eq!(r.to_bytes().as_slice(), rb.as_slice());
    assert_eq!(Reth::parse(&rb), Ok(r));

    let a = AtomicEth {
        va: 0x0102030405060708,
        rkey: 0x090a0b0c,
        swap_add: 0x0d0e0f1011121314,
        compare: 0x15161718191a1b1c,
    };
    let ab: Vec<u8> = (1..=28).collect();
    assert_eq!(a.to_bytes().as_slice(), ab.as_slice());
    assert_eq!(AtomicEth::parse(&ab), Ok(a));

    assert_eq!(
        AtomicAckEth {
            orig: 0x0102030405060708
        }
        .to_bytes(),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        ImmDt { imm: 0xdeadbeef }.to_bytes(),
        [0xde, 0xad, 0xbe, 0xef]
    );
    assert_eq!(
        Ieth { rkey: 0x11223344 }.to_bytes(),
        [0x11, 0x22, 0x33, 0x44]
    );
    let d = Deth {
        qkey: 0x80010000,
        src_qp: 0x123456,
    };
    assert_eq!(
        d.to_bytes(),
        [0x80, 0x01, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56]
    );
    assert_eq!(
        Deth::parse(&[0x80, 0x01, 0, 0, 0xff, 0x12, 0x34, 0x56]),
        Ok(d)
    );
    let f = Feth {
        selectivity: 1,
        placement: 2,
    };
    assert_eq!(f.to_bytes(), [0, 0, 0, 0x12]);
    assert_eq!(Feth::parse(&[0xff, 0xff, 0xff, 0x12]), Ok(f));
}

macro_rules! truncation {
    ($($t:ty),*) => {$(
        for n in 0..<$t>::LEN {
            let v = vec![0u8; n];
            assert_eq!(<$t>::parse(&v), Err(ParseError::Truncated), "{} {n}", stringify!($t));
            let mut w = vec![0u8; n];
            assert_eq!(<$t>::default().write(&mut w), Err(BuildError::BufferTooSmall));
        }
        // Longer buffers: only the first LEN bytes are read or written.
        let v = vec![0u8; <$t>::LEN + 5];
        assert_eq!(<$t>::parse(&v), Ok(<$t>::default()));
        let mut w = vec![0xaau8; <$t>::LEN + 5];
        <$t>::default().write(&mut w).unwrap();
        assert!(w[<$t>::LEN..].iter().all(|&x| x == 0xaa));
    )*};
}

#[test]
fn lengths_and_truncation() {
    assert_eq!(
        [
            Bth::LEN,
            Reth::LEN,
            AtomicEth::LEN,
            AtomicAckEth::LEN,
            ImmDt::LEN,
            Ieth::LEN,
            Deth::LEN,
            Feth::LEN
        ],
        [12, 16, 28, 8, 4, 4, 8, 4]
    );
    truncation!(Bth, Reth, AtomicEth, AtomicAckEth, ImmDt, Ieth, Deth, Feth);
}

fn arb_bth() -> impl Strategy<Value = Bth> {
    (
        any::<u8>(),
        any::<[bool; 5]>(),
        0u8..4,
        0u8..16,
        any::<u16>(),
        0u32..0x100_0000,
        0u32..0x100_0000,
    )
        .prop_map(|(opcode, f, pad_count, tver, pkey, dest_qp, psn)| Bth {
            opcode,
            se: f[0],
            mig_req: f[1],
            pad_count,
            tver,
            pkey,
            fecn: f[2],
            becn: f[3],
            dest_qp,
            ack_req: f[4],
            psn: Psn::new(psn),
        })
}

proptest! {
    #[test]
    fn bth_round_trip(b in arb_bth()) {
        prop_assert_eq!(Bth::from_bytes(&b.to_bytes()), b);
        let mut buf = [0u8; 12];
        b.write(&mut buf).unwrap();
        prop_assert_eq!(Bth::parse(&buf).unwrap(), b);
    }

    #[test]
    fn bth_bytes_round_trip_modulo_reserved(mut bytes in any::<[u8; 12]>()) {
        let b = Bth::parse(&bytes).unwrap();
        bytes[4] &= 0xc0;
        bytes[8] &= 0x80;
        prop_assert_eq!(b.to_bytes(), bytes);
    }

    #[test]
    fn reth_round_trip(va in any::<u64>(), rkey in any::<u32>(), len in any::<u32>()) {
        let r = Reth { va, rkey, len };
        prop_assert_eq!(Reth::parse(&r.to_bytes()).unwrap(), r);
    }

    #[test]
    fn atomic_eth_round_trip(bytes in any::<[u8; 28]>()) {
        let a = AtomicEth::parse(&bytes).unwrap();
        prop_assert_eq!(a.to_bytes(), bytes);
    }

    #[test]
    fn small_headers_round_trip(v in any::<u64>(), w in any::<u32>()) {
        let a = AtomicAckEth { orig: v };
        prop_assert_eq!(AtomicAckEth::parse(&a.to_bytes()).unwrap(), a);
        let i = ImmDt { imm: w };
        prop_assert_eq!(ImmDt::parse(&i.to_bytes()).unwrap(), i);
        let e = Ieth { rkey: w };
        prop_assert_eq!(Ieth::parse(&e.to_bytes()).unwrap(), e);
        let d = Deth { qkey: w, src_qp: (v as u32) & 0xff_ffff };
        prop_assert_eq!(Deth::parse(&d.to_bytes()).unwrap(), d);
        let f = Feth { selectivity: (v & 3) as u8, placement: ((v >> 8) & 0xf) as u8 };
        prop_assert_eq!(Feth::parse(&f.to_bytes()).unwrap(), f);
    }
}
