// SPDX-License-Identifier: GPL-2.0

//! Views of ib_core's attribute structs that hold pointers: an address
//! (`rdma_ah_attr`, whose source GID attribute ib_core resolved and holds
//! for the verb) and a QP's attributes (`ib_qp_attr`, with two of them).
//! The views dereference to the C structs for their plain fields.

use crate::sys::bindings;

/// The RoCE network type of a source GID: `RDMA_NETWORK_*`.
pub(crate) type NetworkType = u32;

/// An `rdma_ah_attr` of a verb.
///
/// # Invariants
///
/// `grh.sgid_attr` is null or a GID attribute that ib_core holds for as
/// long as the view is borrowed (the verb's duration).
#[repr(transparent)]
pub(crate) struct AhAttr(bindings::rdma_ah_attr);

impl AhAttr {
    /// Borrows an address of a verb.
    ///
    /// # Safety
    ///
    /// `raw` is live for `'a` and its `grh.sgid_attr` is null or held by
    /// ib_core for `'a`.
    pub(super) unsafe fn from_raw<'a>(raw: *const bindings::rdma_ah_attr) -> &'a Self {
        // CAST: Transparent wrapper.
        // SAFETY: By the caller's promise.
        unsafe { &*raw.cast::<Self>() }
    }

    /// Whether the address has a GRH (`IB_AH_GRH`), as RoCE needs.
    pub(crate) fn has_grh(&self) -> bool {
        u32::from(self.0.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0
    }

    /// The source GID and its network type, if ib_core resolved one.
    pub(crate) fn sgid(&self) -> Option<([u8; 16], NetworkType)> {
        let attr = self.0.grh.sgid_attr;
        if attr.is_null() {
            return None;
        }
        // SAFETY: Held by ib_core for the borrow (type invariant).
        Some(unsafe {
            (
                (*attr).gid.raw,
                bindings::rxe_glue_gid_attr_network_type(attr) as NetworkType,
            )
        })
    }

    /// The destination GID.
    pub(crate) fn dgid(&self) -> [u8; 16] {
        // SAFETY: Every member of `ib_gid` is plain bytes.
        unsafe { self.0.grh.dgid.raw }
    }

    /// The destination MAC (the `roce` member of the address union).
    pub(crate) fn dmac(&self) -> [u8; 6] {
        // SAFETY: Every member of the union is plain bytes.
        unsafe { self.0.__bindgen_anon_1.roce.dmac }
    }
}

impl core::ops::Deref for AhAttr {
    type Target = bindings::rdma_ah_attr;

    fn deref(&self) -> &bindings::rdma_ah_attr {
        &self.0
    }
}

/// An `ib_qp_attr` of `modify_qp`.
///
/// # Invariants
///
/// Its two addresses satisfy [`AhAttr`]'s invariant.
#[repr(transparent)]
pub(crate) struct QpAttr(bindings::ib_qp_attr);

impl QpAttr {
    /// Borrows the attributes of a `modify_qp`.
    ///
    /// # Safety
    ///
    /// `raw` is live for `'a`, and so are the source GID attributes of its
    /// addresses, if not null.
    pub(super) unsafe fn from_raw<'a>(raw: *const bindings::ib_qp_attr) -> &'a Self {
        // CAST: Transparent wrapper.
        // SAFETY: By the caller's promise.
        unsafe { &*raw.cast::<Self>() }
    }

    /// The primary path's address.
    pub(crate) fn ah_attr(&self) -> &AhAttr {
        // SAFETY: By the type invariant.
        unsafe { AhAttr::from_raw(&self.0.ah_attr) }
    }

    /// The alternate path's address.
    pub(crate) fn alt_ah_attr(&self) -> &AhAttr {
        // SAFETY: By the type invariant.
        unsafe { AhAttr::from_raw(&self.0.alt_ah_attr) }
    }
}

impl core::ops::Deref for QpAttr {
    type Target = bindings::ib_qp_attr;

    fn deref(&self) -> &bindings::ib_qp_attr {
        &self.0
    }
}
