// SPDX-License-Identifier: GPL-2.0

//! Queue-pair attributes: the per-QP transport parameters that `modify_qp`
//! sets and `query_qp` reports, the checks rxe makes on them (rxe-abi-and-wire.md §4.5),
//! and the queue capacities a QP is created with (rxe-abi-and-wire.md §1.11).
//!
//! The state-transition table itself is ib_core's (`ib_modify_qp_is_ok`);
//! what is here are the driver's own rules on top of it and how each
//! attribute is stored.

use crate::proto::psn::Psn;

/// `ib_qp_attr_mask` bits.
pub mod mask {
    /// `qp_state`.
    pub const STATE: u32 = 1 << 0;
    /// `cur_qp_state`.
    pub const CUR_STATE: u32 = 1 << 1;
    /// `en_sqd_async_notify`.
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    /// `qp_access_flags`.
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    /// `pkey_index`.
    pub const PKEY_INDEX: u32 = 1 << 4;
    /// `port_num`.
    pub const PORT: u32 = 1 << 5;
    /// `qkey`.
    pub const QKEY: u32 = 1 << 6;
    /// `ah_attr` (primary path).
    pub const AV: u32 = 1 << 7;
    /// `path_mtu`.
    pub const PATH_MTU: u32 = 1 << 8;
    /// `timeout`.
    pub const TIMEOUT: u32 = 1 << 9;
    /// `retry_cnt`.
    pub const RETRY_CNT: u32 = 1 << 10;
    /// `rnr_retry`.
    pub const RNR_RETRY: u32 = 1 << 11;
    /// `rq_psn`.
    pub const RQ_PSN: u32 = 1 << 12;
    /// `max_rd_atomic`.
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    /// Alternate path attributes.
    pub const ALT_PATH: u32 = 1 << 14;
    /// `min_rnr_timer`.
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    /// `sq_psn`.
    pub const SQ_PSN: u32 = 1 << 16;
    /// `max_dest_rd_atomic`.
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    /// `path_mig_state`.
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    /// `cap`.
    pub const CAP: u32 = 1 << 19;
    /// `dest_qp_num`.
    pub const DEST_QPN: u32 = 1 << 20;
    /// Every standard bit (`IB_QP_ATTR_STANDARD_BITS`); others are refused.
    pub const STANDARD: u32 = (1 << 21) - 1;
}

/// `enum ib_qp_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(u32)]
pub enum QpState {
    /// Reset (0).
    #[default]
    Reset = 0,
    /// Initialised (1).
    Init = 1,
    /// Ready to receive (2).
    Rtr = 2,
    /// Ready to send (3).
    Rts = 3,
    /// Send queue drain (4).
    Sqd = 4,
    /// Send queue error (5).
    Sqe = 5,
    /// Error (6).
    Err = 6,
}

impl QpState {
    /// The state of a raw `ib_qp_state`, if valid.
    pub const fn from_raw(v: u32) -> Option<QpState> {
        Some(match v {
            0 => QpState::Reset,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => return None,
        })
    }
}

/// `enum ib_qp_type` values the driver knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum QpType {
    /// General services QP (kernel only, QP1).
    Gsi = 1,
    /// Reliable connection.
    Rc = 2,
    /// Unreliable connection.
    Uc = 3,
    /// Unreliable datagram.
    Ud = 4,
}

impl QpType {
    /// The type of a raw `ib_qp_type`, if rxe supports it.
    pub const fn from_raw(v: u32) -> Option<QpType> {
        Some(match v {
            1 => QpType::Gsi,
            2 => QpType::Rc,
            3 => QpType::Uc,
            4 => QpType::Ud,
            _ => return None,
        })
    }

    /// Whether the QP is connected (has a remote QP and remote access).
    pub const fn is_connected(self) -> bool {
        matches!(self, QpType::Rc | QpType::Uc)
    }

    /// Whether the QP sends datagrams (UD, and the GSI QP, which is UD).
    pub const fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Gsi)
    }
}

/// Which IP version a path uses (from the source GID's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Network {
    /// IPv4 (an IPv4-mapped GID).
    #[default]
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// An address vector: where a path's packets go (rxe's `rxe_av`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AddressVector {
    /// Port (always 1 on rxe).
    pub port_num: u8,
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID (the entry at `sgid_index`, at the time it was set).
    pub sgid: [u8; 16],
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// IPv6 flow label (also seeds the UDP source port).
    pub flow_label: u32,
    /// IP hop limit / TTL.
    pub hop_limit: u8,
    /// IP traffic class / TOS.
    pub traffic_class: u8,
    /// Destination MAC (resolved by ib_core).
    pub dmac: [u8; 6],
    /// IP version.
    pub network: Network,
}

/// The alternate path, stored and reported only (rxe does not migrate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AltPath {
    /// Alternate address vector.
    pub av: AddressVector,
    /// Alternate port.
    pub port_num: u8,
    /// Alternate P_Key index.
    pub pkey_index: u16,
    /// Alternate local ACK timeout.
    pub timeout: u8,
}

/// Device limits that attribute checks depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpLimits {
    /// Largest path MTU (an `ib_mtu` value, 5 = 4096).
    pub max_path_mtu: u8,
    /// `max_qp_rd_atom` of the device.
    pub max_rd_atomic: u32,
    /// Size of the port's GID table.
    pub gid_tbl_len: u32,
    /// Access bits a QP may allow (rxe's `RXE_ACCESS_SUPPORTED_QP`).
    pub supported_access: u32,
}

/// A `modify_qp` request: the mask and every field it may select, already
/// read out of `ib_qp_attr` (the AV checked and resolved by the kernel
/// layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ModifyRequest {
    /// `ib_qp_attr_mask`.
    pub mask: u32,
    /// Requested state.
    pub qp_state: u32,
    /// Caller's idea of the current state.
    pub cur_qp_state: u32,
    /// `en_sqd_async_notify`.
    pub en_sqd_async_notify: bool,
    /// `qp_access_flags`.
    pub access: u32,
    /// `pkey_index`.
    pub pkey_index: u16,
    /// `port_num`.
    pub port_num: u32,
    /// `qkey`.
    pub qkey: u32,
    /// Primary path.
    pub av: AddressVector,
    /// Primary path's `sgid_index` as requested (before resolution).
    pub av_sgid_index: u32,
    /// Alternate path.
    pub alt: AltPath,
    /// Alternate path's port as requested.
    pub alt_port_num: u32,
    /// Alternate path's `sgid_index` as requested.
    pub alt_sgid_index: u32,
    /// `path_mtu` (an `ib_mtu` value).
    pub path_mtu: u32,
    /// `timeout`.
    pub timeout: u8,
    /// `retry_cnt`.
    pub retry_cnt: u8,
    /// `rnr_retry`.
    pub rnr_retry: u8,
    /// `rq_psn`.
    pub rq_psn: u32,
    /// `max_rd_atomic`.
    pub max_rd_atomic: u32,
    /// `min_rnr_timer`.
    pub min_rnr_timer: u8,
    /// `sq_psn`.
    pub sq_psn: u32,
    /// `max_dest_rd_atomic`.
    pub max_dest_rd_atomic: u32,
    /// `path_mig_state`.
    pub path_mig_state: u32,
    /// `dest_qp_num`.
    pub dest_qpn: u32,
    /// `cap` (checked against the limits; the queues are not resized).
    pub cap: QpCaps,
}

/// Why a modify request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpAttrError {
    /// A mask bit outside the standard set (`EOPNOTSUPP`).
    UnsupportedMask,
    /// Any other bad attribute (`EINVAL`).
    Invalid,
}

/// Queue capacities (`ib_qp_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpCaps {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// SGEs per send WQE.
    pub max_send_sge: u32,
    /// SGEs per receive WQE.
    pub max_recv_sge: u32,
    /// Inline bytes per send WQE.
    pub max_inline_data: u32,
}

/// Device limits on queue capacities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapLimits {
    /// `max_qp_wr`.
    pub max_wr: u32,
    /// `max_send_sge`.
    pub max_send_sge: u32,
    /// `max_recv_sge`.
    pub max_recv_sge: u32,
    /// Largest inline data.
    pub max_inline_data: u32,
}

/// Checks requested capacities against the device (rxe's `rxe_qp_chk_cap`);
/// the receive side is ignored when the QP uses an SRQ.
pub fn check_caps(cap: &QpCaps, limits: &CapLimits, has_srq: bool) -> Result<(), QpAttrError> {
    let send_ok = cap.max_send_wr <= limits.max_wr && cap.max_send_sge <= limits.max_send_sge;
    let recv_ok =
        has_srq || (cap.max_recv_wr <= limits.max_wr && cap.max_recv_sge <= limits.max_recv_sge);
    if send_ok && recv_ok && cap.max_inline_data <= limits.max_inline_data {
        Ok(())
    } else {
        Err(QpAttrError::Invalid)
    }
}

/// Everything `query_qp` reports and the transport reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpAttrs {
    /// Current state.
    pub state: QpState,
    /// `en_sqd_async_notify`.
    pub en_sqd_async_notify: bool,
    /// Set while the SQ drains in SQD.
    pub sq_draining: bool,
    /// Remote access the QP allows (RC/UC).
    pub access: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port.
    pub port_num: u8,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Primary path.
    pub av: AddressVector,
    /// Alternate path.
    pub alt: AltPath,
    /// Path MTU (`ib_mtu` value; 0 until set).
    pub path_mtu: u8,
    /// Local ACK timeout exponent (0 = infinite).
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// Next PSN expected by the responder.
    pub rq_psn: Psn,
    /// Next PSN the requester sends.
    pub sq_psn: Psn,
    /// Outstanding READ/ATOMIC as requester (rounded up to a power of two).
    pub max_rd_atomic: u32,
    /// Outstanding READ/ATOMIC as responder (rounded up to a power of two).
    pub max_dest_rd_atomic: u32,
    /// Minimum RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// `path_mig_state`.
    pub path_mig_state: u32,
    /// Remote QP number.
    pub dest_qpn: u32,
}

/// Rounds up to a power of two, keeping 0 (rxe's rule for the rd_atomic
/// depths). Values above 2^31 saturate at 2^31 (they are refused earlier).
pub fn round_rd_atomic(v: u32) -> u32 {
    if v == 0 {
        0
    } else {
        v.checked_next_power_of_two().unwrap_or(1 << 31)
    }
}

impl QpAttrs {
    /// rxe's own checks of a modify request (`rxe_qp_chk_attr`), after
    /// ib_core's transition check. `has_srq` matters for `cap`.
    pub fn check(
        &self,
        qp_type: QpType,
        req: &ModifyRequest,
        limits: &QpLimits,
        caps: &CapLimits,
        has_srq: bool,
    ) -> Result<(), QpAttrError> {
        let m = req.mask;
        if m & !mask::STANDARD != 0 {
            return Err(QpAttrError::UnsupportedMask);
        }
        let bad = |cond: bool| {
            if cond {
                Err(QpAttrError::Invalid)
            } else {
                Ok(())
            }
        };
        if m & mask::PORT != 0 {
            bad(req.port_num != 1)?;
        }
        if m & mask::CAP != 0 {
            check_caps(&req.cap, caps, has_srq)?;
        }
        if m & mask::ACCESS_FLAGS != 0 {
            bad(!qp_type.is_connected())?;
            bad(req.access & !limits.supported_access != 0)?;
        }
        if m & mask::AV != 0 {
            bad(req.av_sgid_index > limits.gid_tbl_len)?;
        }
        if m & mask::ALT_PATH != 0 {
            bad(req.alt_sgid_index > limits.gid_tbl_len)?;
            bad(req.alt_port_num != 1)?;
            bad(req.alt.timeout > 31)?;
        }
        if m & mask::PATH_MTU != 0 {
            bad(req.path_mtu > u32::from(limits.max_path_mtu))?;
        }
        if m & mask::MAX_QP_RD_ATOMIC != 0 {
            bad(req.max_rd_atomic > limits.max_rd_atomic)?;
        }
        if m & mask::TIMEOUT != 0 {
            bad(req.timeout > 31)?;
        }
        if m & mask::STATE != 0 {
            let cur = if m & mask::CUR_STATE != 0 {
                req.cur_qp_state
            } else {
                self.state as u32
            };
            bad(QpState::from_raw(req.qp_state).is_none())?;
            // While the SQ drains, SQD may only be left for ERR.
            bad(cur == QpState::Sqd as u32
                && self.sq_draining
                && req.qp_state != QpState::Err as u32)?;
        }
        Ok(())
    }

    /// Applies a checked request (rxe's `rxe_qp_from_attr`, without the
    /// actions a state change triggers, which the caller takes).
    pub fn apply(&mut self, req: &ModifyRequest) {
        let m = req.mask;
        if m & mask::STATE != 0 {
            if let Some(s) = QpState::from_raw(req.qp_state) {
                self.state = s;
            }
        }
        if m & mask::MAX_QP_RD_ATOMIC != 0 {
            self.max_rd_atomic = round_rd_atomic(req.max_rd_atomic);
        }
        if m & mask::MAX_DEST_RD_ATOMIC != 0 {
            self.max_dest_rd_atomic = round_rd_atomic(req.max_dest_rd_atomic);
        }
        if m & mask::EN_SQD_ASYNC_NOTIFY != 0 {
            self.en_sqd_async_notify = req.en_sqd_async_notify;
        }
        if m & mask::ACCESS_FLAGS != 0 {
            self.access = req.access;
        }
        if m & mask::PKEY_INDEX != 0 {
            self.pkey_index = req.pkey_index;
        }
        if m & mask::PORT != 0 {
            self.port_num = req.port_num as u8;
        }
        if m & mask::QKEY != 0 {
            self.qkey = req.qkey;
        }
        if m & mask::AV != 0 {
            self.av = req.av;
        }
        if m & mask::ALT_PATH != 0 {
            self.alt = req.alt;
        }
        if m & mask::PATH_MTU != 0 {
            self.path_mtu = req.path_mtu as u8;
        }
        if m & mask::TIMEOUT != 0 {
            self.timeout = req.timeout;
        }
        if m & mask::RETRY_CNT != 0 {
            self.retry_cnt = req.retry_cnt;
        }
        if m & mask::RNR_RETRY != 0 {
            self.rnr_retry = req.rnr_retry;
        }
        if m & mask::RQ_PSN != 0 {
            self.rq_psn = Psn::new(req.rq_psn);
        }
        if m & mask::MIN_RNR_TIMER != 0 {
            self.min_rnr_timer = req.min_rnr_timer;
        }
        if m & mask::SQ_PSN != 0 {
            self.sq_psn = Psn::new(req.sq_psn);
        }
        if m & mask::PATH_MIG_STATE != 0 {
            self.path_mig_state = req.path_mig_state;
        }
        if m & mask::DEST_QPN != 0 {
            self.dest_qpn = req.dest_qpn;
        }
    }

    /// The local ACK timeout in nanoseconds (4.096 µs × 2^timeout), or
    /// `None` for 0 (wait forever).
    pub fn ack_timeout_ns(&self) -> Option<u64> {
        (self.timeout != 0).then(|| 4096u64 << self.timeout.min(31))
    }

    /// Path MTU in bytes (256 << (path_mtu - 1)), or `None` before it is set.
    pub fn path_mtu_bytes(&self) -> Option<u32> {
        (1..=5)
            .contains(&self.path_mtu)
            .then(|| 128u32 << self.path_mtu)
    }
}

/// The UDP source port of a QP's packets (`rdma_get_udp_sport`): a hash of
/// the flow label, or of the QP numbers when there is none, folded into
/// the range 0xC000..=0xFFFF.
pub fn udp_source_port(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if flow_label != 0 {
        flow_label & 0xF_FFFF
    } else {
        // rdma_calc_flow_label(): fold the product of the QP numbers.
        let mut v = u64::from(lqpn) * u64::from(rqpn);
        v ^= v >> 20;
        v ^= v >> 40;
        (v as u32) & 0xF_FFFF
    };
    // rdma_flow_label_to_udp_sport().
    let sport = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);
    (sport as u16) | 0xC000
}
