// SPDX-License-Identifier: GPL-2.0

//! The BTH opcodes this driver handles (RC, UC and UD) and, for each, the
//! facts the transport needs: which extension headers follow the BTH and at
//! which offsets, whether a payload follows, the packet's position in its
//! message, the operation family, and whether it is a request (handled by the
//! responder) or a response (handled by the completer).
//!
//! The table is [`Opcode::info`]; [`OPCODE_TABLE`] is the same data as an
//! array, one row per opcode in opcode order.

/// BTH length in bytes.
pub const BTH_LEN: usize = 12;

/// Transport service of an opcode (the top three bits of the opcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// Position of a packet inside its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Neither first nor last packet of a multi-packet message.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The message's only packet.
    Only,
}

impl Position {
    /// The position of a packet from whether it starts and whether it ends
    /// its message.
    pub const fn from_flags(starts: bool, ends: bool) -> Position {
        match (starts, ends) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, true) => Position::Last,
            (false, false) => Position::Middle,
        }
    }

    /// Whether a packet at this position starts a message.
    pub const fn starts(self) -> bool {
        matches!(self, Position::First | Position::Only)
    }

    /// Whether a packet at this position ends a message.
    pub const fn ends(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }
}

/// The operation an opcode belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpFamily {
    /// SEND (plain, with immediate, with invalidate).
    Send,
    /// RDMA WRITE (plain or with immediate).
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response (also the reply to FLUSH and ATOMIC_WRITE).
    ReadResponse,
    /// ACKNOWLEDGE: ACK, NAK or RNR NAK.
    Acknowledge,
    /// ATOMIC ACKNOWLEDGE, carrying the original remote value.
    AtomicAcknowledge,
    /// Atomic compare and swap.
    CompareSwap,
    /// Atomic fetch and add.
    FetchAdd,
    /// FLUSH (memory placement).
    Flush,
    /// ATOMIC WRITE (8-byte atomic store).
    AtomicWrite,
}

impl OpFamily {
    /// Whether packets of this family are requests (sent by the requester,
    /// handled by the remote responder).
    pub const fn is_request(self) -> bool {
        !self.is_response()
    }

    /// Whether packets of this family are responses (sent by the responder,
    /// handled by the remote completer).
    pub const fn is_response(self) -> bool {
        matches!(
            self,
            OpFamily::ReadResponse | OpFamily::Acknowledge | OpFamily::AtomicAcknowledge
        )
    }
}

/// Which extra data a SEND or WRITE carries, for [`Opcode::for_request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpSuffix {
    /// Neither immediate data nor an invalidate key.
    Plain,
    /// Immediate data (ImmDt), on the last or only packet.
    WithImmediate,
    /// An R_Key to invalidate (IETH), on the last or only packet of a SEND.
    WithInvalidate,
}

/// An extension header that can follow the BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtHeader {
    /// Datagram ETH: Q_Key and source QP (UD).
    Deth,
    /// Flush ETH: selectivity level and placement type.
    Feth,
    /// RDMA ETH: virtual address, R_Key, DMA length.
    Reth,
    /// Atomic ETH: virtual address, R_Key, swap/add and compare values.
    AtomicEth,
    /// ACK ETH: syndrome and MSN.
    Aeth,
    /// Atomic ACK ETH: original remote value.
    AtomicAckEth,
    /// Immediate data.
    ImmDt,
    /// Invalidate ETH: R_Key to invalidate.
    Ieth,
}

impl ExtHeader {
    /// All extension headers, in the order they appear in a packet when
    /// several are present.
    pub const ORDER: [ExtHeader; 8] = [
        ExtHeader::Deth,
        ExtHeader::Feth,
        ExtHeader::Reth,
        ExtHeader::AtomicEth,
        ExtHeader::Aeth,
        ExtHeader::AtomicAckEth,
        ExtHeader::ImmDt,
        ExtHeader::Ieth,
    ];

    /// Length of the header on the wire, in bytes.
    pub const fn wire_len(self) -> usize {
        match self {
            ExtHeader::Deth => 8,
            ExtHeader::Feth => 4,
            ExtHeader::Reth => 16,
            ExtHeader::AtomicEth => 28,
            ExtHeader::Aeth => 4,
            ExtHeader::AtomicAckEth => 8,
            ExtHeader::ImmDt => 4,
            ExtHeader::Ieth => 4,
        }
    }

    const fn bit(self) -> u8 {
        match self {
            ExtHeader::Deth => 1 << 0,
            ExtHeader::Feth => 1 << 1,
            ExtHeader::Reth => 1 << 2,
            ExtHeader::AtomicEth => 1 << 3,
            ExtHeader::Aeth => 1 << 4,
            ExtHeader::AtomicAckEth => 1 << 5,
            ExtHeader::ImmDt => 1 << 6,
            ExtHeader::Ieth => 1 << 7,
        }
    }
}

/// A set of extension headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HeaderSet(u8);

impl HeaderSet {
    /// The empty set: only the BTH.
    pub const EMPTY: HeaderSet = HeaderSet(0);

    /// `self` with `h` added.
    pub const fn with(self, h: ExtHeader) -> HeaderSet {
        HeaderSet(self.0 | h.bit())
    }

    /// Whether `h` is in the set.
    pub const fn contains(self, h: ExtHeader) -> bool {
        self.0 & h.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Offset of `h` from the start of the BTH when the headers in this set
    /// follow the BTH, or `None` if `h` is not in the set.
    pub fn offset(self, h: ExtHeader) -> Option<usize> {
        if !self.contains(h) {
            return None;
        }
        // Sum of at most eight small constants: cannot overflow.
        Some(
            ExtHeader::ORDER
                .into_iter()
                .take_while(|cur| *cur != h)
                .filter(|cur| self.contains(*cur))
                .fold(BTH_LEN, |off, cur| off.wrapping_add(cur.wire_len())),
        )
    }

    /// Length of the BTH plus all headers of the set.
    pub fn total_len(self) -> usize {
        ExtHeader::ORDER
            .into_iter()
            .filter(|cur| self.contains(*cur))
            .fold(BTH_LEN, |len, cur| len.wrapping_add(cur.wire_len()))
    }
}

/// Facts about one opcode: one row of the opcode table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpInfo {
    /// The opcode this row describes.
    pub opcode: Opcode,
    /// Transport service.
    pub transport: Transport,
    /// Operation family.
    pub family: OpFamily,
    /// Position in the message; `None` for ACKNOWLEDGE and ATOMIC
    /// ACKNOWLEDGE, which belong to no message of their own.
    pub position: Option<Position>,
    /// Extension headers following the BTH.
    pub headers: HeaderSet,
    /// BTH plus extension headers, in bytes (where the payload starts).
    pub header_len: u8,
    /// Whether a payload may follow the headers.
    pub payload: bool,
    /// Whether the packet carries immediate data.
    pub immediate: bool,
    /// Whether the packet carries an R_Key to invalidate.
    pub invalidate: bool,
    /// Whether the responder completes a receive WQE on this packet.
    pub completes_receive: bool,
}

/// Shorthand for building rows of the table.
const fn row(
    opcode: Opcode,
    transport: Transport,
    family: OpFamily,
    position: Option<Position>,
    headers: HeaderSet,
    header_len: u8,
    payload: bool,
) -> OpInfo {
    let immediate = headers.contains(ExtHeader::ImmDt);
    let invalidate = headers.contains(ExtHeader::Ieth);
    let ends = match position {
        Some(p) => p.ends(),
        None => false,
    };
    let completes_receive = ends
        && (matches!(family, OpFamily::Send) || (matches!(family, OpFamily::Write) && immediate));
    OpInfo {
        opcode,
        transport,
        family,
        position,
        headers,
        header_len,
        payload,
        immediate,
        invalidate,
        completes_receive,
    }
}

const NONE: HeaderSet = HeaderSet::EMPTY;
const IMM: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::ImmDt);
const RETH: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::Reth);
const RETH_IMM: HeaderSet = RETH.with(ExtHeader::ImmDt);
const AETH: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::Aeth);
const AETH_ATMACK: HeaderSet = AETH.with(ExtHeader::AtomicAckEth);
const ATMETH: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::AtomicEth);
const IETH: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::Ieth);
const FETH_RETH: HeaderSet = RETH.with(ExtHeader::Feth);
const DETH: HeaderSet = HeaderSet::EMPTY.with(ExtHeader::Deth);
const DETH_IMM: HeaderSet = DETH.with(ExtHeader::ImmDt);

macro_rules! opcodes {
    ($($(#[$m:meta])* $name:ident = $val:literal,)*) => {
        /// A BTH opcode handled by this driver.
        #[repr(u8)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $($(#[$m])* $name = $val,)*
        }

        impl Opcode {
            /// Every opcode, in increasing numeric order.
            pub const ALL: [Opcode; OPCODE_COUNT] = [$(Opcode::$name,)*];

            /// The opcode with wire value `v`, or `None` if this driver does
            /// not handle it (RD opcodes, CNP, reserved values).
            pub const fn from_u8(v: u8) -> Option<Opcode> {
                match v {
                    $($val => Some(Opcode::$name),)*
                    _ => None,
                }
            }
        }
    };
}

/// Number of opcodes in [`Opcode::ALL`] and [`OPCODE_TABLE`].
pub const OPCODE_COUNT: usize = 39;

opcodes! {
    /// RC SEND first.
    RcSendFirst = 0x00,
    /// RC SEND middle.
    RcSendMiddle = 0x01,
    /// RC SEND last.
    RcSendLast = 0x02,
    /// RC SEND last with immediate.
    RcSendLastWithImmediate = 0x03,
    /// RC SEND only.
    RcSendOnly = 0x04,
    /// RC SEND only with immediate.
    RcSendOnlyWithImmediate = 0x05,
    /// RC RDMA WRITE first.
    RcRdmaWriteFirst = 0x06,
    /// RC RDMA WRITE middle.
    RcRdmaWriteMiddle = 0x07,
    /// RC RDMA WRITE last.
    RcRdmaWriteLast = 0x08,
    /// RC RDMA WRITE last with immediate.
    RcRdmaWriteLastWithImmediate = 0x09,
    /// RC RDMA WRITE only.
    RcRdmaWriteOnly = 0x0a,
    /// RC RDMA WRITE only with immediate.
    RcRdmaWriteOnlyWithImmediate = 0x0b,
    /// RC RDMA READ request.
    RcRdmaReadRequest = 0x0c,
    /// RC RDMA READ response first.
    RcRdmaReadResponseFirst = 0x0d,
    /// RC RDMA READ response middle.
    RcRdmaReadResponseMiddle = 0x0e,
    /// RC RDMA READ response last.
    RcRdmaReadResponseLast = 0x0f,
    /// RC RDMA READ response only.
    RcRdmaReadResponseOnly = 0x10,
    /// RC ACKNOWLEDGE (ACK, NAK, RNR NAK).
    RcAcknowledge = 0x11,
    /// RC ATOMIC ACKNOWLEDGE.
    RcAtomicAcknowledge = 0x12,
    /// RC COMPARE SWAP.
    RcCompareSwap = 0x13,
    /// RC FETCH ADD.
    RcFetchAdd = 0x14,
    /// RC SEND last with invalidate.
    RcSendLastWithInvalidate = 0x16,
    /// RC SEND only with invalidate.
    RcSendOnlyWithInvalidate = 0x17,
    /// RC FLUSH.
    RcFlush = 0x1c,
    /// RC ATOMIC WRITE.
    RcAtomicWrite = 0x1d,
    /// UC SEND first.
    UcSendFirst = 0x20,
    /// UC SEND middle.
    UcSendMiddle = 0x21,
    /// UC SEND last.
    UcSendLast = 0x22,
    /// UC SEND last with immediate.
    UcSendLastWithImmediate = 0x23,
    /// UC SEND only.
    UcSendOnly = 0x24,
    /// UC SEND only with immediate.
    UcSendOnlyWithImmediate = 0x25,
    /// UC RDMA WRITE first.
    UcRdmaWriteFirst = 0x26,
    /// UC RDMA WRITE middle.
    UcRdmaWriteMiddle = 0x27,
    /// UC RDMA WRITE last.
    UcRdmaWriteLast = 0x28,
    /// UC RDMA WRITE last with immediate.
    UcRdmaWriteLastWithImmediate = 0x29,
    /// UC RDMA WRITE only.
    UcRdmaWriteOnly = 0x2a,
    /// UC RDMA WRITE only with immediate.
    UcRdmaWriteOnlyWithImmediate = 0x2b,
    /// UD SEND only.
    UdSendOnly = 0x64,
    /// UD SEND only with immediate.
    UdSendOnlyWithImmediate = 0x65,
}

/// The opcode table as an array, one row per opcode in [`Opcode::ALL`] order.
pub const OPCODE_TABLE: [OpInfo; OPCODE_COUNT] = {
    let mut t = [Opcode::RcSendFirst.row(); OPCODE_COUNT];
    let mut i = 0;
    while i < OPCODE_COUNT {
        t[i] = Opcode::ALL[i].row();
        i += 1;
    }
    t
};

/// For each wire value that is an [`Opcode`], its row in [`OPCODE_TABLE`]
/// (0 for the others, which no `Opcode` has).
const ROW_OF_OPCODE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < OPCODE_COUNT {
        // OPCODE_COUNT is below 256.
        t[Opcode::ALL[i] as u8 as usize] = i as u8;
        i += 1;
    }
    t
};

impl Opcode {
    /// The table row of this opcode: a load from [`OPCODE_TABLE`] (the
    /// receive and transmit paths ask for it several times per packet).
    pub const fn info(self) -> OpInfo {
        OPCODE_TABLE[ROW_OF_OPCODE[self as u8 as usize] as usize]
    }

    /// The table row of this opcode, as written down.
    const fn row(self) -> OpInfo {
        use OpFamily as F;
        use Opcode::*;
        use Position::*;
        use Transport::{Rc, Uc, Ud};
        // (transport, family, position, headers, header length, payload)
        match self {
            RcSendFirst => row(self, Rc, F::Send, Some(First), NONE, 12, true),
            RcSendMiddle => row(self, Rc, F::Send, Some(Middle), NONE, 12, true),
            RcSendLast => row(self, Rc, F::Send, Some(Last), NONE, 12, true),
            RcSendLastWithImmediate => row(self, Rc, F::Send, Some(Last), IMM, 16, true),
            RcSendOnly => row(self, Rc, F::Send, Some(Only), NONE, 12, true),
            RcSendOnlyWithImmediate => row(self, Rc, F::Send, Some(Only), IMM, 16, true),
            RcRdmaWriteFirst => row(self, Rc, F::Write, Some(First), RETH, 28, true),
            RcRdmaWriteMiddle => row(self, Rc, F::Write, Some(Middle), NONE, 12, true),
            RcRdmaWriteLast => row(self, Rc, F::Write, Some(Last), NONE, 12, true),
            RcRdmaWriteLastWithImmediate => row(self, Rc, F::Write, Some(Last), IMM, 16, true),
            RcRdmaWriteOnly => row(self, Rc, F::Write, Some(Only), RETH, 28, true),
            RcRdmaWriteOnlyWithImmediate => row(self, Rc, F::Write, Some(Only), RETH_IMM, 32, true),
            RcRdmaReadRequest => row(self, Rc, F::ReadRequest, Some(Only), RETH, 28, false),
            RcRdmaReadResponseFirst => row(self, Rc, F::ReadResponse, Some(First), AETH, 16, true),
            RcRdmaReadResponseMiddle => {
                row(self, Rc, F::ReadResponse, Some(Middle), NONE, 12, true)
            }
            RcRdmaReadResponseLast => row(self, Rc, F::ReadResponse, Some(Last), AETH, 16, true),
            RcRdmaReadResponseOnly => row(self, Rc, F::ReadResponse, Some(Only), AETH, 16, true),
            RcAcknowledge => row(self, Rc, F::Acknowledge, None, AETH, 16, false),
            RcAtomicAcknowledge => {
                row(self, Rc, F::AtomicAcknowledge, None, AETH_ATMACK, 24, false)
            }
            RcCompareSwap => row(self, Rc, F::CompareSwap, Some(Only), ATMETH, 40, false),
            RcFetchAdd => row(self, Rc, F::FetchAdd, Some(Only), ATMETH, 40, false),
            RcSendLastWithInvalidate => row(self, Rc, F::Send, Some(Last), IETH, 16, true),
            RcSendOnlyWithInvalidate => row(self, Rc, F::Send, Some(Only), IETH, 16, true),
            RcFlush => row(self, Rc, F::Flush, Some(Only), FETH_RETH, 32, false),
            RcAtomicWrite => row(self, Rc, F::AtomicWrite, Some(Only), RETH, 28, true),
            UcSendFirst => row(self, Uc, F::Send, Some(First), NONE, 12, true),
            UcSendMiddle => row(self, Uc, F::Send, Some(Middle), NONE, 12, true),
            UcSendLast => row(self, Uc, F::Send, Some(Last), NONE, 12, true),
            UcSendLastWithImmediate => row(self, Uc, F::Send, Some(Last), IMM, 16, true),
            UcSendOnly => row(self, Uc, F::Send, Some(Only), NONE, 12, true),
            UcSendOnlyWithImmediate => row(self, Uc, F::Send, Some(Only), IMM, 16, true),
            UcRdmaWriteFirst => row(self, Uc, F::Write, Some(First), RETH, 28, true),
            UcRdmaWriteMiddle => row(self, Uc, F::Write, Some(Middle), NONE, 12, true),
            UcRdmaWriteLast => row(self, Uc, F::Write, Some(Last), NONE, 12, true),
            UcRdmaWriteLastWithImmediate => row(self, Uc, F::Write, Some(Last), IMM, 16, true),
            UcRdmaWriteOnly => row(self, Uc, F::Write, Some(Only), RETH, 28, true),
            UcRdmaWriteOnlyWithImmediate => row(self, Uc, F::Write, Some(Only), RETH_IMM, 32, true),
            UdSendOnly => row(self, Ud, F::Send, Some(Only), DETH, 20, true),
            UdSendOnlyWithImmediate => row(self, Ud, F::Send, Some(Only), DETH_IMM, 24, true),
        }
    }

    /// The wire value.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// Length of the BTH plus extension headers: the payload offset.
    pub const fn header_len(self) -> usize {
        self.info().header_len as usize
    }

    /// Extension headers following the BTH.
    pub const fn headers(self) -> HeaderSet {
        self.info().headers
    }

    /// Offset of extension header `h` from the start of the BTH, or `None`
    /// if this opcode does not carry it.
    pub fn offset(self, h: ExtHeader) -> Option<usize> {
        self.info().headers.offset(h)
    }

    /// Whether a payload may follow the headers (READ_RESPONSE_ONLY's may be
    /// empty; ATOMIC_WRITE's is exactly 8 bytes).
    pub const fn has_payload(self) -> bool {
        self.info().payload
    }

    /// Operation family.
    pub const fn family(self) -> OpFamily {
        self.info().family
    }

    /// Position in the message, `None` for the two acknowledge opcodes.
    pub const fn position(self) -> Option<Position> {
        self.info().position
    }

    /// Transport service.
    pub const fn transport(self) -> Transport {
        self.info().transport
    }

    /// Whether this is a request, handled by the responder.
    pub const fn is_request(self) -> bool {
        self.info().family.is_request()
    }

    /// Whether this is a response, handled by the completer.
    pub const fn is_response(self) -> bool {
        self.info().family.is_response()
    }

    /// Whether the packet starts a message (FIRST or ONLY; the acknowledge
    /// opcodes are single-packet and count as both start and end).
    pub const fn starts_message(self) -> bool {
        match self.info().position {
            Some(p) => p.starts(),
            None => true,
        }
    }

    /// Whether the packet ends a message (LAST or ONLY; the acknowledge
    /// opcodes are single-packet and count as both start and end).
    pub const fn ends_message(self) -> bool {
        match self.info().position {
            Some(p) => p.ends(),
            None => true,
        }
    }

    /// Whether the packet carries immediate data (ImmDt).
    pub const fn has_immediate(self) -> bool {
        self.info().immediate
    }

    /// Whether the packet carries an R_Key to invalidate (IETH).
    pub const fn has_invalidate(self) -> bool {
        self.info().invalidate
    }

    /// Whether the responder completes a receive WQE with this packet (SEND
    /// last/only of any kind, WRITE with immediate last/only).
    pub const fn completes_receive(self) -> bool {
        self.info().completes_receive
    }

    /// The requester's opcode choice: the request opcode of `transport` for a
    /// packet of `family` at `position` in its message, carrying `suffix`.
    ///
    /// `None` if there is no such opcode: a response family, immediate or
    /// invalidate on a FIRST/MIDDLE packet, invalidate on a WRITE, a
    /// single-packet operation (READ, atomics, FLUSH, ATOMIC_WRITE) at a
    /// position other than ONLY or with a suffix, anything but RC for those,
    /// or UD with anything but SEND ONLY (optionally with immediate).
    pub const fn for_request(
        transport: Transport,
        family: OpFamily,
        position: Position,
        suffix: OpSuffix,
    ) -> Option<Opcode> {
        use OpFamily as F;
        use OpSuffix::*;
        use Opcode::*;
        use Position::*;
        let rc = match (family, position, suffix) {
            (F::Send, First, Plain) => RcSendFirst,
            (F::Send, Middle, Plain) => RcSendMiddle,
            (F::Send, Last, Plain) => RcSendLast,
            (F::Send, Last, WithImmediate) => RcSendLastWithImmediate,
            (F::Send, Last, WithInvalidate) => RcSendLastWithInvalidate,
            (F::Send, Only, Plain) => RcSendOnly,
            (F::Send, Only, WithImmediate) => RcSendOnlyWithImmediate,
            (F::Send, Only, WithInvalidate) => RcSendOnlyWithInvalidate,
            (F::Write, First, Plain) => RcRdmaWriteFirst,
            (F::Write, Middle, Plain) => RcRdmaWriteMiddle,
            (F::Write, Last, Plain) => RcRdmaWriteLast,
            (F::Write, Last, WithImmediate) => RcRdmaWriteLastWithImmediate,
            (F::Write, Only, Plain) => RcRdmaWriteOnly,
            (F::Write, Only, WithImmediate) => RcRdmaWriteOnlyWithImmediate,
            (F::ReadRequest, Only, Plain) => RcRdmaReadRequest,
            (F::CompareSwap, Only, Plain) => RcCompareSwap,
            (F::FetchAdd, Only, Plain) => RcFetchAdd,
            (F::Flush, Only, Plain) => RcFlush,
            (F::AtomicWrite, Only, Plain) => RcAtomicWrite,
            _ => return None,
        };
        match transport {
            Transport::Rc => Some(rc),
            // UC has SEND and WRITE at RC's opcode + 0x20, without invalidate.
            Transport::Uc => {
                if (rc as u8) <= (RcRdmaWriteOnlyWithImmediate as u8) {
                    Opcode::from_u8((rc as u8) | 0x20)
                } else {
                    None
                }
            }
            Transport::Ud => match rc {
                RcSendOnly => Some(UdSendOnly),
                RcSendOnlyWithImmediate => Some(UdSendOnlyWithImmediate),
                _ => None,
            },
        }
    }

    /// The RDMA READ response opcode for a packet at `position` of the
    /// response (ONLY is also the reply to FLUSH and ATOMIC_WRITE).
    pub const fn read_response(position: Position) -> Opcode {
        match position {
            Position::First => Opcode::RcRdmaReadResponseFirst,
            Position::Middle => Opcode::RcRdmaReadResponseMiddle,
            Position::Last => Opcode::RcRdmaReadResponseLast,
            Position::Only => Opcode::RcRdmaReadResponseOnly,
        }
    }
}

impl TryFrom<u8> for Opcode {
    type Error = super::error::ParseError;

    fn try_from(v: u8) -> Result<Self, Self::Error> {
        Opcode::from_u8(v).ok_or(super::error::ParseError::UnknownOpcode(v))
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op as u8
    }
}
