// SPDX-License-Identifier: GPL-2.0

//! Address handles (rxe-abi-and-wire.md §1.4): the address vector a UD work request
//! sends to, numbered from the device's AH table so that librxe can name
//! it in a send WQE by `ah_num` instead of embedding a whole AV.

use crate::{
    abi::layout::CreateAhResp,
    device::RxeDevice,
    driver::Rxe,
    ib::{self, attr::AhAttr, IbAh, Udata},
    params,
    proto::qp_attr::AddressVector,
    sys::{
        bindings,
        table::{Counted, UseCount},
    },
    verbs,
};
use kernel::prelude::*;

/// An address handle. ib_core allocates it (`size_ib_ah`, zeroed) with the
/// `ib_ah` first and frees it after `destroy_ah`.
///
/// # Invariants
///
/// `body` is initialised in place by `create_ah` and dropped by
/// `destroy_ah` (the trampolines of `ib::ah`).
#[repr(C)]
#[pin_data]
pub(crate) struct RxeAh {
    /// The ib_core object; must stay the first field.
    pub(crate) ibah: IbAh,
    /// The driver's part.
    #[pin]
    pub(crate) body: AhBody,
}

/// The driver's part of an AH.
#[pin_data]
pub(crate) struct AhBody {
    /// Index in the device's AH table (what librxe puts in UD WQEs).
    pub(crate) index: u32,
    /// Where packets go.
    pub(crate) av: AddressVector,
    /// The AH's protection domain (a UD QP may only send through AHs of
    /// its own PD).
    pub(crate) pd: usize,
    /// The AH table's use and the data path's.
    #[pin]
    pub(crate) uses: UseCount,
}

impl Counted for RxeAh {
    fn uses(&self) -> &UseCount {
        &self.body.uses
    }
}

/// `create_ah`: takes an AH number, tells librxe about it, and returns
/// the initialiser of the AH's body. A kernel caller that cannot sleep
/// (ib_cm creates AHs under a spinlock, interrupts off) gets its number
/// allocated with `GFP_ATOMIC`.
pub(crate) fn create(
    rxe: &RxeDevice,
    av: AddressVector,
    pd: usize,
    sleepable: bool,
    udata: Option<&Udata>,
) -> Result<(u32, impl PinInit<AhBody>)> {
    verbs::take_budget(&rxe.ah_count, params::MAX_AH)?;
    let reserved = if sleepable {
        rxe.ahs.reserve(1, params::MAX_AH)
    } else {
        rxe.ahs.reserve_atomic(1, params::MAX_AH)
    };
    let index = match reserved {
        Ok(i) => i,
        Err(e) => {
            verbs::return_budget(&rxe.ah_count);
            return Err(e);
        }
    };
    // A librxe older than the AH number (outlen < 8) embeds AVs instead;
    // it gets no answer, as from rxe.
    if let Some(u) = udata.filter(|u| u.outlen() >= CreateAhResp::SIZE) {
        let mut bytes = [0u8; CreateAhResp::SIZE];
        let answered = CreateAhResp { ah_num: index }
            .encode(&mut bytes)
            .map_err(|_| EINVAL)
            .and_then(|()| u.respond(&bytes));
        if let Err(e) = answered {
            abandon(rxe, index);
            return Err(e);
        }
    }
    let body = pin_init!(AhBody {
        index,
        av,
        pd,
        uses <- UseCount::new(),
    });
    Ok((index, body))
}

/// Publishes a created AH in the device's AH table.
pub(crate) fn publish(rxe: &RxeDevice, ah: &RxeAh) -> Result {
    // SAFETY: ib_core never moves an AH and frees it only after
    // `destroy_ah`, which removes it from the table and drains its uses.
    unsafe { rxe.ahs.publish(ah.body.index, ah) }
}

/// Gives back what [`create`] took when a later step failed.
pub(crate) fn abandon(rxe: &RxeDevice, index: u32) {
    rxe.ahs.unreserve(index);
    verbs::return_budget(&rxe.ah_count);
}

/// `destroy_ah`: unpublishes. Never sleeps (a kernel caller may destroy
/// with interrupts off): the data path reads an AH only under the table's
/// lock ([`address_of`]), so once it is unpublished nothing touches it.
pub(crate) fn destroy(rxe: &RxeDevice, ah: &RxeAh) {
    rxe.ahs.remove(ah.body.index);
    ah.body.uses.drop_unheld();
    verbs::return_budget(&rxe.ah_count);
}

/// The address of AH `ah_num`, if it exists and belongs to PD `pd`.
pub(crate) fn address_of(rxe: &RxeDevice, ah_num: u32, pd: usize) -> Option<AddressVector> {
    rxe.ahs
        .read(ah_num, |ah| (ah.body.pd == pd).then_some(ah.body.av))
        .flatten()
}

crate::impl_ib_object!(RxeAh, ibah: bindings::ib_ah, body: AhBody);

impl ib::AhOps<Rxe> for RxeAh {
    fn create(
        dev: &RxeDevice,
        attr: &AhAttr,
        pd: usize,
        sleepable: bool,
        udata: Option<&Udata>,
    ) -> Result<impl PinInit<AhBody>> {
        let av = crate::attrs::read_av(attr)?;
        Ok(create(dev, av, pd, sleepable, udata)?.1)
    }

    fn publish(dev: &RxeDevice, ah: &Self) -> Result {
        publish(dev, ah).inspect_err(|_| abandon(dev, ah.body.index))
    }

    fn query(ah: &Self, attr: &mut bindings::rdma_ah_attr) {
        crate::attrs::write_av(&ah.body.av, attr);
    }

    fn destroy(dev: &RxeDevice, ah: &Self) {
        destroy(dev, ah);
    }
}
