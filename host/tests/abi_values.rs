//! Numeric values of `src/abi/values.rs` (rxe-abi-and-wire.md §1.8) against the system
//! headers: `rdma/ib_user_verbs.h`, `rdma/ib_user_ioctl_verbs.h`
//! (linux-libc-dev) and `infiniband/verbs.h` (libibverbs-dev 44). The C
//! program is compiled with `cc`; the test is skipped if that is impossible,
//! except when `RXE_REQUIRE_CC` is set (as `scripts/test.sh` does): then it
//! fails.
use std::process::Command;

use rxe_proto::abi::values::*;

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

fn run_c(src: &str, includes_verbs: bool) -> Option<String> {
    let hdr = if includes_verbs {
        "/usr/include/infiniband/verbs.h"
    } else {
        "/usr/include/rdma/ib_user_verbs.h"
    };
    if !std::path::Path::new(hdr).exists() {
        return cannot_check(&format!("no {hdr}"));
    }
    let dir = std::env::temp_dir().join(format!(
        "rxe-abi-values-{}-{}",
        includes_verbs,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temporary directory for the C cross-check");
    let (c, exe) = (dir.join("t.c"), dir.join("t"));
    std::fs::write(&c, src).expect("write the C cross-check program");
    match Command::new("cc").arg("-o").arg(&exe).arg(&c).status() {
        Ok(s) => assert!(s.success(), "C cross-check failed to compile"),
        Err(e) => return cannot_check(&format!("cannot run cc: {e}")),
    }
    let out = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8(out.stdout).unwrap())
}

fn check(out: &str, ours: &[(&str, u32)]) {
    let c: std::collections::HashMap<&str, u32> = out
        .lines()
        .map(|l| {
            l.split_once(' ')
                .map(|(k, v)| (k, v.parse().unwrap()))
                .unwrap()
        })
        .collect();
    for (name, v) in ours {
        assert_eq!(c.get(name), Some(v), "{name}");
    }
    assert_eq!(c.len(), ours.len());
}

#[test]
fn kernel_uapi_values() {
    let src = r#"
#include <stdio.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#define P(x) printf("%s %u\n", #x, (unsigned)(x))
int main(void) {
  P(IB_UVERBS_WR_RDMA_WRITE); P(IB_UVERBS_WR_RDMA_WRITE_WITH_IMM); P(IB_UVERBS_WR_SEND);
  P(IB_UVERBS_WR_SEND_WITH_IMM); P(IB_UVERBS_WR_RDMA_READ); P(IB_UVERBS_WR_ATOMIC_CMP_AND_SWP);
  P(IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD); P(IB_UVERBS_WR_LOCAL_INV); P(IB_UVERBS_WR_BIND_MW);
  P(IB_UVERBS_WR_SEND_WITH_INV); P(IB_UVERBS_WR_TSO); P(IB_UVERBS_WR_RDMA_READ_WITH_INV);
  P(IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP); P(IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD);
  P(IB_UVERBS_WR_FLUSH); P(IB_UVERBS_WR_ATOMIC_WRITE);
  P(IB_UVERBS_WC_SEND); P(IB_UVERBS_WC_RDMA_WRITE); P(IB_UVERBS_WC_RDMA_READ);
  P(IB_UVERBS_WC_COMP_SWAP); P(IB_UVERBS_WC_FETCH_ADD); P(IB_UVERBS_WC_BIND_MW);
  P(IB_UVERBS_WC_LOCAL_INV); P(IB_UVERBS_WC_TSO); P(IB_UVERBS_WC_FLUSH); P(IB_UVERBS_WC_ATOMIC_WRITE);
  P(IB_UVERBS_ACCESS_LOCAL_WRITE); P(IB_UVERBS_ACCESS_REMOTE_WRITE); P(IB_UVERBS_ACCESS_REMOTE_READ);
  P(IB_UVERBS_ACCESS_REMOTE_ATOMIC); P(IB_UVERBS_ACCESS_MW_BIND); P(IB_UVERBS_ACCESS_ZERO_BASED);
  P(IB_UVERBS_ACCESS_ON_DEMAND); P(IB_UVERBS_ACCESS_HUGETLB); P(IB_UVERBS_ACCESS_FLUSH_GLOBAL);
  P(IB_UVERBS_ACCESS_FLUSH_PERSISTENT); P(IB_UVERBS_ACCESS_RELAXED_ORDERING);
  return 0;
}
"#;
    let Some(out) = run_c(src, false) else { return };
    use WcOpcode as C;
    use WrOpcode as W;
    check(
        &out,
        &[
            ("IB_UVERBS_WR_RDMA_WRITE", W::RdmaWrite.as_u32()),
            (
                "IB_UVERBS_WR_RDMA_WRITE_WITH_IMM",
                W::RdmaWriteWithImm.as_u32(),
            ),
            ("IB_UVERBS_WR_SEND", W::Send.as_u32()),
            ("IB_UVERBS_WR_SEND_WITH_IMM", W::SendWithImm.as_u32()),
            ("IB_UVERBS_WR_RDMA_READ", W::RdmaRead.as_u32()),
            (
                "IB_UVERBS_WR_ATOMIC_CMP_AND_SWP",
                W::AtomicCmpAndSwp.as_u32(),
            ),
            (
                "IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD",
                W::AtomicFetchAndAdd.as_u32(),
            ),
            ("IB_UVERBS_WR_LOCAL_INV", W::LocalInv.as_u32()),
            ("IB_UVERBS_WR_BIND_MW", W::BindMw.as_u32()),
            ("IB_UVERBS_WR_SEND_WITH_INV", W::SendWithInv.as_u32()),
            ("IB_UVERBS_WR_TSO", W::Tso.as_u32()),
            (
                "IB_UVERBS_WR_RDMA_READ_WITH_INV",
                W::RdmaReadWithInv.as_u32(),
            ),
            (
                "IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP",
                W::MaskedAtomicCmpAndSwp.as_u32(),
            ),
            (
                "IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD",
                W::MaskedAtomicFetchAndAdd.as_u32(),
            ),
            ("IB_UVERBS_WR_FLUSH", W::Flush.as_u32()),
            ("IB_UVERBS_WR_ATOMIC_WRITE", W::AtomicWrite.as_u32()),
            ("IB_UVERBS_WC_SEND", C::Send.as_u32()),
            ("IB_UVERBS_WC_RDMA_WRITE", C::RdmaWrite.as_u32()),
            ("IB_UVERBS_WC_RDMA_READ", C::RdmaRead.as_u32()),
            ("IB_UVERBS_WC_COMP_SWAP", C::CompSwap.as_u32()),
            ("IB_UVERBS_WC_FETCH_ADD", C::FetchAdd.as_u32()),
            ("IB_UVERBS_WC_BIND_MW", C::BindMw.as_u32()),
            ("IB_UVERBS_WC_LOCAL_INV", C::LocalInv.as_u32()),
            ("IB_UVERBS_WC_TSO", C::Tso.as_u32()),
            ("IB_UVERBS_WC_FLUSH", C::Flush.as_u32()),
            ("IB_UVERBS_WC_ATOMIC_WRITE", C::AtomicWrite.as_u32()),
            ("IB_UVERBS_ACCESS_LOCAL_WRITE", access::LOCAL_WRITE),
            ("IB_UVERBS_ACCESS_REMOTE_WRITE", access::REMOTE_WRITE),
            ("IB_UVERBS_ACCESS_REMOTE_READ", access::REMOTE_READ),
            ("IB_UVERBS_ACCESS_REMOTE_ATOMIC", access::REMOTE_ATOMIC),
            ("IB_UVERBS_ACCESS_MW_BIND", access::MW_BIND),
            ("IB_UVERBS_ACCESS_ZERO_BASED", access::ZERO_BASED),
            ("IB_UVERBS_ACCESS_ON_DEMAND", access::ON_DEMAND),
            ("IB_UVERBS_ACCESS_HUGETLB", access::HUGETLB),
            ("IB_UVERBS_ACCESS_FLUSH_GLOBAL", access::FLUSH_GLOBAL),
            (
                "IB_UVERBS_ACCESS_FLUSH_PERSISTENT",
                access::FLUSH_PERSISTENT,
            ),
            (
                "IB_UVERBS_ACCESS_RELAXED_ORDERING",
                access::RELAXED_ORDERING,
            ),
        ],
    );
}

#[test]
fn libibverbs_values() {
    let src = r#"
#include <stdio.h>
#include <infiniband/verbs.h>
#define P(x) printf("%s %u\n", #x, (unsigned)(x))
int main(void) {
  P(IBV_WR_RDMA_WRITE); P(IBV_WR_RDMA_WRITE_WITH_IMM); P(IBV_WR_SEND); P(IBV_WR_SEND_WITH_IMM);
  P(IBV_WR_RDMA_READ); P(IBV_WR_ATOMIC_CMP_AND_SWP); P(IBV_WR_ATOMIC_FETCH_AND_ADD);
  P(IBV_WR_LOCAL_INV); P(IBV_WR_BIND_MW); P(IBV_WR_SEND_WITH_INV); P(IBV_WR_TSO);
  P(IBV_WR_ATOMIC_WRITE);
  P(IBV_SEND_FENCE); P(IBV_SEND_SIGNALED); P(IBV_SEND_SOLICITED); P(IBV_SEND_INLINE); P(IBV_SEND_IP_CSUM);
  P(IBV_WC_SUCCESS); P(IBV_WC_LOC_LEN_ERR); P(IBV_WC_LOC_QP_OP_ERR); P(IBV_WC_LOC_EEC_OP_ERR);
  P(IBV_WC_LOC_PROT_ERR); P(IBV_WC_WR_FLUSH_ERR); P(IBV_WC_MW_BIND_ERR); P(IBV_WC_BAD_RESP_ERR);
  P(IBV_WC_LOC_ACCESS_ERR); P(IBV_WC_REM_INV_REQ_ERR); P(IBV_WC_REM_ACCESS_ERR); P(IBV_WC_REM_OP_ERR);
  P(IBV_WC_RETRY_EXC_ERR); P(IBV_WC_RNR_RETRY_EXC_ERR); P(IBV_WC_LOC_RDD_VIOL_ERR);
  P(IBV_WC_REM_INV_RD_REQ_ERR); P(IBV_WC_REM_ABORT_ERR); P(IBV_WC_INV_EECN_ERR);
  P(IBV_WC_INV_EEC_STATE_ERR); P(IBV_WC_FATAL_ERR); P(IBV_WC_RESP_TIMEOUT_ERR); P(IBV_WC_GENERAL_ERR);
  P(IBV_WC_RECV); P(IBV_WC_RECV_RDMA_WITH_IMM);
  P(IBV_WC_GRH); P(IBV_WC_WITH_IMM); P(IBV_WC_IP_CSUM_OK); P(IBV_WC_WITH_INV);
  return 0;
}
"#;
    let Some(out) = run_c(src, true) else { return };
    use WcStatus as S;
    use WrOpcode as W;
    let mut ours: Vec<(&str, u32)> = vec![
        ("IBV_WR_RDMA_WRITE", W::RdmaWrite.as_u32()),
        ("IBV_WR_RDMA_WRITE_WITH_IMM", W::RdmaWriteWithImm.as_u32()),
        ("IBV_WR_SEND", W::Send.as_u32()),
        ("IBV_WR_SEND_WITH_IMM", W::SendWithImm.as_u32()),
        ("IBV_WR_RDMA_READ", W::RdmaRead.as_u32()),
        ("IBV_WR_ATOMIC_CMP_AND_SWP", W::AtomicCmpAndSwp.as_u32()),
        ("IBV_WR_ATOMIC_FETCH_AND_ADD", W::AtomicFetchAndAdd.as_u32()),
        ("IBV_WR_LOCAL_INV", W::LocalInv.as_u32()),
        ("IBV_WR_BIND_MW", W::BindMw.as_u32()),
        ("IBV_WR_SEND_WITH_INV", W::SendWithInv.as_u32()),
        ("IBV_WR_TSO", W::Tso.as_u32()),
        ("IBV_WR_ATOMIC_WRITE", W::AtomicWrite.as_u32()),
        ("IBV_SEND_FENCE", send_flags::FENCE),
        ("IBV_SEND_SIGNALED", send_flags::SIGNALED),
        ("IBV_SEND_SOLICITED", send_flags::SOLICITED),
        ("IBV_SEND_INLINE", send_flags::INLINE),
        ("IBV_SEND_IP_CSUM", send_flags::IP_CSUM),
        ("IBV_WC_RECV", WcOpcode::Recv.as_u32()),
        (
            "IBV_WC_RECV_RDMA_WITH_IMM",
            WcOpcode::RecvRdmaWithImm.as_u32(),
        ),
        ("IBV_WC_GRH", wc_flags::GRH),
        ("IBV_WC_WITH_IMM", wc_flags::WITH_IMM),
        // User-space numbering of bits 2 and 3 differs from the kernel's.
        ("IBV_WC_IP_CSUM_OK", wc_flags::IBV_IP_CSUM_OK),
        ("IBV_WC_WITH_INV", wc_flags::IBV_WITH_INV),
    ];
    let statuses = [
        "SUCCESS",
        "LOC_LEN_ERR",
        "LOC_QP_OP_ERR",
        "LOC_EEC_OP_ERR",
        "LOC_PROT_ERR",
        "WR_FLUSH_ERR",
        "MW_BIND_ERR",
        "BAD_RESP_ERR",
        "LOC_ACCESS_ERR",
        "REM_INV_REQ_ERR",
        "REM_ACCESS_ERR",
        "REM_OP_ERR",
        "RETRY_EXC_ERR",
        "RNR_RETRY_EXC_ERR",
        "LOC_RDD_VIOL_ERR",
        "REM_INV_RD_REQ_ERR",
        "REM_ABORT_ERR",
        "INV_EECN_ERR",
        "INV_EEC_STATE_ERR",
        "FATAL_ERR",
        "RESP_TIMEOUT_ERR",
        "GENERAL_ERR",
    ];
    let names: Vec<String> = statuses.iter().map(|s| format!("IBV_WC_{s}")).collect();
    for (i, n) in names.iter().enumerate() {
        let s = S::from_u32(i as u32).unwrap();
        assert_eq!(s.as_u32(), i as u32);
        ours.push((n.as_str(), s.as_u32()));
    }
    check(&out, &ours);
}

#[test]
fn from_u32_round_trips() {
    for v in 0..=0x100u32 {
        if let Some(o) = WrOpcode::from_u32(v) {
            assert_eq!(o.as_u32(), v);
        }
        if let Some(o) = WcOpcode::from_u32(v) {
            assert_eq!(o.as_u32(), v);
        }
        if let Some(s) = WcStatus::from_u32(v) {
            assert_eq!(s.as_u32(), v);
        }
    }
    assert_eq!(WrOpcode::from_u32(16), None);
    assert_eq!(WrOpcode::from_u32(0x20), Some(WrOpcode::RegMr));
    assert_eq!(WrOpcode::from_u32(u32::MAX), None);
    assert_eq!(WcStatus::from_u32(22), None);
    assert_eq!(WcOpcode::from_u32(11), None);
    assert_eq!(QpType::from_ib(2), Some(QpType::Rc));
    assert_eq!(QpType::from_ib(9), None);
    assert_eq!(send_flags::ALL, 0x1f);
}
