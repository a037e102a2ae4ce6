//! Memory windows: type 1 and type 2 binds with IBTA's checks (C10-72 to
//! C10-75, o10-36.2.2, o10-37.2.30, o10-37.2.40), the states rxe keeps
//! (type 1 Valid from allocation, type 2 Free until bound), remote access
//! through a window (key, PD, QP, access, the window's own range, zero
//! based addressing), invalidation, and the region bindings a bind changes.
use proptest::prelude::*;
use rxe_proto::abi::values::access::*;
use rxe_proto::proto::access::*;
use rxe_proto::proto::window::*;

const PD: usize = 0xffff_8880_0000_1000;
const OTHER_PD: usize = 0xffff_8880_0000_2000;
const QP: WindowUser = WindowUser { pd: PD, qpn: 17 };
const MR_IOVA: u64 = 0x7f00_0000_1000;
const MR_LEN: u64 = 0x4000;

fn region(access: u32) -> BindTarget {
    BindTarget {
        lkey: MemKey::new(0x33, 0x5a),
        pd: PD,
        access,
        extent: Extent::Range {
            iova: MR_IOVA,
            length: MR_LEN,
        },
    }
}

fn mw_key(key8: u8) -> MemKey {
    MemKey::new(MW_INDEX_MIN + 7, key8)
}

fn bind_req(w: &Window, addr: u64, length: u64, access: u32) -> BindRequest {
    BindRequest {
        addr,
        length,
        mr_lkey: MemKey::new(0x33, 0x5a).0,
        mw_rkey: w.rkey().0,
        new_rkey: (w.rkey().0 & !0xff) | u32::from(w.rkey().key8().wrapping_add(1)),
        access,
    }
}

const MR_ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND;

fn bound_type2(access: u32) -> Window {
    let mut w = Window::new(WindowType::Two, mw_key(1), PD);
    let req = bind_req(&w, MR_IOVA + 0x1000, 0x800, access);
    w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    w
}

#[test]
fn windows_use_the_indices_above_the_regions() {
    assert!(!names_window(MemKey::new(MR_INDEX_MAX, 0)));
    assert!(names_window(MemKey::new(MW_INDEX_MIN, 0)));
    assert!(names_window(MemKey::new(MW_INDEX_MAX, 0xff)));
    assert!(!names_window(MemKey::new(0, 0)));
}

#[test]
fn type_1_starts_valid_and_type_2_free() {
    assert_eq!(
        Window::new(WindowType::One, mw_key(0), PD).state(),
        WindowState::Valid
    );
    assert_eq!(
        Window::new(WindowType::Two, mw_key(0), PD).state(),
        WindowState::Free
    );
}

#[test]
fn a_bind_takes_the_new_consumer_key_and_grants_its_range() {
    let w = bound_type2(REMOTE_READ | REMOTE_WRITE);
    assert_eq!(w.rkey(), mw_key(2));
    assert_eq!(w.state(), WindowState::Valid);
    assert_eq!(w.bound_region(), Some(MemKey::new(0x33, 0x5a)));
    let (mr, at) = w
        .check(mw_key(2), QP, REMOTE_WRITE, MR_IOVA + 0x1100, 0x100)
        .unwrap();
    assert_eq!(mr, MemKey::new(0x33, 0x5a));
    assert_eq!(at, MR_IOVA + 0x1100);
    // The old key is stale.
    assert_eq!(
        w.check(mw_key(1), QP, REMOTE_READ, MR_IOVA + 0x1000, 8),
        Err(AccessError::StaleKey)
    );
}

#[test]
fn access_through_a_window_stays_inside_the_window_not_just_the_region() {
    let w = bound_type2(REMOTE_READ);
    // Inside the region, outside the window (rxe lets this through).
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, MR_IOVA, 8),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, MR_IOVA + 0x17f9, 8),
        Err(AccessError::OutOfBounds)
    );
    assert!(w
        .check(mw_key(2), QP, REMOTE_READ, MR_IOVA + 0x17f8, 8)
        .is_ok());
    // Wrap-around.
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, u64::MAX - 3, 8),
        Err(AccessError::OutOfBounds)
    );
}

#[test]
fn a_window_grants_only_its_own_access() {
    let w = bound_type2(REMOTE_READ);
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_WRITE, MR_IOVA + 0x1000, 8),
        Err(AccessError::NotPermitted)
    );
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_ATOMIC, MR_IOVA + 0x1000, 8),
        Err(AccessError::NotPermitted)
    );
}

#[test]
fn a_type_2_window_serves_only_its_qp_and_pd() {
    let w = bound_type2(REMOTE_READ);
    let other_qp = WindowUser { pd: PD, qpn: 18 };
    assert!(w
        .check(mw_key(2), other_qp, REMOTE_READ, MR_IOVA + 0x1000, 8)
        .is_err());
    let other_pd = WindowUser {
        pd: OTHER_PD,
        qpn: 17,
    };
    assert_eq!(
        w.check(mw_key(2), other_pd, REMOTE_READ, MR_IOVA + 0x1000, 8),
        Err(AccessError::WrongPd)
    );
}

#[test]
fn a_type_1_window_serves_any_qp_of_its_pd() {
    let mut w = Window::new(WindowType::One, mw_key(9), PD);
    let req = bind_req(&w, MR_IOVA, MR_LEN, REMOTE_READ);
    w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    let other_qp = WindowUser { pd: PD, qpn: 99 };
    assert!(w
        .check(mw_key(10), other_qp, REMOTE_READ, MR_IOVA, MR_LEN)
        .is_ok());
}

#[test]
fn a_zero_based_type_2_window_is_addressed_from_0() {
    let w = bound_type2(REMOTE_READ | ZERO_BASED);
    let (_, at) = w.check(mw_key(2), QP, REMOTE_READ, 0x10, 8).unwrap();
    assert_eq!(at, MR_IOVA + 0x1010);
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, 0x7f9, 8),
        Err(AccessError::OutOfBounds)
    );
}

#[test]
fn type_1_windows_cannot_be_zero_based() {
    let mut w = Window::new(WindowType::One, mw_key(1), PD);
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ | ZERO_BASED);
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::ZeroBasedType1)
    );
    assert_eq!(w.rkey(), mw_key(1));
}

#[test]
fn a_bound_type_2_window_cannot_be_bound_again_until_invalidated() {
    let mut w = bound_type2(REMOTE_READ);
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::WrongState)
    );
    let change = w.invalidate(mw_key(2), QP).unwrap();
    assert_eq!(change.released, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(w.state(), WindowState::Free);
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, MR_IOVA + 0x1000, 8),
        Err(AccessError::NotValid)
    );
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    let change = w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    assert_eq!(change.released, None);
    assert_eq!(change.bound, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(w.rkey(), mw_key(3));
}

#[test]
fn a_type_2_bind_needs_a_region_and_a_length() {
    let mut w = Window::new(WindowType::Two, mw_key(1), PD);
    let req = bind_req(&w, MR_IOVA, 0, REMOTE_READ);
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::NoRegion)
    );
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    assert_eq!(w.bind(QP, &req, None), Err(BindError::NoRegion));
}

#[test]
fn type_1_windows_rebind_and_unbind_with_length_0() {
    let mut w = Window::new(WindowType::One, mw_key(1), PD);
    let req = bind_req(&w, MR_IOVA, 0x100, REMOTE_READ);
    let c = w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    assert_eq!(c.bound, Some(MemKey::new(0x33, 0x5a)));
    let req = bind_req(&w, MR_IOVA + 0x100, 0x100, REMOTE_READ);
    let c = w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    assert_eq!(c.released, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(c.bound, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(
        w.check(w.rkey(), QP, REMOTE_READ, MR_IOVA, 8),
        Err(AccessError::OutOfBounds)
    );
    let req = bind_req(&w, 0, 0, 0);
    let c = w.bind(QP, &req, None).unwrap();
    assert_eq!(c.released, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(c.bound, None);
    assert_eq!(
        w.check(w.rkey(), QP, REMOTE_READ, MR_IOVA + 0x100, 8),
        Err(AccessError::NotValid)
    );
}

#[test]
fn type_1_windows_cannot_be_invalidated() {
    let mut w = Window::new(WindowType::One, mw_key(1), PD);
    assert_eq!(w.invalidate(mw_key(1), QP), Err(AccessError::NotValid));
}

#[test]
fn only_the_bound_qp_of_the_pd_invalidates_a_type_2_window() {
    let mut w = bound_type2(REMOTE_READ);
    let other_qp = WindowUser { pd: PD, qpn: 18 };
    assert_eq!(w.invalidate(mw_key(2), other_qp), Err(AccessError::WrongPd));
    let other_pd = WindowUser {
        pd: OTHER_PD,
        qpn: 17,
    };
    assert_eq!(w.invalidate(mw_key(2), other_pd), Err(AccessError::WrongPd));
    assert_eq!(w.state(), WindowState::Valid);
    assert!(w.invalidate(mw_key(2), QP).is_ok());
}

#[test]
fn destroying_its_qp_frees_a_type_2_window() {
    let mut w = bound_type2(REMOTE_READ);
    let other_qp = WindowUser { pd: PD, qpn: 18 };
    assert_eq!(w.qp_destroyed(other_qp), None);
    assert_eq!(w.state(), WindowState::Valid);
    let c = w.qp_destroyed(QP).unwrap();
    assert_eq!(c.released, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(w.state(), WindowState::Free);
    // A new QP with the same number inherits nothing.
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, MR_IOVA + 0x1000, 8),
        Err(AccessError::NotValid)
    );
    // Type 1 windows are not tied to a QP.
    let mut t1 = Window::new(WindowType::One, mw_key(5), PD);
    let req = bind_req(&t1, MR_IOVA, 8, REMOTE_READ);
    t1.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
    assert_eq!(t1.qp_destroyed(QP), None);
    assert!(t1.check(t1.rkey(), QP, REMOTE_READ, MR_IOVA, 8).is_ok());
}

#[test]
fn invalidation_needs_the_current_key() {
    let mut w = bound_type2(REMOTE_READ);
    assert_eq!(w.invalidate(mw_key(1), QP), Err(AccessError::StaleKey));
    assert_eq!(w.state(), WindowState::Valid);
}

#[test]
fn the_region_checks_of_a_bind() {
    let fresh = || Window::new(WindowType::Two, mw_key(1), PD);
    let cases: [(BindTarget, u64, u64, u32, BindError); 6] = [
        (
            BindTarget {
                pd: OTHER_PD,
                ..region(MR_ALL)
            },
            MR_IOVA,
            8,
            REMOTE_READ,
            BindError::WrongPd,
        ),
        (
            region(MR_ALL & !MW_BIND),
            MR_IOVA,
            8,
            REMOTE_READ,
            BindError::NoBindAccess,
        ),
        (
            region(MW_BIND | REMOTE_READ),
            MR_IOVA,
            8,
            REMOTE_WRITE,
            BindError::NeedsLocalWrite,
        ),
        (
            region(MW_BIND | REMOTE_READ),
            MR_IOVA,
            8,
            REMOTE_ATOMIC,
            BindError::NeedsLocalWrite,
        ),
        (
            region(MR_ALL),
            MR_IOVA - 1,
            8,
            REMOTE_READ,
            BindError::OutOfRegion,
        ),
        (
            region(MR_ALL),
            MR_IOVA + MR_LEN - 7,
            8,
            REMOTE_READ,
            BindError::OutOfRegion,
        ),
    ];
    for (target, addr, length, access, err) in cases {
        let mut w = fresh();
        let req = bind_req(&w, addr, length, access);
        assert_eq!(w.bind(QP, &req, Some(&target)), Err(err), "{target:?}");
        assert_eq!(w.state(), WindowState::Free);
        assert_eq!(w.rkey(), mw_key(1));
    }
}

#[test]
fn a_bind_with_a_stale_key_or_region_key_fails() {
    let mut w = Window::new(WindowType::Two, mw_key(4), PD);
    let mut req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    req.mw_rkey = mw_key(3).0;
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::StaleKey)
    );
    let mut req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    req.mr_lkey ^= 1;
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::StaleRegionKey)
    );
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ | ON_DEMAND << 10);
    assert_eq!(
        w.bind(QP, &req, Some(&region(MR_ALL))),
        Err(BindError::Unsupported)
    );
}

#[test]
fn a_qp_of_another_pd_cannot_bind() {
    let mut w = Window::new(WindowType::One, mw_key(1), PD);
    let req = bind_req(&w, MR_IOVA, 8, REMOTE_READ);
    let other = WindowUser {
        pd: OTHER_PD,
        qpn: 17,
    };
    assert_eq!(
        w.bind(other, &req, Some(&region(MR_ALL))),
        Err(BindError::WrongPd)
    );
}

#[test]
fn a_deallocated_window_grants_nothing_and_releases_its_region() {
    let mut w = bound_type2(REMOTE_READ);
    let c = w.deallocate();
    assert_eq!(c.released, Some(MemKey::new(0x33, 0x5a)));
    assert_eq!(w.state(), WindowState::Invalid);
    assert_eq!(
        w.check(mw_key(2), QP, REMOTE_READ, MR_IOVA + 0x1000, 8),
        Err(AccessError::NotValid)
    );
    assert_eq!(w.invalidate(mw_key(2), QP), Err(AccessError::NotValid));
}

proptest! {
    /// Whatever a peer asks, an access a window grants lies inside the
    /// window and inside the region it is bound to.
    #[test]
    fn granted_accesses_lie_inside_the_window(
        off in 0u64..MR_LEN,
        len in 1u64..MR_LEN,
        va in any::<u64>(),
        n in 0u64..0x5000,
        zero_based in any::<bool>(),
    ) {
        let length = len.min(MR_LEN - off);
        let mut w = Window::new(WindowType::Two, mw_key(1), PD);
        let zb = if zero_based { ZERO_BASED } else { 0 };
        let req = bind_req(&w, MR_IOVA + off, length, REMOTE_READ | zb);
        w.bind(QP, &req, Some(&region(MR_ALL))).unwrap();
        if let Ok((_, at)) = w.check(w.rkey(), QP, REMOTE_READ, va, n) {
            prop_assert!(at >= MR_IOVA + off);
            prop_assert!(at + n <= MR_IOVA + off + length);
        }
    }
}
