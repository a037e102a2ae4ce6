// SPDX-License-Identifier: GPL-2.0

//! Deterministic fault injection: the rules root writes to a device's
//! `faults` file in debugfs, and the decision, per packet, whether one of
//! them drops, duplicates or delays it.
//!
//! A rule set is text, one rule per line (`#` starts a comment):
//!
//! ```text
//! ACTION [dir=tx|rx] [qpn=N] [class=request|ack|read_resp|atomic_ack] [psn=N]
//!        [nth=N | prob=P [seed=S]] [count=N]
//! ```
//!
//! ACTION is `drop`, `dup` (the packet goes out or in twice), `delay=N`
//! (a received packet is held back until N more have been received: a
//! reordering; `delay` needs `dir=rx`) or `nomem` (a packet to send cannot
//! be built, as when its buffer cannot be allocated; needs `dir=tx`). The other fields narrow which packets match:
//! direction (default both), destination QP number, opcode class, BTH PSN.
//! Of the matching packets, `nth=N` picks the N-th only (counting from 1),
//! `prob=P` each with probability P (a decimal fraction, at most six
//! digits, drawn from a generator seeded with `seed`, default 1), and
//! neither picks all; `count=N` stops the rule after acting N times. The
//! first rule that picks a packet decides it; every rule counts the packets
//! it matched and those it acted on. Writing an empty set clears all rules.
//!
//! Everything here is pure: the driver classifies a packet into a
//! [`FaultPacket`], asks [`FaultRules::decide`] (on the wire) or
//! [`FaultRules::fails_build`] (while building), and carries the action out
//! (a [`DelayLine`] holds delayed packets).

use core::fmt::{self, Write};

use crate::proto::opcode::{OpFamily, Opcode};
use crate::proto::psn::Psn;

/// The most rules one device holds.
pub const MAX_FAULT_RULES: usize = 16;

/// What a rule does to a packet it picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// The packet is lost.
    Drop,
    /// The packet is delivered (or sent) twice.
    Duplicate,
    /// The packet is held back until this many more packets have passed in
    /// its direction.
    Delay(u32),
    /// The packet cannot be built (its buffer cannot be allocated); decided
    /// while building, before the packet reaches the wire rules.
    NoMem,
}

/// Which way a packet goes through the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Built by this device, about to leave.
    Tx,
    /// Received, about to be processed.
    Rx,
}

/// The kind of a packet, for rules that name one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketClass {
    /// A request: SEND, WRITE, READ request, atomic, and the rest a
    /// requester sends.
    Request,
    /// An ACKNOWLEDGE: ACK, NAK or RNR NAK.
    Ack,
    /// An RDMA READ response packet.
    ReadResponse,
    /// An ATOMIC ACKNOWLEDGE.
    AtomicAck,
}

impl PacketClass {
    /// The class of packets with `opcode`.
    pub const fn of(opcode: Opcode) -> Self {
        match opcode.family() {
            OpFamily::ReadResponse => PacketClass::ReadResponse,
            OpFamily::Acknowledge => PacketClass::Ack,
            OpFamily::AtomicAcknowledge => PacketClass::AtomicAck,
            _ => PacketClass::Request,
        }
    }

    const fn name(self) -> &'static str {
        match self {
            PacketClass::Request => "request",
            PacketClass::Ack => "ack",
            PacketClass::ReadResponse => "read_resp",
            PacketClass::AtomicAck => "atomic_ack",
        }
    }
}

/// What the rules see of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPacket {
    /// Which way it goes.
    pub direction: Direction,
    /// BTH destination QP.
    pub dest_qpn: u32,
    /// Its class, from the BTH opcode.
    pub class: PacketClass,
    /// BTH PSN.
    pub psn: Psn,
}

impl FaultPacket {
    /// What the rules see of the RoCE packet `roce` (BTH first), or `None`
    /// if it is too short or its opcode unknown (such packets are left to
    /// the parser's checks).
    pub fn from_bth(direction: Direction, roce: &[u8]) -> Option<FaultPacket> {
        let bth = roce.get(..12)?;
        let opcode = Opcode::from_u8(bth[0])?;
        let dest_qpn = u32::from_be_bytes([0, bth[5], bth[6], bth[7]]);
        let psn = Psn::new(u32::from_be_bytes([0, bth[9], bth[10], bth[11]]));
        Some(FaultPacket {
            direction,
            dest_qpn,
            class: PacketClass::of(opcode),
            psn,
        })
    }
}

/// Which of the matching packets a rule acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    /// Every one.
    All,
    /// The n-th (1-based) only.
    Nth(u64),
    /// Each with this probability, in millionths.
    Chance { per_million: u32, seed: u64 },
}

/// One rule and what it has done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRule {
    action: FaultAction,
    direction: Option<Direction>,
    dest_qpn: Option<u32>,
    class: Option<PacketClass>,
    psn: Option<Psn>,
    pick: Pick,
    limit: Option<u64>,
    rng: u64,
    matched: u64,
    acted: u64,
}

impl FaultRule {
    /// Packets that matched the rule's fields.
    pub const fn matched(&self) -> u64 {
        self.matched
    }

    /// Packets the rule acted on.
    pub const fn acted(&self) -> u64 {
        self.acted
    }

    fn matches(&self, pkt: &FaultPacket) -> bool {
        self.direction.is_none_or(|d| d == pkt.direction)
            && self.dest_qpn.is_none_or(|q| q == pkt.dest_qpn)
            && self.class.is_none_or(|c| c == pkt.class)
            && self.psn.is_none_or(|p| p == pkt.psn)
    }

    /// Counts a matching packet and says whether the rule acts on it.
    fn picks(&mut self) -> bool {
        self.matched += 1;
        if self.limit.is_some_and(|l| self.acted >= l) {
            return false;
        }
        let picked = match self.pick {
            Pick::All => true,
            Pick::Nth(n) => self.matched == n,
            Pick::Chance { per_million, .. } => {
                (self.next_random() % 1_000_000) < u64::from(per_million)
            }
        };
        if picked {
            self.acted += 1;
        }
        picked
    }

    /// xorshift64*: small, deterministic for a given seed.
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

impl fmt::Display for FaultRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.action {
            FaultAction::Drop => f.write_str("drop")?,
            FaultAction::Duplicate => f.write_str("dup")?,
            FaultAction::Delay(n) => write!(f, "delay={n}")?,
            FaultAction::NoMem => f.write_str("nomem")?,
        }
        match self.direction {
            Some(Direction::Tx) => f.write_str(" dir=tx")?,
            Some(Direction::Rx) => f.write_str(" dir=rx")?,
            None => {}
        }
        if let Some(q) = self.dest_qpn {
            write!(f, " qpn={q}")?;
        }
        if let Some(c) = self.class {
            write!(f, " class={}", c.name())?;
        }
        if let Some(p) = self.psn {
            write!(f, " psn={}", p.get())?;
        }
        match self.pick {
            Pick::All => {}
            Pick::Nth(n) => write!(f, " nth={n}")?,
            Pick::Chance { per_million, seed } => {
                write!(f, " prob=0.{per_million:06} seed={seed}")?;
            }
        }
        if let Some(l) = self.limit {
            write!(f, " count={l}")?;
        }
        write!(f, " # matched={} acted={}", self.matched, self.acted)
    }
}

/// Why a rule set was refused; `line` counts from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultParseError {
    /// The line of the offending rule.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule on line {}: {}", self.line, self.reason)
    }
}

/// A device's rules, in the order written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRules {
    rules: [Option<FaultRule>; MAX_FAULT_RULES],
    len: usize,
}

impl Default for FaultRules {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultRules {
    /// No rules.
    pub const fn new() -> Self {
        FaultRules {
            rules: [None; MAX_FAULT_RULES],
            len: 0,
        }
    }

    /// Parses a whole rule set; nothing is taken unless every line is valid.
    pub fn parse(text: &[u8]) -> Result<Self, FaultParseError> {
        let text = core::str::from_utf8(text).map_err(|_| FaultParseError {
            line: 1,
            reason: "not UTF-8 text",
        })?;
        let mut set = FaultRules::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let rule = parse_rule(line).map_err(|reason| FaultParseError {
                line: i + 1,
                reason,
            })?;
            let slot = set.rules.get_mut(set.len).ok_or(FaultParseError {
                line: i + 1,
                reason: "too many rules (at most 16)",
            })?;
            *slot = Some(rule);
            set.len += 1;
        }
        Ok(set)
    }

    /// Whether there is no rule (the driver then skips the check).
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rules, in order.
    pub fn rules(&self) -> impl Iterator<Item = &FaultRule> {
        self.rules.iter().take(self.len).flatten()
    }

    /// What to do with `pkt` on the wire: the action of the first rule
    /// that picks it. Every rule that matches counts it, picked or not, up
    /// to the one that acts. `nomem` rules are not asked here.
    pub fn decide(&mut self, pkt: &FaultPacket) -> Option<FaultAction> {
        for rule in self.rules.iter_mut().take(self.len).flatten() {
            if rule.action != FaultAction::NoMem && rule.matches(pkt) && rule.picks() {
                return Some(rule.action);
            }
        }
        None
    }

    /// Whether a `nomem` rule fails the build of `pkt` (a packet to send,
    /// its headers written). Only `nomem` rules are asked and count it.
    pub fn fails_build(&mut self, pkt: &FaultPacket) -> bool {
        for rule in self.rules.iter_mut().take(self.len).flatten() {
            if rule.action == FaultAction::NoMem && rule.matches(pkt) && rule.picks() {
                return true;
            }
        }
        false
    }

    /// Writes the rules, one a line, each with its counters.
    pub fn render(&self, out: &mut impl Write) -> fmt::Result {
        for rule in self.rules() {
            writeln!(out, "{rule}")?;
        }
        Ok(())
    }
}

fn parse_u64(v: &str) -> Result<u64, &'static str> {
    let (digits, radix) = match v.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (v, 10),
    };
    u64::from_str_radix(digits, radix).map_err(|_| "a value is not a number")
}

/// A probability in `[0, 1]` with at most six decimals, in millionths.
fn parse_probability(v: &str) -> Result<u32, &'static str> {
    const BAD: &str = "prob must be a decimal fraction from 0 to 1 (at most six digits)";
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BAD);
    }
    let whole: u32 = match whole {
        "" | "0" => 0,
        "1" => 1,
        _ => return Err(BAD),
    };
    let mut millionths = 0u32;
    for (i, b) in frac.bytes().enumerate() {
        millionths += u32::from(b - b'0') * 10u32.pow(5 - i as u32);
    }
    let p = whole * 1_000_000 + millionths;
    if p > 1_000_000 {
        return Err(BAD);
    }
    Ok(p)
}

fn parse_rule(line: &str) -> Result<FaultRule, &'static str> {
    let mut words = line.split_ascii_whitespace();
    let action = match words.next() {
        Some("drop") => FaultAction::Drop,
        Some("dup") => FaultAction::Duplicate,
        Some("nomem") => FaultAction::NoMem,
        Some(w) => match w.strip_prefix("delay=") {
            Some(n) => {
                let n = parse_u64(n)?;
                if n == 0 || n > 64 {
                    return Err("delay must be 1 to 64 packets");
                }
                FaultAction::Delay(n as u32)
            }
            None => return Err("the action must be drop, dup, delay=N or nomem"),
        },
        None => return Err("empty rule"),
    };
    let mut rule = FaultRule {
        action,
        direction: None,
        dest_qpn: None,
        class: None,
        psn: None,
        pick: Pick::All,
        limit: None,
        rng: 0,
        matched: 0,
        acted: 0,
    };
    let mut prob = None;
    let mut seed = None;
    for word in words {
        let (key, value) = word.split_once('=').ok_or("fields are key=value")?;
        match key {
            "dir" => {
                rule.direction = Some(match value {
                    "tx" => Direction::Tx,
                    "rx" => Direction::Rx,
                    _ => return Err("dir must be tx or rx"),
                })
            }
            "qpn" => {
                let q = parse_u64(value)?;
                if q > 0x00ff_ffff {
                    return Err("qpn is 24 bits");
                }
                rule.dest_qpn = Some(q as u32);
            }
            "class" => {
                rule.class = Some(match value {
                    "request" => PacketClass::Request,
                    "ack" => PacketClass::Ack,
                    "read_resp" => PacketClass::ReadResponse,
                    "atomic_ack" => PacketClass::AtomicAck,
                    _ => return Err("class must be request, ack, read_resp or atomic_ack"),
                })
            }
            "psn" => {
                let p = parse_u64(value)?;
                if p > 0x00ff_ffff {
                    return Err("psn is 24 bits");
                }
                rule.psn = Some(Psn::new(p as u32));
            }
            "nth" => {
                let n = parse_u64(value)?;
                if n == 0 {
                    return Err("nth counts from 1");
                }
                rule.pick = Pick::Nth(n);
            }
            "prob" => prob = Some(parse_probability(value)?),
            "seed" => seed = Some(parse_u64(value)?),
            "count" => rule.limit = Some(parse_u64(value)?),
            _ => return Err("unknown field (dir, qpn, class, psn, nth, prob, seed, count)"),
        }
    }
    if matches!(rule.action, FaultAction::Delay(_)) && rule.direction != Some(Direction::Rx) {
        // A held packet is delivered later by the receive path; on transmit
        // the same reordering is a delay on the peer's receive.
        return Err("delay needs dir=rx");
    }
    if rule.action == FaultAction::NoMem && rule.direction != Some(Direction::Tx) {
        // Only the transmit path allocates a packet per packet.
        return Err("nomem needs dir=tx");
    }
    match (prob, rule.pick, seed) {
        (Some(_), Pick::Nth(_), _) => return Err("nth and prob exclude each other"),
        (None, _, Some(_)) => return Err("seed needs prob"),
        (Some(per_million), _, seed) => {
            let seed = seed.unwrap_or(1);
            rule.pick = Pick::Chance { per_million, seed };
            // A zero state would stay zero: mix the seed into a non-zero one.
            rule.rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        }
        (None, _, None) => {}
    }
    Ok(rule)
}

/// Packets held back by `delay=N` rules: each is released once N more
/// packets have passed in its direction. Holds at most `N` at once.
#[derive(Debug)]
pub struct DelayLine<T, const N: usize> {
    slots: [Option<(T, u32)>; N],
}

impl<T, const N: usize> Default for DelayLine<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> DelayLine<T, N> {
    /// An empty line.
    pub const fn new() -> Self {
        DelayLine {
            slots: [const { None }; N],
        }
    }

    /// Holds `item` until `packets` more have passed; gives it back if the
    /// line is full (the caller then lets it pass now).
    pub fn hold(&mut self, item: T, packets: u32) -> Result<(), T> {
        match self.slots.iter_mut().find(|s| s.is_none()) {
            Some(slot) => {
                *slot = Some((item, packets));
                Ok(())
            }
            None => Err(item),
        }
    }

    /// One packet passed: hands every held item whose wait is over to
    /// `release`, in slot order.
    pub fn passed(&mut self, mut release: impl FnMut(T)) {
        for slot in self.slots.iter_mut() {
            let due = match slot {
                Some((_, left)) => {
                    *left = left.saturating_sub(1);
                    *left == 0
                }
                None => false,
            };
            if due {
                if let Some((item, _)) = slot.take() {
                    release(item);
                }
            }
        }
    }

    /// Empties the line, handing every held item to `release` (rules
    /// cleared, device going away).
    pub fn drain(&mut self, mut release: impl FnMut(T)) {
        for slot in self.slots.iter_mut() {
            if let Some((item, _)) = slot.take() {
                release(item);
            }
        }
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }
}
