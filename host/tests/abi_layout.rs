//! Byte layouts of `src/abi/layout.rs` against rxe-abi-and-wire.md §1.4–§1.9 and against
//! the system's uapi headers.
//!
//! Two checks:
//! - hard-coded offsets, taken from rxe-abi-and-wire.md and confirmed by hand with
//!   `offsetof` on `/usr/include/rdma/rdma_user_rxe.h` and
//!   `/usr/include/rdma/ib_user_verbs.h` (linux-libc-dev 7.3.4, x86-64);
//! - `uapi_offsets_match_c_headers`, which compiles a small C program with
//!   `cc` against those headers and compares every offset and size. It is
//!   skipped (with a message) when `cc` or the headers are missing, except
//!   when `RXE_REQUIRE_CC` is set (as `scripts/test.sh` does): then it fails.

use std::collections::HashMap;
use std::process::Command;

use rxe_proto::abi::layout::*;

#[test]
fn udata_sizes_and_offsets() {
    assert_eq!(MmapInfo::SIZE, 16);
    assert_eq!(
        (MmapInfo::OFF_OFFSET, MmapInfo::OFF_SIZE, MmapInfo::OFF_PAD),
        (0, 8, 12)
    );
    assert_eq!(CreateCqResp::SIZE, 16);
    assert_eq!(ResizeCqResp::SIZE, 16);
    assert_eq!(
        (
            CreateQpResp::SIZE,
            CreateQpResp::OFF_RQ_MI,
            CreateQpResp::OFF_SQ_MI
        ),
        (32, 0, 16)
    );
    assert_eq!(
        (
            CreateSrqResp::SIZE,
            CreateSrqResp::OFF_SRQ_NUM,
            CreateSrqResp::OFF_RESERVED
        ),
        (24, 16, 20)
    );
    assert_eq!(ModifySrqCmd::SIZE, 8);
    assert_eq!((CreateAhResp::SIZE, CreateAhResp::OFF_RESERVED), (8, 4));
}

#[test]
fn mmap_info_bytes() {
    let mi = MmapInfo {
        offset: 0x1122_3344_5566_7788,
        size: 0xaabb_ccdd,
    };
    let mut b = [0xffu8; 16];
    mi.encode(&mut b).unwrap();
    assert_eq!(
        b,
        [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc, 0xbb, 0xaa, 0, 0, 0, 0]
    );
    assert_eq!(MmapInfo::decode(&b).unwrap(), mi);
    assert!(mi.encode(&mut [0u8; 15]).is_err());
    assert!(MmapInfo::decode(&[0u8; 15]).is_err());
}

#[test]
fn udata_round_trips_and_bytes() {
    let rq = MmapInfo {
        offset: 0x1000,
        size: 0x2000,
    };
    let sq = MmapInfo {
        offset: 0x3000,
        size: 0x4000,
    };
    let mut b = [0xffu8; 32];
    CreateQpResp {
        rq_mi: rq,
        sq_mi: sq,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[0..8], &0x1000u64.to_le_bytes());
    assert_eq!(&b[8..12], &0x2000u32.to_le_bytes());
    assert_eq!(&b[12..16], &[0; 4]);
    assert_eq!(&b[16..24], &0x3000u64.to_le_bytes());
    assert_eq!(&b[24..28], &0x4000u32.to_le_bytes());
    assert_eq!(
        CreateQpResp::decode(&b).unwrap(),
        CreateQpResp {
            rq_mi: rq,
            sq_mi: sq
        }
    );
    assert!(CreateQpResp {
        rq_mi: rq,
        sq_mi: sq
    }
    .encode(&mut [0u8; 31])
    .is_err());

    let mut b = [0xffu8; 24];
    CreateSrqResp {
        mi: rq,
        srq_num: 77,
    }
    .encode(&mut b)
    .unwrap();
    assert_eq!(&b[16..20], &77u32.to_le_bytes());
    assert_eq!(&b[20..24], &[0; 4]);
    assert_eq!(CreateSrqResp::decode(&b).unwrap().srq_num, 77);

    let mut b = [0xffu8; 8];
    CreateAhResp { ah_num: 5 }.encode(&mut b).unwrap();
    assert_eq!(b, [5, 0, 0, 0, 0, 0, 0, 0]);

    let cmd = ModifySrqCmd::decode(&0xdead_beef_0000_1000u64.to_le_bytes()).unwrap();
    assert_eq!(cmd.mmap_info_addr, 0xdead_beef_0000_1000);
    assert!(ModifySrqCmd::decode(&[0; 7]).is_err());

    let mut b = [0u8; 16];
    CreateCqResp { mi: sq }.encode(&mut b).unwrap();
    assert_eq!(CreateCqResp::decode(&b).unwrap().mi, sq);
    ResizeCqResp { mi: rq }.encode(&mut b).unwrap();
    assert_eq!(ResizeCqResp::decode(&b).unwrap().mi, rq);
}

#[test]
fn queue_header_offsets() {
    assert_eq!(queue_hdr::LOG2_ELEM_SIZE, 0);
    assert_eq!(queue_hdr::INDEX_MASK, 4);
    assert_eq!(queue_hdr::PRODUCER_INDEX, 128);
    assert_eq!(queue_hdr::CONSUMER_INDEX, 256);
    assert_eq!(queue_hdr::DATA, 384);
}

#[test]
fn wqe_offsets() {
    assert_eq!(
        (Sge::SIZE, Sge::OFF_ADDR, Sge::OFF_LENGTH, Sge::OFF_LKEY),
        (16, 0, 8, 12)
    );
    assert_eq!(DmaInfo::SIZE, 24);
    assert_eq!(
        [
            DmaInfo::OFF_LENGTH,
            DmaInfo::OFF_RESID,
            DmaInfo::OFF_CUR_SGE,
            DmaInfo::OFF_NUM_SGE,
            DmaInfo::OFF_SGE_OFFSET,
            DmaInfo::OFF_RESERVED,
            DmaInfo::OFF_DATA
        ],
        [0, 4, 8, 12, 16, 20, 24]
    );
    use send_wr as w;
    assert_eq!(
        [
            w::SIZE,
            w::WR_ID,
            w::RESERVED,
            w::OPCODE,
            w::SEND_FLAGS,
            w::EX,
            w::WR
        ],
        [144, 0, 8, 12, 16, 20, 24]
    );
    assert_eq!([w::RDMA_REMOTE_ADDR, w::RDMA_RKEY], [24, 32]);
    assert_eq!(
        [
            w::ATOMIC_REMOTE_ADDR,
            w::ATOMIC_COMPARE_ADD,
            w::ATOMIC_SWAP,
            w::ATOMIC_RKEY
        ],
        [24, 32, 40, 48]
    );
    assert_eq!(
        [
            w::UD_REMOTE_QPN,
            w::UD_REMOTE_QKEY,
            w::UD_PKEY_INDEX,
            w::UD_AH_NUM,
            w::UD_AV
        ],
        [24, 28, 32, 36, 56]
    );
    assert_eq!(
        [
            w::MW_ADDR,
            w::MW_LENGTH,
            w::MW_MR_LKEY,
            w::MW_MW_RKEY,
            w::MW_RKEY,
            w::MW_ACCESS
        ],
        [24, 32, 40, 44, 48, 52]
    );
    assert_eq!(
        [
            w::FLUSH_REMOTE_ADDR,
            w::FLUSH_LENGTH,
            w::FLUSH_RKEY,
            w::FLUSH_TYPE,
            w::FLUSH_LEVEL
        ],
        [24, 32, 36, 40, 41]
    );
    use send_wqe as q;
    assert_eq!(
        [
            q::WR,
            q::STATUS,
            q::STATE,
            q::IOVA,
            q::MASK,
            q::FIRST_PSN,
            q::LAST_PSN,
            q::ACK_LENGTH,
            q::SSN,
            q::HAS_RD_ATOMIC,
            q::DMA,
            q::DATA,
            q::SIZE
        ],
        [0, 144, 148, 152, 160, 164, 168, 172, 176, 180, 184, 208, 208]
    );
    assert_eq!(
        [
            recv_wqe::WR_ID,
            recv_wqe::RESERVED,
            recv_wqe::PADDING,
            recv_wqe::DMA,
            recv_wqe::DATA
        ],
        [0, 8, 12, 16, 40]
    );
    assert_eq!(
        [
            av::PORT_NUM,
            av::NETWORK_TYPE,
            av::DMAC,
            av::GRH_DGID,
            av::GRH_FLOW_LABEL,
            av::GRH_SGID_INDEX,
            av::GRH_HOP_LIMIT,
            av::GRH_TRAFFIC_CLASS,
            av::SGID_ADDR,
            av::DGID_ADDR,
            av::SIZE
        ],
        [0, 1, 2, 8, 24, 28, 29, 30, 32, 60, 88]
    );
}

#[test]
fn uverbs_wc_offsets() {
    use uverbs_wc as o;
    assert_eq!(
        [
            o::WR_ID,
            o::STATUS,
            o::OPCODE,
            o::VENDOR_ERR,
            o::BYTE_LEN,
            o::EX,
            o::QP_NUM,
            o::SRC_QP,
            o::WC_FLAGS,
            o::PKEY_INDEX,
            o::SLID,
            o::SL,
            o::DLID_PATH_BITS,
            o::PORT_NUM,
            o::RESERVED,
            o::SIZE
        ],
        [0, 8, 12, 16, 20, 24, 28, 32, 36, 40, 42, 44, 45, 46, 47, 48]
    );
}

fn sample_send_wqe() -> RawSendWqe {
    let mut wr = RawSendWr {
        wr_id: 0x0102_0304_0506_0708,
        reserved: 0x1111_1111,
        opcode: 5,
        send_flags: 2,
        ex: [0xaa, 0xbb, 0xcc, 0xdd],
        ..Default::default()
    };
    wr.set_atomic(0x1000_0008, 0x2222, 0x3333, 0x4444);
    RawSendWqe {
        wr,
        status: 1,
        state: 2,
        iova: 0x1000_0008,
        mask: 3,
        first_psn: 4,
        last_psn: 5,
        ack_length: 6,
        ssn: 7,
        has_rd_atomic: 8,
        dma: DmaInfo {
            length: 8,
            resid: 8,
            cur_sge: 0,
            num_sge: 1,
            sge_offset: 0,
            reserved: 9,
        },
    }
}

#[test]
fn send_wqe_bytes_and_round_trip() {
    let w = sample_send_wqe();
    let mut b = vec![0u8; 208];
    w.encode(&mut b).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    assert_eq!(u64_at(0), 0x0102_0304_0506_0708);
    assert_eq!(u32_at(8), 0x1111_1111);
    assert_eq!(u32_at(12), 5);
    assert_eq!(u32_at(16), 2);
    assert_eq!(&b[20..24], &[0xaa, 0xbb, 0xcc, 0xdd]);
    assert_eq!(u64_at(24), 0x1000_0008);
    assert_eq!(u64_at(32), 0x2222);
    assert_eq!(u64_at(40), 0x3333);
    assert_eq!(u32_at(48), 0x4444);
    assert_eq!([u32_at(144), u32_at(148)], [1, 2]);
    assert_eq!(u64_at(152), 0x1000_0008);
    assert_eq!(
        [
            u32_at(160),
            u32_at(164),
            u32_at(168),
            u32_at(172),
            u32_at(176),
            u32_at(180)
        ],
        [3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        [
            u32_at(184),
            u32_at(188),
            u32_at(192),
            u32_at(196),
            u32_at(200),
            u32_at(204)
        ],
        [8, 8, 0, 1, 0, 9]
    );
    assert_eq!(RawSendWqe::decode(&b).unwrap(), w);
    assert_eq!(w.wr.atomic(), (0x1000_0008, 0x2222, 0x3333, 0x4444));
    assert!(RawSendWqe::decode(&b[..207]).is_err());
}

#[test]
fn send_wr_union_variants() {
    let mut wr = RawSendWr::default();
    wr.set_ud(0x12_3456, 0x1111_2222, 0x7, 42);
    let mut b = [0u8; 144];
    wr.encode(&mut b).unwrap();
    assert_eq!(&b[24..28], &0x12_3456u32.to_le_bytes());
    assert_eq!(&b[28..32], &0x1111_2222u32.to_le_bytes());
    assert_eq!(&b[32..34], &7u16.to_le_bytes());
    assert_eq!(&b[36..40], &42u32.to_le_bytes());
    assert_eq!(
        RawSendWr::decode(&b).unwrap().ud(),
        (0x12_3456, 0x1111_2222, 7, 42)
    );

    let mut wr = RawSendWr::default();
    wr.set_mw(0xa0, 0xb0, 1, 2, 3, 4);
    wr.encode(&mut b).unwrap();
    assert_eq!(&b[24..32], &0xa0u64.to_le_bytes());
    assert_eq!(&b[32..40], &0xb0u64.to_le_bytes());
    assert_eq!(
        &b[40..56],
        &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]
    );
    assert_eq!(wr.mw(), (0xa0, 0xb0, 1, 2, 3, 4));

    let mut wr = RawSendWr::default();
    wr.set_flush(0xf0, 0x100, 0x55, 1, 2);
    wr.encode(&mut b).unwrap();
    assert_eq!(&b[24..32], &0xf0u64.to_le_bytes());
    assert_eq!(&b[32..36], &0x100u32.to_le_bytes());
    assert_eq!(&b[36..40], &0x55u32.to_le_bytes());
    assert_eq!(&b[40..42], &[1, 2]);
    assert_eq!(wr.flush(), (0xf0, 0x100, 0x55, 1, 2));

    let mut wr = RawSendWr::default();
    wr.set_rdma(0x1234_5678_9abc, 0x99);
    wr.ex = 0xdead_beefu32.to_le_bytes();
    wr.encode(&mut b).unwrap();
    assert_eq!(&b[24..32], &0x1234_5678_9abcu64.to_le_bytes());
    assert_eq!(&b[32..36], &0x99u32.to_le_bytes());
    assert_eq!(wr.invalidate_rkey(), 0xdead_beef);
}

#[test]
fn recv_wqe_and_sge_bytes() {
    let r = RawRecvWqe {
        wr_id: 0x55,
        reserved: 1,
        padding: 2,
        dma: DmaInfo {
            length: 100,
            resid: 100,
            cur_sge: 0,
            num_sge: 2,
            sge_offset: 0,
            reserved: 0,
        },
    };
    let mut b = [0u8; 40];
    r.encode(&mut b).unwrap();
    assert_eq!(&b[0..8], &0x55u64.to_le_bytes());
    assert_eq!(&b[16..20], &100u32.to_le_bytes());
    assert_eq!(&b[28..32], &2u32.to_le_bytes());
    assert_eq!(RawRecvWqe::decode(&b).unwrap(), r);

    let s = Sge {
        addr: 0x1_0000_0000,
        length: 0x200,
        lkey: 0x77,
    };
    let mut b = [0u8; 16];
    s.encode(&mut b).unwrap();
    assert_eq!(b, [0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0x77, 0, 0, 0]);
    assert_eq!(Sge::decode(&b).unwrap(), s);
}

#[test]
fn uverbs_wc_round_trip() {
    let wc = RawUverbsWc {
        wr_id: 1,
        status: 2,
        opcode: 3,
        vendor_err: 4,
        byte_len: 5,
        ex: [6, 7, 8, 9],
        qp_num: 10,
        src_qp: 11,
        wc_flags: 12,
        pkey_index: 13,
        slid: 14,
        sl: 15,
        dlid_path_bits: 16,
        port_num: 17,
    };
    let b = wc.to_bytes();
    assert_eq!(b[44..48], [15, 16, 17, 0]);
    assert_eq!(RawUverbsWc::decode(&b).unwrap(), wc);
}

#[test]
fn getters_reject_out_of_range() {
    let b = [0u8; 8];
    assert!(get_u64(&b, 0).is_ok());
    assert!(get_u64(&b, 1).is_err());
    assert!(get_u32(&b, usize::MAX).is_err());
    assert!(get_u8(&b, 8).is_err());
    let mut m = [0u8; 4];
    assert!(put_u32(&mut m, 1, 0).is_err());
    assert!(put_u64(&mut m, usize::MAX - 2, 0).is_err());
}

// ---------------------------------------------------------------------------
// Cross-check with the C headers.

const C_PROGRAM: &str = r#"
#include <stdio.h>
#include <stddef.h>
#include <rdma/rdma_user_rxe.h>
#include <rdma/ib_user_verbs.h>
#define O(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(struct t, f))
#define S(t) printf("sizeof.%s %zu\n", #t, sizeof(struct t))
int main(void) {
    S(mminfo); O(mminfo, offset); O(mminfo, size); O(mminfo, pad);
    S(rxe_create_cq_resp); S(rxe_resize_cq_resp);
    S(rxe_create_qp_resp); O(rxe_create_qp_resp, rq_mi); O(rxe_create_qp_resp, sq_mi);
    S(rxe_create_srq_resp); O(rxe_create_srq_resp, srq_num); O(rxe_create_srq_resp, reserved);
    S(rxe_modify_srq_cmd); O(rxe_modify_srq_cmd, mmap_info_addr);
    S(rxe_create_ah_resp); O(rxe_create_ah_resp, ah_num); O(rxe_create_ah_resp, reserved);
    S(rxe_queue_buf); O(rxe_queue_buf, log2_elem_size); O(rxe_queue_buf, index_mask);
    O(rxe_queue_buf, producer_index); O(rxe_queue_buf, consumer_index); O(rxe_queue_buf, data);
    S(rxe_sge); O(rxe_sge, addr); O(rxe_sge, length); O(rxe_sge, lkey);
    S(rxe_dma_info); O(rxe_dma_info, length); O(rxe_dma_info, resid); O(rxe_dma_info, cur_sge);
    O(rxe_dma_info, num_sge); O(rxe_dma_info, sge_offset); O(rxe_dma_info, reserved);
    O(rxe_dma_info, sge); O(rxe_dma_info, inline_data);
    S(rxe_send_wr); O(rxe_send_wr, wr_id); O(rxe_send_wr, reserved); O(rxe_send_wr, opcode);
    O(rxe_send_wr, send_flags); O(rxe_send_wr, ex.imm_data); O(rxe_send_wr, ex.invalidate_rkey);
    O(rxe_send_wr, wr);
    O(rxe_send_wr, wr.rdma.remote_addr); O(rxe_send_wr, wr.rdma.rkey);
    O(rxe_send_wr, wr.atomic.remote_addr); O(rxe_send_wr, wr.atomic.compare_add);
    O(rxe_send_wr, wr.atomic.swap); O(rxe_send_wr, wr.atomic.rkey);
    O(rxe_send_wr, wr.ud.remote_qpn); O(rxe_send_wr, wr.ud.remote_qkey);
    O(rxe_send_wr, wr.ud.pkey_index); O(rxe_send_wr, wr.ud.ah_num); O(rxe_send_wr, wr.ud.av);
    O(rxe_send_wr, wr.mw.addr); O(rxe_send_wr, wr.mw.length); O(rxe_send_wr, wr.mw.mr_lkey);
    O(rxe_send_wr, wr.mw.mw_rkey); O(rxe_send_wr, wr.mw.rkey); O(rxe_send_wr, wr.mw.access);
    O(rxe_send_wr, wr.flush.remote_addr); O(rxe_send_wr, wr.flush.length);
    O(rxe_send_wr, wr.flush.rkey); O(rxe_send_wr, wr.flush.type); O(rxe_send_wr, wr.flush.level);
    S(rxe_send_wqe); O(rxe_send_wqe, wr); O(rxe_send_wqe, status); O(rxe_send_wqe, state);
    O(rxe_send_wqe, iova); O(rxe_send_wqe, mask); O(rxe_send_wqe, first_psn);
    O(rxe_send_wqe, last_psn); O(rxe_send_wqe, ack_length); O(rxe_send_wqe, ssn);
    O(rxe_send_wqe, has_rd_atomic); O(rxe_send_wqe, dma);
    S(rxe_recv_wqe); O(rxe_recv_wqe, wr_id); O(rxe_recv_wqe, reserved);
    O(rxe_recv_wqe, padding); O(rxe_recv_wqe, dma);
    S(rxe_av); O(rxe_av, port_num); O(rxe_av, network_type); O(rxe_av, dmac);
    O(rxe_av, grh.dgid); O(rxe_av, grh.flow_label); O(rxe_av, grh.sgid_index);
    O(rxe_av, grh.hop_limit); O(rxe_av, grh.traffic_class); O(rxe_av, sgid_addr);
    O(rxe_av, dgid_addr);
    S(ib_uverbs_wc); O(ib_uverbs_wc, wr_id); O(ib_uverbs_wc, status); O(ib_uverbs_wc, opcode);
    O(ib_uverbs_wc, vendor_err); O(ib_uverbs_wc, byte_len); O(ib_uverbs_wc, ex.imm_data);
    O(ib_uverbs_wc, ex.invalidate_rkey); O(ib_uverbs_wc, qp_num); O(ib_uverbs_wc, src_qp);
    O(ib_uverbs_wc, wc_flags); O(ib_uverbs_wc, pkey_index); O(ib_uverbs_wc, slid);
    O(ib_uverbs_wc, sl); O(ib_uverbs_wc, dlid_path_bits); O(ib_uverbs_wc, port_num);
    O(ib_uverbs_wc, reserved);
    return 0;
}
"#;

/// The C cross-check cannot run here: skip it (with a message), or fail if
/// `RXE_REQUIRE_CC` is set.
fn cannot_check(why: &str) -> Option<String> {
    assert!(
        std::env::var_os("RXE_REQUIRE_CC").is_none(),
        "C cross-check required (RXE_REQUIRE_CC) but impossible: {why}"
    );
    eprintln!("skipping C cross-check: {why}");
    None
}

/// Compiles and runs `src` against the system headers; `None` if that is
/// not possible here (and `RXE_REQUIRE_CC` is not set).
fn run_c(name: &str, src: &str) -> Option<String> {
    if !std::path::Path::new("/usr/include/rdma/rdma_user_rxe.h").exists() {
        return cannot_check("no /usr/include/rdma/rdma_user_rxe.h");
    }
    let dir = std::env::temp_dir().join(format!("rxe-abi-{}-{}", name, std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory for the C cross-check");
    let c = dir.join("t.c");
    let exe = dir.join("t");
    std::fs::write(&c, src).expect("write the C cross-check program");
    let status = match Command::new("cc").arg("-o").arg(&exe).arg(&c).status() {
        Ok(s) => s,
        Err(e) => return cannot_check(&format!("cannot run cc: {e}")),
    };
    assert!(
        status.success(),
        "the C cross-check program failed to compile"
    );
    let out = Command::new(&exe).output().expect("run C cross-check");
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn uapi_offsets_match_c_headers() {
    let Some(out) = run_c("layout", C_PROGRAM) else {
        return;
    };
    let c: HashMap<&str, usize> = out
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();
    let ours: &[(&str, usize)] = &[
        ("sizeof.mminfo", MmapInfo::SIZE),
        ("mminfo.offset", MmapInfo::OFF_OFFSET),
        ("mminfo.size", MmapInfo::OFF_SIZE),
        ("mminfo.pad", MmapInfo::OFF_PAD),
        ("sizeof.rxe_create_cq_resp", CreateCqResp::SIZE),
        ("sizeof.rxe_resize_cq_resp", ResizeCqResp::SIZE),
        ("sizeof.rxe_create_qp_resp", CreateQpResp::SIZE),
        ("rxe_create_qp_resp.rq_mi", CreateQpResp::OFF_RQ_MI),
        ("rxe_create_qp_resp.sq_mi", CreateQpResp::OFF_SQ_MI),
        ("sizeof.rxe_create_srq_resp", CreateSrqResp::SIZE),
        ("rxe_create_srq_resp.srq_num", CreateSrqResp::OFF_SRQ_NUM),
        ("rxe_create_srq_resp.reserved", CreateSrqResp::OFF_RESERVED),
        ("sizeof.rxe_modify_srq_cmd", ModifySrqCmd::SIZE),
        ("rxe_modify_srq_cmd.mmap_info_addr", 0),
        ("sizeof.rxe_create_ah_resp", CreateAhResp::SIZE),
        ("rxe_create_ah_resp.ah_num", 0),
        ("rxe_create_ah_resp.reserved", CreateAhResp::OFF_RESERVED),
        ("sizeof.rxe_queue_buf", queue_hdr::DATA),
        ("rxe_queue_buf.log2_elem_size", queue_hdr::LOG2_ELEM_SIZE),
        ("rxe_queue_buf.index_mask", queue_hdr::INDEX_MASK),
        ("rxe_queue_buf.producer_index", queue_hdr::PRODUCER_INDEX),
        ("rxe_queue_buf.consumer_index", queue_hdr::CONSUMER_INDEX),
        ("rxe_queue_buf.data", queue_hdr::DATA),
        ("sizeof.rxe_sge", Sge::SIZE),
        ("rxe_sge.addr", Sge::OFF_ADDR),
        ("rxe_sge.length", Sge::OFF_LENGTH),
        ("rxe_sge.lkey", Sge::OFF_LKEY),
        ("sizeof.rxe_dma_info", DmaInfo::SIZE),
        ("rxe_dma_info.length", DmaInfo::OFF_LENGTH),
        ("rxe_dma_info.resid", DmaInfo::OFF_RESID),
        ("rxe_dma_info.cur_sge", DmaInfo::OFF_CUR_SGE),
        ("rxe_dma_info.num_sge", DmaInfo::OFF_NUM_SGE),
        ("rxe_dma_info.sge_offset", DmaInfo::OFF_SGE_OFFSET),
        ("rxe_dma_info.reserved", DmaInfo::OFF_RESERVED),
        ("rxe_dma_info.sge", DmaInfo::OFF_DATA),
        ("rxe_dma_info.inline_data", DmaInfo::OFF_DATA),
        ("sizeof.rxe_send_wr", send_wr::SIZE),
        ("rxe_send_wr.wr_id", send_wr::WR_ID),
        ("rxe_send_wr.reserved", send_wr::RESERVED),
        ("rxe_send_wr.opcode", send_wr::OPCODE),
        ("rxe_send_wr.send_flags", send_wr::SEND_FLAGS),
        ("rxe_send_wr.ex.imm_data", send_wr::EX),
        ("rxe_send_wr.ex.invalidate_rkey", send_wr::EX),
        ("rxe_send_wr.wr", send_wr::WR),
        ("rxe_send_wr.wr.rdma.remote_addr", send_wr::RDMA_REMOTE_ADDR),
        ("rxe_send_wr.wr.rdma.rkey", send_wr::RDMA_RKEY),
        (
            "rxe_send_wr.wr.atomic.remote_addr",
            send_wr::ATOMIC_REMOTE_ADDR,
        ),
        (
            "rxe_send_wr.wr.atomic.compare_add",
            send_wr::ATOMIC_COMPARE_ADD,
        ),
        ("rxe_send_wr.wr.atomic.swap", send_wr::ATOMIC_SWAP),
        ("rxe_send_wr.wr.atomic.rkey", send_wr::ATOMIC_RKEY),
        ("rxe_send_wr.wr.ud.remote_qpn", send_wr::UD_REMOTE_QPN),
        ("rxe_send_wr.wr.ud.remote_qkey", send_wr::UD_REMOTE_QKEY),
        ("rxe_send_wr.wr.ud.pkey_index", send_wr::UD_PKEY_INDEX),
        ("rxe_send_wr.wr.ud.ah_num", send_wr::UD_AH_NUM),
        ("rxe_send_wr.wr.ud.av", send_wr::UD_AV),
        ("rxe_send_wr.wr.mw.addr", send_wr::MW_ADDR),
        ("rxe_send_wr.wr.mw.length", send_wr::MW_LENGTH),
        ("rxe_send_wr.wr.mw.mr_lkey", send_wr::MW_MR_LKEY),
        ("rxe_send_wr.wr.mw.mw_rkey", send_wr::MW_MW_RKEY),
        ("rxe_send_wr.wr.mw.rkey", send_wr::MW_RKEY),
        ("rxe_send_wr.wr.mw.access", send_wr::MW_ACCESS),
        (
            "rxe_send_wr.wr.flush.remote_addr",
            send_wr::FLUSH_REMOTE_ADDR,
        ),
        ("rxe_send_wr.wr.flush.length", send_wr::FLUSH_LENGTH),
        ("rxe_send_wr.wr.flush.rkey", send_wr::FLUSH_RKEY),
        ("rxe_send_wr.wr.flush.type", send_wr::FLUSH_TYPE),
        ("rxe_send_wr.wr.flush.level", send_wr::FLUSH_LEVEL),
        ("sizeof.rxe_send_wqe", send_wqe::SIZE),
        ("rxe_send_wqe.wr", send_wqe::WR),
        ("rxe_send_wqe.status", send_wqe::STATUS),
        ("rxe_send_wqe.state", send_wqe::STATE),
        ("rxe_send_wqe.iova", send_wqe::IOVA),
        ("rxe_send_wqe.mask", send_wqe::MASK),
        ("rxe_send_wqe.first_psn", send_wqe::FIRST_PSN),
        ("rxe_send_wqe.last_psn", send_wqe::LAST_PSN),
        ("rxe_send_wqe.ack_length", send_wqe::ACK_LENGTH),
        ("rxe_send_wqe.ssn", send_wqe::SSN),
        ("rxe_send_wqe.has_rd_atomic", send_wqe::HAS_RD_ATOMIC),
        ("rxe_send_wqe.dma", send_wqe::DMA),
        ("sizeof.rxe_recv_wqe", recv_wqe::SIZE),
        ("rxe_recv_wqe.wr_id", recv_wqe::WR_ID),
        ("rxe_recv_wqe.reserved", recv_wqe::RESERVED),
        ("rxe_recv_wqe.padding", recv_wqe::PADDING),
        ("rxe_recv_wqe.dma", recv_wqe::DMA),
        ("sizeof.rxe_av", av::SIZE),
        ("rxe_av.port_num", av::PORT_NUM),
        ("rxe_av.network_type", av::NETWORK_TYPE),
        ("rxe_av.dmac", av::DMAC),
        ("rxe_av.grh.dgid", av::GRH_DGID),
        ("rxe_av.grh.flow_label", av::GRH_FLOW_LABEL),
        ("rxe_av.grh.sgid_index", av::GRH_SGID_INDEX),
        ("rxe_av.grh.hop_limit", av::GRH_HOP_LIMIT),
        ("rxe_av.grh.traffic_class", av::GRH_TRAFFIC_CLASS),
        ("rxe_av.sgid_addr", av::SGID_ADDR),
        ("rxe_av.dgid_addr", av::DGID_ADDR),
        ("sizeof.ib_uverbs_wc", uverbs_wc::SIZE),
        ("ib_uverbs_wc.wr_id", uverbs_wc::WR_ID),
        ("ib_uverbs_wc.status", uverbs_wc::STATUS),
        ("ib_uverbs_wc.opcode", uverbs_wc::OPCODE),
        ("ib_uverbs_wc.vendor_err", uverbs_wc::VENDOR_ERR),
        ("ib_uverbs_wc.byte_len", uverbs_wc::BYTE_LEN),
        ("ib_uverbs_wc.ex.imm_data", uverbs_wc::EX),
        ("ib_uverbs_wc.ex.invalidate_rkey", uverbs_wc::EX),
        ("ib_uverbs_wc.qp_num", uverbs_wc::QP_NUM),
        ("ib_uverbs_wc.src_qp", uverbs_wc::SRC_QP),
        ("ib_uverbs_wc.wc_flags", uverbs_wc::WC_FLAGS),
        ("ib_uverbs_wc.pkey_index", uverbs_wc::PKEY_INDEX),
        ("ib_uverbs_wc.slid", uverbs_wc::SLID),
        ("ib_uverbs_wc.sl", uverbs_wc::SL),
        ("ib_uverbs_wc.dlid_path_bits", uverbs_wc::DLID_PATH_BITS),
        ("ib_uverbs_wc.port_num", uverbs_wc::PORT_NUM),
        ("ib_uverbs_wc.reserved", uverbs_wc::RESERVED),
    ];
    for (name, ours) in ours {
        let theirs = c
            .get(name)
            .unwrap_or_else(|| panic!("C program printed no {name}"));
        assert_eq!(theirs, ours, "{name}: C says {theirs}, we say {ours}");
    }
    assert_eq!(c.len(), ours.len(), "every C line is checked");
}
