// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (rxe-abi-and-wire.md §1.2, §1.4, §1.11): one receive ring that
//! several QPs consume from, mapped by librxe like an RQ, numbered from the
//! device's SRQ table; resizing (the new ring's mmap info goes to a user
//! address given in the command, as librxe expects) and the limit.
//!
//! Locking: `SrqBody::state` is a `SpinLockIrq` leaf, as for QPs; a
//! replaced ring buffer is dropped after the lock is released.

use crate::{
    abi::{
        layout::{CreateSrqResp, MmapInfo, ModifySrqCmd},
        queue::{FromClient, QueueError, QueueGeometry, QueueSizing},
        recv_wqe::recv_elem_size,
    },
    device::RxeDevice,
    driver::Rxe,
    ib::{self, wr::RecvWrs, IbSrq, Udata},
    params,
    sys::{
        bindings,
        queue::QueueBuf,
        table::{Counted, UseCount},
    },
    verbs,
};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// First SRQ number (rxe's `RXE_MIN_SRQ_INDEX`).
const MIN_SRQ_INDEX: u32 = 0x0002_0001;
/// Last SRQ number (rxe's `RXE_MAX_SRQ_INDEX`).
const MAX_SRQ_INDEX: u32 = 1 << 20;

/// A shared receive queue. ib_core allocates it (`size_ib_srq`, zeroed)
/// with the `ib_srq` first and frees it after `destroy_srq`.
///
/// # Invariants
///
/// `body` is initialised in place by `create_srq` and dropped by
/// `destroy_srq` (both in `sys::srq`).
#[repr(C)]
#[pin_data]
pub(crate) struct RxeSrq {
    /// The ib_core object; must stay the first field.
    pub(crate) ibsrq: IbSrq,
    /// The driver's part.
    #[pin]
    pub(crate) body: SrqBody,
}

/// The driver's part of an SRQ.
#[pin_data]
pub(crate) struct SrqBody {
    /// SRQ number (index in the device's SRQ table).
    pub(crate) srq_num: u32,
    /// SGEs per receive WQE.
    pub(crate) max_sge: u32,
    /// The ring and the limit.
    #[pin]
    pub(crate) state: SpinLockIrq<SrqInner>,
    /// The SRQ table's use and the data path's.
    #[pin]
    pub(crate) uses: UseCount,
}

impl Counted for RxeSrq {
    fn uses(&self) -> &UseCount {
        &self.body.uses
    }
}

/// What `SrqBody::state` protects.
pub(crate) struct SrqInner {
    /// Consumer side of the ring.
    pub(crate) ring: FromClient,
    /// The buffer the ring lives in.
    pub(crate) buf: QueueBuf,
    /// Armed limit: when fewer WQEs remain, the data path raises
    /// `IB_EVENT_SRQ_LIMIT_REACHED` and disarms (0 = not armed).
    pub(crate) limit: u32,
}

/// `ib_srq_attr`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SrqAttr {
    /// Work requests.
    pub(crate) max_wr: u32,
    /// SGEs per work request.
    pub(crate) max_sge: u32,
    /// Limit.
    pub(crate) srq_limit: u32,
}

fn sizing(max_wr: u32, max_sge: u32) -> Result<QueueSizing> {
    let elem = recv_elem_size(max_sge).ok_or(EINVAL)?;
    QueueGeometry::for_request(max_wr, elem, crate::sys::cache_line_size()).map_err(|e| match e {
        QueueError::TooLarge => ENOMEM,
        _ => EINVAL,
    })
}

fn new_ring(sizing: &QueueSizing, udata: Option<&Udata>) -> Result<QueueBuf> {
    let buf = match udata {
        Some(u) => QueueBuf::new_user(sizing.buffer_bytes, u.ucontext()?)?,
        None => QueueBuf::new_kernel(sizing.buffer_bytes)?,
    };
    Ok(buf)
}

/// `create_srq` (rxe's `rxe_srq_chk_init` and `rxe_srq_from_init`): `attr`
/// comes back with the real capacities. Returns the SRQ number and the
/// initialiser of the body.
pub(crate) fn create(
    rxe: &RxeDevice,
    basic: bool,
    attr: &mut SrqAttr,
    udata: Option<&Udata>,
) -> Result<(u32, impl PinInit<SrqBody>)> {
    if let Some(u) = udata {
        if u.outlen() < CreateSrqResp::SIZE {
            return Err(EINVAL);
        }
    }
    if !basic {
        return Err(EOPNOTSUPP);
    }
    if attr.max_wr == 0 || attr.max_wr > params::MAX_SRQ_WR || attr.max_sge > params::MAX_SRQ_SGE {
        return Err(EINVAL);
    }
    attr.max_sge = attr.max_sge.max(1);
    let sizing = sizing(attr.max_wr, attr.max_sge)?;
    verbs::take_budget(&rxe.srq_count, params::MAX_SRQ)?;
    let srq_num = match rxe.srqs.reserve(MIN_SRQ_INDEX, MAX_SRQ_INDEX) {
        Ok(n) => n,
        Err(e) => {
            verbs::return_budget(&rxe.srq_count);
            return Err(e);
        }
    };
    let made = (|| {
        let buf = new_ring(&sizing, udata)?;
        sizing.geometry.write_header(&buf, 0, 0);
        if let Some(u) = udata {
            let resp = CreateSrqResp {
                mi: crate::ring::mmap_info(&buf).unwrap_or_default(),
                srq_num,
            };
            let mut bytes = [0u8; CreateSrqResp::SIZE];
            resp.encode(&mut bytes).map_err(|_| EINVAL)?;
            u.respond(&bytes)?;
        }
        Ok(buf)
    })();
    let buf = match made {
        Ok(buf) => buf,
        Err(e) => {
            abandon(rxe, srq_num);
            return Err(e);
        }
    };
    attr.max_wr = sizing.capacity;
    let (max_sge, limit) = (attr.max_sge, attr.srq_limit);
    let body = pin_init!(SrqBody {
        srq_num,
        max_sge,
        state <- new_spinlock_irq!(
            SrqInner { ring: FromClient::new(sizing.geometry), buf, limit },
            "RxeSrq::state"
        ),
        uses <- UseCount::new(),
    });
    Ok((srq_num, body))
}

/// Publishes a created SRQ in the device's table.
pub(crate) fn publish(rxe: &RxeDevice, srq: &RxeSrq) -> Result {
    // SAFETY: ib_core never moves an SRQ and frees it only after
    // `destroy_srq`, which removes it from the table and drains its uses.
    unsafe { rxe.srqs.publish(srq.body.srq_num, srq) }
}

/// Gives back what [`create`] took when a later step failed.
pub(crate) fn abandon(rxe: &RxeDevice, srq_num: u32) {
    rxe.srqs.unreserve(srq_num);
    verbs::return_budget(&rxe.srq_count);
}

/// `destroy_srq`: unpublishes and waits for the data path to let go.
pub(crate) fn destroy(rxe: &RxeDevice, srq: &RxeSrq) {
    rxe.srqs.remove(srq.body.srq_num);
    srq.body.uses.drain();
    verbs::return_budget(&rxe.srq_count);
}

/// Where `modify_srq` sends the new ring's mmap info.
pub(crate) trait MmapInfoSink {
    /// Writes `mi` where user space expects it.
    fn put(&self, mi: &MmapInfo) -> Result;
}

impl RxeSrq {
    /// `modify_srq` (rxe's `rxe_srq_chk_attr` and `rxe_srq_from_attr`):
    /// `IB_SRQ_MAX_WR` moves the posted WQEs into a new ring and tells user
    /// space about it through `sink`; `IB_SRQ_LIMIT` arms the limit.
    pub(crate) fn modify(
        &self,
        attr: &SrqAttr,
        resize: bool,
        set_limit: bool,
        udata: Option<&Udata>,
        sink: Option<&dyn MmapInfoSink>,
    ) -> Result {
        let (capacity, limit) = {
            let st = self.body.state.lock();
            (st.ring.geometry().capacity(), st.limit)
        };
        if resize
            && (attr.max_wr == 0
                || attr.max_wr > params::MAX_SRQ_WR
                || (limit != 0 && attr.max_wr < limit))
        {
            return Err(EINVAL);
        }
        if set_limit && (attr.srq_limit > params::MAX_SRQ_WR || attr.srq_limit > capacity) {
            return Err(EINVAL);
        }
        if resize {
            let sizing = sizing(attr.max_wr.max(1), self.body.max_sge)?;
            let new = new_ring(&sizing, udata)?;
            if let (Some(sink), Some(mi)) = (sink, crate::ring::mmap_info(&new)) {
                sink.put(&mi)?;
            }
            let outcome = {
                let mut guard = self.body.state.lock();
                let st = &mut *guard;
                match st.ring.resize_into(&st.buf, sizing.geometry, &new) {
                    Ok(ring) => {
                        st.ring = ring;
                        Ok(core::mem::replace(&mut st.buf, new))
                    }
                    Err(_) => Err(new),
                }
            };
            // Whichever buffer is left over is dropped outside the lock.
            match outcome {
                Ok(old) => drop(old),
                Err(new) => {
                    drop(new);
                    return Err(EINVAL);
                }
            }
        }
        if set_limit {
            self.body.state.lock().limit = attr.srq_limit;
        }
        Ok(())
    }

    /// `query_srq`.
    pub(crate) fn query(&self) -> SrqAttr {
        let st = self.body.state.lock();
        SrqAttr {
            max_wr: st.ring.geometry().capacity(),
            max_sge: self.body.max_sge,
            srq_limit: st.limit,
        }
    }
}

/// A user `mminfo` at an address the command named (librxe's convention
/// for the resized ring); written with `copy_to_user`, so a bad address is
/// `EFAULT`, never a fault in the kernel.
struct UserMmapInfo(u64);

impl MmapInfoSink for UserMmapInfo {
    fn put(&self, mi: &MmapInfo) -> Result {
        use kernel::uaccess::{UserPtr, UserSlice};
        let mut bytes = [0u8; MmapInfo::SIZE];
        mi.encode(&mut bytes).map_err(|_| EINVAL)?;
        let addr = usize::try_from(self.0).map_err(|_| EFAULT)?;
        UserSlice::new(UserPtr::from_addr(addr), bytes.len())
            .writer()
            .write_slice(&bytes)
    }
}

crate::impl_ib_object!(RxeSrq, ibsrq: bindings::ib_srq, body: SrqBody);

impl ib::SrqOps<Rxe> for RxeSrq {
    fn create(
        dev: &RxeDevice,
        init: &mut bindings::ib_srq_init_attr,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<SrqBody>> {
        let mut attr = SrqAttr {
            max_wr: init.attr.max_wr,
            max_sge: init.attr.max_sge,
            srq_limit: init.attr.srq_limit,
        };
        let basic = init.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC;
        let (_srq_num, body) = create(dev, basic, &mut attr, udata)?;
        init.attr.max_wr = attr.max_wr;
        init.attr.max_sge = attr.max_sge;
        Ok(body)
    }

    fn publish(dev: &RxeDevice, srq: &Self) -> Result {
        publish(dev, srq).inspect_err(|_| abandon(dev, srq.body.srq_num))
    }

    /// Resizes the SRQ or sets its limit, as `mask` selects; a user's
    /// command (at least its 8 bytes, anything beyond zero) names where the
    /// new ring's mmap info goes.
    fn modify(
        srq: &Self,
        attr: &bindings::ib_srq_attr,
        mask: u32,
        udata: Option<&Udata>,
    ) -> Result {
        let cmd = match udata {
            None => None,
            Some(u) => {
                let mut bytes = [0u8; ModifySrqCmd::SIZE];
                u.read_validated(&mut bytes)?;
                Some(ModifySrqCmd::decode(&bytes).map_err(|_| EINVAL)?)
            }
        };
        let attr = SrqAttr {
            max_wr: attr.max_wr,
            max_sge: attr.max_sge,
            srq_limit: attr.srq_limit,
        };
        let resize = mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0;
        let set_limit = mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0;
        let sink = cmd.map(|c| UserMmapInfo(c.mmap_info_addr));
        srq.modify(
            &attr,
            resize,
            set_limit,
            udata,
            sink.as_ref().map(|s| s as &dyn MmapInfoSink),
        )
    }

    fn query(srq: &Self, out: &mut bindings::ib_srq_attr) {
        let a = srq.query();
        out.max_wr = a.max_wr;
        out.max_sge = a.max_sge;
        out.srq_limit = a.srq_limit;
    }

    fn destroy(dev: &RxeDevice, srq: &Self) {
        destroy(dev, srq);
    }

    fn post_recv(srq: &Self, wrs: &mut RecvWrs<'_>) -> Result {
        crate::rc::post::post_srq_recv_wrs(srq, wrs)
    }
}
