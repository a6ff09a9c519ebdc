//! Shared test helpers: websim's DNS server on loopback with a small zone, a name
//! server that never answers, and resolver configs that point only at them (never
//! at the system's name servers).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use resolver::Config;
use spool::protocol::{HostAnswer, NegativeKind, Resolution};
use tokio::net::UdpSocket;
use websim::dns::{DnsServer, Zone};

/// The address `name-<i>.test` resolves to.
pub fn addr_of(i: u32) -> Ipv4Addr {
    let [_, b, c, d] = i.to_be_bytes();
    Ipv4Addr::new(127, b, c, d.max(1))
}

/// A DNS server for `name-0.test` .. `name-<n-1>.test` (one address each) plus
/// `multi.test` (two addresses), every answer with `ttl`.
pub async fn dns_server(n: u32, ttl: u32) -> DnsServer {
    let mut zone = Zone::new(ttl);
    for i in 0..n {
        zone.insert(&format!("name-{i}.test"), addr_of(i));
    }
    zone.insert("multi.test", Ipv4Addr::new(127, 9, 0, 1));
    zone.insert("multi.test", Ipv4Addr::new(127, 9, 0, 2));
    DnsServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), Arc::new(zone))
        .await
        .expect("start the test DNS server")
}

/// A UDP socket on loopback that receives queries and never answers; keep it alive.
pub async fn silent_server() -> UdpSocket {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind a silent name server")
}

/// A config asking only `server`, with short timeouts.
pub fn config_for(server: SocketAddr) -> Config {
    Config {
        name_servers: vec![server],
        timeout_ms: 1000,
        attempts: 1,
        ..Config::default()
    }
}

/// The addresses of a positive answer, sorted, and its TTL; panics otherwise.
pub fn positive(answer: &HostAnswer) -> (Vec<std::net::IpAddr>, u32) {
    match &answer.result {
        Resolution::Addresses { addrs, ttl_secs } => {
            let mut addrs = addrs.clone();
            addrs.sort();
            (addrs, *ttl_secs)
        }
        other => panic!("{}: expected addresses, got {other:?}", answer.host),
    }
}

/// The kind of a negative answer; panics on a positive one.
pub fn negative(answer: &HostAnswer) -> NegativeKind {
    match &answer.result {
        Resolution::Negative { kind, .. } => *kind,
        other => panic!("{}: expected a negative answer, got {other:?}", answer.host),
    }
}
