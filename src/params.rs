// SPDX-License-Identifier: GPL-2.0

//! Device and port parameters advertised to ib_core and user space.
//!
//! The values are those of the C rdma_rxe (`rxe_param.h`), so `ibv_devinfo`
//! prints the same attributes for both drivers and applications size their
//! resources the same way.

/// Default upper bound of most object counts (`1 << 20`).
const DEFAULT_MAX_VALUE: u32 = 1 << 20;

/// IBTA vendor id of the soft-RoCE device.
pub(crate) const VENDOR_ID: u32 = 0x00ff_ffff;
/// Largest memory region, in bytes.
pub(crate) const MAX_MR_SIZE: u64 = u64::MAX;
/// Page sizes a memory region may use.
pub(crate) const PAGE_SIZE_CAP: u64 = 0xffff_f000;
/// Queue pairs per device.
pub(crate) const MAX_QP: u32 = DEFAULT_MAX_VALUE - MIN_QP_INDEX;
/// First QP number handed out to a user QP.
pub(crate) const MIN_QP_INDEX: u32 = 16;
/// Last QP number handed out (rxe's `RXE_MAX_QP_INDEX`).
pub(crate) const MAX_QP_INDEX: u32 = DEFAULT_MAX_VALUE;
/// Work requests per queue.
pub(crate) const MAX_QP_WR: u32 = DEFAULT_MAX_VALUE;
/// Scatter/gather entries per send or receive WQE.
pub(crate) const MAX_SGE: u32 = 32;
/// Scatter/gather entries per RDMA READ.
pub(crate) const MAX_SGE_RD: u32 = 32;
/// Completion queues per device.
pub(crate) const MAX_CQ: u32 = DEFAULT_MAX_VALUE;
/// log2 of the largest CQ.
pub(crate) const MAX_LOG_CQE: u32 = 15;
/// Protection domains per device.
pub(crate) const MAX_PD: u32 = DEFAULT_MAX_VALUE;
/// Outstanding RDMA READ/ATOMIC per QP, as responder: what the responder
/// remembers for replay (rxe's 128).
pub(crate) const MAX_QP_RD_ATOM: u32 =
    crate::proto::responder::resources::MAX_RESPONDER_RESOURCES as u32;
/// Outstanding RDMA READ/ATOMIC per device, as responder.
pub(crate) const MAX_RES_RD_ATOM: u32 = 0x3f000;
/// Outstanding RDMA READ/ATOMIC per QP, as requester.
pub(crate) const MAX_QP_INIT_RD_ATOM: u32 = 128;
/// Multicast groups (the limit `crate::multicast` enforces).
pub(crate) const MAX_MCAST_GRP: u32 = crate::proto::multicast::MAX_GROUPS;
/// QPs attached to one multicast group.
pub(crate) const MAX_MCAST_QP_ATTACH: u32 = crate::proto::multicast::MAX_GROUP_MEMBERS as u32;
/// QP attachments over all multicast groups.
pub(crate) const MAX_TOT_MCAST_QP_ATTACH: u32 = crate::proto::multicast::MAX_TOTAL_MEMBERS;
/// Address handles.
pub(crate) const MAX_AH: u32 = (1 << 15) - 1;
/// Shared receive queues.
pub(crate) const MAX_SRQ: u32 = DEFAULT_MAX_VALUE - 0x0002_0001;
/// Work requests per SRQ.
pub(crate) const MAX_SRQ_WR: u32 = DEFAULT_MAX_VALUE;
/// Scatter/gather entries per SRQ WQE.
pub(crate) const MAX_SRQ_SGE: u32 = 27;
/// Pages in a fast-registration page list.
pub(crate) const MAX_FMR_PAGE_LIST_LEN: u32 = 512;
/// P_Keys per port.
pub(crate) const MAX_PKEYS: u16 = 64;
/// Local CA ACK delay, as the IBTA 4.096 us * 2^n code.
pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;
/// Memory regions (indices 1 ..= 2^19).
pub(crate) const MAX_MR: u32 = (DEFAULT_MAX_VALUE >> 1) - 1;
/// Memory windows (the upper half of the key index space).
pub(crate) const MAX_MW: u32 = DEFAULT_MAX_VALUE - ((DEFAULT_MAX_VALUE >> 1) + 1);
/// User contexts.
pub(crate) const MAX_UCONTEXT: u32 = DEFAULT_MAX_VALUE;

/// Length of the port's GID table.
pub(crate) const PORT_GID_TBL_LEN: i32 = 1024;
/// Largest message, in bytes.
pub(crate) const PORT_MAX_MSG_SZ: u32 = 1 << 31;
/// Length of the port's P_Key table.
pub(crate) const PORT_PKEY_TBL_LEN: u16 = 1;
/// Virtual lanes.
pub(crate) const PORT_MAX_VL_NUM: u8 = 1;
/// Active speed code reported before ib_get_eth_speed refines it.
pub(crate) const PORT_ACTIVE_SPEED: u16 = 1;

/// Bytes of IP/UDP/BTH and extension headers reserved below the netdev MTU
/// when deriving the RoCE path MTU.
pub(crate) const MAX_HDR_LENGTH: u32 = 80;

/// IBTA MTU enumeration (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub(crate) enum IbMtu {
    /// 256 bytes.
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    Mtu4096 = 5,
}

impl IbMtu {
    /// The RoCE MTU a netdev with MTU `ndev_mtu` carries: the largest IBTA
    /// MTU that fits once headers are taken off, at least 256.
    pub(crate) const fn for_netdev_mtu(ndev_mtu: u32) -> Self {
        let payload = ndev_mtu.saturating_sub(MAX_HDR_LENGTH);
        if payload >= 4096 {
            IbMtu::Mtu4096
        } else if payload >= 2048 {
            IbMtu::Mtu2048
        } else if payload >= 1024 {
            IbMtu::Mtu1024
        } else if payload >= 512 {
            IbMtu::Mtu512
        } else {
            IbMtu::Mtu256
        }
    }
}

/// EUI-64 from a 48-bit MAC address, as IPv6 interface identifiers are made
/// (`addrconf_addr_eui48`): FF:FE in the middle, universal/local bit flipped.
/// The result is in network byte order.
pub(crate) const fn eui64_from_mac(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}
