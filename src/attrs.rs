// SPDX-License-Identifier: GPL-2.0

//! ib_core's attribute structs in the driver's terms: an address
//! (`rdma_ah_attr`) as an [`AddressVector`], a `modify_qp` request
//! (`ib_qp_attr` and its mask) as a [`ModifyRequest`], and the QP's
//! attributes and capabilities written back for `query_qp`.

use crate::{
    ib::attr::{AhAttr, QpAttr},
    proto::qp_attr::{
        mask, AddressVector, AltPath, ModifyRequest, Network, QpAttrs, QpCaps, QpState, QpType,
    },
    sys::bindings,
};
use kernel::prelude::*;

/// `ib_modify_qp_is_ok` for a request against the QP's current state.
pub(crate) fn transition_ok(attrs: &QpAttrs, qp_type: QpType, req: &ModifyRequest) -> bool {
    let cur = if req.mask & mask::CUR_STATE != 0 {
        req.cur_qp_state
    } else {
        attrs.state as u32
    };
    let next = if req.mask & mask::STATE != 0 {
        req.qp_state
    } else {
        cur
    };
    if QpState::from_raw(cur).is_none() || QpState::from_raw(next).is_none() {
        return false;
    }
    crate::ib::qp::modify_is_ok(cur, next, qp_type as u32, req.mask)
}

/// Reads the RoCE address vector of `ah`. `EINVAL` without a GRH or with a
/// source GID that is neither RoCE v2 IPv4 nor IPv6 (rxe's `chk_attr`).
pub(crate) fn read_av(ah: &AhAttr) -> Result<AddressVector> {
    if !ah.has_grh() {
        return Err(EINVAL);
    }
    let (sgid, network) = ah.sgid().ok_or(EINVAL)?;
    let network = match network {
        bindings::rdma_network_type_RDMA_NETWORK_IPV4 => Network::Ipv4,
        bindings::rdma_network_type_RDMA_NETWORK_IPV6 => Network::Ipv6,
        _ => return Err(EINVAL),
    };
    Ok(AddressVector {
        port_num: ah.port_num as u8,
        dgid: ah.dgid(),
        sgid,
        sgid_index: ah.grh.sgid_index,
        flow_label: ah.grh.flow_label,
        hop_limit: ah.grh.hop_limit,
        traffic_class: ah.grh.traffic_class,
        dmac: ah.dmac(),
        network,
    })
}

/// Writes `av` as rxe reports it (`rxe_av_to_attr`): RoCE type, GRH, port.
pub(crate) fn write_av(av: &AddressVector, ah: &mut bindings::rdma_ah_attr) {
    ah.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
    ah.grh.dgid.raw = av.dgid;
    ah.grh.flow_label = av.flow_label;
    ah.grh.sgid_index = av.sgid_index;
    ah.grh.hop_limit = av.hop_limit;
    ah.grh.traffic_class = av.traffic_class;
    ah.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    ah.port_num = u32::from(av.port_num);
}

pub(crate) fn caps_of(cap: &bindings::ib_qp_cap) -> QpCaps {
    QpCaps {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    }
}

pub(crate) fn write_caps(caps: &QpCaps, has_rq: bool, cap: &mut bindings::ib_qp_cap) {
    cap.max_send_wr = caps.max_send_wr;
    cap.max_send_sge = caps.max_send_sge;
    cap.max_inline_data = caps.max_inline_data;
    if has_rq {
        cap.max_recv_wr = caps.max_recv_wr;
        cap.max_recv_sge = caps.max_recv_sge;
    }
}

/// Reads a modify request; the address vectors are resolved only when
/// their mask bit is set.
pub(crate) fn read_request(attr: &QpAttr, m: u32) -> Result<ModifyRequest> {
    let av = if m & mask::AV != 0 {
        read_av(attr.ah_attr())?
    } else {
        AddressVector::default()
    };
    let alt_av = if m & mask::ALT_PATH != 0 {
        read_av(attr.alt_ah_attr())?
    } else {
        AddressVector::default()
    };
    Ok(ModifyRequest {
        mask: m,
        qp_state: attr.qp_state,
        cur_qp_state: attr.cur_qp_state,
        en_sqd_async_notify: attr.en_sqd_async_notify != 0,
        access: attr.qp_access_flags as u32,
        pkey_index: attr.pkey_index,
        port_num: attr.port_num,
        qkey: attr.qkey,
        av,
        av_sgid_index: u32::from(attr.ah_attr.grh.sgid_index),
        alt: AltPath {
            av: alt_av,
            port_num: attr.alt_port_num as u8,
            pkey_index: attr.alt_pkey_index,
            timeout: attr.alt_timeout,
        },
        alt_port_num: attr.alt_port_num,
        alt_sgid_index: u32::from(attr.alt_ah_attr.grh.sgid_index),
        path_mtu: attr.path_mtu,
        timeout: attr.timeout,
        retry_cnt: attr.retry_cnt,
        rnr_retry: attr.rnr_retry,
        rq_psn: attr.rq_psn,
        max_rd_atomic: u32::from(attr.max_rd_atomic),
        min_rnr_timer: attr.min_rnr_timer,
        sq_psn: attr.sq_psn,
        max_dest_rd_atomic: u32::from(attr.max_dest_rd_atomic),
        path_mig_state: attr.path_mig_state,
        dest_qpn: attr.dest_qp_num,
        cap: caps_of(&attr.cap),
    })
}

/// Fills `ib_qp_attr` from the QP's attributes (`rxe_qp_to_attr`).
pub(crate) fn write_attrs(
    a: &QpAttrs,
    caps: &QpCaps,
    has_rq: bool,
    attr: &mut bindings::ib_qp_attr,
) {
    *attr = bindings::ib_qp_attr::default();
    attr.qp_state = a.state as u32;
    attr.cur_qp_state = a.state as u32;
    attr.path_mtu = u32::from(a.path_mtu);
    attr.path_mig_state = a.path_mig_state;
    attr.qkey = a.qkey;
    attr.rq_psn = a.rq_psn.get();
    attr.sq_psn = a.sq_psn.get();
    attr.dest_qp_num = a.dest_qpn;
    attr.qp_access_flags = a.access as c_int;
    write_caps(caps, has_rq, &mut attr.cap);
    write_av(&a.av, &mut attr.ah_attr);
    write_av(&a.alt.av, &mut attr.alt_ah_attr);
    attr.pkey_index = a.pkey_index;
    attr.alt_pkey_index = a.alt.pkey_index;
    attr.en_sqd_async_notify = u8::from(a.en_sqd_async_notify);
    attr.sq_draining = u8::from(a.sq_draining);
    attr.max_rd_atomic = a.max_rd_atomic.min(255) as u8;
    attr.max_dest_rd_atomic = a.max_dest_rd_atomic.min(255) as u8;
    attr.min_rnr_timer = a.min_rnr_timer;
    attr.port_num = u32::from(a.port_num);
    attr.timeout = a.timeout;
    attr.retry_cnt = a.retry_cnt;
    attr.rnr_retry = a.rnr_retry;
    attr.alt_port_num = u32::from(a.alt.port_num);
    attr.alt_timeout = a.alt.timeout;
}
