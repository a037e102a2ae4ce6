// SPDX-License-Identifier: GPL-2.0

//! UD multicast (IBA 11.3.1 and 11.3.2; RoCEv2 annex A17.5.6): which GIDs
//! name a multicast group, the Ethernet address a group's frames carry,
//! and the rules of attaching and detaching queue pairs: the member list
//! of one group ([`Group`]) and the device-wide limits
//! ([`MemberCount`]). The kernel layer keeps the groups of a device,
//! programs the netdev's multicast filter and hands each received
//! multicast packet to every member.
//!
//! A RoCEv2 multicast packet is a UD SEND to destination QP
//! [`MULTICAST_QPN`] whose IP destination is the group: the group's GID
//! is that address (IPv4 addresses IPv4-mapped, `::ffff:a.b.c.d`).

/// The destination QP number of every multicast packet (`IB_MULTICAST_QPN`).
pub const MULTICAST_QPN: u32 = 0xff_ffff;

/// Most groups a device holds (rxe's `RXE_MAX_MCAST_GRP`, reported as
/// `max_mcast_grp`).
pub const MAX_GROUPS: u32 = 8192;

/// Most QPs attached to one group (rxe's `RXE_MAX_MCAST_QP_ATTACH`,
/// reported as `max_mcast_qp_attach`).
pub const MAX_GROUP_MEMBERS: usize = 56;

/// Most attachments on a device, all groups together (rxe's
/// `RXE_MAX_TOT_MCAST_QP_ATTACH`, reported as `max_total_mcast_qp_attach`).
pub const MAX_TOTAL_MEMBERS: u32 = 0x70000;

/// Why an attach or detach is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MulticastError {
    /// The GID is not a multicast address (`EINVAL`).
    NotMulticast,
    /// A limit of [`MAX_GROUPS`], [`MAX_GROUP_MEMBERS`] or
    /// [`MAX_TOTAL_MEMBERS`] would be exceeded (`ENOMEM`, as rxe).
    Full,
    /// Detach of a QP from a group it is not attached to, or from a group
    /// that does not exist (`EINVAL`, as rxe).
    NotAttached,
}

/// Whether `gid` is a multicast address: IPv6 `ff00::/8`, or an
/// IPv4-mapped address in `224.0.0.0/4` (ib_core's
/// `rdma_is_multicast_addr`).
pub const fn is_multicast_gid(gid: &[u8; 16]) -> bool {
    if is_ipv4_mapped(gid) {
        gid[12] & 0xf0 == 0xe0
    } else {
        gid[0] == 0xff
    }
}

const fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    let mut i = 0;
    while i < 10 {
        if gid[i] != 0 {
            return false;
        }
        i += 1;
    }
    gid[10] == 0xff && gid[11] == 0xff
}

/// The Ethernet multicast address a group's frames are sent to, which the
/// netdev's filter must let in: `01:00:5e` and the low 23 bits of an IPv4
/// group (RFC 1112), `33:33` and the low 32 bits of an IPv6 group (RFC
/// 2464). rxe maps every GID the IPv6 way, which a NIC that filters
/// multicast frames would not match for an IPv4 group.
pub const fn ethernet_address(gid: &[u8; 16]) -> [u8; 6] {
    if is_ipv4_mapped(gid) {
        [0x01, 0x00, 0x5e, gid[13] & 0x7f, gid[14], gid[15]]
    } else {
        [0x33, 0x33, gid[12], gid[13], gid[14], gid[15]]
    }
}

/// One multicast group of a device: its GID and the QP numbers attached,
/// in attach order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's GID.
    pub mgid: [u8; 16],
    members: [u32; MAX_GROUP_MEMBERS],
    len: usize,
}

impl Group {
    /// An empty group for `mgid`, or [`MulticastError::NotMulticast`].
    pub const fn new(mgid: [u8; 16]) -> Result<Self, MulticastError> {
        if !is_multicast_gid(&mgid) {
            return Err(MulticastError::NotMulticast);
        }
        Ok(Self {
            mgid,
            members: [0; MAX_GROUP_MEMBERS],
            len: 0,
        })
    }

    /// The attached QP numbers.
    pub fn members(&self) -> &[u32] {
        &self.members[..self.len]
    }

    /// Whether no QP is attached.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `qpn` is attached.
    pub fn contains(&self, qpn: u32) -> bool {
        self.members().contains(&qpn)
    }

    /// Attaches `qpn`, counting it in `count`. Attaching a QP that is
    /// already a member succeeds and changes nothing (as rxe). Returns
    /// whether it was added.
    pub fn attach(&mut self, qpn: u32, count: &mut MemberCount) -> Result<bool, MulticastError> {
        if self.contains(qpn) {
            return Ok(false);
        }
        if self.len == MAX_GROUP_MEMBERS || count.members >= MAX_TOTAL_MEMBERS {
            return Err(MulticastError::Full);
        }
        self.members[self.len] = qpn;
        self.len += 1;
        count.members += 1;
        Ok(true)
    }

    /// Detaches `qpn`, keeping the others in attach order.
    pub fn detach(&mut self, qpn: u32, count: &mut MemberCount) -> Result<(), MulticastError> {
        let at = self
            .members()
            .iter()
            .position(|&m| m == qpn)
            .ok_or(MulticastError::NotAttached)?;
        self.members.copy_within(at + 1..self.len, at);
        self.len -= 1;
        count.members -= 1;
        Ok(())
    }
}

/// A device's groups and attachments, against [`MAX_GROUPS`] and
/// [`MAX_TOTAL_MEMBERS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberCount {
    /// Groups that exist.
    pub groups: u32,
    /// Attachments over all groups.
    pub members: u32,
}

impl MemberCount {
    /// Counts a new group, or refuses it at [`MAX_GROUPS`].
    pub fn add_group(&mut self) -> Result<(), MulticastError> {
        if self.groups >= MAX_GROUPS {
            return Err(MulticastError::Full);
        }
        self.groups += 1;
        Ok(())
    }

    /// Counts a group gone (its last member detached).
    pub fn remove_group(&mut self) {
        self.groups -= 1;
    }
}
