//! The performance management agent: the three PMA Gets rxe answers
//! (ClassPortInfo, PortCounters, PortCountersExtended) at the offsets
//! ib_core's sysfs `counters/` reads, the other attributes and classes
//! answered "unsupported" without a reply, and the wrong port refused.
use rxe_proto::proto::perf_mgmt::*;

const COUNTERS: PortCounters = PortCounters {
    sent_bytes: 4 * 1000 + 3,
    rcvd_bytes: 4 * 2000,
    sent_pkts: 77,
    rcvd_pkts: 88,
    link_downed: 3,
};

fn get(class: u8, method: u8, attr: u16) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = class;
    m[2] = 1;
    m[3] = method;
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[24 + 41] = 1; // PortSelect, as ib_core's sysfs sets it
    m
}

fn be64(out: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(out[at..at + 8].try_into().unwrap())
}

#[test]
fn port_counters_extended_gives_data_in_words_and_packets() {
    let mut out = [0xffu8; MAD_SIZE];
    let r = answer(1, &get(0x04, 0x01, 0x001d), &COUNTERS, &mut out);
    assert_eq!(r, result::SUCCESS | result::REPLY);
    // ib_pma_portcounters_ext at data + 40: xmit_data @8, rcv_data @16,
    // xmit_packets @24, rcv_packets @32.
    assert_eq!(be64(&out, 64 + 8), 1000);
    assert_eq!(be64(&out, 64 + 16), 2000);
    assert_eq!(be64(&out, 64 + 24), 77);
    assert_eq!(be64(&out, 64 + 32), 88);
    assert!(out[..64].iter().all(|&b| b == 0), "header not zeroed");
}

#[test]
fn port_counters_gives_link_downed_saturated_at_255() {
    let mut out = [0u8; MAD_SIZE];
    let r = answer(1, &get(0x04, 0x01, 0x0012), &COUNTERS, &mut out);
    assert_eq!(r, result::SUCCESS | result::REPLY);
    assert_eq!(out[64 + 5], 3);
    let many = PortCounters {
        link_downed: 1000,
        ..COUNTERS
    };
    answer(1, &get(0x04, 0x01, 0x0012), &many, &mut out);
    assert_eq!(out[64 + 5], 255);
}

#[test]
fn class_port_info_advertises_the_extended_counters() {
    let mut out = [0u8; MAD_SIZE];
    let r = answer(1, &get(0x04, 0x01, 0x0001), &COUNTERS, &mut out);
    assert_eq!(r, result::SUCCESS | result::REPLY);
    assert_eq!(u16::from_be_bytes([out[66], out[67]]), 1 << 9);
}

#[test]
fn other_attributes_methods_and_classes_are_unsupported_without_reply() {
    let mut out = [0u8; MAD_SIZE];
    let r = answer(1, &get(0x04, 0x01, 0x0013), &COUNTERS, &mut out);
    assert_eq!(r, result::SUCCESS);
    assert_eq!(u16::from_be_bytes([out[4], out[5]]), 0x000c);
    // A Set of PortCounters, and a CM MAD (class 7) on its way to ib_cm.
    for (class, method) in [(0x04, 0x02), (0x07, 0x03)] {
        let r = answer(1, &get(class, method, 0x0012), &COUNTERS, &mut out);
        assert_eq!(r, result::SUCCESS, "class {class:#x} method {method:#x}");
        assert_eq!(u16::from_be_bytes([out[4], out[5]]), 0x0008);
        assert!(out[6..].iter().all(|&b| b == 0));
    }
}

#[test]
fn another_port_is_refused_and_the_output_left_alone() {
    let mut out = [0x5au8; MAD_SIZE];
    assert_eq!(
        answer(2, &get(0x04, 0x01, 0x001d), &COUNTERS, &mut out),
        result::FAILURE
    );
    assert!(out.iter().all(|&b| b == 0x5a));
}
