//! The responder remembers as many READ/atomic requests as the device
//! advertises (`max_qp_rd_atom`): with that many READs outstanding and one
//! response lost, the requester's go-back-N asks for all of them again and
//! every one is answered from the responder's resources.
mod common;

use common::*;
use rxe_proto::proto::aeth::RnrTimer;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{Requester, RequesterAction, RequesterConfig, RequesterEvent};
use rxe_proto::proto::responder::resources::MAX_RESPONDER_RESOURCES;
use rxe_proto::proto::responder::{AccessFlags, Responder, ResponderConfig};
use rxe_proto::proto::transport::{CompletionStatus, Mtu};

/// `outstanding` single-packet READs of 8 bytes, the response to the first
/// lost once; returns each WQE's completion status and the data read.
fn reads_with_first_response_lost(
    outstanding: u32,
    max_dest_rd_atomic: u32,
) -> Vec<(u64, CompletionStatus, Vec<u8>)> {
    let mtu = Mtu::MTU_1024;
    let mut rcfg = RequesterConfig::new(mtu, Psn::new(500));
    rcfg.max_rd_atomic = outstanding;
    rcfg.retry_cnt = 3;
    rcfg.timeout_usecs = 1000;
    let mut req = Requester::<256>::new(rcfg);
    let mut resp = Responder::<MAX_RESPONDER_RESOURCES>::new(ResponderConfig {
        mtu,
        rq_psn: Psn::new(500),
        min_rnr_timer: RnrTimer::new(1),
        max_dest_rd_atomic,
        access: AccessFlags::ALL,
    });
    let mut env = Env::new(8 * outstanding as usize);
    for (i, b) in env.mem.iter_mut().enumerate() {
        *b = (i * 13 + 1) as u8;
    }
    let mut ignore = |_a: RequesterAction| {};
    for id in 0..u64::from(outstanding) {
        let wqe = SendWqe {
            id,
            op: WqeOp::Read {
                va: MR_VA + 8 * id,
                rkey: MR_RKEY,
            },
            length: 8,
        };
        req.post(wqe, &mut ignore).unwrap();
    }
    let mut local = vec![vec![0u8; 8]; outstanding as usize];
    let mut done = Vec::new();
    let mut lost_one = false;
    let mut pending = req_step(&mut req, RequesterEvent::Transmit { budget: 1000 });
    for _round in 0..100 {
        let mut acted = false;
        while !pending.is_empty() {
            let mut next = Vec::new();
            for a in std::mem::take(&mut pending) {
                match a {
                    RequesterAction::Transmit(p) => {
                        acted = true;
                        let acts = resp_step(&mut resp, &p.header, &mut env);
                        for (r, data) in responses(&acts, &env) {
                            if !lost_one {
                                lost_one = true;
                                continue;
                            }
                            for a in req_step(&mut req, RequesterEvent::Response(r)) {
                                if let RequesterAction::PlaceReadData {
                                    wqe_id,
                                    offset,
                                    len,
                                } = a
                                {
                                    let dst = &mut local[wqe_id as usize];
                                    dst[offset as usize..(offset + len) as usize]
                                        .copy_from_slice(&data[..len as usize]);
                                }
                                next.push(a);
                            }
                        }
                    }
                    RequesterAction::Complete(c) => {
                        done.push((c.wqe_id, c.status, local[c.wqe_id as usize].clone()))
                    }
                    _ => {}
                }
            }
            next.extend(req_step(
                &mut req,
                RequesterEvent::Transmit { budget: 1000 },
            ));
            pending = next;
        }
        if done.len() == outstanding as usize {
            break;
        }
        if !acted || req.retry_timer_armed() {
            pending = req_step(&mut req, RequesterEvent::RetryTimerExpired);
        }
    }
    done
}

#[test]
fn as_many_reads_as_advertised_survive_one_lost_response() {
    for outstanding in [16, 64, MAX_RESPONDER_RESOURCES as u32] {
        let done = reads_with_first_response_lost(outstanding, outstanding);
        assert_eq!(
            done.len(),
            outstanding as usize,
            "{outstanding} READs: not all completed"
        );
        for (i, (id, status, data)) in done.iter().enumerate() {
            assert_eq!(*id, i as u64);
            assert_eq!(
                *status,
                CompletionStatus::Success,
                "{outstanding} READs: WQE {id}"
            );
            let want: Vec<u8> = (0..8).map(|k| ((8 * i + k) * 13 + 1) as u8).collect();
            assert_eq!(data, &want, "{outstanding} READs: WQE {id} data");
        }
    }
}

#[test]
fn the_device_advertises_what_the_responder_remembers() {
    // max_dest_rd_atomic is accepted up to the device's max_qp_rd_atom,
    // which is this constant (src/params.rs); 128 is what rxe advertises.
    assert_eq!(MAX_RESPONDER_RESOURCES, 128);
}
