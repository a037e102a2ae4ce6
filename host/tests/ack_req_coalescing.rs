//! AckReq coalescing (`RequesterConfig::coalesce_ack_req`, issue 16): a
//! SEND or WRITE whose last packet a later packet follows in the same
//! transmit step does not ask for an ACK, unless `ack_req_every` or a full
//! window asks; the step's last packet always asks, READs and atomics keep
//! theirs, and one ACK of the last completes every message before it.
//! Under loss a stream of small messages still completes every message
//! (the twin simulation, coalescing on as in the kernel).

#[path = "sim/twin.rs"]
mod twin;

use rxe_proto::proto::aeth::Syndrome;
use rxe_proto::proto::psn::Psn;
use rxe_proto::proto::replay::{SendWqe, WqeOp};
use rxe_proto::proto::requester::{
    Requester, RequesterAction, RequesterConfig, RequesterEvent, ResponseOp, ResponsePacket,
    TxPacket,
};
use rxe_proto::proto::transport::Mtu;
use twin::{run, Loss, TwinConfig, SQ_WINDOW, TIMEOUT_67MS};

fn requester(coalesce: bool, every: u32) -> Requester<64> {
    let mut cfg = RequesterConfig::new(Mtu::MTU_1024, Psn::new(100));
    cfg.ack_req_every = every;
    cfg.coalesce_ack_req = coalesce;
    Requester::new(cfg)
}

fn wqe(id: u64, op: WqeOp, length: u32) -> SendWqe {
    SendWqe { id, op, length }
}

fn write(id: u64, length: u32) -> SendWqe {
    wqe(
        id,
        WqeOp::Write {
            va: 0x1000,
            rkey: 1,
            imm: None,
        },
        length,
    )
}

fn read(id: u64, length: u32) -> SendWqe {
    wqe(
        id,
        WqeOp::Read {
            va: 0x8000,
            rkey: 9,
        },
        length,
    )
}

fn post(req: &mut Requester<64>, w: SendWqe) {
    req.post(w, &mut |_| panic!("post acted")).unwrap();
}

/// A requester (`coalesce`, AckReq every `every` packets) with `count`
/// WRITEs of `len` bytes posted.
fn with_writes(coalesce: bool, every: u32, count: u64, len: u32) -> Requester<64> {
    let mut req = requester(coalesce, every);
    for id in 0..count {
        post(&mut req, write(id, len));
    }
    req
}

fn transmit(req: &mut Requester<64>, budget: u32) -> Vec<TxPacket> {
    let mut acts = Vec::new();
    req.step_at(0, RequesterEvent::Transmit { budget }, &mut |a| {
        acts.push(a)
    });
    acts.iter()
        .filter_map(|a| match a {
            RequesterAction::Transmit(p) => Some(*p),
            _ => None,
        })
        .collect()
}

/// The PSNs (offsets from 100) of the packets that ask for an ACK.
fn asking(pkts: &[TxPacket]) -> Vec<u32> {
    pkts.iter()
        .filter(|p| p.header.ack_req)
        .map(|p| p.header.psn.distance_from(Psn::new(100)))
        .collect()
}

#[test]
fn one_step_of_small_writes_asks_once_at_its_end() {
    let mut req = with_writes(true, 32, 8, 64);
    let pkts = transmit(&mut req, 64);
    assert_eq!(pkts.len(), 8);
    assert_eq!(asking(&pkts), vec![7]);
    // Without coalescing every message's end asks, as rxe's requester.
    let mut req = with_writes(false, 32, 8, 64);
    assert_eq!(asking(&transmit(&mut req, 64)), (0..8).collect::<Vec<_>>());
}

#[test]
fn the_last_packet_of_each_step_asks() {
    let mut req = with_writes(true, 32, 8, 64);
    // A budget of 3: steps of 3, 3 and 2 packets, each ending with a
    // request for an ACK, so none waits for a later post to be asked.
    assert_eq!(asking(&transmit(&mut req, 3)), vec![2]);
    assert_eq!(asking(&transmit(&mut req, 3)), vec![5]);
    assert_eq!(asking(&transmit(&mut req, 3)), vec![7]);
}

#[test]
fn the_count_still_asks_every_so_many_packets() {
    // 40 one-packet WRITEs, AckReq every 8 packets: the 8th, 16th, ...
    // and the last, counted across the coalesced ends.
    let mut req = with_writes(true, 8, 40, 64);
    let pkts = transmit(&mut req, 64);
    assert_eq!(pkts.len(), 40);
    assert_eq!(asking(&pkts), vec![7, 15, 23, 31, 39]);
    // Two-packet WRITEs: the count goes on through them.
    let mut req = with_writes(true, 8, 6, 2048);
    assert_eq!(asking(&transmit(&mut req, 64)), vec![7, 11]);
}

#[test]
fn reads_keep_their_ack_req_and_a_write_before_one_does_not() {
    let mut req = requester(true, 32);
    post(&mut req, write(0, 64));
    post(&mut req, read(1, 64));
    post(&mut req, write(2, 64));
    post(&mut req, write(3, 64));
    let pkts = transmit(&mut req, 64);
    assert_eq!(pkts.len(), 4);
    assert_eq!(asking(&pkts), vec![1, 3]);
}

#[test]
fn one_ack_of_the_last_completes_every_message() {
    let mut req = with_writes(true, 32, 5, 64);
    assert_eq!(asking(&transmit(&mut req, 64)), vec![4]);
    let mut done = Vec::new();
    req.step_at(
        1000,
        RequesterEvent::Response(ResponsePacket {
            psn: Psn::new(104),
            op: ResponseOp::Acknowledge,
            syndrome: Some(Syndrome::ACK),
            payload_len: 0,
        }),
        &mut |a| {
            if let RequesterAction::Complete(c) = a {
                done.push(c.wqe_id);
            }
        },
    );
    assert_eq!(done, vec![0, 1, 2, 3, 4]);
    assert!(!req.has_unacked());
}

#[test]
fn a_stream_of_small_messages_completes_under_loss() {
    for loss in [
        Loss::None,
        Loss::Random(0.01),
        Loss::Random(0.05),
        Loss::AckOnly(0.05),
        Loss::Tail(0.1),
        Loss::Reorder(0.25, 2_000_000),
    ] {
        for seed in 0..4 {
            let cfg = TwinConfig {
                outstanding: SQ_WINDOW,
                msg_len: 256,
                messages: 2000,
                timeout_usecs: TIMEOUT_67MS,
                ..TwinConfig::pingpong(9100 + seed, loss)
            };
            let r = run(&cfg);
            assert!(r.error.is_none(), "seed {seed} {loss:?}: {:?}", r.error);
            assert_eq!(r.completed, r.messages, "seed {seed} {loss:?}");
        }
    }
}
