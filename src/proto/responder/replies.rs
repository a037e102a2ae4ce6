// SPDX-License-Identifier: GPL-2.0

//! The responder's replies waiting to be sent, in PSN order: ACKs and NAKs,
//! atomic ACKs and READ replies. A READ reply can be thousands of packets;
//! the driver sends them as its packets in flight allow, and whatever the
//! responder decides meanwhile queues behind them, so that responses reach
//! the requester in the order of the requests they answer.

use crate::proto::aeth::Syndrome;
use crate::proto::psn::Psn;
use crate::proto::responder::resources::{ReadReply, ReadResponsePacket};

/// A reply that is a single packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnePacket {
    /// An ACK or NAK (`RC_ACKNOWLEDGE`).
    Ack {
        /// BTH PSN.
        psn: Psn,
        /// AETH syndrome.
        syndrome: Syndrome,
        /// AETH MSN.
        msn: u32,
    },
    /// An `RC_ATOMIC_ACKNOWLEDGE` carrying the original value.
    AtomicAck {
        /// BTH PSN (the atomic request's).
        psn: Psn,
        /// The value before the operation.
        orig: u64,
        /// AETH MSN.
        msn: u32,
    },
}

impl OnePacket {
    /// The packet's PSN.
    pub const fn psn(&self) -> Psn {
        match self {
            Self::Ack { psn, .. } | Self::AtomicAck { psn, .. } => *psn,
        }
    }

    /// Whether this is a plain (positive) ACK, which a later one replaces.
    const fn is_plain_ack(&self) -> bool {
        matches!(
            self,
            Self::Ack {
                syndrome: Syndrome::Ack { .. },
                ..
            }
        )
    }
}

/// A response the responder owes the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// An ACK, NAK or atomic ACK.
    One(OnePacket),
    /// A READ reply, sent packet by packet.
    Read(ReadReply),
}

/// One packet to build from the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyPacket {
    /// An ACK, NAK or atomic ACK.
    One(OnePacket),
    /// One READ response packet.
    ReadResponse(ReadResponsePacket),
}

/// Replies not yet sent, oldest first, at most `N`.
///
/// A plain ACK queued right behind another plain ACK replaces it: ACKs are
/// cumulative, so only the newest says anything. The queue therefore holds
/// at most one ACK between two READ or atomic replies, and the responder
/// has at most its `max_dest_rd_atomic` resources of those outstanding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyQueue<const N: usize> {
    slots: [Option<Reply>; N],
    head: usize,
    len: usize,
}

impl<const N: usize> Default for ReplyQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReplyQueue<N> {
    /// An empty queue.
    pub const fn new() -> Self {
        ReplyQueue {
            slots: [None; N],
            head: 0,
            len: 0,
        }
    }

    /// No reply is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replies waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Packets the waiting replies still need sent: one per ACK, NAK or
    /// atomic ACK, and what each READ reply has left.
    pub fn packets(&self) -> u32 {
        (0..self.len)
            .filter_map(|i| self.slots[(self.head + i) % N].as_ref())
            .map(|reply| match reply {
                Reply::One(_) => 1,
                Reply::Read(read) => read.remaining_packets(),
            })
            .fold(0, u32::saturating_add)
    }

    /// Queues `reply` behind the others. Returns `false` (and queues
    /// nothing) when the queue is full; the requester's retry recovers.
    pub fn push(&mut self, reply: Reply) -> bool {
        if let (Reply::One(new), Some(Reply::One(last))) = (reply, self.last_mut()) {
            if new.is_plain_ack() && last.is_plain_ack() {
                *last = new;
                return true;
            }
        }
        if self.len == N {
            return false;
        }
        self.slots[(self.head + self.len) % N] = Some(reply);
        self.len += 1;
        true
    }

    /// Queues the reply to a duplicate READ. The requester went back to its
    /// PSN and will ask again for everything after it, so replies still
    /// queued for later PSNs would only be discarded there (or, an ACK past
    /// the READ, taken for a lost response): they are dropped first, as rxe
    /// restarts its reply in progress.
    pub fn push_replay(&mut self, reply: ReadReply) -> bool {
        let from = reply.next_psn();
        // Compact in place (the queue is too big to copy on a kernel stack):
        // `kept` replies stay, in order, at the front.
        let mut kept = 0;
        for i in 0..self.len {
            let at = (self.head + i) % N;
            let Some(r) = self.slots[at].take() else {
                continue;
            };
            let stale = match r {
                Reply::Read(read) => read.end_psn().after(from),
                Reply::One(one) => !one.psn().before(from),
            };
            if stale {
                continue;
            }
            // Two plain ACKs left side by side: the later says it all.
            if let (Reply::One(new), true) = (r, kept > 0) {
                let last = (self.head + kept - 1) % N;
                if let Some(Reply::One(prev)) = self.slots[last] {
                    if new.is_plain_ack() && prev.is_plain_ack() {
                        self.slots[last] = Some(r);
                        continue;
                    }
                }
            }
            self.slots[(self.head + kept) % N] = Some(r);
            kept += 1;
        }
        self.len = kept;
        self.push(Reply::Read(reply))
    }

    fn last_mut(&mut self) -> Option<&mut Reply> {
        if self.len == 0 {
            return None;
        }
        self.slots[(self.head + self.len - 1) % N].as_mut()
    }

    /// The next packet to send, taken off the queue.
    pub fn next_packet(&mut self) -> Option<ReplyPacket> {
        loop {
            if self.len == 0 {
                return None;
            }
            let front = self.slots[self.head].as_mut()?;
            let packet = match front {
                Reply::One(one) => Some(ReplyPacket::One(*one)),
                Reply::Read(reply) => {
                    let p = reply.next_packet().map(ReplyPacket::ReadResponse);
                    if reply.remaining_packets() > 0 {
                        // More to come: the reply stays at the front.
                        return p;
                    }
                    p
                }
            };
            self.pop_front();
            if packet.is_some() {
                return packet;
            }
        }
    }

    /// Abandons the rest of the oldest reply (its packet could not be
    /// built; the requester's retry asks again).
    pub fn pop_front(&mut self) {
        if self.len > 0 {
            self.slots[self.head] = None;
            self.head = (self.head + 1) % N;
            self.len -= 1;
        }
    }

    /// Forgets every reply (QP reset or error).
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|slot| *slot = None);
        self.head = 0;
        self.len = 0;
    }
}
