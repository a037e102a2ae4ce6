//! QP attributes: rxe's checks on modify_qp, how attributes are stored
//! (PSN masking, rd_atomic rounding), the ACK timeout and MTU, capacity
//! checks and the UDP source port.
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::qp_attr::*;

const LIMITS: QpLimits = QpLimits {
    max_path_mtu: 5,
    max_rd_atomic: 128,
    gid_tbl_len: 1024,
    supported_access: 0x3ff0_030f | 0x10,
};
const CAPS: CapLimits = CapLimits {
    max_wr: 1 << 20,
    max_send_sge: 32,
    max_recv_sge: 32,
    max_inline_data: 512,
};

fn req(mask: u32) -> ModifyRequest {
    ModifyRequest {
        mask,
        port_num: 1,
        alt_port_num: 1,
        ..Default::default()
    }
}

fn check(attrs: &QpAttrs, t: QpType, r: &ModifyRequest) -> Result<(), QpAttrError> {
    attrs.check(t, r, &LIMITS, &CAPS, false)
}

#[test]
fn mask_bits_outside_the_standard_set_are_unsupported() {
    let a = QpAttrs::default();
    assert_eq!(
        check(&a, QpType::Rc, &req(1 << 21)),
        Err(QpAttrError::UnsupportedMask)
    );
    assert_eq!(
        check(&a, QpType::Rc, &req(1 << 25)),
        Err(QpAttrError::UnsupportedMask)
    );
    assert_eq!(check(&a, QpType::Rc, &req(mask::STANDARD)), Ok(()));
}

#[test]
fn each_rxe_rule_refuses_exactly_its_bad_value() {
    let a = QpAttrs::default();
    let cases: Vec<(ModifyRequest, ModifyRequest)> = vec![
        (
            ModifyRequest {
                port_num: 1,
                ..req(mask::PORT)
            },
            ModifyRequest {
                port_num: 2,
                ..req(mask::PORT)
            },
        ),
        (
            ModifyRequest {
                path_mtu: 5,
                ..req(mask::PATH_MTU)
            },
            ModifyRequest {
                path_mtu: 6,
                ..req(mask::PATH_MTU)
            },
        ),
        (
            ModifyRequest {
                timeout: 31,
                ..req(mask::TIMEOUT)
            },
            ModifyRequest {
                timeout: 32,
                ..req(mask::TIMEOUT)
            },
        ),
        (
            ModifyRequest {
                max_rd_atomic: 128,
                ..req(mask::MAX_QP_RD_ATOMIC)
            },
            ModifyRequest {
                max_rd_atomic: 129,
                ..req(mask::MAX_QP_RD_ATOMIC)
            },
        ),
        (
            ModifyRequest {
                av_sgid_index: 1024,
                ..req(mask::AV)
            },
            ModifyRequest {
                av_sgid_index: 1025,
                ..req(mask::AV)
            },
        ),
        (
            ModifyRequest {
                access: 0xf,
                ..req(mask::ACCESS_FLAGS)
            },
            ModifyRequest {
                access: 1 << 6,
                ..req(mask::ACCESS_FLAGS)
            },
        ),
        (
            ModifyRequest {
                cap: QpCaps {
                    max_send_sge: 32,
                    ..Default::default()
                },
                ..req(mask::CAP)
            },
            ModifyRequest {
                cap: QpCaps {
                    max_send_sge: 33,
                    ..Default::default()
                },
                ..req(mask::CAP)
            },
        ),
        (
            ModifyRequest {
                qp_state: 6,
                ..req(mask::STATE)
            },
            ModifyRequest {
                qp_state: 7,
                ..req(mask::STATE)
            },
        ),
    ];
    for (good, bad) in cases {
        assert_eq!(check(&a, QpType::Rc, &good), Ok(()), "{good:?}");
        assert_eq!(
            check(&a, QpType::Rc, &bad),
            Err(QpAttrError::Invalid),
            "{bad:?}"
        );
    }
    // The same bad value is fine when its mask bit is not set.
    let unmasked = ModifyRequest {
        timeout: 40,
        path_mtu: 9,
        port_num: 7,
        ..req(0)
    };
    assert_eq!(check(&a, QpType::Rc, &unmasked), Ok(()));
}

#[test]
fn alternate_path_rules() {
    let a = QpAttrs::default();
    let mut r = req(mask::ALT_PATH);
    assert_eq!(check(&a, QpType::Rc, &r), Ok(()));
    r.alt.timeout = 32;
    assert_eq!(check(&a, QpType::Rc, &r), Err(QpAttrError::Invalid));
    r.alt.timeout = 0;
    r.alt_port_num = 0;
    assert_eq!(check(&a, QpType::Rc, &r), Err(QpAttrError::Invalid));
}

#[test]
fn access_flags_only_on_connected_qps() {
    let a = QpAttrs::default();
    let r = req(mask::ACCESS_FLAGS);
    assert_eq!(check(&a, QpType::Rc, &r), Ok(()));
    assert_eq!(check(&a, QpType::Uc, &r), Ok(()));
    assert_eq!(check(&a, QpType::Ud, &r), Err(QpAttrError::Invalid));
    assert_eq!(check(&a, QpType::Gsi, &r), Err(QpAttrError::Invalid));
}

#[test]
fn a_draining_sqd_may_only_go_to_error() {
    let a = QpAttrs {
        state: QpState::Sqd,
        sq_draining: true,
        ..Default::default()
    };
    let to = |s: QpState| ModifyRequest {
        qp_state: s as u32,
        ..req(mask::STATE)
    };
    assert_eq!(
        check(&a, QpType::Rc, &to(QpState::Rts)),
        Err(QpAttrError::Invalid)
    );
    assert_eq!(check(&a, QpType::Rc, &to(QpState::Err)), Ok(()));
    let drained = QpAttrs {
        sq_draining: false,
        ..a
    };
    assert_eq!(check(&drained, QpType::Rc, &to(QpState::Rts)), Ok(()));
}

#[test]
fn apply_stores_what_the_mask_selects() {
    let mut a = QpAttrs::default();
    let r = ModifyRequest {
        qp_state: QpState::Rtr as u32,
        path_mtu: 3,
        dest_qpn: 0x11,
        rq_psn: 0x1ab_cdef,
        sq_psn: 0xff_ffff,
        max_rd_atomic: 3,
        max_dest_rd_atomic: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 6,
        min_rnr_timer: 12,
        qkey: 0x1111,
        ..req(mask::STATE
            | mask::PATH_MTU
            | mask::DEST_QPN
            | mask::RQ_PSN
            | mask::SQ_PSN
            | mask::MAX_QP_RD_ATOMIC
            | mask::MAX_DEST_RD_ATOMIC
            | mask::TIMEOUT
            | mask::RETRY_CNT
            | mask::RNR_RETRY
            | mask::MIN_RNR_TIMER)
    };
    a.apply(&r);
    assert_eq!(a.state, QpState::Rtr);
    assert_eq!(a.path_mtu_bytes(), Some(1024));
    assert_eq!(a.dest_qpn, 0x11);
    // PSNs keep their low 24 bits, as rxe masks with BTH_PSN_MASK.
    assert_eq!(a.rq_psn, Psn::new(0xab_cdef));
    assert_eq!(a.sq_psn, Psn::new(0xff_ffff));
    assert_eq!(a.max_rd_atomic, 4);
    assert_eq!(a.max_dest_rd_atomic, 0);
    assert_eq!(a.ack_timeout_ns(), Some(4096 << 14));
    assert_eq!((a.retry_cnt, a.rnr_retry, a.min_rnr_timer), (7, 6, 12));
    // QKEY was not in the mask.
    assert_eq!(a.qkey, 0);
    assert_eq!(QpAttrs::default().ack_timeout_ns(), None);
    assert_eq!(QpAttrs::default().path_mtu_bytes(), None);
}

#[test]
fn rd_atomic_rounding() {
    let got: Vec<u32> = [0, 1, 2, 3, 5, 64, 65, 128]
        .iter()
        .map(|&v| round_rd_atomic(v))
        .collect();
    assert_eq!(got, vec![0, 1, 2, 4, 8, 64, 128, 128]);
    assert_eq!(round_rd_atomic(u32::MAX), 1 << 31);
}

#[test]
fn caps_are_checked_as_rxe_checks_them() {
    let ok = QpCaps {
        max_send_wr: 1 << 20,
        max_recv_wr: 1 << 20,
        max_send_sge: 32,
        max_recv_sge: 32,
        max_inline_data: 512,
    };
    assert_eq!(check_caps(&ok, &CAPS, false), Ok(()));
    for bad in [
        QpCaps {
            max_send_wr: (1 << 20) + 1,
            ..ok
        },
        QpCaps {
            max_recv_wr: (1 << 20) + 1,
            ..ok
        },
        QpCaps {
            max_send_sge: 33,
            ..ok
        },
        QpCaps {
            max_recv_sge: 33,
            ..ok
        },
        QpCaps {
            max_inline_data: 513,
            ..ok
        },
    ] {
        assert_eq!(
            check_caps(&bad, &CAPS, false),
            Err(QpAttrError::Invalid),
            "{bad:?}"
        );
    }
    // With an SRQ the receive side is not the QP's.
    assert_eq!(
        check_caps(
            &QpCaps {
                max_recv_wr: u32::MAX,
                max_recv_sge: 99,
                ..ok
            },
            &CAPS,
            true
        ),
        Ok(())
    );
}

#[test]
fn udp_source_port_matches_the_kernel_formula() {
    // Flow label given: its low 14 bits xor its high 6, in 0xC000..=0xFFFF.
    assert_eq!(
        udp_source_port(0x12345, 0, 0),
        ((0x12345 & 0x3fff) ^ (0x12345 >> 14)) as u16 | 0xc000
    );
    // No flow label: from the QP numbers, with the kernel's sequential folds.
    let v = 17u64 * 0x12_3456;
    let v = v ^ (v >> 20);
    let v = v ^ (v >> 40);
    let fl = (v as u32) & 0xf_ffff;
    assert_eq!(
        udp_source_port(0, 17, 0x12_3456),
        ((fl & 0x3fff) ^ (fl >> 14)) as u16 | 0xc000
    );
    for (l, r) in [(16, 17), (0xff_ffff, 0xff_ffff), (1, 0)] {
        assert!(udp_source_port(0, l, r) >= 0xc000);
        assert_eq!(
            udp_source_port(0, l, r),
            udp_source_port(0, r, l),
            "symmetric"
        );
    }
}
