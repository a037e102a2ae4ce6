//! Admission of received packets to a QP (rxe's hdr_check): transport,
//! state, peer address, P_Key, Q_Key.
use rxe_proto::proto::admission::*;
use rxe_proto::proto::aeth::{Aeth, Syndrome};
use rxe_proto::proto::headers::{Bth, Deth};
use rxe_proto::proto::opcode::{ExtHeader, Opcode};
use rxe_proto::proto::packet::{build, ExtHeaders, Packet};
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::qp_attr::{QpState, QpType};

const PEER: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2];
const ME: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];

fn packet(opcode: Opcode, pkey: u16, qkey: u32) -> Vec<u8> {
    let bth = Bth {
        opcode: opcode as u8,
        pkey,
        dest_qp: 17,
        psn: Psn::new(5),
        ..Default::default()
    };
    let mut ext = ExtHeaders::default();
    let set = opcode.headers();
    if set.contains(ExtHeader::Deth) {
        ext.deth = Some(Deth { qkey, src_qp: 3 });
    }
    if set.contains(ExtHeader::Aeth) {
        ext.aeth = Some(Aeth {
            syndrome: Syndrome::Ack { credits: 0 },
            msn: 1,
        });
    }
    let mut buf = vec![0u8; 256];
    let n = build(&mut buf, &bth, &ext, &[]).unwrap();
    buf.truncate(n);
    buf
}

fn qp(qp_type: QpType, state: QpState) -> QpView {
    QpView {
        qp_type,
        state,
        qkey: 0x1111,
        path_remote: PEER,
        path_local: ME,
    }
}

fn admit_bytes(
    bytes: &[u8],
    q: &QpView,
    src: &[u8; 16],
    dst: &[u8; 16],
) -> Result<Direction, AdmissionDrop> {
    admit(&Packet::parse(bytes).unwrap(), q, src, dst)
}

#[test]
fn requests_need_rtr_and_responses_rts() {
    let send = packet(Opcode::RcSendOnly, 0xffff, 0);
    let ack = packet(Opcode::RcAcknowledge, 0xffff, 0);
    for (state, req_ok, resp_ok) in [
        (QpState::Reset, false, false),
        (QpState::Init, false, false),
        (QpState::Rtr, true, false),
        (QpState::Rts, true, true),
        (QpState::Sqd, true, true),
        (QpState::Err, false, false),
    ] {
        let q = qp(QpType::Rc, state);
        let want = |ok: bool, d: Direction| {
            if ok {
                Ok(d)
            } else {
                Err(AdmissionDrop::NotReady)
            }
        };
        assert_eq!(
            admit_bytes(&send, &q, &PEER, &ME),
            want(req_ok, Direction::Request),
            "{state:?}"
        );
        assert_eq!(
            admit_bytes(&ack, &q, &PEER, &ME),
            want(resp_ok, Direction::Response),
            "{state:?}"
        );
    }
}

#[test]
fn the_transport_must_be_the_qps() {
    let q = qp(QpType::Rc, QpState::Rts);
    assert_eq!(
        admit_bytes(&packet(Opcode::UcSendOnly, 0xffff, 0), &q, &PEER, &ME),
        Err(AdmissionDrop::WrongTransport)
    );
    assert_eq!(
        admit_bytes(&packet(Opcode::UdSendOnly, 0xffff, 0x1111), &q, &PEER, &ME),
        Err(AdmissionDrop::WrongTransport)
    );
    let ud = qp(QpType::Ud, QpState::Rts);
    assert_eq!(
        admit_bytes(&packet(Opcode::RcSendOnly, 0xffff, 0), &ud, &PEER, &ME),
        Err(AdmissionDrop::WrongTransport)
    );
}

#[test]
fn a_connected_qp_hears_only_its_peer() {
    let q = qp(QpType::Rc, QpState::Rts);
    let send = packet(Opcode::RcSendOnly, 0xffff, 0);
    let mut other = PEER;
    other[15] = 9;
    assert_eq!(
        admit_bytes(&send, &q, &other, &ME),
        Err(AdmissionDrop::WrongPeer)
    );
    assert_eq!(
        admit_bytes(&send, &q, &PEER, &other),
        Err(AdmissionDrop::WrongPeer)
    );
    // A datagram QP takes anyone.
    let ud = qp(QpType::Ud, QpState::Rts);
    assert_eq!(
        admit_bytes(
            &packet(Opcode::UdSendOnly, 0xffff, 0x1111),
            &ud,
            &other,
            &other
        ),
        Ok(Direction::Request)
    );
}

#[test]
fn pkeys_and_qkeys() {
    let q = qp(QpType::Rc, QpState::Rts);
    assert_eq!(
        admit_bytes(&packet(Opcode::RcSendOnly, 0x7fff, 0), &q, &PEER, &ME),
        Ok(Direction::Request)
    );
    assert_eq!(
        admit_bytes(&packet(Opcode::RcSendOnly, 0x8001, 0), &q, &PEER, &ME),
        Err(AdmissionDrop::BadPkey)
    );
    assert_eq!(
        admit_bytes(&packet(Opcode::RcSendOnly, 0x0000, 0), &q, &PEER, &ME),
        Err(AdmissionDrop::BadPkey)
    );
    let ud = qp(QpType::Ud, QpState::Rts);
    assert_eq!(
        admit_bytes(&packet(Opcode::UdSendOnly, 0xffff, 0x1112), &ud, &PEER, &ME),
        Err(AdmissionDrop::BadQkey)
    );
    let gsi = qp(QpType::Gsi, QpState::Rts);
    assert_eq!(
        admit_bytes(
            &packet(Opcode::UdSendOnly, 0xffff, GSI_QKEY),
            &gsi,
            &PEER,
            &ME
        ),
        Ok(Direction::Request)
    );
    assert_eq!(
        admit_bytes(
            &packet(Opcode::UdSendOnly, 0xffff, 0x1111),
            &gsi,
            &PEER,
            &ME
        ),
        Err(AdmissionDrop::BadQkey)
    );
}

#[test]
fn pkey_match_is_the_ibta_rule() {
    assert!(pkey_match(0xffff, 0xffff));
    assert!(pkey_match(0x7fff, 0xffff));
    assert!(!pkey_match(0x7fff, 0x7fff), "two limited members");
    assert!(!pkey_match(0x8000, 0x8000), "key 0 is invalid");
    assert!(!pkey_match(0x8001, 0xffff));
}
