// SPDX-License-Identifier: GPL-2.0

//! Responder resources: the bounded ring that remembers recent READ and
//! atomic requests so duplicates can be answered again, and the READ reply
//! job that turns one READ request into its response packets.

use crate::proto::opcode::Position;
use crate::proto::psn::Psn;
use crate::proto::transport::{packet_position, Mtu, RemoteRange};

/// The most READ and atomic requests one responder remembers for replay:
/// the device's `max_qp_rd_atom`, so every `max_dest_rd_atomic` a QP may be
/// given is honoured in full.
pub const MAX_RESPONDER_RESOURCES: usize = 128;

/// What a responder resource remembers about one READ or atomic request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// An RDMA READ of `range`.
    Read {
        /// The range the original request asked for.
        range: RemoteRange,
    },
    /// An executed atomic and the original value it returned.
    Atomic {
        /// The value at the target before the operation.
        orig: u64,
    },
    /// An executed ATOMIC_WRITE or FLUSH, answered with an empty READ
    /// RESPONSE ONLY.
    EmptyReadResponse,
}

/// One remembered READ or atomic request and the PSNs its responses use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderResource {
    /// PSN of the request (and of its first response packet).
    pub first_psn: Psn,
    /// PSN of its last response packet.
    pub last_psn: Psn,
    /// What was requested.
    pub kind: ResourceKind,
}

/// The responder-resource ring: at most `R` entries, the oldest overwritten.
///
/// The ring in use holds `max_dest_rd_atomic` rounded up to a power of two
/// entries, capped at `R`.
#[derive(Debug)]
pub struct ResourceRing<const R: usize> {
    slots: [Option<ResponderResource>; R],
    size: usize,
    next: usize,
}

impl<const R: usize> ResourceRing<R> {
    /// A ring for `max_dest_rd_atomic` outstanding READ/atomic requests.
    pub fn new(max_dest_rd_atomic: u32) -> Self {
        ResourceRing {
            slots: [None; R],
            size: Self::size_for(max_dest_rd_atomic),
            next: 0,
        }
    }

    fn size_for(max_dest_rd_atomic: u32) -> usize {
        let want = if max_dest_rd_atomic == 0 {
            0
        } else {
            max_dest_rd_atomic
                .checked_next_power_of_two()
                .unwrap_or(u32::MAX)
        };
        usize::try_from(want).unwrap_or(usize::MAX).min(R)
    }

    /// Empties the ring in place and resizes it for `max_dest_rd_atomic`.
    pub fn reset(&mut self, max_dest_rd_atomic: u32) {
        self.clear();
        self.size = Self::size_for(max_dest_rd_atomic);
    }

    /// Entries the ring holds (0 means READ and atomics are not accepted).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Records `res`, overwriting the oldest entry when full.
    pub fn insert(&mut self, res: ResponderResource) {
        if self.size == 0 {
            return;
        }
        if let Some(slot) = self.slots.get_mut(self.next) {
            *slot = Some(res);
        }
        // Without a division: no panic path for the size checked above.
        let next = self.next.wrapping_add(1);
        self.next = if next >= self.size { 0 } else { next };
    }

    /// The newest resource whose PSN range contains `psn`.
    pub fn find(&self, psn: Psn) -> Option<ResponderResource> {
        let mut best: Option<ResponderResource> = None;
        for res in self.slots.iter().take(self.size).flatten() {
            if psn.within(res.first_psn, res.last_psn) {
                // Prefer the most recent match (largest first_psn).
                best = match best {
                    Some(b) if b.first_psn.after(res.first_psn) => Some(b),
                    _ => Some(*res),
                };
            }
        }
        best
    }

    /// Forgets every resource (QP reset). In place: the ring is too big
    /// for a temporary on a kernel stack.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|slot| *slot = None);
        self.next = 0;
    }
}

/// One READ response packet the caller must build and send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadResponsePacket {
    /// BTH PSN.
    pub psn: Psn,
    /// READ_RESPONSE_FIRST/MIDDLE/LAST/ONLY.
    pub position: Position,
    /// Where the payload is read from (the caller re-checks the rkey).
    pub range: RemoteRange,
    /// MSN for the AETH, present on FIRST, LAST and ONLY.
    pub aeth_msn: Option<u32>,
}

/// A READ reply in progress: yields its response packets one at a time.
///
/// A reply for a request at the resource's first PSN starts with FIRST or
/// ONLY; a replay from a later PSN uses MIDDLE and LAST only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReply {
    next_psn: Psn,
    va: u64,
    rkey: u32,
    resid: u32,
    mtu: Mtu,
    first: bool,
    replay: bool,
    done: bool,
    msn: u32,
}

impl ReadReply {
    /// A reply for `range` starting at `psn`; `replay` when `psn` is not the
    /// original request's first PSN.
    pub fn new(psn: Psn, range: RemoteRange, mtu: Mtu, replay: bool, msn: u32) -> Self {
        ReadReply {
            next_psn: psn,
            va: range.va,
            rkey: range.rkey,
            resid: range.len,
            mtu,
            first: true,
            replay,
            done: false,
            msn,
        }
    }

    /// Number of packets still to be produced.
    pub fn remaining_packets(&self) -> u32 {
        if self.done {
            0
        } else {
            self.mtu.packets(self.resid)
        }
    }

    /// PSN of the next packet this reply produces.
    pub fn next_psn(&self) -> Psn {
        self.next_psn
    }

    /// PSN of the packet after the last one of this reply.
    pub fn end_psn(&self) -> Psn {
        self.next_psn.add(self.remaining_packets())
    }

    /// The next response packet, or `None` when the reply is complete.
    pub fn next_packet(&mut self) -> Option<ReadResponsePacket> {
        if self.done {
            return None;
        }
        let len = self.resid.min(self.mtu.bytes());
        let mut position = packet_position(self.first, self.resid, self.mtu);
        if self.replay {
            position = match position {
                Position::First => Position::Middle,
                Position::Only => Position::Last,
                p => p,
            };
        }
        let aeth_msn = match position {
            Position::Middle => None,
            _ => Some(self.msn),
        };
        let pkt = ReadResponsePacket {
            psn: self.next_psn,
            position,
            range: RemoteRange {
                va: self.va,
                rkey: self.rkey,
                len,
            },
            aeth_msn,
        };
        self.first = false;
        self.next_psn = self.next_psn.next();
        self.va = self.va.wrapping_add(u64::from(len));
        self.resid -= len;
        if self.resid == 0 {
            self.done = true;
        }
        Some(pkt)
    }
}

impl Iterator for ReadReply {
    type Item = ReadResponsePacket;

    fn next(&mut self) -> Option<ReadResponsePacket> {
        self.next_packet()
    }
}
