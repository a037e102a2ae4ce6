// SPDX-License-Identifier: GPL-2.0

//! The performance management agent (IBTA 16.1) as rxe answers it through
//! `process_mad`: a Get of ClassPortInfo (the extended-width capability),
//! of PortCounters (LinkDownedCounter) and of PortCountersExtended
//! (data in 4-byte words, packets), answered from the device's hardware
//! counters. ib_core reads these for the port's sysfs `counters/` and
//! offers every MAD received on QP1 to the driver first: anything else is
//! answered "unsupported" without a reply, and goes on to ib_core's agents.

/// Bytes of an IB MAD (`struct ib_mad`).
pub const MAD_SIZE: usize = 256;

/// `IB_MAD_RESULT_*` bits `process_mad` returns.
pub mod result {
    /// The MAD was not handled (wrong port).
    pub const FAILURE: i32 = 0;
    /// Handled.
    pub const SUCCESS: i32 = 1 << 0;
    /// The output MAD is a reply to send (or, from sysfs, to read).
    pub const REPLY: i32 = 1 << 1;
}

const MGMT_CLASS_PERF_MGMT: u8 = 0x04;
const METHOD_GET: u8 = 0x01;
const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
const ATTR_PORT_COUNTERS: u16 = 0x0012;
const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;
const STATUS_UNSUPPORTED_METHOD: u16 = 0x0008;
const STATUS_UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
/// ClassPortInfo.CapabilityMask: PortCountersExtended is implemented.
const CAP_EXT_WIDTH: u16 = 1 << 9;

/// Offsets in a MAD: the common header's fields, and the PMA attribute
/// (after the 24-byte header and the PMA's 40 reserved bytes).
const MGMT_CLASS: usize = 1;
const METHOD: usize = 3;
const STATUS: usize = 4;
const ATTR_ID: usize = 16;
const PMA_DATA: usize = 24 + 40;

/// The counters the agent reports (the device's hardware counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Bytes of RoCE packets sent.
    pub sent_bytes: u64,
    /// Bytes of RoCE packets received.
    pub rcvd_bytes: u64,
    /// Packets sent.
    pub sent_pkts: u64,
    /// Packets received.
    pub rcvd_pkts: u64,
    /// Times the link went down.
    pub link_downed: u64,
}

/// Answers the MAD `input` received on (or asked of) port `port` into
/// `out`, from `counters`. Returns the `IB_MAD_RESULT_*` bits; `out` is
/// all zero but for the answer (rxe's layout: no header is echoed).
pub fn answer(
    port: u32,
    input: &[u8; MAD_SIZE],
    counters: &PortCounters,
    out: &mut [u8; MAD_SIZE],
) -> i32 {
    if port != 1 {
        return result::FAILURE;
    }
    out.fill(0);
    if input[MGMT_CLASS] != MGMT_CLASS_PERF_MGMT || input[METHOD] != METHOD_GET {
        // rxe replies to a perf-management method other than Get with an
        // empty MAD; this agent says "unsupported" as for any other class.
        put_be16(out, STATUS, STATUS_UNSUPPORTED_METHOD);
        return result::SUCCESS;
    }
    let attr = u16::from_be_bytes([input[ATTR_ID], input[ATTR_ID + 1]]);
    match attr {
        ATTR_CLASS_PORT_INFO => {
            // ClassPortInfo: BaseVersion, ClassVersion, CapabilityMask.
            put_be16(out, PMA_DATA + 2, CAP_EXT_WIDTH);
        }
        ATTR_PORT_COUNTERS => {
            // Counters saturate at all ones instead of wrapping (IBA
            // 16.1.3.5); LinkDownedCounter is one byte at offset 5.
            out[PMA_DATA + 5] = u8::try_from(counters.link_downed).unwrap_or(u8::MAX);
        }
        ATTR_PORT_COUNTERS_EXT => {
            put_be64(out, PMA_DATA + 8, counters.sent_bytes >> 2);
            put_be64(out, PMA_DATA + 16, counters.rcvd_bytes >> 2);
            put_be64(out, PMA_DATA + 24, counters.sent_pkts);
            put_be64(out, PMA_DATA + 32, counters.rcvd_pkts);
        }
        _ => {
            put_be16(out, STATUS, STATUS_UNSUPPORTED_METHOD_ATTRIB);
            return result::SUCCESS;
        }
    }
    result::SUCCESS | result::REPLY
}

fn put_be16(out: &mut [u8; MAD_SIZE], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn put_be64(out: &mut [u8; MAD_SIZE], at: usize, v: u64) {
    out[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
