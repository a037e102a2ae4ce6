// SPDX-License-Identifier: GPL-2.0

//! The one place where parsed wire headers become the machines' plain inputs
//! ([`RequestPacket`], [`ResponsePacket`]) and the machines' outputs become
//! BTH opcodes again.

use crate::proto::aeth::Aeth;
use crate::proto::headers::{AtomicAckEth, AtomicEth, Bth, Feth, Ieth, ImmDt, Reth};
use crate::proto::opcode::{OpFamily, OpSuffix, Opcode, Position, Transport};
use crate::proto::requester::{ResponseOp, ResponsePacket};
use crate::proto::responder::resources::ReadResponsePacket;
use crate::proto::transport::{AtomicArgs, AtomicOp, RemoteRange, RequestOp, RequestPacket};

/// The extension headers a parsed request carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaders {
    /// RETH.
    pub reth: Option<Reth>,
    /// AtomicETH.
    pub atomic: Option<AtomicEth>,
    /// ImmDt.
    pub imm: Option<ImmDt>,
    /// IETH.
    pub ieth: Option<Ieth>,
    /// FETH.
    pub feth: Option<Feth>,
    /// ATOMIC_WRITE's 8-byte payload, as a value (the bytes in wire order,
    /// read as the target's native-endian word, as rxe stores them).
    pub atomic_write: Option<u64>,
}

impl RequestPacket {
    /// The responder's view of a parsed RC request; `None` for a response
    /// opcode. A FLUSH without its FETH, or an ATOMIC_WRITE without its
    /// RETH and 8-byte value, becomes [`RequestOp::Unsupported`].
    pub fn from_headers(
        opcode: Opcode,
        bth: &Bth,
        headers: &RequestHeaders,
        payload_len: u32,
    ) -> Option<RequestPacket> {
        let family = opcode.family();
        let op = match family {
            OpFamily::Send => RequestOp::Send,
            OpFamily::Write => RequestOp::Write,
            OpFamily::ReadRequest => RequestOp::Read,
            OpFamily::CompareSwap | OpFamily::FetchAdd => RequestOp::Atomic,
            OpFamily::Flush => match headers.feth {
                Some(f) => RequestOp::Flush {
                    placement: f.placement,
                    selectivity: f.selectivity,
                },
                None => RequestOp::Unsupported,
            },
            OpFamily::AtomicWrite => match (headers.reth, headers.atomic_write) {
                (Some(_), Some(_)) => RequestOp::AtomicWrite,
                _ => RequestOp::Unsupported,
            },
            OpFamily::ReadResponse | OpFamily::Acknowledge | OpFamily::AtomicAcknowledge => {
                return None
            }
        };
        let atomic = match (op, headers.reth, headers.atomic_write) {
            (RequestOp::AtomicWrite, Some(r), Some(value)) => Some(AtomicArgs {
                va: r.va,
                rkey: r.rkey,
                op: AtomicOp::Write { value },
            }),
            _ => headers.atomic.map(|a| AtomicArgs {
                va: a.va,
                rkey: a.rkey,
                op: if family == OpFamily::CompareSwap {
                    AtomicOp::CompareSwap {
                        compare: a.compare,
                        swap: a.swap_add,
                    }
                } else {
                    AtomicOp::FetchAdd { add: a.swap_add }
                },
            }),
        };
        Some(RequestPacket {
            psn: bth.psn,
            op,
            position: opcode.position().unwrap_or(Position::Only),
            ack_req: bth.ack_req,
            payload_len,
            reth: headers.reth.map(|r| RemoteRange {
                va: r.va,
                rkey: r.rkey,
                len: r.len,
            }),
            atomic,
            imm: headers.imm.map(|i| i.imm),
            invalidate_rkey: headers.ieth.map(|i| i.rkey),
        })
    }

    /// The RC opcode that carries this request, if there is one.
    pub fn opcode(&self) -> Option<Opcode> {
        self.opcode_on(Transport::Rc)
    }

    /// The opcode of `transport` (RC or UC) that carries this request, if
    /// there is one (UC has no READ, atomic or SEND with invalidate).
    pub fn opcode_on(&self, transport: Transport) -> Option<Opcode> {
        let family = match (self.op, self.atomic) {
            (RequestOp::Send, _) => OpFamily::Send,
            (RequestOp::Write, _) => OpFamily::Write,
            (RequestOp::Read, _) => OpFamily::ReadRequest,
            (
                RequestOp::Atomic,
                Some(AtomicArgs {
                    op: AtomicOp::CompareSwap { .. },
                    ..
                }),
            ) => OpFamily::CompareSwap,
            (
                RequestOp::Atomic,
                Some(AtomicArgs {
                    op: AtomicOp::FetchAdd { .. },
                    ..
                }),
            ) => OpFamily::FetchAdd,
            (RequestOp::AtomicWrite, _) => OpFamily::AtomicWrite,
            (RequestOp::Flush { .. }, _) => OpFamily::Flush,
            (
                RequestOp::Atomic,
                None
                | Some(AtomicArgs {
                    op: AtomicOp::Write { .. },
                    ..
                }),
            )
            | (RequestOp::Unsupported, _) => return None,
        };
        let suffix = if self.imm.is_some() {
            OpSuffix::WithImmediate
        } else if self.invalidate_rkey.is_some() {
            OpSuffix::WithInvalidate
        } else {
            OpSuffix::Plain
        };
        Opcode::for_request(transport, family, self.position, suffix)
    }

    /// The RETH to put on the wire.
    pub fn reth_header(&self) -> Option<Reth> {
        self.reth.map(|r| Reth {
            va: r.va,
            rkey: r.rkey,
            len: r.len,
        })
    }

    /// The AtomicETH to put on the wire (COMPARE_SWAP and FETCH_ADD only).
    pub fn atomic_header(&self) -> Option<AtomicEth> {
        let a = self.atomic?;
        let (swap_add, compare) = match a.op {
            AtomicOp::CompareSwap { compare, swap } => (swap, compare),
            AtomicOp::FetchAdd { add } => (add, 0),
            AtomicOp::Write { .. } => return None,
        };
        Some(AtomicEth {
            va: a.va,
            rkey: a.rkey,
            swap_add,
            compare,
        })
    }

    /// The FETH to put on the wire (FLUSH only).
    pub fn flush_header(&self) -> Option<Feth> {
        match self.op {
            RequestOp::Flush {
                placement,
                selectivity,
            } => Some(Feth {
                selectivity,
                placement,
            }),
            _ => None,
        }
    }

    /// ATOMIC_WRITE's value, which goes on the wire as the payload.
    pub fn atomic_write_value(&self) -> Option<u64> {
        match self.atomic {
            Some(AtomicArgs {
                op: AtomicOp::Write { value },
                ..
            }) if self.op == RequestOp::AtomicWrite => Some(value),
            _ => None,
        }
    }
}

impl ResponsePacket {
    /// The completer's view of a parsed RC response; `None` for a request
    /// opcode.
    pub fn from_headers(
        opcode: Opcode,
        bth: &Bth,
        aeth: Option<Aeth>,
        atomic_ack: Option<AtomicAckEth>,
        payload_len: u32,
    ) -> Option<ResponsePacket> {
        let op = match opcode.family() {
            OpFamily::Acknowledge => ResponseOp::Acknowledge,
            OpFamily::AtomicAcknowledge => ResponseOp::AtomicAcknowledge {
                orig: atomic_ack?.orig,
            },
            OpFamily::ReadResponse => ResponseOp::ReadResponse(opcode.position()?),
            _ => return None,
        };
        Some(ResponsePacket {
            psn: bth.psn,
            op,
            syndrome: aeth.map(|a| a.syndrome),
            payload_len,
        })
    }
}

impl ReadResponsePacket {
    /// The RDMA_READ_RESPONSE_* opcode of this packet.
    pub fn opcode(&self) -> Opcode {
        Opcode::read_response(self.position)
    }
}
