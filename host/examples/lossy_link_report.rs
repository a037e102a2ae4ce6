//! The lossy-link benchmark the kernel driver will be held to: for each loss
//! rate, how many packets the requester sends per packet a lossless link
//! needs, and the simulated time per message.
//!
//! `cargo run --example lossy_link_report [seeds-per-rate]`
#[path = "../tests/sim/mod.rs"]
mod sim;

use rxe_proto::proto::transport::Mtu;
use sim::{run, SimConfig};

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
}
