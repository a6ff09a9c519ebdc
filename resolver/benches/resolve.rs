//! Lookups per second of `Resolver::resolve_batch` against websim's DNS server on
//! loopback: batches of 10,000 distinct names, none asked twice (no cache hits).
//!
//! Run (the workspace's one profile, `release`; the resolver and the server share
//! the process and its cores):
//!
//! ```text
//! CARGO_TARGET_DIR=$HOME/.cache/polycrawl/target \
//!     cargo bench --profile release -p resolver --bench resolve [-- CONCURRENCY]
//! ```
//!
//! It prints lookups per second (names answered per second) for each round and
//! their median, with the machine's CPU model and core count. CONCURRENCY defaults
//! to the config default, 256.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use resolver::{Config, Resolver};
use spool::protocol::Resolution;
use websim::dns::{DnsServer, Zone};

/// Names per measured batch.
const BATCH: u32 = 10_000;
/// Measured rounds, each on fresh names.
const ROUNDS: u32 = 5;
/// A first, unmeasured round warms up sockets and allocations.
const WARMUP: u32 = 1_000;

fn main() {
    let concurrency: u32 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(Config::default().max_concurrent);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(bench(concurrency));
}

async fn bench(concurrency: u32) {
    let total = WARMUP + BATCH * ROUNDS;
    let mut zone = Zone::new(300);
    for i in 0..total {
        let [_, b, c, d] = i.to_be_bytes();
        zone.insert(&name(i), Ipv4Addr::new(127, b, c, d.max(1)));
    }
    let server = DnsServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), Arc::new(zone))
        .await
        .expect("start websim's DNS server");
    let config = Config {
        name_servers: vec![server.local_addr()],
        max_concurrent: concurrency,
        ..Config::default()
    };
    let resolver = Resolver::new(&config).expect("a resolver");

    let names = |from: u32, n: u32| (from..from + n).map(name).collect::<Vec<_>>();
    let warm = resolver.resolve_batch(names(0, WARMUP)).await;
    assert_eq!(failures(&warm), 0, "warm-up failed");

    println!(
        "machine: {} ({} cores)",
        test_support::proc::cpu_model(),
        test_support::proc::cores()
    );
    println!(
        "resolver: {BATCH} distinct names per batch, max_concurrent {concurrency}, UDP to websim DNS on 127.0.0.1"
    );
    let mut rates = Vec::new();
    for round in 0..ROUNDS {
        let batch = names(WARMUP + round * BATCH, BATCH);
        let started = Instant::now();
        let answers = resolver.resolve_batch(batch).await;
        let took = started.elapsed();
        let failed = failures(&answers);
        let rate = f64::from(BATCH) / took.as_secs_f64();
        println!(
            "round {round}: {BATCH} names in {:.3} s = {rate:.0} lookups/s ({failed} not resolved)",
            took.as_secs_f64()
        );
        assert_eq!(failed, 0, "every name is in the zone");
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "resolve_batch: median {:.0} lookups/s (min {:.0}, max {:.0}) over {ROUNDS} rounds",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
    let stats = server.stats();
    println!(
        "server answered {} over UDP, {} over TCP; peak queries in flight {}",
        stats.udp_responses,
        stats.tcp_responses,
        resolver.stats().peak_in_flight
    );
}

fn name(i: u32) -> String {
    format!("host-{i}.bench.test")
}

fn failures(answers: &[spool::protocol::HostAnswer]) -> usize {
    answers
        .iter()
        .filter(|a| !matches!(a.result, Resolution::Addresses { .. }))
        .count()
}
