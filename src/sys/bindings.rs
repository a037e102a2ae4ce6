// SPDX-License-Identifier: GPL-2.0

//! Bindgen output for the RDMA and networking headers in `src/bindings_input.h`.
//!
//! This module may not be directly used outside `sys`. Please abstract or
//! re-export the needed symbols in `sys` instead.

#[allow(
    unreachable_pub,
    unnecessary_transmutes,
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    use kernel::ffi;
    type __kernel_size_t = usize;
    type __kernel_ssize_t = isize;
    type __kernel_ptrdiff_t = isize;

    include!("../generated/bindings.rs");
}

pub(crate) use generated::*;
