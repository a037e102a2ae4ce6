// SPDX-License-Identifier: GPL-2.0

//! Memory regions: the `ib_mr` at the head of a driver's region, the ops a
//! driver implements for them ([`MrOps`]), and their trampolines. Unlike
//! the other objects, regions are allocated by the driver (a pinned box
//! whose `ib_mr` ib_core fills after the create verb) and freed by it when
//! `dereg_mr` gives them back.

use super::{device::device_of, Adapter, Driver, IbObject};
use crate::sys::bindings;
use core::marker::PhantomData;
use kernel::{prelude::*, types::Opaque};

/// The `ib_mr` at the head of a driver's region.
///
/// # Invariants
///
/// Heads a region of a driver; the driver writes `lkey`/`rkey` before
/// returning the region to ib_core and ib_core fills the rest after.
#[repr(transparent)]
pub(crate) struct IbMr(Opaque<bindings::ib_mr>);

// SAFETY: The methods only read fields that ib_core fixed before the
// create verb and keeps while the object exists, call ib_core functions
// that may run in any thread, or write fields under ib_core's
// serialisation of the object's verbs.
unsafe impl Send for IbMr {}
// SAFETY: As above.
unsafe impl Sync for IbMr {}

impl IbMr {
    /// A zeroed `ib_mr` with the given keys.
    pub(crate) fn new(lkey: u32, rkey: u32) -> IbMr {
        let mr = bindings::ib_mr {
            lkey,
            rkey,
            ..Default::default()
        };
        IbMr(Opaque::new(mr))
    }
}

/// `ib_sg_to_pages` over one `map_mr_sg` call's scatterlist: each page
/// address goes to [`MrOps::set_page`] of the region.
///
/// # Invariants
///
/// The arguments are those of a live `map_mr_sg` call on a region of `D`.
pub(crate) struct SgToPages<'a, D: Driver> {
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut c_uint,
    _p: PhantomData<(&'a D::Mr, D)>,
}

impl<D: Driver> SgToPages<'_, D> {
    /// The page size ib_core chose for the mapping (`ib_mr.page_size`).
    pub(crate) fn page_size(&self) -> u32 {
        // SAFETY: Live region (invariant); ib_map_mr_sg has just set it.
        unsafe { (*self.ibmr).page_size }
    }

    /// Walks the scatterlist, handing every page to `set_page`; returns the
    /// number of entries mapped (or an error) and the mapped length.
    pub(crate) fn run(self) -> (c_int, u64) {
        // SAFETY: The arguments of the live call (invariant); the callback
        // only gets this region.
        let mapped = unsafe {
            bindings::ib_sg_to_pages(
                self.ibmr,
                self.sg,
                self.sg_nents,
                self.sg_offset,
                Some(Adapter::<D>::set_page),
            )
        };
        // SAFETY: Live region; `ib_sg_to_pages` set its length.
        (mapped, unsafe { (*self.ibmr).length })
    }
}

/// What a driver's region does (`Self` is the driver's region struct,
/// headed by an [`IbMr`]).
pub(crate) trait MrOps<D: Driver>: IbObject<Raw = bindings::ib_mr> {
    /// `.get_dma_mr`: a region over all of kernel memory, in PD `pd` (an
    /// identity).
    fn get_dma_mr(dev: &D::Device, pd: usize, access: u32) -> Result<Pin<KBox<Self>>>;
    /// `.reg_user_mr`: pins and registers `[start, start + length)` of the
    /// calling process, seen at `iova`.
    fn reg_user_mr(
        dev: &D::Device,
        pd: usize,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Pin<KBox<Self>>>;
    /// `.rereg_user_mr`: a new PD (`IB_MR_REREG_PD`, `pd`) and/or access
    /// (`IB_MR_REREG_ACCESS`), in place.
    fn rereg_user_mr(mr: &Self, flags: u32, pd: usize, access: u32) -> Result;
    /// `.alloc_mr`: a fast-registration region for `max_num_sg` pages.
    fn alloc_mr(dev: &D::Device, pd: usize, max_num_sg: u32) -> Result<Pin<KBox<Self>>>;
    /// First step of `.dereg_mr`: makes the region unreachable; an error
    /// leaves it registered (ib_core may try again).
    fn unpublish(dev: &D::Device, mr: &Self) -> Result;
    /// Second step of `.dereg_mr`: frees the region.
    fn dereg(dev: &D::Device, mr: Pin<KBox<Self>>);
    /// `.map_mr_sg`: builds the region's page list from a scatterlist
    /// (through `sg.run()`); returns the entries mapped.
    fn map_mr_sg(mr: &Self, sg: SgToPages<'_, D>) -> Result<c_int>;
    /// One page of a running `map_mr_sg`.
    fn set_page(mr: &Self, addr: u64) -> Result;
}

/// Hands a region to ib_core.
fn into_ib<T: IbObject>(mr: Pin<KBox<T>>) -> *mut T::Raw {
    // SAFETY: The region is never moved out of the box: `dereg_mr` turns
    // the pointer back into the same pinned box.
    KBox::into_raw(unsafe { Pin::into_inner_unchecked(mr) }).cast()
}

impl<D: Driver> Adapter<D> {
    /// `.get_dma_mr`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live PD of a device of `D`.
    pub(super) unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: ib_core passes a live PD of a device of `D`.
        let dev = unsafe { device_of::<D>((*pd).device) };
        match D::Mr::get_dma_mr(dev, pd as usize, access as u32) {
            Ok(mr) => into_ib(mr),
            Err(e) => e.to_ptr(),
        }
    }

    /// `.reg_user_mr`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, in the registering process's context, with
    /// a live PD of a device of `D`.
    pub(super) unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        if !dmah.is_null() {
            return EOPNOTSUPP.to_ptr();
        }
        // SAFETY: ib_core passes a live PD of a device of `D`.
        let dev = unsafe { device_of::<D>((*pd).device) };
        match D::Mr::reg_user_mr(dev, pd as usize, start, length, iova, access as u32) {
            Ok(mr) => into_ib(mr),
            Err(e) => e.to_ptr(),
        }
    }

    /// `.rereg_user_mr` (null: ib_core keeps the same `ib_mr` and keys).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live user region of `D` that it holds
    /// for writing, and, with `IB_MR_REREG_PD`, a live PD of the same
    /// device.
    pub(super) unsafe extern "C" fn rereg_user_mr(
        ibmr: *mut bindings::ib_mr,
        flags: c_int,
        _start: u64,
        _length: u64,
        _virt_addr: u64,
        access: c_int,
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: ib_core passes a live region of `D`.
        let mr = unsafe { super::object::<D::Mr>(ibmr) };
        match D::Mr::rereg_user_mr(mr, flags as u32, pd as usize, access as u32) {
            Ok(()) => core::ptr::null_mut(),
            Err(e) => e.to_ptr(),
        }
    }

    /// `.dereg_mr`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a region that `get_dma_mr`,
    /// `reg_user_mr` or `alloc_mr` returned and that no earlier call freed,
    /// after ib_core's last use of it.
    pub(super) unsafe extern "C" fn dereg_mr(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: ib_core passes a live region of `D`.
        let (dev, mr) = unsafe { (device_of::<D>((*ibmr).device), super::object::<D::Mr>(ibmr)) };
        if let Err(e) = D::Mr::unpublish(dev, mr) {
            return e.to_errno();
        }
        // SAFETY: `into_ib` handed the box out; ib_core is done with it and
        // nothing else frees it, so it is ours again.
        let mr = unsafe { Pin::new_unchecked(KBox::from_raw(ibmr.cast::<D::Mr>())) };
        D::Mr::dereg(dev, mr);
        0
    }

    /// `.alloc_mr`: `IB_MR_TYPE_MEM_REG` only.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a live PD of a device of `D`.
    pub(super) unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return EINVAL.to_ptr();
        }
        // SAFETY: ib_core passes a live PD of a device of `D`.
        let dev = unsafe { device_of::<D>((*pd).device) };
        match D::Mr::alloc_mr(dev, pd as usize, max_num_sg) {
            Ok(mr) => into_ib(mr),
            Err(e) => e.to_ptr(),
        }
    }

    /// The `set_page` callback [`SgToPages::run`] gives `ib_sg_to_pages`.
    ///
    /// # Safety
    ///
    /// Called by `ib_sg_to_pages` only, with the live region of `D` that
    /// `SgToPages::run` passed it.
    unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
        // SAFETY: A live region of `D` (the caller's promise).
        let mr = unsafe { super::object::<D::Mr>(ibmr) };
        match D::Mr::set_page(mr, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `.map_mr_sg`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only (`ib_map_mr_sg`), with a live region that
    /// `alloc_mr` made and a scatterlist of `sg_nents` entries mapped for
    /// this device.
    pub(super) unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut c_uint,
    ) -> c_int {
        // SAFETY: A live region of `D` (ib_core's promise).
        let mr = unsafe { super::object::<D::Mr>(ibmr) };
        // INVARIANT: The arguments of this live call.
        let sg = SgToPages {
            ibmr,
            sg,
            sg_nents,
            sg_offset,
            _p: PhantomData,
        };
        D::Mr::map_mr_sg(mr, sg).unwrap_or_else(|e| e.to_errno())
    }
}
