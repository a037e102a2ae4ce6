// SPDX-License-Identifier: GPL-2.0

//! A device's UD multicast groups: `attach_mcast` and `detach_mcast`, the
//! netdev's multicast filter that follows them, and the members a
//! received multicast packet goes to. The rules (which GIDs are groups,
//! limits, what an attach or detach does) are
//! [`crate::proto::multicast`]'s.
//!
//! Joining the group at the IP level (IGMP/MLD, so that the stack lets
//! the group's datagrams in) is the caller's part, as with rxe: rdma_cm
//! does it for `rdma_join_multicast`, and an address added with
//! `ip address add GROUP dev DEV autojoin` does it by hand.

use crate::{
    device::RxeDevice,
    proto::multicast::{self, Group, MemberCount, MulticastError, MAX_GROUP_MEMBERS},
    sys::lock::SpinLockBh,
};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// The groups of one device.
#[pin_data]
pub(crate) struct Groups {
    /// Serialises attach and detach, so that the netdev's filter follows
    /// the table in the order the table changed.
    #[pin]
    config: Mutex<()>,
    /// The groups, read by the receive path (softirq).
    #[pin]
    table: SpinLockBh<Table>,
}

struct Table {
    groups: KVec<Group>,
    count: MemberCount,
}

/// The QPs attached to one group when a packet arrived.
pub(crate) struct Members {
    qpns: [u32; MAX_GROUP_MEMBERS],
    len: usize,
}

impl Members {
    /// The attached QP numbers.
    pub(crate) fn qpns(&self) -> &[u32] {
        &self.qpns[..self.len]
    }
}

fn errno(e: MulticastError) -> Error {
    match e {
        MulticastError::Full => ENOMEM,
        MulticastError::NotMulticast | MulticastError::NotAttached => EINVAL,
    }
}

impl Groups {
    /// No groups.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            config <- new_mutex!(()),
            table <- crate::new_spinlock_bh!(
                Table {
                    groups: KVec::new(),
                    count: MemberCount::default(),
                },
                "rxe_multicast_groups"
            ),
        }? Error)
    }

    /// The members of group `mgid`, if it exists.
    pub(crate) fn members(&self, mgid: &[u8; 16]) -> Option<Members> {
        let table = self.table.lock();
        let group = table.groups.iter().find(|g| &g.mgid == mgid)?;
        let mut out = Members {
            qpns: [0; MAX_GROUP_MEMBERS],
            len: group.members().len(),
        };
        out.qpns[..out.len].copy_from_slice(group.members());
        Some(out)
    }

    /// Attaches QP `qpn` to group `mgid`, creating the group (and letting
    /// its frames through the netdev's filter) if it is new.
    pub(crate) fn attach(&self, rxe: &RxeDevice, qpn: u32, mgid: [u8; 16]) -> Result {
        let _config = self.config.lock();
        {
            let mut table = self.table.lock();
            let Table { groups, count } = &mut *table;
            if let Some(group) = groups.iter_mut().find(|g| g.mgid == mgid) {
                return group.attach(qpn, count).map(|_| ()).map_err(errno);
            }
            let mut group = Group::new(mgid).map_err(errno)?;
            count.add_group().map_err(errno)?;
            if let Err(e) = group.attach(qpn, count) {
                count.remove_group();
                return Err(errno(e));
            }
            if let Err(e) = groups.push(group, GFP_ATOMIC) {
                count.remove_group();
                count.members -= 1;
                return Err(e.into());
            }
        }
        let filtered = match rxe.ib.netdev() {
            Some(ndev) => ndev.mc_add(&multicast::ethernet_address(&mgid)),
            None => Err(ENODEV),
        };
        if let Err(e) = filtered {
            // The group was made just now with this one member (attach
            // and detach are serialised): it goes again.
            let _ = self.remove_member(qpn, &mgid);
            return Err(e);
        }
        Ok(())
    }

    /// Detaches QP `qpn` from group `mgid`; the group goes when its last
    /// member does.
    pub(crate) fn detach(&self, rxe: &RxeDevice, qpn: u32, mgid: [u8; 16]) -> Result {
        let _config = self.config.lock();
        if self.remove_member(qpn, &mgid).map_err(errno)? {
            unfilter(rxe, &mgid);
        }
        Ok(())
    }

    /// Detaches QP `qpn` from every group it is a member of (it is being
    /// destroyed: a kernel ULP may not have detached it).
    pub(crate) fn qp_destroyed(&self, rxe: &RxeDevice, qpn: u32) {
        let _config = self.config.lock();
        loop {
            let mgid = {
                let table = self.table.lock();
                match table.groups.iter().find(|g| g.contains(qpn)) {
                    Some(group) => group.mgid,
                    None => return,
                }
            };
            if let Ok(true) = self.remove_member(qpn, &mgid) {
                unfilter(rxe, &mgid);
            }
        }
    }

    /// Removes `qpn` from group `mgid`, and the group if it is left empty
    /// (the result says so).
    fn remove_member(&self, qpn: u32, mgid: &[u8; 16]) -> Result<bool, MulticastError> {
        let mut table = self.table.lock();
        let Table { groups, count } = &mut *table;
        let at = groups
            .iter()
            .position(|g| &g.mgid == mgid)
            .ok_or(MulticastError::NotAttached)?;
        groups[at].detach(qpn, count)?;
        if !groups[at].is_empty() {
            return Ok(false);
        }
        let _ = groups.remove(at);
        count.remove_group();
        Ok(true)
    }
}

/// Takes a group gone out of the netdev's multicast filter.
fn unfilter(rxe: &RxeDevice, mgid: &[u8; 16]) {
    if let Some(ndev) = rxe.ib.netdev() {
        // The address was added when the group was made; a failure here
        // leaves one filter entry the netdev drops with itself.
        let _ = ndev.mc_del(&multicast::ethernet_address(mgid));
    }
}
