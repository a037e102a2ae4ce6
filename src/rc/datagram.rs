// SPDX-License-Identifier: GPL-2.0

//! The UD data path, which the GSI QP (QP1, ib_mad's) also takes: every
//! message is one packet with a DETH, sent to the address handle its WQE
//! names and completed once it is handed to the stack; a received message
//! lands in the next receive WQE behind the 40 bytes of network header
//! that carried it (an IPv6 header, or 20 zero bytes and the IPv4
//! header), which ib_core reads back to answer the sender. There is no
//! PSN check, no ACK and no retransmission: a message that finds no
//! receive WQE is dropped.

use super::{
    memory,
    wire::{BuildFailure, Outbox, Path},
};
use crate::{
    abi::{
        cqe::{Completion as Cqe, CqeEx},
        send_wqe::{SendOp, SendWqe as PostedWqe},
        values::{send_flags, WcStatus, WrOpcode},
    },
    counters::Counter,
    device::RxeDevice,
    proto::{
        datagram::{network_header, send_ack_req, send_qkey, GRH_LEN},
        headers::{Deth, ImmDt},
        opcode::Opcode,
        packet::{ExtHeaders, Packet},
        qp_attr::Network,
    },
    qp::{QpInner, RxeQp},
    sys::net::NetDevice,
};
use kernel::prelude::*;

/// Sends what the SQ holds, one packet per WQE, while the QP may put
/// packets in flight. Runs under the QP lock.
pub(crate) fn pump(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
) {
    if !inner.rc.sending {
        return;
    }
    let body = &qp.body;
    let limits = super::send::send_limits(qp, inner);
    // Bounded by the ring size: the producer may keep posting meanwhile.
    for _ in 0..inner.sq.geometry().slots() {
        if super::send::tx_room(qp, out) == 0 {
            return;
        }
        let Some(off) = inner.sq.peek(&body.sq_buf) else {
            return;
        };
        let (wr_id, opcode, status, len, flags) =
            match PostedWqe::read_from(&body.sq_buf, off, &limits) {
                Ok(wqe) => {
                    // A payload in an on-demand-paging region whose pages
                    // are out: the WQE waits in the ring until the fault
                    // work has them in and kicks the QP.
                    let pd = qp.ibqp.pd_id();
                    if memory::wqe_resident(rxe, pd, &wqe, false, body.qpn) == Ok(false) {
                        return;
                    }
                    let status = send_one(rxe, qp, inner, ndev, out, &wqe).err();
                    (wqe.wr_id, wqe.opcode, status, wqe.total_len, wqe.send_flags)
                }
                Err(e) => (
                    body.sq_slot_wr_id(off),
                    WrOpcode::Send,
                    Some(e.wc_status()),
                    0,
                    0,
                ),
            };
        // The slot is free before its completion can be seen.
        inner.sq.advance(&body.sq_buf);
        let signaled = body.sq_sig_all || flags & send_flags::SIGNALED != 0;
        match status {
            None => {
                rxe.counters.inc(Counter::RdmaSends);
                if signaled {
                    let cqe = Cqe::send(wr_id, body.qpn, WcStatus::Success, opcode, len);
                    super::post_send_cqe(rxe, qp, &cqe);
                }
            }
            Some(status) => {
                // As rxe: a WQE that cannot be sent fails the QP.
                super::post_send_cqe(rxe, qp, &Cqe::send(wr_id, body.qpn, status, opcode, 0));
                super::complete::enter_error(rxe, qp, inner);
                return;
            }
        }
    }
}

/// Builds the packet of one validated WQE into `out`. A message longer than
/// the port's MTU is not sent and still completes successfully (IBTA
/// C10-93.1.1, as rxe).
fn send_one(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    ndev: &NetDevice,
    out: &mut Outbox,
    wqe: &PostedWqe,
) -> Result<(), WcStatus> {
    let body = &qp.body;
    let pd = qp.ibqp.pd_id();
    let SendOp::Send {
        imm, ud: Some(ud), ..
    } = wqe.op
    else {
        return Err(WcStatus::LocQpOpErr);
    };
    memory::check_sges(rxe, pd, wqe, false).map_err(|_| WcStatus::LocProtErr)?;
    let av = crate::ah::address_of(rxe, ud.ah_num, pd).ok_or(WcStatus::LocQpOpErr)?;
    if wqe.total_len > rxe.active_mtu_bytes() {
        return Ok(());
    }
    let opcode = if imm.is_some() {
        Opcode::UdSendOnlyWithImmediate
    } else {
        Opcode::UdSendOnly
    };
    let psn = inner.rc.datagram_psn;
    inner.rc.datagram_psn = psn.next();
    let path = Path::to(ndev, &av, inner.src_port, ud.remote_qpn);
    let solicited = wqe.send_flags & send_flags::SOLICITED != 0;
    let bth = path.bth(opcode, psn, send_ack_req(body.qp_type), solicited);
    let ext = ExtHeaders {
        deth: Some(Deth {
            qkey: send_qkey(body.qp_type, inner.attrs.qkey, ud.remote_qkey),
            src_qp: body.qpn,
        }),
        immdt: imm.map(|imm| ImmDt {
            imm: u32::from_be_bytes(imm),
        }),
        ..ExtHeaders::default()
    };
    match path.emit(rxe, out, &bth, &ext, wqe.total_len as usize, |buf| {
        memory::gather(rxe, pd, wqe, 0, buf).map_err(|_| ())
    }) {
        Ok(()) | Err(BuildFailure::Dropped) => Ok(()),
        Err(BuildFailure::Payload) => Err(WcStatus::LocProtErr),
    }
}

/// A UD SEND for the QP (admitted: state, Q_Key and P_Key checked), in
/// softirq. `ip` is the IP header it came in.
pub(crate) fn on_request(
    rxe: &RxeDevice,
    qp: &RxeQp,
    inner: &mut QpInner,
    pkt: &Packet<'_>,
    ip: &[u8],
    network: Network,
) {
    let Some(deth) = pkt.ext.deth else {
        return;
    };
    let Some(wqe) = super::respond::next_recv(qp, inner) else {
        // No receive WQE: UD drops the message (uncounted, as rxe).
        return;
    };
    let pd = qp.ibqp.pd_id();
    let payload = pkt.payload;
    let len = GRH_LEN + payload.len();
    let fits = len <= wqe.total_len as usize;
    if fits && memory::sges_resident(rxe, pd, &wqe.sges, 0, len as u32, true, None) == Ok(false) {
        // The receive buffer is in an on-demand-paging region whose pages
        // are out: UD has no RNR NAK, so the datagram is dropped (counted)
        // and the WQE kept for the next one, by when the fault work has
        // brought the pages in.
        inner.rc.recv.put_back_next(wqe);
        crate::recv::DROPS
            .not_resident
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        return;
    }
    let cqe = if len > wqe.total_len as usize {
        Cqe::recv_error(wqe.wr_id, qp.body.qpn, WcStatus::LocLenErr)
    } else {
        let grh = network_header(ip, network);
        let placed = memory::scatter(rxe, pd, &wqe.sges, 0, &grh)
            .and_then(|()| memory::scatter(rxe, pd, &wqe.sges, GRH_LEN as u32, payload));
        match placed {
            Ok(()) => {
                let ex = pkt
                    .ext
                    .immdt
                    .map_or(CqeEx::None, |i| CqeEx::Imm(i.imm.to_be_bytes()));
                rxe.counters.inc(Counter::RdmaRecvs);
                Cqe::recv(
                    wqe.wr_id,
                    qp.body.qpn,
                    false,
                    len as u32,
                    ex,
                    deth.src_qp,
                    1,
                )
            }
            Err(_) => Cqe::recv_error(wqe.wr_id, qp.body.qpn, WcStatus::LocProtErr),
        }
    };
    if !super::post_recv_cqe(rxe, qp, &cqe, pkt.bth.se, Some(network)) {
        // The completion is lost: the QP fails, as rxe's (class G).
        super::complete::enter_error(rxe, qp, inner);
    }
}
