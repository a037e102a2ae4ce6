//! Helpers shared by the machine tests: a simple responder environment with
//! memory, a receive queue and a key table; request packets, ranges of the
//! test MR and a responder configuration to build on; action collection;
//! translation of responder actions into the response packets the requester
//! sees.
#![expect(
    dead_code,
    reason = "each machine test crate that includes this module uses only part of it"
)]

use std::collections::VecDeque;

use rxe_proto::proto::aeth::{RnrTimer, Syndrome};
use rxe_proto::proto::opcode::Position;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterEvent, ResponseOp, ResponsePacket, TxPacket,
};
use rxe_proto::proto::responder::{
    AccessError, AccessFlags, MemoryTarget, PlaceTarget, Responder, ResponderAction,
    ResponderConfig, ResponderEnv,
};
use rxe_proto::proto::transport::{
    AtomicArgs, AtomicOp, Mtu, RemoteAccess, RemoteRange, RequestOp, RequestPacket,
};

/// The single memory region the tests register on the responder.
pub const MR_VA: u64 = 0x1_0000_0000;
/// Its rkey.
pub const MR_RKEY: u32 = 0x1234;

/// Simulated responder host: one MR, a receive queue of buffer sizes, and a
/// count of executed atomics.
pub struct Env {
    pub mem: Vec<u8>,
    pub rq: VecDeque<u32>,
    pub atomics_executed: u32,
    pub deny_all: bool,
    /// FLUSHes done: (range, access).
    pub flushes: Vec<(RemoteRange, RemoteAccess)>,
    /// How many of the next residency checks say "not resident".
    pub not_resident: u32,
    /// Every residency check asked, in order.
    pub residency_checks: Vec<MemoryTarget>,
    /// Residency checks fail: the pages cannot be brought in.
    pub unmapped: bool,
}

impl Env {
    pub fn new(mem_len: usize) -> Self {
        Env {
            mem: vec![0; mem_len],
            rq: VecDeque::new(),
            atomics_executed: 0,
            deny_all: false,
            flushes: Vec::new(),
            not_resident: 0,
            residency_checks: Vec::new(),
            unmapped: false,
        }
    }

    fn index(&self, range: &RemoteRange) -> Option<usize> {
        if range.rkey != MR_RKEY || range.va < MR_VA {
            return None;
        }
        let off = usize::try_from(range.va - MR_VA).ok()?;
        if off + range.len as usize > self.mem.len() {
            return None;
        }
        Some(off)
    }

    pub fn read(&self, range: &RemoteRange) -> Vec<u8> {
        let off = self.index(range).expect("read in range");
        self.mem[off..off + range.len as usize].to_vec()
    }

    pub fn write(&mut self, va: u64, data: &[u8]) {
        let off = (va - MR_VA) as usize;
        self.mem[off..off + data.len()].copy_from_slice(data);
    }

    pub fn word(&self, va: u64) -> u64 {
        let off = (va - MR_VA) as usize;
        u64::from_le_bytes(self.mem[off..off + 8].try_into().unwrap())
    }
}

impl ResponderEnv for Env {
    fn receive_wqe(&mut self) -> Option<u32> {
        self.rq.front().copied()
    }

    fn check_access(
        &mut self,
        range: &RemoteRange,
        _access: RemoteAccess,
    ) -> Result<(), AccessError> {
        if self.deny_all {
            return Err(AccessError);
        }
        self.index(range).map(|_| ()).ok_or(AccessError)
    }

    fn execute_atomic(&mut self, args: &AtomicArgs) -> Result<u64, AccessError> {
        let range = RemoteRange {
            va: args.va,
            rkey: args.rkey,
            len: 8,
        };
        let off = self.index(&range).ok_or(AccessError)?;
        let orig = u64::from_le_bytes(self.mem[off..off + 8].try_into().unwrap());
        let new = match args.op {
            AtomicOp::CompareSwap { compare, swap } => {
                if orig == compare {
                    swap
                } else {
                    orig
                }
            }
            AtomicOp::FetchAdd { add } => orig.wrapping_add(add),
            AtomicOp::Write { value } => value,
        };
        self.mem[off..off + 8].copy_from_slice(&new.to_le_bytes());
        self.atomics_executed += 1;
        Ok(orig)
    }

    fn flush(&mut self, range: &RemoteRange, access: RemoteAccess) -> Result<(), AccessError> {
        if self.deny_all || range.rkey != MR_RKEY || (range.len > 0 && self.index(range).is_none())
        {
            return Err(AccessError);
        }
        self.flushes.push((*range, access));
        Ok(())
    }

    fn resident(&mut self, target: &MemoryTarget) -> Result<bool, AccessError> {
        self.residency_checks.push(*target);
        if self.unmapped {
            return Err(AccessError);
        }
        if self.not_resident > 0 {
            self.not_resident -= 1;
            return Ok(false);
        }
        Ok(true)
    }
}

/// `len` bytes of the test MR (rkey `MR_RKEY`) from `va`.
pub fn mr_range(va: u64, len: u32) -> RemoteRange {
    RemoteRange {
        va,
        rkey: MR_RKEY,
        len,
    }
}

/// A request packet with `len` bytes of payload and no RETH, atomic,
/// immediate or invalidate header; it asks for an ACK when it ends its
/// message.
pub fn pkt(psn: u32, op: RequestOp, position: Position, len: u32) -> RequestPacket {
    RequestPacket {
        psn: Psn::new(psn),
        op,
        position,
        ack_req: position.ends(),
        payload_len: len,
        reth: None,
        atomic: None,
        imm: None,
        invalidate_rkey: None,
    }
}

/// A responder configuration for tests to build on: MTU 256, first PSN
/// `psn`, RNR timer code 14, four READ/atomic resources, all remote access.
pub fn responder_config(psn: u32) -> ResponderConfig {
    ResponderConfig {
        mtu: Mtu::MTU_256,
        rq_psn: Psn::new(psn),
        min_rnr_timer: RnrTimer::new(14),
        max_dest_rd_atomic: 4,
        access: AccessFlags::ALL,
    }
}

/// Runs one responder step and returns its actions.
pub fn resp_step<const R: usize>(
    resp: &mut Responder<R>,
    pkt: &RequestPacket,
    env: &mut Env,
) -> Vec<ResponderAction> {
    let mut v = Vec::new();
    resp.step(pkt, env, &mut |a| v.push(a));
    v
}

/// Runs one requester step and returns its actions.
pub fn req_step<const N: usize>(
    req: &mut Requester<N>,
    ev: RequesterEvent,
) -> Vec<RequesterAction> {
    let transmit = matches!(ev, RequesterEvent::Transmit { budget } if budget > 0);
    let may = req.may_transmit();
    let mut v = Vec::new();
    req.step(ev, &mut |a| v.push(a));
    if transmit {
        assert_may_transmit_said(req, may, &v, "");
    }
    v
}

/// Checks, after a transmit step whose `actions` are given, what
/// `may_transmit` said before it (`may`): the driver's receive path wakes
/// the transmit work only when a response turns it true, so it must say
/// exactly whether the step sends. A step that ends in ERROR (UC failing
/// the QP on an operation UC lacks) sends nothing and is not checked.
/// `when` names the step in the message.
pub fn assert_may_transmit_said<const N: usize>(
    req: &Requester<N>,
    may: bool,
    actions: &[RequesterAction],
    when: &str,
) {
    if req.is_error() {
        return;
    }
    let sent = actions
        .iter()
        .any(|a| matches!(a, RequesterAction::Transmit(_)));
    assert_eq!(
        may, sent,
        "may_transmit {may} before a transmit step{when} that sent {sent}"
    );
}

/// The transmitted packets among `actions`.
pub fn transmits(actions: &[RequesterAction]) -> Vec<TxPacket> {
    actions
        .iter()
        .filter_map(|a| match a {
            RequesterAction::Transmit(p) => Some(*p),
            _ => None,
        })
        .collect()
}

/// The targets of the Place actions among `actions`, in order.
pub fn places(actions: &[ResponderAction]) -> Vec<PlaceTarget> {
    actions
        .iter()
        .filter_map(|a| match a {
            ResponderAction::Place { target, .. } => Some(*target),
            _ => None,
        })
        .collect()
}

/// Applies the responder's Place actions for `payload` to `env`'s memory and
/// receive buffer `recv`.
pub fn apply_places(
    actions: &[ResponderAction],
    payload: &[u8],
    env: &mut Env,
    recv: &mut Vec<u8>,
) {
    for a in actions {
        match *a {
            ResponderAction::Place {
                target,
                len,
                payload_offset,
            } => {
                let src = &payload[payload_offset as usize..(payload_offset + len) as usize];
                match target {
                    PlaceTarget::Memory { va, .. } => env.write(va, src),
                    PlaceTarget::Receive { offset } => {
                        let end = offset as usize + src.len();
                        if recv.len() < end {
                            recv.resize(end, 0);
                        }
                        recv[offset as usize..end].copy_from_slice(src);
                    }
                }
            }
            ResponderAction::ConsumeReceiveWqe => {
                env.rq.pop_front();
            }
            _ => {}
        }
    }
}

/// The response packets (and READ payloads) a responder's actions put on the
/// wire, in order.
pub fn responses(actions: &[ResponderAction], env: &Env) -> Vec<(ResponsePacket, Vec<u8>)> {
    let mut out = Vec::new();
    for a in actions {
        match *a {
            ResponderAction::SendAck { psn, syndrome, .. } => out.push((
                ResponsePacket {
                    psn,
                    op: ResponseOp::Acknowledge,
                    syndrome: Some(syndrome),
                    payload_len: 0,
                },
                Vec::new(),
            )),
            ResponderAction::SendAtomicAck { psn, orig, .. } => out.push((
                ResponsePacket {
                    psn,
                    op: ResponseOp::AtomicAcknowledge { orig },
                    syndrome: Some(Syndrome::ACK),
                    payload_len: 0,
                },
                Vec::new(),
            )),
            ResponderAction::SendReadResponses(job) => {
                for p in job {
                    let data = if p.range.len == 0 {
                        Vec::new()
                    } else {
                        env.read(&p.range)
                    };
                    out.push((
                        ResponsePacket {
                            psn: p.psn,
                            op: ResponseOp::ReadResponse(p.position),
                            syndrome: p.aeth_msn.map(|_| Syndrome::ACK),
                            payload_len: p.range.len,
                        },
                        data,
                    ));
                }
            }
            _ => {}
        }
    }
    out
}
