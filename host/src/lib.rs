//! Host build of the driver's pure protocol layer.
//!
//! The sources live in `../src/proto` and `../src/abi`, shared verbatim with the kernel module;
//! this crate only gives `cargo test` a place to compile them.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[path = "../../src/abi/mod.rs"]
pub mod abi;
#[path = "../../src/proto/mod.rs"]
pub mod proto;
