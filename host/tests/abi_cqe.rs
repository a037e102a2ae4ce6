//! CQE bytes (`src/abi/cqe.rs`) for known completions, byte for byte as
//! the C rxe writes them into a user CQ slot (rxe-abi-and-wire.md §1.9).
use rxe_proto::abi::cqe::*;
use rxe_proto::abi::values::{wc_flags, WcOpcode, WcStatus, WrOpcode};

fn expect(fields: &[(usize, &[u8])]) -> [u8; 48] {
    let mut b = [0u8; 48];
    for (off, v) in fields {
        b[*off..*off + v.len()].copy_from_slice(v);
    }
    b
}

#[test]
fn send_success_with_imm() {
    let c = Completion::send(
        0x1122_3344_5566_7788,
        0x11,
        WcStatus::Success,
        WrOpcode::RdmaWriteWithImm,
        4096,
    );
    assert_eq!(
        c.to_bytes(),
        expect(&[
            (0, &0x1122_3344_5566_7788u64.to_le_bytes()),
            (8, &0u32.to_le_bytes()),
            (12, &1u32.to_le_bytes()), // IB_WC_RDMA_WRITE
            (20, &4096u32.to_le_bytes()),
            (28, &0x11u32.to_le_bytes()),
            (36, &2u32.to_le_bytes()), // WITH_IMM
        ])
    );
}

#[test]
fn send_opcode_mapping() {
    use WrOpcode::*;
    let table = [
        (RdmaWrite, 1, 0),
        (Send, 0, 0),
        (SendWithImm, 0, 2),
        (SendWithInv, 0, 0),
        (RdmaRead, 2, 0),
        (AtomicCmpAndSwp, 3, 0),
        (AtomicFetchAndAdd, 4, 0),
        (BindMw, 5, 0),
        (LocalInv, 6, 0),
        (Flush, 8, 0),
        (AtomicWrite, 9, 0),
        (RegMr, 10, 0),
    ];
    for (op, wc, flags) in table {
        let b = Completion::send(1, 2, WcStatus::Success, op, 8).to_bytes();
        assert_eq!(
            u32::from_le_bytes(b[12..16].try_into().unwrap()),
            wc,
            "{op:?}"
        );
        assert_eq!(
            u32::from_le_bytes(b[36..40].try_into().unwrap()),
            flags,
            "{op:?}"
        );
    }
}

#[test]
fn send_error_has_only_id_status_qp() {
    let c = Completion::send(
        9,
        0x22,
        WcStatus::RetryExcErr,
        WrOpcode::RdmaWriteWithImm,
        4096,
    );
    assert_eq!(
        c.to_bytes(),
        expect(&[
            (0, &9u64.to_le_bytes()),
            (8, &12u32.to_le_bytes()),
            (28, &0x22u32.to_le_bytes())
        ])
    );
}

#[test]
fn recv_completions() {
    // SEND_WITH_IMM received on a UD QP: GRH | WITH_IMM, imm as received.
    let c = Completion::recv(
        5,
        0x33,
        false,
        40 + 100,
        CqeEx::Imm([0xde, 0xad, 0xbe, 0xef]),
        0x44,
        1,
    );
    assert_eq!(
        c.to_bytes(),
        expect(&[
            (0, &5u64.to_le_bytes()),
            (12, &128u32.to_le_bytes()),
            (20, &140u32.to_le_bytes()),
            (24, &[0xde, 0xad, 0xbe, 0xef]),
            (28, &0x33u32.to_le_bytes()),
            (32, &0x44u32.to_le_bytes()),
            (36, &3u32.to_le_bytes()),
            (46, &[1]),
        ])
    );
    // WRITE_WITH_IMM.
    let b = Completion::recv(6, 1, true, 4096, CqeEx::Imm([0, 0, 0, 1]), 0, 1).to_bytes();
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 129);
    // SEND_WITH_INV on RC: GRH | WITH_INVALIDATE (kernel numbering, as the C driver).
    let b = Completion::recv(7, 1, false, 10, CqeEx::InvalidateRkey(0x0102_0304), 0, 1).to_bytes();
    assert_eq!(&b[24..28], &0x0102_0304u32.to_le_bytes());
    assert_eq!(
        u32::from_le_bytes(b[36..40].try_into().unwrap()),
        wc_flags::GRH | wc_flags::WITH_INVALIDATE
    );
    assert_eq!(wc_flags::WITH_INVALIDATE, 4);
    // Plain RC receive still has GRH.
    let b = Completion::recv(8, 1, false, 10, CqeEx::None, 0, 1).to_bytes();
    assert_eq!(u32::from_le_bytes(b[36..40].try_into().unwrap()), 1);
}

#[test]
fn flush_and_recv_error() {
    assert_eq!(
        Completion::flush(0xabc, 0x99).to_bytes(),
        expect(&[
            (0, &0xabcu64.to_le_bytes()),
            (8, &5u32.to_le_bytes()),
            (28, &0x99u32.to_le_bytes())
        ])
    );
    let c = Completion::recv_error(1, 2, WcStatus::LocLenErr);
    assert_eq!(c.status, WcStatus::LocLenErr);
    assert_eq!(c.opcode, WcOpcode::Send);
    let mut out = [0xffu8; 64];
    c.encode(&mut out).unwrap();
    assert_eq!(out[47], 0);
    assert_eq!(out[48], 0xff, "only 48 bytes written");
    assert!(c.encode(&mut [0u8; 47]).is_err());
}

#[test]
fn all_fields_land_at_their_offsets() {
    let c = Completion {
        wr_id: 0x0807_0605_0403_0201,
        status: WcStatus::GeneralErr,
        opcode: WcOpcode::RecvRdmaWithImm,
        vendor_err: 0x1111_1111,
        byte_len: 0x2222_2222,
        ex: CqeEx::Imm([0x33; 4]),
        qp_num: 0x4444_4444,
        src_qp: 0x5555_5555,
        wc_flags: 0x6666_6666,
        pkey_index: 0x7777,
        slid: 0x8888,
        sl: 0x99,
        dlid_path_bits: 0xaa,
        port_num: 0xbb,
    };
    let b = c.to_bytes();
    assert_eq!(
        b,
        expect(&[
            (0, &0x0807_0605_0403_0201u64.to_le_bytes()),
            (8, &21u32.to_le_bytes()),
            (12, &129u32.to_le_bytes()),
            (16, &[0x11; 4]),
            (20, &[0x22; 4]),
            (24, &[0x33; 4]),
            (28, &[0x44; 4]),
            (32, &[0x55; 4]),
            (36, &[0x66; 4]),
            (40, &[0x77; 2]),
            (42, &[0x88; 2]),
            (44, &[0x99, 0xaa, 0xbb, 0]),
        ])
    );
}
