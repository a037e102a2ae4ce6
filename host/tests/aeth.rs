//! AETH syndrome codec, RNR timer table and header round trips.
use proptest::prelude::*;
use rxe_proto::proto::aeth::{
    Aeth, NakCode, RnrTimer, Syndrome, ACK_CREDITS_UNLIMITED, RNR_TIMER_USECS,
};
use rxe_proto::proto::error::{BuildError, ParseError};

#[test]
fn all_256_syndromes_decode_and_reencode() {
    for b in 0..=255u8 {
        let s = Syndrome::from_u8(b);
        assert_eq!(s.to_u8(), b, "{b:#x}");
        match b >> 5 {
            0 => assert_eq!(s, Syndrome::Ack { credits: b & 0x1f }),
            1 => assert_eq!(
                s,
                Syndrome::RnrNak {
                    timer: RnrTimer::new(b & 0x1f)
                }
            ),
            3 if b <= 0x63 => assert!(matches!(s, Syndrome::Nak(_))),
            _ => assert_eq!(s, Syndrome::Reserved(b)),
        }
        assert_eq!(s.is_ack(), b < 0x20);
    }
}

#[test]
fn nak_codes() {
    assert_eq!(
        Syndrome::from_u8(0x60),
        Syndrome::Nak(NakCode::PsnSequenceError)
    );
    assert_eq!(
        Syndrome::from_u8(0x61),
        Syndrome::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(
        Syndrome::from_u8(0x62),
        Syndrome::Nak(NakCode::RemoteAccessError)
    );
    assert_eq!(
        Syndrome::from_u8(0x63),
        Syndrome::Nak(NakCode::RemoteOperationalError)
    );
    assert_eq!(Syndrome::from_u8(0x64), Syndrome::Reserved(0x64));
    assert_eq!(Syndrome::from_u8(0x40), Syndrome::Reserved(0x40));
    assert_eq!(Syndrome::from_u8(0x5f), Syndrome::Reserved(0x5f));
}

#[test]
fn rxe_ack_is_0x1f() {
    assert_eq!(ACK_CREDITS_UNLIMITED, 0x1f);
    assert_eq!(Syndrome::ACK.to_u8(), 0x1f);
    assert_eq!(Aeth::ack(0x123456).to_bytes(), [0x1f, 0x12, 0x34, 0x56]);
    assert_eq!(
        Aeth::nak(NakCode::PsnSequenceError, 7).to_bytes(),
        [0x60, 0, 0, 7]
    );
    assert_eq!(
        Aeth::rnr_nak(RnrTimer::new(14), 0x1ff_ffff).to_bytes(),
        [0x2e, 0xff, 0xff, 0xff]
    );
    // Credits are masked to 5 bits on encode.
    assert_eq!(Syndrome::Ack { credits: 0xff }.to_u8(), 0x1f);
}

#[test]
fn rnr_timer_table() {
    // Doc §3.5, code 25 keeps rxe's 61410 (IBTA says 61440).
    let doc: [u32; 32] = [
        655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10240, 15360, 20480, 30720, 40960, 61410, 81920, 122880, 163840, 245760,
        327680, 491520,
    ];
    assert_eq!(RNR_TIMER_USECS, doc);
    for code in 0..=255u8 {
        let t = RnrTimer::new(code);
        assert_eq!(t.code(), code & 0x1f);
        assert_eq!(t.usecs(), doc[usize::from(code & 0x1f)]);
    }
    assert_eq!(RnrTimer::new(25).usecs(), 61410);
}

#[test]
fn parse_and_write_lengths() {
    assert_eq!(Aeth::parse(&[0x1f, 0, 0]), Err(ParseError::Truncated));
    assert_eq!(Aeth::parse(&[]), Err(ParseError::Truncated));
    let a = Aeth::parse(&[0x61, 1, 2, 3, 0xaa]).unwrap();
    assert_eq!(a, Aeth::nak(NakCode::InvalidRequest, 0x010203));
    let mut small = [0u8; 3];
    assert_eq!(a.write(&mut small), Err(BuildError::BufferTooSmall));
    let mut buf = [0xeeu8; 6];
    a.write(&mut buf).unwrap();
    assert_eq!(buf, [0x61, 1, 2, 3, 0xee, 0xee]);
}

proptest! {
    #[test]
    fn bytes_round_trip(b in any::<[u8; 4]>()) {
        let a = Aeth::parse(&b).unwrap();
        prop_assert_eq!(a.to_bytes(), b);
        prop_assert_eq!(Aeth::from_bytes(&b), a);
    }

    #[test]
    fn value_round_trip(syn in any::<u8>(), msn in 0u32..0x100_0000) {
        let a = Aeth { syndrome: Syndrome::from_u8(syn), msn };
        prop_assert_eq!(Aeth::parse(&a.to_bytes()).unwrap(), a);
    }
}
