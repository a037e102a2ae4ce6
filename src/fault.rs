// SPDX-License-Identifier: GPL-2.0

//! Fault injection on one device's packets: the rules of its `faults`
//! file in debugfs (crate::debugfs; syntax in `proto::fault` and
//! Documentation/faults.md), and the checks the transmit and receive
//! paths make. With no rule set, a packet costs one relaxed load of a flag.

use crate::{
    new_spinlock_bh,
    proto::{
        fault::{DelayLine, Direction, FaultAction, FaultPacket, FaultRules},
        packet::RoceBytes,
    },
    sys::lock::SpinLockBh,
};
use core::{
    fmt,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{prelude::*, uaccess::UserSliceReader};

/// Received packets one device holds back at once for `delay` rules.
const HELD_MAX: usize = 16;

/// Largest rule set accepted in one write.
const RULES_TEXT_MAX: usize = 4096;

/// A received packet held back by a `delay` rule: a copy of its IP header,
/// UDP header and RoCE packet, in that order.
pub(crate) struct HeldPacket {
    bytes: KVec<u8>,
    ip_len: usize,
    icrc_omitted: bool,
}

impl HeldPacket {
    fn copy(
        ip: &[u8],
        udp: &[u8; 8],
        roce: RoceBytes<'_>,
        icrc_omitted: bool,
    ) -> Result<HeldPacket> {
        let mut bytes = KVec::with_capacity(ip.len() + udp.len() + roce.len(), GFP_ATOMIC)?;
        bytes.extend_from_slice(ip, GFP_ATOMIC)?;
        bytes.extend_from_slice(udp, GFP_ATOMIC)?;
        for piece in roce.pieces() {
            bytes.extend_from_slice(piece, GFP_ATOMIC)?;
        }
        Ok(HeldPacket {
            bytes,
            ip_len: ip.len(),
            icrc_omitted,
        })
    }

    /// A packet of the driver's loopback path built without its ICRC
    /// (`crate::sys::skb::RxPayload::icrc_omitted`).
    pub(crate) fn icrc_omitted(&self) -> bool {
        self.icrc_omitted
    }

    /// The IP header, UDP header and RoCE packet.
    pub(crate) fn parts(&self) -> Option<(&[u8], &[u8; 8], &[u8])> {
        let (ip, rest) = self.bytes.split_at_checked(self.ip_len)?;
        let (udp, roce) = rest.split_first_chunk::<8>()?;
        Some((ip, udp, roce))
    }
}

struct FaultState {
    rules: FaultRules,
    held: DelayLine<HeldPacket, HELD_MAX>,
}

/// One device's fault rules and the packets its `delay` rules hold.
#[pin_data]
pub(crate) struct FaultInjector {
    /// Whether any rule is set (read per packet without the lock).
    active: AtomicBool,
    #[pin]
    state: SpinLockBh<FaultState>,
}

impl FaultInjector {
    /// No rules.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(FaultInjector {
            active: AtomicBool::new(false),
            state <- new_spinlock_bh!(
                FaultState { rules: FaultRules::new(), held: DelayLine::new() },
                "rxe_faults"
            ),
        }? Error)
    }

    /// Whether any rule is set; when not, the packet paths skip the rest.
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// What the rules do with the RoCE packet `roce` going `direction`.
    pub(crate) fn decide(&self, direction: Direction, roce: &[u8]) -> Option<FaultAction> {
        let pkt = FaultPacket::from_bth(direction, roce)?;
        self.state.lock().rules.decide(&pkt)
    }

    /// Whether a `nomem` rule fails the build of the RoCE packet `roce`
    /// (headers written) about to be sent.
    pub(crate) fn fails_build(&self, roce: &[u8]) -> bool {
        FaultPacket::from_bth(Direction::Tx, roce)
            .is_some_and(|pkt| self.state.lock().rules.fails_build(&pkt))
    }

    /// Holds a received packet back for `packets` more receptions. `false`
    /// if it cannot be held (line full, no memory): the caller delivers it.
    pub(crate) fn hold(
        &self,
        ip: &[u8],
        udp: &[u8; 8],
        roce: RoceBytes<'_>,
        icrc_omitted: bool,
        packets: u32,
    ) -> bool {
        let Ok(held) = HeldPacket::copy(ip, udp, roce, icrc_omitted) else {
            return false;
        };
        self.state.lock().held.hold(held, packets).is_ok()
    }

    /// One packet was received: hands the held packets whose wait is over
    /// to `deliver`, outside the lock (delivering one may transmit).
    pub(crate) fn received_one(&self, mut deliver: impl FnMut(&HeldPacket)) {
        let mut due: [Option<HeldPacket>; HELD_MAX] = [const { None }; HELD_MAX];
        let mut n = 0;
        self.state.lock().held.passed(|p| {
            if let Some(slot) = due.get_mut(n) {
                *slot = Some(p);
                n += 1;
            }
        });
        for p in due.iter().flatten() {
            deliver(p);
        }
    }

    /// Replaces the rules with those in `text`; an empty set clears them
    /// and drops the packets held.
    fn set_rules(&self, text: &[u8]) -> Result {
        let rules = FaultRules::parse(text).map_err(|e| {
            pr_warn!(
                "faults: rule on line {}: {}; rules unchanged\n",
                e.line,
                e.reason
            );
            EINVAL
        })?;
        let active = !rules.is_empty();
        let mut dropped = DelayLine::<HeldPacket, HELD_MAX>::new();
        {
            let mut st = self.state.lock();
            st.rules = rules;
            if !active {
                core::mem::swap(&mut st.held, &mut dropped);
            }
            self.active.store(active, Ordering::Relaxed);
        }
        drop(dropped);
        Ok(())
    }
}

/// Reads the `faults` file: the rules, each with its counters.
pub(crate) fn show(faults: &FaultInjector, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    faults.state.lock().rules.render(out)
}

/// Writes the `faults` file: a new rule set (empty: none).
pub(crate) fn store(faults: &FaultInjector, reader: &mut UserSliceReader) -> Result {
    let len = reader.len();
    if len > RULES_TEXT_MAX {
        pr_warn!("faults: a rule set is at most {RULES_TEXT_MAX} bytes\n");
        return Err(EINVAL);
    }
    let mut text = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    reader.read_slice(&mut text)?;
    faults.set_rules(&text)
}
