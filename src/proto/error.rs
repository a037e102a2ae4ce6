// SPDX-License-Identifier: GPL-2.0

//! Error types of the RoCEv2 codecs: why a received packet or header was
//! rejected, and why an outgoing one could not be written.

/// Why bytes from the wire could not be decoded. Every variant means "drop the
/// packet"; none of them is a reason to panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Fewer bytes than the header (or the packet framing) needs.
    Truncated,
    /// The BTH opcode is not one this driver handles (RC, UC or UD).
    UnknownOpcode(u8),
    /// The BTH transport header version is not 0.
    BadTver(u8),
    /// The packet length does not fit the opcode, e.g. a payload on an opcode
    /// that carries none, or an ATOMIC_WRITE whose payload is not 8 bytes.
    LengthMismatch,
    /// The BTH pad count is not allowed here (non-zero without payload).
    BadPad,
    /// The BTH destination QP is 0, which is never a valid target.
    BadDestQp,
    /// The IP header is not one RoCEv2 as rxe sends it can have: not IPv4
    /// or IPv6, or IPv4 with options.
    BadIpHeader,
    /// The received ICRC differs from the one computed over the packet.
    IcrcMismatch {
        /// Value carried by the packet.
        received: u32,
        /// Value computed over the packet.
        computed: u32,
    },
}

/// Why an outgoing header or packet could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The caller's buffer is shorter than what has to be written.
    BufferTooSmall,
    /// The BTH opcode is not one this driver handles.
    UnknownOpcode(u8),
    /// The extension headers given do not match the ones the opcode needs
    /// (one is missing or one is present that the opcode does not carry).
    HeaderMismatch,
    /// A payload was given for an opcode without payload, or ATOMIC_WRITE's
    /// payload is not exactly 8 bytes.
    BadPayloadLength,
}
