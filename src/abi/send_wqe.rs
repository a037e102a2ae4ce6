// SPDX-License-Identifier: GPL-2.0

//! Copy-once validation of send WQEs (rxe-abi-and-wire.md §0 hazard 5, §1.7).
//!
//! A user SQ slot can be rewritten by its process at any moment. The driver
//! therefore reads each slot region exactly once — the 208-byte header, then
//! either the SGE list or the inline bytes — into a private [`SendWqe`] and
//! validates it there. Nothing the kernel writes back into the slot in the C
//! driver (state, PSNs, DMA cursor, `has_rd_atomic`, `iova`) is read: the
//! requester keeps that progress privately, seeded from the validated WQE.
//!
//! A malformed WQE yields a [`SendWqeError`], which names the completion
//! status to report ([`SendWqeError::wc_status`]); it never panics.

use super::layout::{send_wqe, DmaInfo, RawSendWqe, Sge};
use super::queue::SharedBuf;
use super::sge::{read_sges_into, read_slot_into, SharedSlot, SliceSlot, SlotSource, MAX_SGE};
use super::values::{send_flags, QpType, WcOpcode, WcStatus, WrOpcode};

pub use super::sge::SgeList;

/// Most inline bytes a send WQE may carry (rxe-abi-and-wire.md §1.11).
pub const MAX_INLINE_DATA: usize = 512;
/// Longest message: 2^31 bytes (IBTA).
pub const MAX_MSG_LEN: u64 = 1 << 31;
/// Largest QP number (24 bits).
pub const MAX_QPN: u32 = 0x00ff_ffff;

/// SQ slot layout and the capabilities reported back for a QP (design
/// §1.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqCaps {
    /// Element size to size the SQ with (before rounding to a power of two).
    pub elem_size: usize,
    /// `max_send_sge` to report (and validate against): the data area / 16.
    pub max_send_sge: u32,
    /// `max_inline_data` to report (and validate against): the data area.
    pub max_inline_data: u32,
}

/// The SQ element size and reported caps for a QP asking for
/// `max_send_sge` SGEs and `max_inline_data` inline bytes: the data area
/// after the 208-byte header is `max(16 * sge, inline)`, and both caps are
/// raised to fill it, as rxe does. `None` above 32 SGEs or 512 bytes.
pub const fn sq_caps(max_send_sge: u32, max_inline_data: u32) -> Option<SqCaps> {
    if max_send_sge as usize > MAX_SGE || max_inline_data as usize > MAX_INLINE_DATA {
        return None;
    }
    let sge_area = max_send_sge * Sge::SIZE as u32;
    let area = if sge_area > max_inline_data {
        sge_area
    } else {
        max_inline_data
    };
    Some(SqCaps {
        elem_size: send_wqe::SIZE + area as usize,
        max_send_sge: area / Sge::SIZE as u32,
        max_inline_data: area,
    })
}

/// Who filled the send queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A user process through librxe: untrusted, opcodes 0–9, 14, 15 only.
    User,
    /// A kernel ULP: additionally RDMA_READ_WITH_INV and REG_MR.
    Kernel,
}

/// The QP-side limits a send WQE is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendLimits {
    /// The QP's transport.
    pub qp_type: QpType,
    /// The QP's `max_send_sge` (clamped to 32).
    pub max_sge: u32,
    /// The QP's `max_inline_data` (clamped to 512).
    pub max_inline: u32,
    /// Size of one SQ slot in bytes (the queue geometry's element size).
    pub slot_size: usize,
    /// Who posts to this queue.
    pub origin: Origin,
}

/// Why a send WQE was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendWqeError {
    /// The slot is smaller than the 208-byte header.
    Truncated,
    /// `opcode` is no known work-request opcode.
    UnknownOpcode(u32),
    /// A known opcode rxe does not implement (TSO, masked atomics).
    OpcodeNotSupported(WrOpcode),
    /// A kernel-only opcode (REG_MR, READ_WITH_INV) in a user queue.
    OpcodeNotAllowedForUser(WrOpcode),
    /// The opcode is not valid on this QP type.
    OpcodeNotAllowedForQpType(WrOpcode),
    /// `IB_SEND_INLINE` on an opcode whose local buffer must be SGEs
    /// (READ, atomics).
    InlineNotAllowed(WrOpcode),
    /// `num_sge` exceeds the QP's `max_send_sge`.
    TooManySges(u32),
    /// The SGE list does not fit in the slot.
    SgesExceedSlot,
    /// Inline length exceeds the QP's `max_inline_data`.
    InlineTooLong(u32),
    /// The inline data does not fit in the slot.
    InlineExceedsSlot,
    /// The message is longer than 2^31 bytes.
    MessageTooLong(u64),
    /// CMP_AND_SWP / FETCH_AND_ADD local buffer is not 8 bytes (user: at
    /// least 8, as librxe checks; kernel: exactly 8).
    AtomicLength(u64),
    /// Atomic remote address not 8-byte aligned.
    AtomicMisaligned(u64),
    /// ATOMIC_WRITE whose `dma.length` is not 8.
    AtomicWriteLength(u32),
    /// UD destination QP number wider than 24 bits.
    BadRemoteQpn(u32),
    /// UD send without an address handle (`ah_num == 0`): this driver never
    /// hands out AH number 0, so it never accepts embedded AVs.
    NoAddressHandle,
}

impl SendWqeError {
    /// The status of the error completion to generate for this WQE:
    /// length problems are `LOC_LEN_ERR`, everything else `LOC_QP_OP_ERR`.
    pub const fn wc_status(&self) -> WcStatus {
        match self {
            Self::InlineTooLong(_)
            | Self::MessageTooLong(_)
            | Self::AtomicLength(_)
            | Self::AtomicWriteLength(_) => WcStatus::LocLenErr,
            _ => WcStatus::LocQpOpErr,
        }
    }
}

/// A remote address and the rkey that grants access to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteAddr {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// UD destination of a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest {
    /// Destination QP number (24 bits).
    pub remote_qpn: u32,
    /// Q_Key to send with.
    pub remote_qkey: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Address handle number (non-zero; not yet looked up).
    pub ah_num: u32,
}

/// Opcode-specific arguments of a validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND, SEND_WITH_IMM, SEND_WITH_INV.
    Send {
        /// Immediate data (bytes as posted, network order), for SEND_WITH_IMM.
        imm: Option<[u8; 4]>,
        /// Key to invalidate at the responder, for SEND_WITH_INV.
        invalidate_rkey: Option<u32>,
        /// Destination, on UD and GSI QPs.
        ud: Option<UdDest>,
    },
    /// RDMA_WRITE, RDMA_WRITE_WITH_IMM.
    Write {
        /// Target.
        remote: RemoteAddr,
        /// Immediate data, for RDMA_WRITE_WITH_IMM.
        imm: Option<[u8; 4]>,
    },
    /// RDMA_READ, RDMA_READ_WITH_INV (kernel).
    Read {
        /// Source.
        remote: RemoteAddr,
        /// Local key to invalidate, for RDMA_READ_WITH_INV.
        invalidate_rkey: Option<u32>,
    },
    /// ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD.
    Atomic {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Compare value (CMP_AND_SWP) or addend (FETCH_AND_ADD).
        compare_add: u64,
        /// Swap value (CMP_AND_SWP).
        swap: u64,
    },
    /// ATOMIC_WRITE.
    AtomicWrite {
        /// Target.
        remote: RemoteAddr,
        /// The 8 bytes to write, as posted.
        value: [u8; 8],
    },
    /// FLUSH.
    Flush {
        /// Target.
        remote: RemoteAddr,
        /// Bytes to flush.
        length: u32,
        /// Flush type (global / persistent).
        flush_type: u8,
        /// Flush level (range / table).
        level: u8,
    },
    /// LOCAL_INV.
    LocalInv {
        /// Key to invalidate.
        rkey: u32,
    },
    /// BIND_MW.
    BindMw {
        /// Start of the window.
        addr: u64,
        /// Length of the window.
        length: u64,
        /// lkey of the MR the window is bound to.
        mr_lkey: u32,
        /// Current rkey of the window.
        mw_rkey: u32,
        /// New rkey for the window.
        new_rkey: u32,
        /// Access flags for the window.
        access: u32,
    },
    /// REG_MR (kernel only).
    RegMr {
        /// Key-table index of the region to register (of the `ib_mr` the
        /// work request named, read when it was posted).
        mr_index: u32,
        /// The region's iova (`ib_mr.iova` when posted).
        iova: u64,
        /// Key to assign (the region's index, a new consumer key byte).
        key: u32,
        /// Access flags.
        access: u32,
    },
}

/// Up to [`MAX_INLINE_DATA`] inline bytes, privately held.
///
/// # Invariants
///
/// `len <= MAX_INLINE_DATA`.
#[derive(Clone, Copy, Debug, Eq)]
pub struct InlineData {
    bytes: [u8; MAX_INLINE_DATA],
    len: usize,
}

/// Equal when the bytes are: what reused storage holds past the length is
/// no part of the data.
impl PartialEq for InlineData {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl InlineData {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }

    /// Number of bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where the local data of a send WQE is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// No local data (local operations, FLUSH, ATOMIC_WRITE).
    None,
    /// Local memory described by SGEs (lkeys not yet checked).
    Sges(SgeList),
    /// The bytes themselves, copied out of the slot.
    Inline(InlineData),
}

/// A send WQE, copied out of its slot once and validated.
///
/// # Invariants
///
/// - `opcode` is allowed for the QP type and origin it was parsed for.
/// - `total_len <= 2^31` and equals the sum of the SGE lengths, the inline
///   length, 8 for ATOMIC_WRITE, or 0 without payload.
/// - SGE count `<=` the QP's `max_send_sge` `<= 32`; inline length `<=`
///   `max_inline_data` `<= 512`; both fitted inside the slot.
/// - Atomics: `total_len >= 8` and an 8-byte aligned remote address.
/// - UD: 24-bit destination QPN and non-zero `ah_num`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// The caller's cookie, returned in the completion.
    pub wr_id: u64,
    /// The opcode.
    pub opcode: WrOpcode,
    /// Send flags, unknown bits cleared (and INLINE cleared where it has no
    /// meaning).
    pub send_flags: u32,
    /// Opcode-specific arguments.
    pub op: SendOp,
    /// Local data.
    pub payload: Payload,
    /// Message length in bytes.
    pub total_len: u32,
}

/// What an opcode carries locally.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Local {
    /// SGEs or inline data (WRITE*, SEND*).
    Data,
    /// SGEs only (READ*, atomics: the response lands there).
    SgesOnly,
    /// Nothing read from the data area by SGE or inline.
    Nothing,
}

const fn local_kind(op: WrOpcode) -> Local {
    match op {
        WrOpcode::RdmaWrite
        | WrOpcode::RdmaWriteWithImm
        | WrOpcode::Send
        | WrOpcode::SendWithImm
        | WrOpcode::SendWithInv => Local::Data,
        WrOpcode::RdmaRead
        | WrOpcode::RdmaReadWithInv
        | WrOpcode::AtomicCmpAndSwp
        | WrOpcode::AtomicFetchAndAdd => Local::SgesOnly,
        _ => Local::Nothing,
    }
}

/// Whether `op` may be posted on a QP of type `qp` (the C driver's opcode
/// table, except that SEND_WITH_INV is refused on UD, which has no such
/// wire opcode).
pub const fn opcode_valid_for(op: WrOpcode, qp: QpType) -> bool {
    use WrOpcode::*;
    match qp {
        QpType::Rc => !matches!(op, Tso | MaskedAtomicCmpAndSwp | MaskedAtomicFetchAndAdd),
        QpType::Uc => matches!(
            op,
            RdmaWrite | RdmaWriteWithImm | Send | SendWithImm | BindMw | SendWithInv
        ),
        QpType::Ud | QpType::Gsi => matches!(op, Send | SendWithImm),
    }
}

/// Whether user space may post `op` at all.
pub const fn opcode_valid_for_user(op: WrOpcode) -> bool {
    !matches!(op, WrOpcode::RdmaReadWithInv | WrOpcode::RegMr)
}

impl SendWqe {
    /// Validates a send WQE from a private copy of its slot (`slot` may be
    /// shorter than `limits.slot_size`, never longer is assumed: only
    /// `min(slot.len(), limits.slot_size)` bytes are used).
    pub fn parse(slot: &[u8], limits: &SendLimits) -> Result<Self, SendWqeError> {
        let n = slot.len().min(limits.slot_size);
        let slot = slot.get(..n).unwrap_or_default();
        parse_from(&SliceSlot(slot), slot.len(), limits)
    }

    /// Copies the WQE in the slot at byte `slot_off` of a shared queue
    /// buffer into private memory (each byte read at most once) and
    /// validates it.
    pub fn read_from<B: SharedBuf + ?Sized>(
        buf: &B,
        slot_off: usize,
        limits: &SendLimits,
    ) -> Result<Self, SendWqeError> {
        let src = SharedSlot {
            buf,
            base: slot_off,
            size: limits.slot_size,
        };
        parse_from(&src, limits.slot_size, limits)
    }

    /// [`SendWqe::read_from`] into `dst`, reusing the storage of the WQE
    /// it holds (see [`read_slot_into`]). `dst` is `None` after an error.
    pub fn read_into<B: SharedBuf + ?Sized>(
        buf: &B,
        slot_off: usize,
        limits: &SendLimits,
        dst: &mut Option<SendWqe>,
    ) -> Result<(), SendWqeError> {
        let size = limits.slot_size;
        read_slot_into(
            buf,
            slot_off,
            size,
            dst,
            || SendWqe::EMPTY,
            |src, wqe| parse_into(src, size, limits, wqe),
        )
    }

    /// Storage for [`SendWqe::read_into`] to fill: not a WQE anyone posted
    /// (a LOCAL_INV of key 0).
    const EMPTY: SendWqe = SendWqe {
        wr_id: 0,
        opcode: WrOpcode::LocalInv,
        send_flags: 0,
        op: SendOp::LocalInv { rkey: 0 },
        payload: Payload::None,
        total_len: 0,
    };

    /// The opcode of this WQE's completion.
    pub fn wc_opcode(&self) -> Option<WcOpcode> {
        self.opcode.wc_opcode()
    }

    /// Whether a successful completion is reported: the QP signals all
    /// requests, or this one asked with `IB_SEND_SIGNALED`. (Errors are
    /// always reported.)
    pub const fn signaled(&self, sq_sig_all: bool) -> bool {
        sq_sig_all || self.send_flags & send_flags::SIGNALED != 0
    }

    /// Whether the last packet carries the solicited-event bit.
    pub const fn solicited(&self) -> bool {
        self.send_flags & send_flags::SOLICITED != 0
    }

    /// Whether this request must wait for earlier READ/atomic requests.
    pub const fn fenced(&self) -> bool {
        self.send_flags & send_flags::FENCE != 0
    }
}

fn parse_from<S: SlotSource + ?Sized>(
    src: &S,
    slot_size: usize,
    limits: &SendLimits,
) -> Result<SendWqe, SendWqeError> {
    let mut wqe = SendWqe::EMPTY;
    parse_into(src, slot_size, limits, &mut wqe)?;
    Ok(wqe)
}

/// The SGE list of `payload`, made one first (empty) if it held something
/// else.
fn sges_in(payload: &mut Payload) -> Option<&mut SgeList> {
    if !matches!(payload, Payload::Sges(_)) {
        *payload = Payload::Sges(SgeList::new());
    }
    match payload {
        Payload::Sges(list) => Some(list),
        _ => None,
    }
}

/// The inline data of `payload`, made empty inline data first if it held
/// something else.
fn inline_in(payload: &mut Payload) -> Option<&mut InlineData> {
    if !matches!(payload, Payload::Inline(_)) {
        *payload = Payload::Inline(InlineData {
            bytes: [0; MAX_INLINE_DATA],
            len: 0,
        });
    }
    match payload {
        Payload::Inline(data) => Some(data),
        _ => None,
    }
}

/// Parses the WQE of `src` into `dst`: its payload (the large part) is
/// written in place, the rest once valid. On error `dst` is no WQE.
fn parse_into<S: SlotSource + ?Sized>(
    src: &S,
    slot_size: usize,
    limits: &SendLimits,
    dst: &mut SendWqe,
) -> Result<(), SendWqeError> {
    use SendWqeError as E;

    // One read of the fixed header; everything below uses this copy.
    let mut hdr = [0u8; send_wqe::SIZE];
    if !src.read(0, &mut hdr) {
        return Err(E::Truncated);
    }
    let raw = RawSendWqe::decode(&hdr).map_err(|_| E::Truncated)?;
    let wr = &raw.wr;
    let dma: DmaInfo = raw.dma;

    let opcode = WrOpcode::from_u32(wr.opcode).ok_or(E::UnknownOpcode(wr.opcode))?;
    if matches!(
        opcode,
        WrOpcode::Tso | WrOpcode::MaskedAtomicCmpAndSwp | WrOpcode::MaskedAtomicFetchAndAdd
    ) {
        return Err(E::OpcodeNotSupported(opcode));
    }
    if limits.origin == Origin::User && !opcode_valid_for_user(opcode) {
        return Err(E::OpcodeNotAllowedForUser(opcode));
    }
    if !opcode_valid_for(opcode, limits.qp_type) {
        return Err(E::OpcodeNotAllowedForQpType(opcode));
    }

    let mut flags = wr.send_flags & send_flags::ALL;
    let inline = flags & send_flags::INLINE != 0;
    let kind = local_kind(opcode);
    let max_sge = (limits.max_sge as usize).min(MAX_SGE);
    let max_inline = (limits.max_inline as usize).min(MAX_INLINE_DATA);

    // Local data: read once, from the data area after the header, into
    // `dst`'s payload.
    let total_len = match kind {
        Local::SgesOnly if inline => return Err(E::InlineNotAllowed(opcode)),
        Local::Data if inline => {
            let len = dma.length;
            if len as usize > max_inline {
                return Err(E::InlineTooLong(len));
            }
            let end = send_wqe::DATA + len as usize; // len <= 512
            if end > slot_size {
                return Err(E::InlineExceedsSlot);
            }
            let data = inline_in(&mut dst.payload).ok_or(E::InlineTooLong(len))?;
            let bytes = data
                .bytes
                .get_mut(..len as usize)
                .ok_or(E::InlineTooLong(len))?;
            if !src.read(send_wqe::DATA, bytes) {
                return Err(E::InlineExceedsSlot);
            }
            data.len = len as usize;
            u64::from(len)
        }
        Local::Data | Local::SgesOnly => {
            let n = dma.num_sge;
            if n as usize > max_sge {
                return Err(E::TooManySges(n));
            }
            // n <= 32: no overflow.
            if send_wqe::DATA + n as usize * Sge::SIZE > slot_size {
                return Err(E::SgesExceedSlot);
            }
            let list = sges_in(&mut dst.payload).ok_or(E::SgesExceedSlot)?;
            if !read_sges_into(src, send_wqe::DATA, n as usize, list) {
                return Err(E::SgesExceedSlot);
            }
            // The length is what the SGEs add up to; `dma.length` (which
            // librxe sets to the same sum) is not trusted.
            list.total_len()
        }
        Local::Nothing => {
            flags &= !send_flags::INLINE;
            dst.payload = Payload::None;
            0
        }
    };
    if total_len > MAX_MSG_LEN {
        return Err(E::MessageTooLong(total_len));
    }
    // <= 2^31 fits in u32.
    let mut total_len = total_len as u32;

    let imm = if opcode.has_imm() { Some(wr.ex) } else { None };
    let (rdma_addr, rdma_rkey) = wr.rdma();
    let rdma_remote = RemoteAddr {
        addr: rdma_addr,
        rkey: rdma_rkey,
    };

    let op = match opcode {
        WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => {
            let ud = match limits.qp_type {
                QpType::Ud | QpType::Gsi => {
                    let (remote_qpn, remote_qkey, pkey_index, ah_num) = wr.ud();
                    if remote_qpn > MAX_QPN {
                        return Err(E::BadRemoteQpn(remote_qpn));
                    }
                    if ah_num == 0 {
                        return Err(E::NoAddressHandle);
                    }
                    Some(UdDest {
                        remote_qpn,
                        remote_qkey,
                        pkey_index,
                        ah_num,
                    })
                }
                QpType::Rc | QpType::Uc => None,
            };
            let invalidate_rkey = if opcode == WrOpcode::SendWithInv {
                Some(wr.invalidate_rkey())
            } else {
                None
            };
            SendOp::Send {
                imm,
                invalidate_rkey,
                ud,
            }
        }
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => SendOp::Write {
            remote: rdma_remote,
            imm,
        },
        WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => SendOp::Read {
            remote: rdma_remote,
            invalidate_rkey: if opcode == WrOpcode::RdmaReadWithInv {
                Some(wr.invalidate_rkey())
            } else {
                None
            },
        },
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            let (addr, compare_add, swap, rkey) = wr.atomic();
            let len_ok = match limits.origin {
                Origin::User => total_len >= 8,
                Origin::Kernel => total_len == 8,
            };
            if !len_ok {
                return Err(E::AtomicLength(u64::from(total_len)));
            }
            if addr & 7 != 0 {
                return Err(E::AtomicMisaligned(addr));
            }
            SendOp::Atomic {
                remote: RemoteAddr { addr, rkey },
                compare_add,
                swap,
            }
        }
        WrOpcode::AtomicWrite => {
            if dma.length != 8 {
                return Err(E::AtomicWriteLength(dma.length));
            }
            let mut value = [0u8; 8];
            if send_wqe::DATA + value.len() > slot_size || !src.read(send_wqe::DATA, &mut value) {
                return Err(E::Truncated);
            }
            total_len = 8;
            SendOp::AtomicWrite {
                remote: rdma_remote,
                value,
            }
        }
        WrOpcode::Flush => {
            let (addr, length, rkey, flush_type, level) = wr.flush();
            SendOp::Flush {
                remote: RemoteAddr { addr, rkey },
                length,
                flush_type,
                level,
            }
        }
        WrOpcode::LocalInv => SendOp::LocalInv {
            rkey: wr.invalidate_rkey(),
        },
        WrOpcode::BindMw => {
            let (addr, length, mr_lkey, mw_rkey, new_rkey, access) = wr.mw();
            SendOp::BindMw {
                addr,
                length,
                mr_lkey,
                mw_rkey,
                new_rkey,
                access,
            }
        }
        WrOpcode::RegMr => {
            let (mr_index, iova, key, access) = wr.reg();
            SendOp::RegMr {
                mr_index,
                iova,
                key,
                access,
            }
        }
        WrOpcode::Tso | WrOpcode::MaskedAtomicCmpAndSwp | WrOpcode::MaskedAtomicFetchAndAdd => {
            return Err(E::OpcodeNotSupported(opcode))
        }
    };

    dst.wr_id = wr.wr_id;
    dst.opcode = opcode;
    dst.send_flags = flags;
    dst.op = op;
    dst.total_len = total_len;
    Ok(())
}
