//! The lossy-link benchmark the kernel driver will be held to: for each loss
//! rate, how many packets the requester sends per packet a lossless link
//! needs, and the simulated time per message.
//!
//! Then the VM loss benchmark's twin (`tests/sim/twin.rs`): 64 KiB SENDs
//! with the kernel's AckReq spacing, in-host limits and jiffy timers, the
//! 67 ms QP timeout, time per message relative to lossless.
//!
//! `cargo run --example lossy_link_report [seeds-per-rate]`
#[path = "../tests/sim/mod.rs"]
mod sim;
#[path = "../tests/sim/twin.rs"]
mod twin;

use rxe_proto::proto::transport::Mtu;
use sim::{run, SimConfig};
use twin::{Loss, TwinConfig, TwinResult};

fn twin_table(seeds: u64, outstanding: usize) {
    println!();
    println!(
        "Twin: 64 KiB SENDs, {outstanding} posted at a time, MTU 1024, timeout 67 ms, {seeds} seeds x 200"
    );
    println!(
        "  loss                           | sent/needed | probes | rtt go-backs | QP timeouts | us/msg  | vs lossless"
    );
    let mut base = 0.0;
    for loss in [
        Loss::None,
        Loss::Random(0.001),
        Loss::Random(0.01),
        Loss::Random(0.05),
        Loss::Bursty(0.01, 4.0),
        Loss::AckOnly(0.01),
        Loss::AckOnly(0.05),
        Loss::Tail(0.1),
        Loss::Retransmissions(0.01, 0.25),
    ] {
        let mut t = TwinResult::default();
        for s in 0..seeds {
            t.add(&twin::run(&TwinConfig {
                outstanding,
                ..TwinConfig::pingpong(7000 + s, loss)
            }));
        }
        if loss == Loss::None {
            base = t.us_per_msg();
        }
        println!(
            "  {:30} | {:11.3} | {:6} | {:12} | {:11} | {:7.1} | {:5.2}x",
            loss.describe(),
            t.sent_pkts as f64 / t.needed_pkts as f64,
            t.probes,
            t.rtt_timeouts,
            t.timeouts,
            t.us_per_msg(),
            t.us_per_msg() / base
        );
    }
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    println!("RC go-back-N over a simulated 10 Gb/s link, 5 us one-way, duplicates = loss/4,");
    println!("reorder = loss/2 (held back up to 10 us), 40 mixed messages per run, MTU 256..4096,");
    println!("retry timeout 262 us, retry_cnt 7, {seeds} seeds per loss rate");
    println!();
    println!(
        "  loss | req pkts sent/needed | resp pkts/msg | retries/run | timeouts/run | sim us/msg"
    );
    println!(
        "-------+----------------------+---------------+-------------+--------------+-----------"
    );
    for loss in [0.0, 0.01, 0.05, 0.10, 0.20, 0.30] {
        let (mut sent, mut needed, mut resp, mut retries, mut timeouts, mut ns, mut msgs) =
            (0, 0, 0, 0, 0, 0, 0);
        for seed in 0..seeds {
            let r = run(&SimConfig {
                seed: seed + (loss * 1e6) as u64,
                loss,
                dup: loss / 4.0,
                reorder: loss / 2.0,
                jitter_ns: 10_000,
                messages: 40,
                mtu: Mtu::new(256 << (seed % 5)).unwrap(),
                retry_cnt: 7,
                rnr_retry: 7,
                rq_starve: false,
                not_resident: 0.0,
            });
            sent += r.sent_pkts;
            needed += r.needed_pkts;
            resp += r.response_pkts;
            retries += r.retries;
            timeouts += r.timeouts;
            ns += r.sim_ns;
            msgs += r.messages as u64;
        }
        println!(
            "{:5.0}% | {:20.3} | {:13.2} | {:11.2} | {:12.2} | {:9.1}",
            loss * 100.0,
            sent as f64 / needed as f64,
            resp as f64 / msgs as f64,
            retries as f64 / seeds as f64,
            timeouts as f64 / seeds as f64,
            ns as f64 / 1000.0 / msgs as f64
        );
    }
    let twin_seeds = seeds.div_ceil(25);
    twin_table(twin_seeds, 1);
    twin_table(twin_seeds, twin::SQ_WINDOW);
}
