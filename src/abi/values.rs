// SPDX-License-Identifier: GPL-2.0

//! Numeric values shared with user space (rxe-abi-and-wire.md §1.8): work-request and
//! work-completion opcodes, completion statuses, send, access and completion
//! flags, the QP types this driver serves and the `rxe_av` network types.
//!
//! Values were checked against `rdma/ib_user_verbs.h`,
//! `rdma/ib_user_ioctl_verbs.h` (linux-libc-dev 7.3) and
//! `infiniband/verbs.h` (libibverbs-dev 44); see `host/tests/abi_values.rs`.

/// Work-request opcode as stored in `rxe_send_wr.opcode` (`IB_WR_*`, which
/// equals `IB_UVERBS_WR_*` and, for 0..=10 and 15, `IBV_WR_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WrOpcode {
    /// RDMA WRITE (0).
    RdmaWrite = 0,
    /// RDMA WRITE with immediate (1).
    RdmaWriteWithImm = 1,
    /// SEND (2).
    Send = 2,
    /// SEND with immediate (3).
    SendWithImm = 3,
    /// RDMA READ (4).
    RdmaRead = 4,
    /// Atomic compare and swap (5).
    AtomicCmpAndSwp = 5,
    /// Atomic fetch and add (6).
    AtomicFetchAndAdd = 6,
    /// Local invalidate (7), a local operation.
    LocalInv = 7,
    /// Bind memory window (8), a local operation.
    BindMw = 8,
    /// SEND with invalidate (9).
    SendWithInv = 9,
    /// TSO/LSO (10): not supported by rxe.
    Tso = 10,
    /// RDMA READ with invalidate (11): kernel QPs only. For user space 11 is
    /// `IBV_WR_DRIVER1`, which librxe never posts.
    RdmaReadWithInv = 11,
    /// Masked atomic compare and swap (12): not supported by rxe.
    MaskedAtomicCmpAndSwp = 12,
    /// Masked atomic fetch and add (13): not supported by rxe.
    MaskedAtomicFetchAndAdd = 13,
    /// FLUSH (14).
    Flush = 14,
    /// ATOMIC WRITE (15).
    AtomicWrite = 15,
    /// Register MR (0x20): kernel only; in a kernel ring the region is named
    /// by its key-table index (see `layout::send_wr::REG_MR_INDEX`).
    RegMr = 0x20,
}

impl WrOpcode {
    /// The opcode with numeric value `v`, if there is one.
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::RdmaWrite,
            1 => Self::RdmaWriteWithImm,
            2 => Self::Send,
            3 => Self::SendWithImm,
            4 => Self::RdmaRead,
            5 => Self::AtomicCmpAndSwp,
            6 => Self::AtomicFetchAndAdd,
            7 => Self::LocalInv,
            8 => Self::BindMw,
            9 => Self::SendWithInv,
            10 => Self::Tso,
            11 => Self::RdmaReadWithInv,
            12 => Self::MaskedAtomicCmpAndSwp,
            13 => Self::MaskedAtomicFetchAndAdd,
            14 => Self::Flush,
            15 => Self::AtomicWrite,
            0x20 => Self::RegMr,
            _ => return None,
        })
    }

    /// The numeric value.
    pub const fn as_u32(self) -> u32 {
        self as u32
    }

    /// The completion opcode a send completion of this request carries
    /// (rxe-abi-and-wire.md §1.8 WR→WC mapping); `None` for the unsupported opcodes.
    pub const fn wc_opcode(self) -> Option<WcOpcode> {
        Some(match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            Self::Send | Self::SendWithImm | Self::SendWithInv => WcOpcode::Send,
            Self::RdmaRead | Self::RdmaReadWithInv => WcOpcode::RdmaRead,
            Self::AtomicCmpAndSwp => WcOpcode::CompSwap,
            Self::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            Self::LocalInv => WcOpcode::LocalInv,
            Self::BindMw => WcOpcode::BindMw,
            Self::Flush => WcOpcode::Flush,
            Self::AtomicWrite => WcOpcode::AtomicWrite,
            Self::RegMr => WcOpcode::RegMr,
            Self::Tso | Self::MaskedAtomicCmpAndSwp | Self::MaskedAtomicFetchAndAdd => return None,
        })
    }

    /// Whether the request carries 4 bytes of immediate data in `ex`.
    pub const fn has_imm(self) -> bool {
        matches!(self, Self::RdmaWriteWithImm | Self::SendWithImm)
    }
}

/// `IB_SEND_*` / `IBV_SEND_*` flags in `rxe_send_wr.send_flags`.
pub mod send_flags {
    /// Wait for prior RDMA READ and atomic requests to complete.
    pub const FENCE: u32 = 1 << 0;
    /// Generate a completion even if the QP's `sq_sig_type` is not ALL.
    pub const SIGNALED: u32 = 1 << 1;
    /// Set the solicited-event bit in the last packet.
    pub const SOLICITED: u32 = 1 << 2;
    /// The payload is inline in the WQE instead of described by SGEs.
    pub const INLINE: u32 = 1 << 3;
    /// Request IP checksum offload (not supported by rxe; ignored).
    pub const IP_CSUM: u32 = 1 << 4;
    /// All flags defined for user space.
    pub const ALL: u32 = FENCE | SIGNALED | SOLICITED | INLINE | IP_CSUM;
}

/// Memory access flags (`IB_ACCESS_*` = `IB_UVERBS_ACCESS_*` = `IBV_ACCESS_*`).
pub mod access {
    /// Local write access.
    pub const LOCAL_WRITE: u32 = 1 << 0;
    /// Remote write access.
    pub const REMOTE_WRITE: u32 = 1 << 1;
    /// Remote read access.
    pub const REMOTE_READ: u32 = 1 << 2;
    /// Remote atomic access.
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    /// Memory windows may be bound to the MR.
    pub const MW_BIND: u32 = 1 << 4;
    /// Zero-based addressing (MW binds: rejected by librxe).
    pub const ZERO_BASED: u32 = 1 << 5;
    /// On-demand paging.
    pub const ON_DEMAND: u32 = 1 << 6;
    /// Huge pages hint.
    pub const HUGETLB: u32 = 1 << 7;
    /// FLUSH to global visibility.
    pub const FLUSH_GLOBAL: u32 = 1 << 8;
    /// FLUSH to persistence.
    pub const FLUSH_PERSISTENT: u32 = 1 << 9;
    /// Relaxed ordering (first "optional" access bit, ignorable).
    pub const RELAXED_ORDERING: u32 = 1 << 20;
}

/// Work-completion opcode in `ib_uverbs_wc.opcode` (`IB_WC_*` / `IBV_WC_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcOpcode {
    /// SEND (0).
    Send = 0,
    /// RDMA WRITE (1).
    RdmaWrite = 1,
    /// RDMA READ (2).
    RdmaRead = 2,
    /// Compare and swap (3).
    CompSwap = 3,
    /// Fetch and add (4).
    FetchAdd = 4,
    /// Bind MW (5).
    BindMw = 5,
    /// Local invalidate (6).
    LocalInv = 6,
    /// TSO (7).
    Tso = 7,
    /// FLUSH (8).
    Flush = 8,
    /// ATOMIC WRITE (9).
    AtomicWrite = 9,
    /// Register MR (10, kernel `IB_WC_REG_MR` only).
    RegMr = 10,
    /// Receive (128).
    Recv = 128,
    /// Receive of RDMA WRITE with immediate (129).
    RecvRdmaWithImm = 129,
}

impl WcOpcode {
    /// The opcode with numeric value `v`, if there is one.
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Send,
            1 => Self::RdmaWrite,
            2 => Self::RdmaRead,
            3 => Self::CompSwap,
            4 => Self::FetchAdd,
            5 => Self::BindMw,
            6 => Self::LocalInv,
            7 => Self::Tso,
            8 => Self::Flush,
            9 => Self::AtomicWrite,
            10 => Self::RegMr,
            128 => Self::Recv,
            129 => Self::RecvRdmaWithImm,
            _ => return None,
        })
    }

    /// The numeric value.
    pub const fn as_u32(self) -> u32 {
        self as u32
    }
}

/// Completion status in `ib_uverbs_wc.status` (`IB_WC_*` = `IBV_WC_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcStatus {
    /// Success (0).
    Success = 0,
    /// Local length error (1).
    LocLenErr = 1,
    /// Local QP operation error (2).
    LocQpOpErr = 2,
    /// Local EE context operation error (3).
    LocEecOpErr = 3,
    /// Local protection error (4).
    LocProtErr = 4,
    /// Work request flushed (5).
    WrFlushErr = 5,
    /// Memory window bind error (6).
    MwBindErr = 6,
    /// Bad response error (7).
    BadRespErr = 7,
    /// Local access error (8).
    LocAccessErr = 8,
    /// Remote invalid request error (9).
    RemInvReqErr = 9,
    /// Remote access error (10).
    RemAccessErr = 10,
    /// Remote operation error (11).
    RemOpErr = 11,
    /// Transport retry counter exceeded (12).
    RetryExcErr = 12,
    /// RNR retry counter exceeded (13).
    RnrRetryExcErr = 13,
    /// Local RDD violation (14).
    LocRddViolErr = 14,
    /// Remote invalid RD request (15).
    RemInvRdReqErr = 15,
    /// Remote aborted (16).
    RemAbortErr = 16,
    /// Invalid EE context number (17).
    InvEecnErr = 17,
    /// Invalid EE context state (18).
    InvEecStateErr = 18,
    /// Fatal error (19).
    FatalErr = 19,
    /// Response timeout (20).
    RespTimeoutErr = 20,
    /// General error (21).
    GeneralErr = 21,
}

impl WcStatus {
    /// The status with numeric value `v`, if there is one.
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Success,
            1 => Self::LocLenErr,
            2 => Self::LocQpOpErr,
            3 => Self::LocEecOpErr,
            4 => Self::LocProtErr,
            5 => Self::WrFlushErr,
            6 => Self::MwBindErr,
            7 => Self::BadRespErr,
            8 => Self::LocAccessErr,
            9 => Self::RemInvReqErr,
            10 => Self::RemAccessErr,
            11 => Self::RemOpErr,
            12 => Self::RetryExcErr,
            13 => Self::RnrRetryExcErr,
            14 => Self::LocRddViolErr,
            15 => Self::RemInvRdReqErr,
            16 => Self::RemAbortErr,
            17 => Self::InvEecnErr,
            18 => Self::InvEecStateErr,
            19 => Self::FatalErr,
            20 => Self::RespTimeoutErr,
            21 => Self::GeneralErr,
            _ => return None,
        })
    }

    /// The numeric value.
    pub const fn as_u32(self) -> u32 {
        self as u32
    }
}

/// Completion flags in `ib_uverbs_wc.wc_flags`, as the kernel defines them
/// (`enum ib_wc_flags`) and as the C rxe writes them into user CQEs.
///
/// Beware: libibverbs' `enum ibv_wc_flags` numbers bits 2 and 3 the other way
/// round (`IBV_WC_IP_CSUM_OK` = 4, `IBV_WC_WITH_INV` = 8), and neither the
/// core nor librxe translates. A user CQE carrying [`WITH_INVALIDATE`] is
/// therefore read by applications as `IBV_WC_IP_CSUM_OK`. This module keeps
/// the kernel numbering so our bytes equal the C driver's; see the `IBV_*`
/// constants for the user-space view.
pub mod wc_flags {
    /// A GRH is present in the first 40 bytes of the receive buffer.
    pub const GRH: u32 = 1 << 0;
    /// `imm_data` is valid.
    pub const WITH_IMM: u32 = 1 << 1;
    /// `invalidate_rkey` is valid (kernel numbering).
    pub const WITH_INVALIDATE: u32 = 1 << 2;
    /// IP checksum verified (kernel numbering).
    pub const IP_CSUM_OK: u32 = 1 << 3;
    /// Source MAC valid (kernel `ib_wc` only).
    pub const WITH_SMAC: u32 = 1 << 4;
    /// VLAN id valid (kernel `ib_wc` only).
    pub const WITH_VLAN: u32 = 1 << 5;
    /// `network_hdr_type` valid (kernel `ib_wc` only).
    pub const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;
    /// libibverbs' `IBV_WC_IP_CSUM_OK` (user-space numbering).
    pub const IBV_IP_CSUM_OK: u32 = 1 << 2;
    /// libibverbs' `IBV_WC_WITH_INV` (user-space numbering).
    pub const IBV_WITH_INV: u32 = 1 << 3;
}

/// The QP types a send queue can belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// General services interface (QP1; kernel only).
    Gsi,
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

impl QpType {
    /// The type for a kernel `enum ib_qp_type` value (GSI 1, RC 2, UC 3,
    /// UD 4); `None` for types rxe does not serve.
    pub const fn from_ib(v: u32) -> Option<Self> {
        Some(match v {
            1 => Self::Gsi,
            2 => Self::Rc,
            3 => Self::Uc,
            4 => Self::Ud,
            _ => return None,
        })
    }
}

/// `rxe_av.network_type` for IPv4.
pub const RXE_NETWORK_TYPE_IPV4: u8 = 1;
/// `rxe_av.network_type` for IPv6.
pub const RXE_NETWORK_TYPE_IPV6: u8 = 2;

/// Send WQE `state` values (kernel-written; librxe writes 0 and never reads).
pub mod wqe_state {
    /// Posted, not yet started.
    pub const POSTED: u32 = 0;
    /// Being sent.
    pub const PROCESSING: u32 = 1;
    /// Sent, awaiting acknowledgement.
    pub const PENDING: u32 = 2;
    /// Done.
    pub const DONE: u32 = 3;
    /// Completed in error.
    pub const ERROR: u32 = 4;
}
