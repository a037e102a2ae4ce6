//! Fast registration (IB_WR_REG_MR, LOCAL_INV, remote invalidation): the
//! region states of rxe's `rxe_mr.c` (Free after `alloc_mr`, Valid after
//! REG_MR, Free again after an invalidation), the consumer key byte, the
//! completion status of each failure, and the page-list translation.
use proptest::prelude::*;
use rxe_proto::abi::values::access::*;
use rxe_proto::abi::values::WcStatus;
use rxe_proto::proto::access::*;

const PD: usize = 0xffff_8880_0000_1000;
const OTHER_PD: usize = 0xffff_8880_0000_2000;
const RW: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

fn fresh() -> FastReg {
    FastReg::new(MemKey::new(0x1234, 0x10), PD)
}

fn map_4k(iova: u64, length: u64, pages: usize) -> PageMap {
    PageMap::new(12, iova, length, pages).unwrap()
}

fn registered(key8: u8) -> FastReg {
    let mut mr = fresh();
    let key = MemKey::new(0x1234, key8).0;
    mr.register(PD, key, RW, map_4k(0x10_0000, 3 * 4096, 3))
        .unwrap();
    mr
}

#[test]
fn alloc_mr_leaves_the_region_free_and_unusable() {
    let mr = fresh();
    assert_eq!(mr.state(), MrState::Free);
    assert_eq!(mr.key(), MemKey::new(0x1234, 0x10));
    // A Free region admits no access, local or remote, even at its key.
    for u in [KeyUse::Local, KeyUse::Remote] {
        assert_eq!(
            mr.check(mr.key(), u, PD, 0, 0, 0),
            Err(AccessError::NotValid)
        );
    }
}

#[test]
fn reg_mr_sets_the_consumer_key_access_and_map() {
    let mut mr = fresh();
    let new = MemKey::new(0x1234, 0x11);
    mr.register(PD, new.0, RW, map_4k(0x10_0000, 8192, 2))
        .unwrap();
    assert_eq!(mr.state(), MrState::Valid);
    assert_eq!(mr.key(), new);
    assert_eq!(mr.access(), RW);
    assert_eq!(
        mr.check(new, KeyUse::Remote, PD, REMOTE_WRITE, 0x10_0000, 8192),
        Ok(0)
    );
    assert_eq!(
        mr.check(new, KeyUse::Local, PD, LOCAL_WRITE, 0x10_1000, 16),
        Ok(0x1000)
    );
    // The previous consumer key no longer works.
    assert_eq!(
        mr.check(
            MemKey::new(0x1234, 0x10),
            KeyUse::Remote,
            PD,
            REMOTE_READ,
            0x10_0000,
            1
        ),
        Err(AccessError::StaleKey)
    );
}

#[test]
fn reg_mr_may_keep_the_same_consumer_key() {
    let mut mr = fresh();
    mr.register(PD, mr.key().0, RW, map_4k(0, 4096, 1)).unwrap();
    assert_eq!(mr.state(), MrState::Valid);
}

#[test]
fn reg_mr_requires_a_free_region_the_same_pd_and_index() {
    // Valid: register again without invalidating first.
    let mut mr = registered(0x20);
    let before = mr;
    assert_eq!(
        mr.register(PD, MemKey::new(0x1234, 0x21).0, RW, map_4k(0, 4096, 1)),
        Err(FastRegError::NotFree)
    );
    assert_eq!(mr, before, "a failed REG_MR changes nothing");

    let mut mr = fresh();
    assert_eq!(
        mr.register(OTHER_PD, MemKey::new(0x1234, 1).0, RW, map_4k(0, 4096, 1)),
        Err(FastRegError::WrongPd)
    );
    // Only the low byte is the consumer's.
    assert_eq!(
        mr.register(PD, MemKey::new(0x1235, 1).0, RW, map_4k(0, 4096, 1)),
        Err(FastRegError::WrongIndex)
    );
    // Remote write without local write, and unsupported bits.
    assert_eq!(
        mr.register(
            PD,
            MemKey::new(0x1234, 1).0,
            REMOTE_WRITE,
            map_4k(0, 4096, 1)
        ),
        Err(FastRegError::Access(AccessError::NeedsLocalWrite))
    );
    assert_eq!(
        mr.register(PD, MemKey::new(0x1234, 1).0, ON_DEMAND, map_4k(0, 4096, 1)),
        Err(FastRegError::Access(AccessError::Unsupported))
    );
    assert_eq!(mr.state(), MrState::Free);

    mr.deallocate();
    assert_eq!(
        mr.register(PD, MemKey::new(0x1234, 1).0, RW, map_4k(0, 4096, 1)),
        Err(FastRegError::Deallocated)
    );
}

#[test]
fn failed_local_ops_complete_with_loc_qp_op_err_and_remote_with_rem_inv_req_err() {
    for e in [
        FastRegError::NotFree,
        FastRegError::WrongIndex,
        FastRegError::WrongPd,
        FastRegError::StaleKey,
        FastRegError::UnknownKey,
        FastRegError::NotFastReg,
    ] {
        assert_eq!(e.wc_status(Invalidation::Local), WcStatus::LocQpOpErr);
        assert_eq!(e.wc_status(Invalidation::Remote), WcStatus::RemInvReqErr);
    }
}

#[test]
fn invalidation_frees_the_region_and_the_key_stops_working() {
    let mut mr = registered(0x30);
    let key = mr.key();
    assert_eq!(mr.invalidate(PD, key.0), Ok(()));
    assert_eq!(mr.state(), MrState::Free);
    // The old key now fails the access check (a local access completes
    // with LOC_PROT_ERR, a remote one is NAKed with a remote access error).
    assert_eq!(
        mr.check(key, KeyUse::Remote, PD, REMOTE_READ, 0x10_0000, 1),
        Err(AccessError::NotValid)
    );
    // Invalidating a Free region again is allowed (rxe), and REG_MR works
    // again with a new consumer key.
    assert_eq!(mr.invalidate(PD, key.0), Ok(()));
    let next = MemKey::new(key.index(), key.key8().wrapping_add(1));
    mr.register(PD, next.0, RW, map_4k(0x20_0000, 100, 1))
        .unwrap();
    assert_eq!(
        mr.check(next, KeyUse::Remote, PD, REMOTE_WRITE, 0x20_0000, 100),
        Ok(0)
    );
}

#[test]
fn invalidation_needs_the_current_key_and_pd() {
    let mut mr = registered(0x40);
    let before = mr;
    assert_eq!(
        mr.invalidate(PD, MemKey::new(0x1234, 0x41).0),
        Err(FastRegError::StaleKey)
    );
    assert_eq!(
        mr.invalidate(PD, MemKey::new(0x999, 0x40).0),
        Err(FastRegError::UnknownKey)
    );
    assert_eq!(
        mr.invalidate(OTHER_PD, MemKey::new(0x1234, 0x40).0),
        Err(FastRegError::WrongPd)
    );
    assert_eq!(mr, before);
    mr.deallocate();
    assert_eq!(
        mr.invalidate(PD, MemKey::new(0x1234, 0x40).0),
        Err(FastRegError::Deallocated)
    );
}

#[test]
fn valid_region_checks_pd_access_and_bounds() {
    let mr = registered(0x50);
    let k = mr.key();
    assert_eq!(
        mr.check(k, KeyUse::Remote, OTHER_PD, REMOTE_READ, 0x10_0000, 1),
        Err(AccessError::WrongPd)
    );
    assert_eq!(
        mr.check(k, KeyUse::Remote, PD, REMOTE_ATOMIC, 0x10_0000, 8),
        Err(AccessError::NotPermitted)
    );
    assert_eq!(
        mr.check(k, KeyUse::Remote, PD, REMOTE_READ, 0x10_0000 - 1, 1),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        mr.check(k, KeyUse::Remote, PD, REMOTE_READ, 0x10_0000, 3 * 4096 + 1),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        mr.check(
            k,
            KeyUse::Remote,
            PD,
            REMOTE_READ,
            0x10_0000 + 3 * 4096 - 1,
            1
        ),
        Ok(3 * 4096 - 1)
    );
    assert_eq!(
        mr.check(MemKey::new(0x77, 0x50), KeyUse::Remote, PD, 0, 0x10_0000, 1),
        Err(AccessError::UnknownKey)
    );
}

#[test]
fn page_sizes_are_the_device_page_size_cap() {
    assert_eq!(fast_reg_page_shift(4096), Ok(12));
    assert_eq!(fast_reg_page_shift(2 << 20), Ok(21));
    assert_eq!(fast_reg_page_shift(1 << 31), Ok(31));
    for bad in [0, 512, 2048, 4095, 6144, 1 << 32] {
        assert_eq!(fast_reg_page_shift(bad), Err(FastRegError::BadMapping));
    }
}

#[test]
fn page_map_must_hold_the_range() {
    // 0x...800 into the first 4 KiB page: two pages hold 4096 bytes.
    assert!(PageMap::new(12, 0x1800, 4096, 2).is_ok());
    assert_eq!(
        PageMap::new(12, 0x1800, 4096, 1),
        Err(FastRegError::BadMapping)
    );
    assert_eq!(
        PageMap::new(12, u64::MAX - 10, 100, 1),
        Err(FastRegError::BadMapping)
    );
    assert_eq!(
        PageMap::new(12, 0, 4096, MAX_FAST_REG_PAGES as usize + 1),
        Err(FastRegError::BadMapping)
    );
    assert_eq!(PageMap::new(11, 0, 1, 1), Err(FastRegError::BadMapping));
    assert!(PageMap::new(12, 0, 512 * 4096, 512).is_ok());
    // A ULP may move the iova after mapping (rpcrdma puts its XID in the
    // upper half): the offset in the first page must stay.
    let m = PageMap::new(12, 0x1800, 5000, 2).unwrap();
    let moved = m.at_iova(0xabcd_0000_0000_1800).unwrap();
    assert_eq!(moved.first_page_offset(), 0x800);
    assert_eq!(m.at_iova(0x1f00), Err(FastRegError::BadMapping));
}

#[test]
fn iova_translates_to_page_and_offset() {
    // 16 KiB pages, region starting 0x100 into page 0.
    let m = PageMap::new(14, 0x4_0100, 40_000, 3).unwrap();
    assert_eq!(m.first_page_offset(), 0x100);
    let chunks: Vec<_> = m.chunks(0, 40_000).collect();
    assert_eq!(
        chunks,
        vec![
            PageChunk {
                page: 0,
                offset: 0x100,
                len: 16384 - 0x100
            },
            PageChunk {
                page: 1,
                offset: 0,
                len: 16384
            },
            PageChunk {
                page: 2,
                offset: 0,
                len: 40_000 - (2 * 16384 - 0x100)
            },
        ]
    );
    // An access in the middle of page 1.
    let c: Vec<_> = m.chunks(16384, 10).collect();
    assert_eq!(
        c,
        vec![PageChunk {
            page: 1,
            offset: 0x100,
            len: 10
        }]
    );
}

proptest! {
    /// Every access the check admits splits into chunks inside the page
    /// list and inside one page, covering exactly the bytes asked for, at
    /// the addresses the page list says.
    #[test]
    fn admitted_accesses_stay_in_the_page_list(
        shift in 12u32..=22,
        pages in 1usize..=16,
        first in any::<u64>(),
        length_frac in 0u64..=1000,
        iova_high in any::<u32>(),
        va_frac in 0u64..=1000,
        len_frac in 0u64..=1000,
    ) {
        let page = 1u64 << shift;
        let first = first % page;
        let capacity = pages as u64 * page - first;
        let length = capacity * length_frac / 1000;
        let iova = (u64::from(iova_high) << 32) | first;
        prop_assume!(iova.checked_add(length).is_some());
        let map = PageMap::new(shift, iova, length, pages).unwrap();
        let mut mr = fresh();
        mr.register(PD, MemKey::new(0x1234, 9).0, RW, map).unwrap();
        let off = length * va_frac / 1000;
        let len = (length - off) * len_frac / 1000;
        let va = iova + off;
        let got = mr.check(mr.key(), KeyUse::Remote, PD, REMOTE_READ, va, len);
        prop_assert_eq!(got, Ok(off));
        let mut total = 0u64;
        for c in map.chunks(off, len) {
            prop_assert!(c.page < pages);
            prop_assert!(c.len >= 1 && c.offset as u64 + c.len as u64 <= page);
            // The byte's address: page base of page 0 is iova rounded down.
            let addr = (iova & !(page - 1)) + c.page as u64 * page + c.offset as u64;
            prop_assert_eq!(addr, va + total);
            total += c.len as u64;
        }
        prop_assert_eq!(total, len);
        // One byte past the end is refused.
        prop_assert_eq!(
            mr.check(mr.key(), KeyUse::Remote, PD, REMOTE_READ, iova + length, 1),
            Err(AccessError::OutOfBounds)
        );
    }
}
