//! PSN arithmetic and the IBTA comparison, including wrap-around.
use core::cmp::Ordering;
use proptest::prelude::*;
use rxe_proto::proto::psn::{Psn, PSN_MASK};

#[test]
fn wraps_at_24_bits() {
    assert_eq!(Psn::new(0xff_ffff).next(), Psn::new(0));
    assert_eq!(Psn::new(0).sub(1).get(), 0xff_ffff);
    assert_eq!(Psn::new(0x1_000_005).get(), 5);
}

#[test]
fn comparison_across_the_wrap() {
    let last = Psn::new(0xff_fffe);
    let first = Psn::new(1);
    assert_eq!(first.diff(last), 3);
    assert_eq!(last.diff(first), -3);
    assert!(last.before(first));
    assert!(first.after(last));
    assert_eq!(first.compare(first), Ordering::Equal);
    assert!(Psn::new(0).within(last, first));
    assert!(!Psn::new(2).within(last, first));
    assert_eq!(first.distance_from(last), 3);
}

#[test]
fn half_space_boundary() {
    let a = Psn::new(0);
    assert_eq!(Psn::new(0x7f_ffff).diff(a), 0x7f_ffff);
    assert_eq!(Psn::new(0x80_0000).diff(a), -0x80_0000);
}

proptest! {
    #[test]
    fn add_then_diff(base in 0u32..=PSN_MASK, n in 0u32..0x80_0000) {
        let p = Psn::new(base);
        prop_assert_eq!(p.add(n).diff(p), n as i32);
        prop_assert_eq!(p.add(n).sub(n), p);
        prop_assert_eq!(p.add(n).distance_from(p), n);
        prop_assert!(p.get() <= PSN_MASK && p.add(n).get() <= PSN_MASK);
    }

    #[test]
    fn antisymmetric(a in 0u32..=PSN_MASK, b in 0u32..=PSN_MASK) {
        let (a, b) = (Psn::new(a), Psn::new(b));
        if a.diff(b) != -0x80_0000 {
            prop_assert_eq!(a.diff(b), -b.diff(a));
        }
    }
}
