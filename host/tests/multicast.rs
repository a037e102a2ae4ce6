//! UD multicast: which GIDs are groups, the Ethernet address of a group
//! (RFC 1112 for IPv4, RFC 2464 for IPv6), and attach/detach with rxe's
//! semantics and limits (a repeated attach succeeds, detaching a
//! non-member fails, 56 QPs per group, 8192 groups, 0x70000 attachments).
use rxe_proto::proto::multicast::*;

fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&[a, b, c, d]);
    g
}

fn v6(last: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x0e;
    g[12..].copy_from_slice(&last);
    g
}

#[test]
fn multicast_gids_are_ipv6_ff_and_ipv4_mapped_class_d() {
    assert!(is_multicast_gid(&v4(239, 1, 2, 3)));
    assert!(is_multicast_gid(&v4(224, 0, 0, 1)));
    assert!(!is_multicast_gid(&v4(10, 0, 0, 1)));
    assert!(!is_multicast_gid(&v4(240, 0, 0, 1)));
    assert!(is_multicast_gid(&v6([0, 0, 0, 1])));
    let mut unicast = [0u8; 16];
    unicast[0] = 0xfe;
    unicast[1] = 0x80;
    assert!(!is_multicast_gid(&unicast));
    // An IPv4-mapped unicast address is not multicast even with a
    // multicast-looking byte elsewhere.
    let mut mapped = v4(10, 0, 0, 1);
    mapped[0] = 0;
    assert!(!is_multicast_gid(&mapped));
}

#[test]
fn ethernet_addresses_follow_the_ip_version() {
    // 239.129.2.3: the top bit of the second byte is not carried.
    assert_eq!(
        ethernet_address(&v4(239, 129, 2, 3)),
        [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]
    );
    assert_eq!(
        ethernet_address(&v6([0x12, 0x34, 0x56, 0x78])),
        [0x33, 0x33, 0x12, 0x34, 0x56, 0x78]
    );
}

#[test]
fn a_group_needs_a_multicast_gid() {
    assert_eq!(
        Group::new(v4(10, 0, 0, 1)),
        Err(MulticastError::NotMulticast)
    );
    assert!(Group::new(v4(239, 0, 0, 1)).unwrap().is_empty());
}

#[test]
fn attach_is_idempotent_and_detach_keeps_order() {
    let mut count = MemberCount::default();
    let mut g = Group::new(v4(239, 0, 0, 1)).unwrap();
    assert_eq!(g.attach(17, &mut count), Ok(true));
    assert_eq!(g.attach(18, &mut count), Ok(true));
    assert_eq!(g.attach(17, &mut count), Ok(false));
    assert_eq!(g.attach(19, &mut count), Ok(true));
    assert_eq!(g.members(), &[17, 18, 19]);
    assert_eq!(count.members, 3);
    assert_eq!(g.detach(18, &mut count), Ok(()));
    assert_eq!(g.members(), &[17, 19]);
    assert_eq!(g.detach(18, &mut count), Err(MulticastError::NotAttached));
    assert_eq!(count.members, 2);
    g.detach(17, &mut count).unwrap();
    g.detach(19, &mut count).unwrap();
    assert!(g.is_empty());
    assert_eq!(count.members, 0);
}

#[test]
fn a_group_holds_at_most_56_qps() {
    let mut count = MemberCount::default();
    let mut g = Group::new(v6([0, 0, 0, 9])).unwrap();
    for qpn in 0..MAX_GROUP_MEMBERS as u32 {
        assert_eq!(g.attach(100 + qpn, &mut count), Ok(true));
    }
    assert_eq!(g.attach(999, &mut count), Err(MulticastError::Full));
    // A member attaching again is still fine when the group is full.
    assert_eq!(g.attach(100, &mut count), Ok(false));
    assert_eq!(count.members, MAX_GROUP_MEMBERS as u32);
    g.detach(130, &mut count).unwrap();
    assert_eq!(g.attach(999, &mut count), Ok(true));
}

#[test]
fn device_limits_on_groups_and_attachments() {
    let mut count = MemberCount {
        groups: MAX_GROUPS - 1,
        members: MAX_TOTAL_MEMBERS - 1,
    };
    assert_eq!(count.add_group(), Ok(()));
    assert_eq!(count.add_group(), Err(MulticastError::Full));
    count.remove_group();
    assert_eq!(count.add_group(), Ok(()));
    let mut g = Group::new(v4(239, 0, 0, 2)).unwrap();
    assert_eq!(g.attach(1, &mut count), Ok(true));
    assert_eq!(g.attach(2, &mut count), Err(MulticastError::Full));
    assert_eq!(count.members, MAX_TOTAL_MEMBERS);
}
