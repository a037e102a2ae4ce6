// SPDX-License-Identifier: GPL-2.0

//! Whether a QP takes a received packet (rxe-abi-and-wire.md §3.8 step 3, rxe's
//! `hdr_check`): after framing (`Packet::parse`) and before the ICRC and
//! the PSN check. The transport of the opcode must be the QP's, the QP must
//! be far enough in its state machine for requests or responses, a
//! connected QP only hears from the peer of its path, and the P_Key (and on
//! UD the Q_Key) must match. Every refusal is a counted, silent drop.

use crate::proto::opcode::Transport;
use crate::proto::packet::Packet;
use crate::proto::qp_attr::{QpState, QpType};

/// The default (and only) P_Key of an rxe port, full membership.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The Q_Key of the GSI QP (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// What admission needs to know of the destination QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpView {
    /// Transport type.
    pub qp_type: QpType,
    /// Current state.
    pub state: QpState,
    /// Q_Key (UD).
    pub qkey: u32,
    /// The path's remote address (the AV's destination GID).
    pub path_remote: [u8; 16],
    /// The path's local address (the AV's source GID).
    pub path_local: [u8; 16],
}

/// Where an admitted packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A request: to the responder.
    Request,
    /// A response or ACK: to the requester's completer.
    Response,
}

/// Why a packet was dropped at admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionDrop {
    /// The opcode's transport is not the QP's.
    WrongTransport,
    /// A request before RTR, or a response before RTS (or in RESET/ERR).
    NotReady,
    /// A connected QP got a packet from another address than its peer's.
    WrongPeer,
    /// The BTH P_Key does not match the port's.
    BadPkey,
    /// The DETH Q_Key does not match the QP's (UD/GSI).
    BadQkey,
}

/// `pkey_match` of the IBTA: the same 15-bit key, not 0, and at least one
/// side a full member.
pub const fn pkey_match(a: u16, b: u16) -> bool {
    let (ka, kb) = (a & 0x7fff, b & 0x7fff);
    ka != 0 && ka == kb && (a & 0x8000 != 0 || b & 0x8000 != 0)
}

/// Decides whether `qp` takes `pkt`, which arrived from IP address `src`
/// to `dst` (both as GIDs: IPv4 addresses IPv4-mapped).
pub fn admit(
    pkt: &Packet<'_>,
    qp: &QpView,
    src: &[u8; 16],
    dst: &[u8; 16],
) -> Result<Direction, AdmissionDrop> {
    let expected = match qp.qp_type {
        QpType::Rc => Transport::Rc,
        QpType::Uc => Transport::Uc,
        QpType::Ud | QpType::Gsi => Transport::Ud,
    };
    if pkt.opcode.transport() != expected {
        return Err(AdmissionDrop::WrongTransport);
    }
    let direction = if pkt.opcode.is_request() {
        Direction::Request
    } else {
        Direction::Response
    };
    let ready = matches!(
        (direction, qp.state),
        (
            Direction::Request,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        ) | (
            Direction::Response,
            QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    );
    if !ready {
        return Err(AdmissionDrop::NotReady);
    }
    if qp.qp_type.is_connected() && (src != &qp.path_remote || dst != &qp.path_local) {
        return Err(AdmissionDrop::WrongPeer);
    }
    if !pkey_match(pkt.bth.pkey, DEFAULT_PKEY) {
        return Err(AdmissionDrop::BadPkey);
    }
    if !qp.qp_type.is_connected() {
        let want = if qp.qp_type == QpType::Gsi {
            GSI_QKEY
        } else {
            qp.qkey
        };
        match pkt.ext.deth {
            Some(deth) if deth.qkey == want => {}
            _ => return Err(AdmissionDrop::BadQkey),
        }
    }
    Ok(direction)
}
