//! The key table's decisions: registration access flags, key layout, the
//! lookup checks in rxe's order, bounds (with wrap-around), and splitting an
//! access into per-page chunks.
use proptest::prelude::*;
use rxe_proto::abi::values::access::*;
use rxe_proto::proto::access::*;

const PD: usize = 0xffff_8880_0000_1000;

fn user_region(iova: u64, length: u64, access: u32) -> RegionKeys {
    let key = MemKey::new(7, 0x5a);
    RegionKeys {
        lkey: key,
        rkey: key,
        pd: PD,
        access,
        extent: Extent::Range { iova, length },
    }
}

#[test]
fn registration_access_follows_rxe_and_the_spec() {
    assert_eq!(check_registration_access(0), Ok(0));
    assert_eq!(
        check_registration_access(LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC),
        Ok(LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC)
    );
    assert_eq!(check_registration_access(REMOTE_READ), Ok(REMOTE_READ));
    assert_eq!(
        check_registration_access(REMOTE_WRITE),
        Err(AccessError::NeedsLocalWrite)
    );
    assert_eq!(
        check_registration_access(REMOTE_ATOMIC),
        Err(AccessError::NeedsLocalWrite)
    );
    // ODP is for user memory only (below); zero-based is for windows
    // only; HUGETLB is not in rxe's set.
    for bad in [ON_DEMAND, ZERO_BASED, HUGETLB, 1 << 10, 1 << 31] {
        assert_eq!(
            check_registration_access(bad | LOCAL_WRITE),
            Err(AccessError::Unsupported),
            "{bad:#x}"
        );
    }
    // Optional bits are accepted and dropped.
    assert_eq!(
        check_registration_access(RELAXED_ORDERING | LOCAL_WRITE),
        Ok(LOCAL_WRITE)
    );
}

#[test]
fn keys_are_index_and_consumer_byte() {
    let k = MemKey::new(0x12345, 0xab);
    assert_eq!(k.0, 0x0123_45ab);
    assert_eq!(k.index(), 0x12345);
    assert_eq!(k.key8(), 0xab);
    assert!(k.names_region());
    assert!(!MemKey::new(0, 1).names_region());
    // rxe_param.h: RXE_MAX_MR_INDEX = DEFAULT_MAX_VALUE >> 1, MW above it.
    assert_eq!(MR_INDEX_MAX, (1 << 20) >> 1);
    assert_eq!(MW_INDEX_MIN, MR_INDEX_MAX + 1);
    assert!(MemKey::new(MR_INDEX_MAX, 0).names_region());
    assert!(!MemKey::new(MW_INDEX_MIN, 0).names_region());
}

#[test]
fn lookup_checks_come_in_rxe_order() {
    let r = user_region(0x1000, 0x3000, LOCAL_WRITE | REMOTE_READ);
    let key = r.lkey;
    let ok = r.check(key, KeyUse::Remote, PD, REMOTE_READ, 0x1000, 0x3000);
    assert_eq!(ok, Ok(0));
    assert_eq!(
        r.check(
            MemKey::new(8, 0x5a),
            KeyUse::Remote,
            PD,
            REMOTE_READ,
            0x1000,
            1
        ),
        Err(AccessError::UnknownKey)
    );
    assert_eq!(
        r.check(
            MemKey::new(7, 0x5b),
            KeyUse::Remote,
            PD,
            REMOTE_READ,
            0x1000,
            1
        ),
        Err(AccessError::StaleKey)
    );
    // A wrong PD is reported before the missing permission and the bad range.
    assert_eq!(
        r.check(key, KeyUse::Remote, PD + 64, REMOTE_WRITE, 0, 1 << 40),
        Err(AccessError::WrongPd)
    );
    assert_eq!(
        r.check(key, KeyUse::Remote, PD, REMOTE_WRITE, 0x1000, 1),
        Err(AccessError::NotPermitted)
    );
    assert_eq!(
        r.check(key, KeyUse::Remote, PD, REMOTE_ATOMIC, 0x1000, 8),
        Err(AccessError::NotPermitted)
    );
    assert_eq!(
        r.check(key, KeyUse::Local, PD, LOCAL_WRITE, 0x2fff, 0x1001),
        Ok(0x1fff)
    );
    assert_eq!(
        r.check(key, KeyUse::Local, PD, LOCAL_WRITE, 0x2fff, 0x1002),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        r.check(key, KeyUse::Local, PD, 0, 0xfff, 1),
        Err(AccessError::OutOfBounds)
    );
}

#[test]
fn lkey_and_rkey_are_checked_against_their_own_use() {
    let mut r = user_region(0, 100, LOCAL_WRITE | REMOTE_WRITE);
    r.rkey = MemKey::new(7, 0x99);
    assert_eq!(
        r.check(r.lkey, KeyUse::Remote, PD, REMOTE_WRITE, 0, 1),
        Err(AccessError::StaleKey)
    );
    assert_eq!(
        r.check(r.rkey, KeyUse::Local, PD, 0, 0, 1),
        Err(AccessError::StaleKey)
    );
    assert_eq!(
        r.check(r.rkey, KeyUse::Remote, PD, REMOTE_WRITE, 0, 1),
        Ok(0)
    );
}

#[test]
fn bounds_at_the_edges_of_the_address_space() {
    let top = user_region(u64::MAX - 15, 16, LOCAL_WRITE);
    let k = top.lkey;
    assert_eq!(top.check(k, KeyUse::Local, PD, 0, u64::MAX - 15, 16), Ok(0));
    assert_eq!(top.check(k, KeyUse::Local, PD, 0, u64::MAX, 1), Ok(15));
    assert_eq!(
        top.check(k, KeyUse::Local, PD, 0, u64::MAX, 2),
        Err(AccessError::OutOfBounds)
    );
    // Empty accesses: at the end is fine, past it is not.
    let r = user_region(0x1000, 0x10, 0);
    assert_eq!(r.check(r.lkey, KeyUse::Local, PD, 0, 0x1010, 0), Ok(0x10));
    assert_eq!(
        r.check(r.lkey, KeyUse::Local, PD, 0, 0x1011, 0),
        Err(AccessError::OutOfBounds)
    );
    // A DMA region takes any range that does not wrap.
    assert_eq!(
        Extent::Whole.offset_of(0xffff_8880_0000_0000, 4096),
        Ok(0xffff_8880_0000_0000)
    );
    assert_eq!(
        Extent::Whole.offset_of(u64::MAX, 2),
        Err(AccessError::OutOfBounds)
    );
}

#[test]
fn page_chunks_of_an_unaligned_region() {
    // Region starts 0x234 into its first 4 KiB page; access 0x1000 bytes
    // at offset 0xe00 → region bytes 0xe00..0x1e00 → page bytes
    // 0x1034..0x2034.
    let chunks: Vec<_> = PageChunks::new(0x234, 0xe00, 0x1000, 12).collect();
    assert_eq!(
        chunks,
        vec![
            PageChunk {
                page: 1,
                offset: 0x34,
                len: 0x1000 - 0x34
            },
            PageChunk {
                page: 2,
                offset: 0,
                len: 0x34
            },
        ]
    );
    assert_eq!(PageChunks::new(0, 0, 0, 12).count(), 0);
}

proptest! {
    /// Any in-bounds range is accepted at the right offset; any range that
    /// reaches outside is refused.
    #[test]
    fn bounds_agree_with_interval_arithmetic(
        iova in any::<u64>(),
        length in 0u64..1 << 40,
        va in any::<u64>(),
        len in 0u64..1 << 41,
    ) {
        let length = length.min(u64::MAX - iova);
        let r = user_region(iova, length, LOCAL_WRITE);
        let inside = va >= iova
            && (va as u128) + (len as u128) <= (iova as u128) + (length as u128);
        let got = r.check(r.lkey, KeyUse::Local, PD, 0, va, len);
        if inside {
            prop_assert_eq!(got, Ok(va - iova));
        } else {
            prop_assert_eq!(got, Err(AccessError::OutOfBounds));
        }
    }

    /// Chunks never cross a page, are non-empty, cover the access exactly
    /// once and in order.
    #[test]
    fn page_chunks_tile_the_access(
        first in 0u64..4096,
        offset in 0u64..1 << 24,
        len in 0u64..1 << 18,
        shift in 9u32..22,
    ) {
        let first = first % (1 << shift);
        let mut pos = first + offset;
        let mut total = 0;
        for c in PageChunks::new(first, offset, len, shift) {
            prop_assert!(c.len >= 1);
            prop_assert!(c.offset + c.len <= 1 << shift);
            prop_assert_eq!(((c.page as u64) << shift) + c.offset as u64, pos);
            pos += c.len as u64;
            total += c.len as u64;
        }
        prop_assert_eq!(total, len);
    }
}

#[test]
fn on_demand_is_for_user_memory_on_a_kernel_with_odp() {
    use rxe_proto::proto::access::check_user_registration_access;
    assert_eq!(
        check_user_registration_access(ON_DEMAND | LOCAL_WRITE | REMOTE_WRITE, true),
        Ok(ON_DEMAND | LOCAL_WRITE | REMOTE_WRITE)
    );
    assert_eq!(
        check_user_registration_access(ON_DEMAND | REMOTE_READ | RELAXED_ORDERING, true),
        Ok(ON_DEMAND | REMOTE_READ)
    );
    assert_eq!(
        check_user_registration_access(ON_DEMAND | LOCAL_WRITE, false),
        Err(AccessError::Unsupported)
    );
    // The other rules still hold with ON_DEMAND.
    assert_eq!(
        check_user_registration_access(ON_DEMAND | REMOTE_WRITE, true),
        Err(AccessError::NeedsLocalWrite)
    );
    assert_eq!(
        check_user_registration_access(ON_DEMAND | HUGETLB | LOCAL_WRITE, true),
        Err(AccessError::Unsupported)
    );
    // Without ON_DEMAND it is the plain check.
    assert_eq!(
        check_user_registration_access(LOCAL_WRITE, false),
        check_registration_access(LOCAL_WRITE)
    );
    // Fast registration never takes it.
    assert_eq!(
        check_registration_access(ON_DEMAND | LOCAL_WRITE),
        Err(AccessError::Unsupported)
    );
}
