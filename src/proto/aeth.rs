// SPDX-License-Identifier: GPL-2.0

//! The ACK extended transport header (AETH): the syndrome byte (ACK with
//! credits, RNR NAK with a timer code, NAK with a code) and the 24-bit MSN,
//! plus the RNR timer code to microseconds table.

use super::error::ParseError;

/// Mask of the 24 bits the MSN occupies.
pub const MSN_MASK: u32 = 0x00ff_ffff;

/// Credit count rxe puts in every ACK: 0x1F, "unlimited / invalid". rxe
/// ignores the credits of received ACKs.
pub const ACK_CREDITS_UNLIMITED: u8 = 0x1f;

/// AETH length in bytes.
pub const AETH_LEN: usize = 4;

/// RNR timer code → delay in microseconds, indexed by the 5-bit code.
///
/// Code 25 is 61410 rather than IBTA's 61440: the C rxe driver has this typo
/// and we keep it so that both drivers wait the same time.
pub const RNR_TIMER_USECS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_410, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// A 5-bit RNR NAK timer code.
///
/// # Invariants
///
/// The inner value is always `< 32`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RnrTimer(u8);

impl RnrTimer {
    /// The timer code made of the low 5 bits of `code`.
    pub const fn new(code: u8) -> RnrTimer {
        // INVARIANT: masked to 5 bits.
        RnrTimer(code & 0x1f)
    }

    /// The 5-bit code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The delay this code asks for, in microseconds (code 0 is the
    /// longest, 655.36 ms).
    pub fn usecs(self) -> u32 {
        // The code is < 32, the table's length; the fallback is never used.
        RNR_TIMER_USECS
            .get(usize::from(self.0))
            .copied()
            .unwrap_or(655_360)
    }
}

/// AETH NAK codes (syndrome `011 xxxxx`) that IBTA defines.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error: a packet arrived after a gap.
    PsnSequenceError = 0x60,
    /// Invalid request.
    InvalidRequest = 0x61,
    /// Remote access error (R_Key or range violation).
    RemoteAccessError = 0x62,
    /// Remote operational error.
    RemoteOperationalError = 0x63,
}

/// The decoded AETH syndrome byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement (`000ccccc`) with a 5-bit credit count.
    Ack {
        /// Credit count (rxe sends [`ACK_CREDITS_UNLIMITED`]).
        credits: u8,
    },
    /// Receiver not ready (`001ttttt`).
    RnrNak {
        /// How long the requester waits before retrying.
        timer: RnrTimer,
    },
    /// Negative acknowledgement with one of the defined codes.
    Nak(NakCode),
    /// Any other syndrome byte: 0x40-0x5F (reserved), 0x64-0x7F (reserved
    /// NAK codes) and 0x80-0xFF. The completer treats it as an error
    /// (remote operational error).
    Reserved(u8),
}

impl Syndrome {
    /// The syndrome rxe puts in a positive ACK: credits 0x1F.
    pub const ACK: Syndrome = Syndrome::Ack {
        credits: ACK_CREDITS_UNLIMITED,
    };

    /// Decodes a syndrome byte. Every byte decodes to something.
    pub const fn from_u8(b: u8) -> Syndrome {
        match b {
            0x00..=0x1f => Syndrome::Ack { credits: b },
            0x20..=0x3f => Syndrome::RnrNak {
                timer: RnrTimer::new(b),
            },
            0x60 => Syndrome::Nak(NakCode::PsnSequenceError),
            0x61 => Syndrome::Nak(NakCode::InvalidRequest),
            0x62 => Syndrome::Nak(NakCode::RemoteAccessError),
            0x63 => Syndrome::Nak(NakCode::RemoteOperationalError),
            _ => Syndrome::Reserved(b),
        }
    }

    /// Encodes to the syndrome byte. Credits are masked to 5 bits.
    /// `Reserved(b)` encodes as `b` as given (which decodes back to
    /// `Reserved(b)` only if `b` is really a reserved value).
    pub const fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | timer.code(),
            Syndrome::Nak(code) => code as u8,
            Syndrome::Reserved(b) => b,
        }
    }

    /// Whether this is a positive ACK (top three bits 000), which is all
    /// rxe checks on receipt.
    pub const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }
}

/// The ACK extended transport header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// The syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number, 24 bits (higher bits are dropped on write).
    pub msn: u32,
}

impl Aeth {
    /// AETH length in bytes.
    pub const LEN: usize = AETH_LEN;

    /// A positive ACK with rxe's credit value 0x1F.
    pub const fn ack(msn: u32) -> Aeth {
        Aeth {
            syndrome: Syndrome::ACK,
            msn: msn & MSN_MASK,
        }
    }

    /// An RNR NAK asking the requester to wait `timer`.
    pub const fn rnr_nak(timer: RnrTimer, msn: u32) -> Aeth {
        Aeth {
            syndrome: Syndrome::RnrNak { timer },
            msn: msn & MSN_MASK,
        }
    }

    /// A NAK with `code`.
    pub const fn nak(code: NakCode, msn: u32) -> Aeth {
        Aeth {
            syndrome: Syndrome::Nak(code),
            msn: msn & MSN_MASK,
        }
    }

    /// Decodes the 4 wire bytes.
    pub const fn from_bytes(b: &[u8; AETH_LEN]) -> Aeth {
        Aeth {
            syndrome: Syndrome::from_u8(b[0]),
            msn: u32::from_be_bytes([0, b[1], b[2], b[3]]),
        }
    }

    /// Encodes to the 4 wire bytes.
    pub const fn to_bytes(&self) -> [u8; AETH_LEN] {
        let m = (self.msn & MSN_MASK).to_be_bytes();
        [self.syndrome.to_u8(), m[1], m[2], m[3]]
    }

    /// Decodes an AETH from the start of `buf` (extra bytes are ignored).
    pub fn parse(buf: &[u8]) -> Result<Aeth, ParseError> {
        let (b, _) = buf
            .split_first_chunk::<AETH_LEN>()
            .ok_or(ParseError::Truncated)?;
        Ok(Aeth::from_bytes(b))
    }

    /// Writes the AETH to the start of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<(), super::error::BuildError> {
        let (b, _) = buf
            .split_first_chunk_mut::<AETH_LEN>()
            .ok_or(super::error::BuildError::BufferTooSmall)?;
        *b = self.to_bytes();
        Ok(())
    }
}
