// SPDX-License-Identifier: GPL-2.0

//! The requester's round-trip estimate: smoothed RTT and its variation as
//! RFC 6298 computes them, the smallest RTT seen lately, and the
//! bandwidth-delay product in packets, from samples the requester takes on
//! ACKs of packets it sent once with AckReq (never on retransmitted ones,
//! whose ACK could answer either copy: Karn's rule).

/// Samples after which the smallest RTT is forgotten and taken afresh, so
/// that a path that became slower is seen.
const MIN_RTT_SAMPLES: u32 = 64;

/// A round-trip estimate. Times are nanoseconds of the caller's clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimate {
    srtt: u64,
    rttvar: u64,
    min_rtt: u64,
    min_age: u32,
    bdp: u32,
    samples: u64,
}

impl RttEstimate {
    /// An estimate without samples.
    pub const fn new() -> Self {
        RttEstimate {
            srtt: 0,
            rttvar: 0,
            min_rtt: 0,
            min_age: 0,
            bdp: 0,
            samples: 0,
        }
    }

    /// Adds a sample: a packet's round trip `rtt_ns` (non-zero), during
    /// which `delivered` packets were acknowledged.
    pub fn sample(&mut self, rtt_ns: u64, delivered: u64) {
        if rtt_ns == 0 {
            return;
        }
        if self.samples == 0 {
            self.srtt = rtt_ns;
            self.rttvar = rtt_ns / 2;
        } else {
            let err = self.srtt.abs_diff(rtt_ns);
            self.rttvar = self.rttvar - self.rttvar / 4 + err / 4;
            self.srtt = self.srtt - self.srtt / 8 + rtt_ns / 8;
        }
        self.samples = self.samples.saturating_add(1);
        self.min_age += 1;
        if self.min_rtt == 0 || rtt_ns <= self.min_rtt || self.min_age > MIN_RTT_SAMPLES {
            self.min_rtt = rtt_ns;
            self.min_age = 0;
        }
        // Delivery rate over the sample times the smallest round trip; the
        // estimate follows a larger sample at once and a smaller one
        // slowly, as a windowed maximum would.
        let bdp = delivered.saturating_mul(self.min_rtt) / rtt_ns;
        let bdp = u32::try_from(bdp).unwrap_or(u32::MAX);
        let decayed = self.bdp - self.bdp / 8;
        self.bdp = bdp.max(decayed);
    }

    /// Samples taken.
    pub const fn samples(&self) -> u64 {
        self.samples
    }

    /// Smoothed RTT, once sampled.
    pub const fn srtt(&self) -> Option<u64> {
        if self.samples == 0 {
            None
        } else {
            Some(self.srtt)
        }
    }

    /// RTT variation (meaningful once sampled).
    pub const fn rttvar(&self) -> u64 {
        self.rttvar
    }

    /// Smallest recent RTT (meaningful once sampled).
    pub const fn min_rtt(&self) -> u64 {
        self.min_rtt
    }

    /// Bandwidth-delay product in packets, once sampled.
    pub const fn bdp_packets(&self) -> Option<u32> {
        if self.samples == 0 {
            None
        } else {
            Some(self.bdp)
        }
    }

    /// RFC 6298's retransmission timeout, SRTT + 4 RTTVAR, at least `floor`.
    pub fn rto(&self, floor: u64) -> Option<u64> {
        self.srtt()
            .map(|s| s.saturating_add(self.rttvar.saturating_mul(4)).max(floor))
    }
}
