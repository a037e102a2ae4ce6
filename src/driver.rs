// SPDX-License-Identifier: GPL-2.0

//! rxe as an [`ib::Driver`]: the device-level verbs, the object types, and
//! what `rdma link add ... type rxe` does. The object verbs are in the
//! objects' files (`impl ib::CqOps for RxeCq` in `cq.rs`, and so on).

use crate::{
    ah::RxeAh,
    counters,
    cq::RxeCq,
    device::RxeDevice,
    ib::{self, StatDescs},
    mr::{self, RxeMr},
    mw::RxeMw,
    qp::RxeQp,
    srq::RxeSrq,
    sys::{bindings, net::NetDevice, odp::OdpUmem},
    verbs,
};
use kernel::{prelude::*, str::CStr};

/// The rxe driver.
pub(crate) struct Rxe;

/// The counters' sysfs names, for ib_core.
static STAT_DESCS: StatDescs<{ counters::COUNT }> = StatDescs::new(counters::NAMES);

#[vtable]
impl ib::Driver for Rxe {
    type Module = crate::LocalModule;
    type Device = RxeDevice;
    type Cq = RxeCq;
    type Qp = RxeQp;
    type Srq = RxeSrq;
    type Ah = RxeAh;
    type Mw = RxeMw;
    type Mr = RxeMr;

    const DRIVER_ID: u32 = bindings::rdma_driver_id_RDMA_DRIVER_RXE;
    const UVERBS_ABI_VERSION: u32 = bindings::RXE_GLUE_RXE_UVERBS_ABI_VERSION;
    const LINK_TYPE: &'static CStr = c"rxe";

    fn stat_descs() -> &'static [bindings::rdma_stat_desc] {
        STAT_DESCS.as_slice()
    }

    fn newlink(name: &CStr, ndev: &NetDevice) -> Result {
        crate::device::newlink(name, ndev)
    }

    /// Before ib_core unregisters a device (`rdma link del`, module exit),
    /// its QPs fail while their owners can still see the flushed work: the
    /// unregistration destroys QPs without completing their work, and a
    /// process polling a CQ whose QP just went would wait for ever.
    fn dellink(dev: &RxeDevice) {
        crate::qp::fail_all_for_removal(dev);
    }

    fn enabled(dev: &RxeDevice) {
        dev.enabled();
    }

    fn release(dev: &mut RxeDevice) {
        dev.release();
    }

    fn query_device(dev: &RxeDevice, attr: &mut bindings::ib_device_attr) -> Result {
        *attr = dev.query_device();
        Ok(())
    }

    fn query_port(dev: &RxeDevice, port: u32, attr: &mut bindings::ib_port_attr) -> Result {
        dev.query_port(port, attr)
    }

    fn query_pkey(dev: &RxeDevice, port: u32, index: u16) -> Result<u16> {
        dev.query_pkey(port, index)
    }

    fn port_immutable(
        dev: &RxeDevice,
        port: u32,
        immutable: &mut bindings::ib_port_immutable,
    ) -> Result {
        dev.port_immutable(port, immutable)
    }

    /// A new system image GUID or node description (what writing sysfs
    /// `node_desc` does); nothing else, as in rxe.
    fn modify_device(dev: &RxeDevice, mask: u32, attr: &bindings::ib_device_modify) -> Result {
        let guid = bindings::RXE_GLUE_IB_DEVICE_MODIFY_SYS_IMAGE_GUID as u32;
        let desc = bindings::RXE_GLUE_IB_DEVICE_MODIFY_NODE_DESC as u32;
        if mask & !(guid | desc) != 0 {
            return Err(EOPNOTSUPP);
        }
        if mask & guid != 0 {
            dev.set_sys_image_guid(attr.sys_image_guid);
        }
        if mask & desc != 0 {
            dev.ib.set_node_desc(&attr.node_desc);
        }
        Ok(())
    }

    /// Capability flags set and cleared (ib_cm's `IB_PORT_CM_SUP`), or the
    /// Q_Key violation counter reset.
    fn modify_port(
        dev: &RxeDevice,
        port: u32,
        mask: u32,
        attr: &bindings::ib_port_modify,
    ) -> Result {
        dev.modify_port(port, mask, attr.set_port_cap_mask, attr.clr_port_cap_mask)
    }

    fn alloc_ucontext(dev: &RxeDevice) -> Result {
        verbs::alloc_ucontext(dev)
    }

    fn dealloc_ucontext(dev: &RxeDevice) {
        verbs::dealloc_ucontext(dev);
    }

    fn alloc_pd(dev: &RxeDevice) -> Result {
        verbs::alloc_pd(dev)
    }

    fn dealloc_pd(dev: &RxeDevice) {
        verbs::dealloc_pd(dev);
    }

    fn hw_stats(dev: &RxeDevice, values: &mut [u64]) {
        for (value, counter) in values.iter_mut().zip(dev.counters.snapshot()) {
            *value = counter;
        }
    }

    /// The performance management agent ([`crate::proto::perf_mgmt`]);
    /// ib_core calls it for sysfs `counters/` and for every MAD received
    /// on QP1.
    fn process_mad(
        dev: &RxeDevice,
        port: u32,
        input: &[u8; ib::MAD_SIZE],
        out: &mut [u8; ib::MAD_SIZE],
    ) -> c_int {
        use crate::proto::perf_mgmt::{answer, MAD_SIZE};
        const { assert!(ib::MAD_SIZE == MAD_SIZE) };
        answer(port, input, &dev.counters.port_counters(), out)
    }

    /// Prefetches on-demand-paging regions.
    fn advise_mr(dev: &RxeDevice, pd: usize, advice: u32, sges: &[bindings::ib_sge]) -> Result {
        let advice = match advice {
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
                mr::Advice::Prefetch
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
                mr::Advice::PrefetchWrite
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
                mr::Advice::PrefetchNoFault
            }
            _ => return Err(EOPNOTSUPP),
        };
        let mut ranges = KVec::new();
        for s in sges {
            let range = mr::AdviseRange {
                lkey: s.lkey,
                addr: s.addr,
                length: s.length,
            };
            ranges.push(range, GFP_KERNEL)?;
        }
        mr::advise_mr(dev, pd, advice, &ranges)
    }

    /// Only when the kernel has on-demand paging.
    fn advise_mr_supported() -> bool {
        OdpUmem::supported()
    }

    fn attach_mcast(qp: &RxeQp, mgid: [u8; 16]) -> Result {
        let rxe = qp.ibqp.device();
        rxe.multicast
            .get()
            .ok_or(ENODEV)?
            .attach(rxe, qp.body.qpn, mgid)
    }

    fn detach_mcast(qp: &RxeQp, mgid: [u8; 16]) -> Result {
        let rxe = qp.ibqp.device();
        rxe.multicast
            .get()
            .ok_or(ENODEV)?
            .detach(rxe, qp.body.qpn, mgid)
    }
}
