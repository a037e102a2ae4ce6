// SPDX-License-Identifier: GPL-2.0

//! The receive entry point: every UDP datagram to port 4791 in a namespace
//! with an rxe device arrives here, in softirq context.

use crate::sys::{bindings, net};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

/// Datagrams dropped because no queue pair could take them.
static DROPPED_NO_QP: AtomicU64 = AtomicU64::new(0);

/// The UDP tunnel `encap_rcv` callback.
///
/// This version has no queue pairs yet, so no packet has a destination: each
/// is counted and freed. Returning 0 tells UDP the skb was consumed.
pub(crate) unsafe extern "C" fn udp_encap_recv(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    DROPPED_NO_QP.fetch_add(1, Ordering::Relaxed);
    // SAFETY: UDP hands the skb over to the encapsulation handler.
    unsafe { net::drop_skb(skb) };
    0
}

/// Number of datagrams received and dropped for lack of a queue pair.
pub(crate) fn dropped_no_qp() -> u64 {
    DROPPED_NO_QP.load(Ordering::Relaxed)
}
