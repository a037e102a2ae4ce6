//! A requester and a responder joined by a simulated link that drops,
//! duplicates and reorders packets and ACKs, over many seeds and loss rates,
//! with SEND/WRITE/READ/ATOMIC mixes, message sizes from 0 to several MTUs and
//! PSNs that wrap past 0xFFFFFF. Every message must be delivered exactly once,
//! in order, byte-identical; every atomic executed once with the right
//! original value; or the QP reaches ERROR only because retries ran out.
//!
//! `RXE_SIM_SEEDS` sets the seeds per loss rate (default 40).
#[path = "sim/mod.rs"]
mod sim;

use rxe_proto::proto::transport::Mtu;
use sim::{run, SimConfig, SimResult};

const LOSS_RATES: [f64; 6] = [0.0, 0.01, 0.05, 0.10, 0.20, 0.30];
const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

fn seeds() -> u64 {
    std::env::var("RXE_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40)
}

fn config(seed: u64, loss: f64, rq_starve: bool) -> SimConfig {
    SimConfig {
        seed,
        loss,
        dup: loss / 4.0,
        reorder: loss / 2.0,
        jitter_ns: 10_000,
        messages: 40,
        mtu: Mtu::new(MTUS[(seed % 5) as usize]).unwrap(),
        retry_cnt: 7,
        rnr_retry: 7,
        rq_starve,
        not_resident: 0.0,
    }
}

#[test]
fn every_message_exactly_once_at_every_loss_rate() {
    let n = seeds();
    eprintln!("loss   runs  pkts sent/needed  resp pkts  retries  rnr  sim us/msg");
    for (li, &loss) in LOSS_RATES.iter().enumerate() {
        let mut total = SimResult::default();
        for s in 0..n {
            let r = run(&config(1000 * li as u64 + s, loss, false));
            assert!(r.error.is_none());
            assert_eq!(r.completed, r.messages);
            total.sent_pkts += r.sent_pkts;
            total.needed_pkts += r.needed_pkts;
            total.response_pkts += r.response_pkts;
            total.retries += r.retries;
            total.rnr_naks += r.rnr_naks;
            total.sim_ns += r.sim_ns;
            total.messages += r.messages;
        }
        eprintln!(
            "{:4.0}%  {:4}  {:16.3}  {:9}  {:7}  {:3}  {:10.1}",
            loss * 100.0,
            n,
            total.sent_pkts as f64 / total.needed_pkts as f64,
            total.response_pkts,
            total.retries,
            total.rnr_naks,
            total.sim_ns as f64 / 1000.0 / total.messages as f64
        );
        if loss == 0.0 {
            assert_eq!(
                total.sent_pkts, total.needed_pkts,
                "no loss, no retransmission"
            );
            assert_eq!(total.retries, 0);
        }
    }
}

#[test]
fn finite_retries_end_in_error_only_by_exhaustion() {
    let mut errors = 0;
    for s in 0..seeds() * 2 {
        let mut cfg = config(50_000 + s, 0.30, s % 2 == 0);
        cfg.retry_cnt = (s % 3) as u8;
        cfg.rnr_retry = (s % 2) as u8;
        let r = run(&cfg);
        if r.error.is_some() {
            errors += 1;
        }
    }
    eprintln!(
        "finite retries at 30% loss: {errors} of {} runs ended in ERROR",
        seeds() * 2
    );
    assert!(
        errors > 0,
        "30% loss with retry_cnt <= 2 should exhaust retries sometimes"
    );
}

#[test]
fn receiver_not_ready_under_loss() {
    // Receive WQEs trickle in, so SENDs meet RNR NAKs, at several loss rates.
    for (li, &loss) in LOSS_RATES.iter().enumerate() {
        let mut rnr = 0;
        let mut retries = 0;
        for s in 0..seeds().div_ceil(2) {
            let r = run(&config(20_000 + 1000 * li as u64 + s, loss, true));
            assert!(r.error.is_none());
            rnr += r.rnr_naks;
            retries += r.retries;
        }
        if loss == 0.0 {
            assert!(rnr > 0);
            assert_eq!(retries, 0, "RNR alone must not consume retry_cnt");
        }
    }
}

/// On-demand paging: the responder finds the memory of a packet not
/// resident now and then (10% or 30% of its checks) and answers with an
/// RNR NAK, at the first packet of a message or in its middle, for SEND,
/// WRITE, READ and atomics alike, with and without loss. Every message is
/// still delivered exactly once, byte-identical (the sim checks each one),
/// each atomic executed once, and the QP never fails: the requester takes
/// every such NAK as "send it again after the timer".
#[test]
fn not_resident_memory_is_rnr_naked_and_sent_again() {
    let n = seeds().min(20);
    for (li, &loss) in [0.0, 0.05].iter().enumerate() {
        for (pi, &p) in [0.1, 0.3].iter().enumerate() {
            let mut faults = 0;
            let mut rnr = 0;
            for s in 0..n {
                let mut cfg = config(50_000 + 1000 * (2 * li + pi) as u64 + s, loss, false);
                cfg.not_resident = p;
                // Every fault costs an RNR retry: unlimited, as an ODP user sets.
                cfg.rnr_retry = 7;
                let r = run(&cfg);
                assert!(
                    r.error.is_none(),
                    "seed {s} loss {loss} p {p}: {:?}",
                    r.error
                );
                assert_eq!(r.completed, r.messages, "seed {s} loss {loss} p {p}");
                faults += r.faults;
                rnr += r.rnr_naks;
            }
            eprintln!("loss {loss} not_resident {p}: {faults} faults, {rnr} RNR NAKs received");
            assert!(faults > 0, "the checks said no at least once");
            if loss == 0.0 {
                // Without loss every refusal reaches the requester as one NAK.
                assert_eq!(rnr, faults, "loss {loss} p {p}");
            }
        }
    }
}
