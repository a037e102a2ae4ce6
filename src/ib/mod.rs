// SPDX-License-Identifier: GPL-2.0

//! A generic abstraction of an InfiniBand (RDMA) device driver over ib_core,
//! in the style of `rust/kernel/`: it names no type of this driver and
//! imports none of its modules, so it could move to `rust/kernel/` as is.
//!
//! A driver implements [`Driver`] on a marker type: the device-level verbs
//! (`query_device`, `alloc_pd`, the counters, the link type's `newlink`),
//! with the optional ones selected by `#[vtable]`'s `HAS_*` constants, and
//! names its object types, one per ib_core object, each implementing that
//! object's ops trait ([`CqOps`], [`QpOps`], [`SrqOps`], [`AhOps`],
//! [`MwOps`], [`MrOps`]). [`Adapter<D>`] turns them into the `const`
//! `ib_device_ops` table: `extern "C"` trampolines, generic over the
//! driver, that turn ib_core's raw pointers into references to the
//! driver's objects and call the trait methods.
//!
//! Every object ib_core allocates for the driver (`size_ib_cq` and so on)
//! is the driver's `#[repr(C)]` struct with ib_core's C object first and
//! the driver's part (its "body") after it ([`IbObject`], implemented with
//! [`impl_ib_object!`](crate::impl_ib_object)). ib_core hands the driver
//! zeroed memory with its own part set; the trampoline initialises the
//! body in place (`pin_init::raw_try_init`) and drops it when the object
//! is destroyed, before ib_core frees the memory. Memory regions are
//! allocated by the driver ([`MrOps`]); the device is zeroed memory that
//! the driver fills before registration ([`Device`]).
//!
//! Where the `kernel` crate has no type for a C struct the verbs pass
//! (`ib_qp_attr`, `ib_port_attr`, ...), the trait methods take the C struct
//! itself by reference, read and written as plain data; pointers inside
//! such structs are followed only here, through views with invariants
//! ([`attr::AhAttr`], [`wr::SendWr`]).

pub(crate) mod ah;
pub(crate) mod attr;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod qp;
pub(crate) mod srq;
pub(crate) mod udata;
pub(crate) mod wr;

pub(crate) use ah::{AhOps, IbAh};
pub(crate) use cq::{CqOps, IbCq};
pub(crate) use device::{Device, DeviceIdentity, IbDevice, LinkRegistration, LinkStorage};
pub(crate) use mr::{IbMr, MrOps};
pub(crate) use mw::{IbMw, MwOps};
pub(crate) use qp::{IbQp, QpOps};
pub(crate) use srq::{IbSrq, SrqOps};
pub(crate) use udata::{Ucontext, Udata};

use crate::sys::bindings;
use core::marker::PhantomData;
use kernel::{prelude::*, str::CStr};

/// An ib_core object that is the head of a driver struct.
///
/// # Safety
///
/// `Self` is `#[repr(C)]` and its first field is a transparent wrapper of
/// `Self::Raw`, so a pointer to the C object is a pointer to `Self`.
/// Implement it with [`impl_ib_object!`](crate::impl_ib_object).
pub(crate) unsafe trait IbObject: Sized + Sync {
    /// ib_core's C struct.
    type Raw;
}

/// An [`IbObject`] whose driver part ib_core leaves uninitialised: the
/// body, which the object's create verb initialises in place and its
/// destroy verb drops.
///
/// # Safety
///
/// `BODY_OFFSET` is the offset of a field of type `Self::Body` in `Self`.
pub(crate) unsafe trait IbBody: IbObject {
    /// The driver's part.
    type Body: Send + Sync;
    /// Offset of the body in `Self`.
    const BODY_OFFSET: usize;
}

/// Implements [`IbObject`] (and, with a body field, [`IbBody`]) for a
/// `#[repr(C)]` driver struct whose first field wraps ib_core's object.
#[macro_export]
macro_rules! impl_ib_object {
    ($ty:ty, $head:ident: $raw:ty) => {
        const _: () = {
            assert!(::core::mem::offset_of!($ty, $head) == 0);
            assert!(
                ::core::mem::size_of::<$raw>()
                    <= ::core::mem::size_of::<$ty>()
            );
        };
        // SAFETY: `$head` is the first field (asserted above) and wraps
        // `$raw` transparently (the head types of `crate::ib` do); the
        // struct's `#[repr(C)]` is checked by the offset assertion for
        // the one field that matters.
        unsafe impl $crate::ib::IbObject for $ty {
            type Raw = $raw;
        }
    };
    ($ty:ty, $head:ident: $raw:ty, $body:ident: $body_ty:ty) => {
        $crate::impl_ib_object!($ty, $head: $raw);
        // SAFETY: The offset is that of the field `$body`, whose type the
        // closure checks.
        unsafe impl $crate::ib::IbBody for $ty {
            type Body = $body_ty;
            const BODY_OFFSET: usize = {
                fn _check(o: &$ty) -> &$body_ty {
                    &o.$body
                }
                ::core::mem::offset_of!($ty, $body)
            };
        }
    };
}

/// Borrows the driver object around one of ib_core's objects.
///
/// # Safety
///
/// `raw` heads a live `T` (its body initialised, if it has one) that stays
/// live for `'a`.
pub(crate) unsafe fn object<'a, T: IbObject>(raw: *mut T::Raw) -> &'a T {
    // CAST: The C object is the head of `T` (`IbObject`'s promise).
    // SAFETY: Live for `'a` by the caller's promise.
    unsafe { &*raw.cast::<T>() }
}

/// Initialises the body of a new object in place.
///
/// # Safety
///
/// `raw` heads a `T` that ib_core allocated, whose body is uninitialised
/// memory that nothing else touches and that never moves.
unsafe fn init_body<T: IbBody>(raw: *mut T::Raw, init: impl PinInit<T::Body>) {
    let body = raw
        .cast::<u8>()
        .wrapping_add(T::BODY_OFFSET)
        .cast::<T::Body>();
    // SAFETY: The body's memory is ours and pinned (the caller's promise).
    let Ok(()) = unsafe { pin_init::raw_try_init(body, init) };
}

/// Initialises the body of a new object in place, then makes the object
/// reachable with `publish`; if that fails, drops the body again.
///
/// # Safety
///
/// As for [`init_body`].
unsafe fn init_and_publish<T: IbBody>(
    raw: *mut T::Raw,
    init: impl PinInit<T::Body>,
    publish: impl FnOnce(&T) -> Result,
) -> Result {
    // SAFETY: By the caller's promise.
    unsafe { init_body::<T>(raw, init) };
    // SAFETY: Initialised just above; ib_core keeps the object while the
    // create verb runs.
    let object = unsafe { object::<T>(raw) };
    publish(object).inspect_err(|_| {
        // SAFETY: Initialised above and never published.
        unsafe { drop_body::<T>(raw) };
    })
}

/// Drops the body of an object.
///
/// # Safety
///
/// The body was initialised by [`init_body`], is not dropped yet, and is
/// not used any more.
unsafe fn drop_body<T: IbBody>(raw: *mut T::Raw) {
    let body = raw
        .cast::<u8>()
        .wrapping_add(T::BODY_OFFSET)
        .cast::<T::Body>();
    // SAFETY: By the caller's promise.
    unsafe { core::ptr::drop_in_place(body) };
}

/// An RDMA device driver.
///
/// The optional verbs (`#[vtable]`: `HAS_*`) are left out of the ops table
/// when not implemented, and ib_core answers `EOPNOTSUPP` for them.
#[vtable]
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// The module the driver is built in (`LocalModule`).
    type Module: kernel::ModuleMetadata;
    /// The device: `#[repr(C)]`, headed by an [`IbDevice`], valid when
    /// zeroed (ib_core allocates it zeroed).
    type Device: IbObject<Raw = bindings::ib_device> + pin_init::Zeroable;
    /// The completion queue.
    type Cq: CqOps<Self>;
    /// The queue pair.
    type Qp: QpOps<Self>;
    /// The shared receive queue.
    type Srq: SrqOps<Self>;
    /// The address handle.
    type Ah: AhOps<Self>;
    /// The memory window.
    type Mw: MwOps<Self>;
    /// The memory region.
    type Mr: MrOps<Self>;

    /// `enum rdma_driver_id` of the driver.
    const DRIVER_ID: u32;
    /// The uverbs ABI version of the driver's user library.
    const UVERBS_ABI_VERSION: u32;
    /// The link type `rdma link add NAME type TYPE netdev DEV` creates.
    const LINK_TYPE: &'static CStr;

    /// The hardware counters' descriptions (`get_hw_stats`), in the order
    /// [`Driver::hw_stats`] fills them.
    fn stat_descs() -> &'static [bindings::rdma_stat_desc];

    /// `rdma link add NAME type LINK_TYPE netdev NDEV`.
    fn newlink(name: &CStr, ndev: &crate::sys::net::NetDevice) -> Result;
    /// `rdma link del`, and module exit, before ib_core unregisters the
    /// device: last chance to fail its QPs while their owners can see it.
    fn dellink(dev: &Self::Device);
    /// The device is registered.
    fn enabled(dev: &Self::Device);
    /// The device's last reference is gone; ib_core frees it after this.
    fn release(dev: &mut Self::Device);

    /// `.query_device`.
    fn query_device(dev: &Self::Device, attr: &mut bindings::ib_device_attr) -> Result;
    /// `.query_port`.
    fn query_port(dev: &Self::Device, port: u32, attr: &mut bindings::ib_port_attr) -> Result;
    /// `.query_pkey`.
    fn query_pkey(dev: &Self::Device, port: u32, index: u16) -> Result<u16>;
    /// `.get_port_immutable`.
    fn port_immutable(
        dev: &Self::Device,
        port: u32,
        immutable: &mut bindings::ib_port_immutable,
    ) -> Result;
    /// `.modify_device`: `mask` of `IB_DEVICE_MODIFY_*`.
    fn modify_device(
        _dev: &Self::Device,
        _mask: u32,
        _attr: &bindings::ib_device_modify,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
    /// `.modify_port`: `mask` of `IB_PORT_*` changes.
    fn modify_port(
        _dev: &Self::Device,
        _port: u32,
        _mask: u32,
        _attr: &bindings::ib_port_modify,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
    /// `.alloc_ucontext`: a process opened the device.
    fn alloc_ucontext(dev: &Self::Device) -> Result;
    /// `.dealloc_ucontext`.
    fn dealloc_ucontext(dev: &Self::Device);
    /// `.alloc_pd`.
    fn alloc_pd(dev: &Self::Device) -> Result;
    /// `.dealloc_pd`.
    fn dealloc_pd(dev: &Self::Device);
    /// `.get_hw_stats`: the counters' values, as many as
    /// [`Driver::stat_descs`] describes.
    fn hw_stats(dev: &Self::Device, values: &mut [u64]);
    /// `.process_mad`: answers the 256-byte MAD `input` into `out`;
    /// returns `IB_MAD_RESULT_*` bits.
    fn process_mad(
        _dev: &Self::Device,
        _port: u32,
        _input: &[u8; MAD_SIZE],
        _out: &mut [u8; MAD_SIZE],
    ) -> c_int {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
    /// `.advise_mr` (`ibv_advise_mr`), for the memory of PD `pd`.
    fn advise_mr(
        _dev: &Self::Device,
        _pd: usize,
        _advice: u32,
        _sges: &[bindings::ib_sge],
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
    /// Whether `.advise_mr` is offered on this kernel (checked when a
    /// device is created).
    fn advise_mr_supported() -> bool {
        true
    }
    /// `.attach_mcast`: QP joins the multicast group `mgid`.
    fn attach_mcast(_qp: &Self::Qp, _mgid: [u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
    /// `.detach_mcast`.
    fn detach_mcast(_qp: &Self::Qp, _mgid: [u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// Size of an IB MAD (`struct ib_mad`).
pub(crate) const MAD_SIZE: usize = 256;

/// The descriptions of a driver's `N` hardware counters, for a `static`.
pub(crate) struct StatDescs<const N: usize>([bindings::rdma_stat_desc; N]);

// SAFETY: Immutable; the pointers inside are to static strings.
unsafe impl<const N: usize> Sync for StatDescs<N> {}

impl<const N: usize> StatDescs<N> {
    /// The descriptions of counters with these sysfs names.
    pub(crate) const fn new(names: [&'static CStr; N]) -> Self {
        let mut descs = [bindings::rdma_stat_desc {
            name: core::ptr::null(),
            flags: 0,
            priv_: core::ptr::null(),
        }; N];
        let mut i = 0;
        while i < N {
            descs[i].name = kernel::str::as_char_ptr_in_const_context(names[i]);
            i += 1;
        }
        StatDescs(descs)
    }

    /// The descriptions, for [`Driver::stat_descs`].
    pub(crate) fn as_slice(&'static self) -> &'static [bindings::rdma_stat_desc] {
        &self.0
    }
}

/// The `ib_device_ops` trampolines of driver `D`.
pub(crate) struct Adapter<D: Driver>(PhantomData<D>);
