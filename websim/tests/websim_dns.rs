//! websim's DNS server seen from outside: hickory-resolver (configured with only this server),
//! raw UDP and TCP packets, and `dig` when it is installed.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::op::{Edns, Message, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use hickory_resolver::{Resolver, TokioResolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use websim::dns::{DnsServer, Zone};

const TTL: u32 = 300;
const WAIT: Duration = Duration::from_secs(2);

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 1, last)
}

async fn start() -> DnsServer {
    let mut zone = Zone::new(TTL);
    zone.insert("www.example.test", ip(1));
    zone.insert("blog.example.test", ip(2));
    zone.insert("multi.example.test", ip(3));
    zone.insert("multi.example.test", ip(4));
    zone.insert("multi.example.test", ip(5));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    DnsServer::start(addr, Arc::new(zone)).await.unwrap()
}

/// A resolver that asks only `server` (no system config, no hosts file), over one protocol.
fn resolver(server: SocketAddr, tcp: bool) -> TokioResolver {
    let mut ns = if tcp {
        NameServerConfig::tcp(server.ip())
    } else {
        NameServerConfig::udp(server.ip())
    };
    for connection in &mut ns.connections {
        connection.port = server.port();
    }
    let config = ResolverConfig::from_name_servers(vec![ns]);
    let mut builder = Resolver::builder_with_config(config, TokioRuntimeProvider::default());
    let opts = builder.options_mut();
    opts.use_hosts_file = ResolveHosts::Never;
    opts.timeout = WAIT;
    opts.attempts = 1;
    builder.build().unwrap()
}

async fn a_records(resolver: &TokioResolver, name: &str) -> Vec<Ipv4Addr> {
    let lookup = resolver.ipv4_lookup(name).await.unwrap();
    let mut addrs: Vec<Ipv4Addr> = lookup
        .answers()
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect();
    addrs.sort();
    addrs
}

fn query_bytes(name: &str, rtype: RecordType) -> Vec<u8> {
    let mut message = Message::query();
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
    message.set_edns(Edns::new());
    message.to_vec().unwrap()
}

async fn udp_exchange(server: SocketAddr, packet: &[u8]) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    socket.send_to(packet, server).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let len = tokio::time::timeout(Duration::from_millis(300), socket.recv(&mut buf))
        .await
        .ok()?
        .unwrap();
    buf.truncate(len);
    Some(buf)
}

#[tokio::test]
async fn resolver_gets_every_address_of_known_names() {
    let server = start().await;
    let resolver = resolver(server.local_addr(), false);
    assert_eq!(a_records(&resolver, "www.example.test.").await, [ip(1)]);
    assert_eq!(a_records(&resolver, "blog.example.test.").await, [ip(2)]);
    assert_eq!(
        a_records(&resolver, "multi.example.test.").await,
        [ip(3), ip(4), ip(5)]
    );
    assert!(server.stats().udp_responses >= 3);
}

#[tokio::test]
async fn names_are_case_insensitive() {
    let server = start().await;
    let resolver = resolver(server.local_addr(), false);
    assert_eq!(a_records(&resolver, "WWW.Example.TEST.").await, [ip(1)]);
    assert_eq!(
        a_records(&resolver, "Multi.EXAMPLE.test.").await,
        [ip(3), ip(4), ip(5)]
    );
    // hickory-resolver may fold case itself, so also ask raw, as a 0x20 resolver would.
    let asked = "mULTi.ExAmple.TEST.";
    let reply = udp_exchange(server.local_addr(), &query_bytes(asked, RecordType::A))
        .await
        .expect("a reply");
    let reply = Message::from_vec(&reply).unwrap();
    assert_eq!(reply.answers.len(), 3);
    // The owner name keeps the case of the question.
    assert_eq!(reply.answers[0].name.to_ascii(), asked);
    assert_eq!(reply.queries[0].name().to_ascii(), asked);
}

#[tokio::test]
async fn unknown_name_is_nxdomain_with_soa_not_a_timeout() {
    let server = start().await;
    let resolver = resolver(server.local_addr(), false);
    let started = Instant::now();
    let error = resolver
        .ipv4_lookup("nowhere.example.test.")
        .await
        .unwrap_err();
    assert!(started.elapsed() < WAIT / 2, "took {:?}", started.elapsed());
    assert!(error.is_nx_domain(), "{error:?}");
    let soa = error.into_soa().expect("an SOA in the authority section");
    assert_eq!(soa.data.minimum, TTL);
}

#[tokio::test]
async fn aaaa_of_known_name_is_nodata() {
    let server = start().await;
    let resolver = resolver(server.local_addr(), false);
    let error = resolver.ipv6_lookup("www.example.test.").await.unwrap_err();
    assert!(error.is_no_records_found(), "{error:?}");
    assert!(!error.is_nx_domain(), "{error:?}");
    assert!(error.into_soa().is_some());
}

#[tokio::test]
async fn raw_answers_are_authoritative_with_zone_ttl() {
    let server = start().await;
    let reply = udp_exchange(
        server.local_addr(),
        &query_bytes("multi.example.test.", RecordType::A),
    )
    .await
    .expect("a reply");
    let reply = Message::from_vec(&reply).unwrap();
    assert!(reply.authoritative);
    assert!(!reply.recursion_available);
    assert_eq!(reply.response_code, ResponseCode::NoError);
    assert_eq!(reply.answers.len(), 3);
    assert!(reply.answers.iter().all(|r| r.ttl == TTL));
    assert!(reply.edns.is_some(), "EDNS query must get an EDNS reply");

    let reply = udp_exchange(
        server.local_addr(),
        &query_bytes("www.example.test.", RecordType::MX),
    )
    .await
    .expect("a reply");
    let reply = Message::from_vec(&reply).unwrap();
    assert_eq!(reply.response_code, ResponseCode::NoError);
    assert!(reply.answers.is_empty());
    assert_eq!(reply.authorities[0].record_type(), RecordType::SOA);
}

#[tokio::test]
async fn garbage_does_not_kill_the_server() {
    let server = start().await;
    let addr = server.local_addr();
    // Too short for a header: dropped without a reply.
    assert!(udp_exchange(addr, b"").await.is_none());
    assert!(udp_exchange(addr, b"\xff\x00\x13").await.is_none());
    // A header announcing records that are not there: FORMERR with the same id.
    let mut cut = query_bytes("www.example.test.", RecordType::A);
    cut[0..2].copy_from_slice(&[0xab, 0xcd]);
    cut.truncate(20);
    let reply = udp_exchange(addr, &cut).await.expect("a FORMERR reply");
    let reply = Message::from_vec(&reply).unwrap();
    assert_eq!(
        (reply.id, reply.response_code),
        (0xabcd, ResponseCode::FormErr)
    );
    // Pseudo-random bytes of many lengths.
    let mut x: u32 = 0x1234_5678;
    for len in (0..600).step_by(7) {
        let noise: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        socket.send_to(&noise, addr).await.unwrap();
    }
    // Garbage over TCP too: a length prefix promising more than is sent, then EOF.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"\x01\x00garbage").await.unwrap();
    drop(tcp);

    let resolver = resolver(addr, false);
    assert_eq!(a_records(&resolver, "www.example.test.").await, [ip(1)]);
    assert!(server.stats().malformed >= 3, "{:?}", server.stats());
}

#[tokio::test]
async fn tcp_serves_several_queries_per_connection() {
    let server = start().await;
    let addr = server.local_addr();
    let resolver = resolver(addr, true);
    assert_eq!(
        a_records(&resolver, "multi.example.test.").await,
        [ip(3), ip(4), ip(5)]
    );
    assert!(
        resolver
            .ipv4_lookup("nope.test.")
            .await
            .unwrap_err()
            .is_nx_domain()
    );

    let mut stream = TcpStream::connect(addr).await.unwrap();
    for (name, want) in [("www.example.test.", ip(1)), ("blog.example.test.", ip(2))] {
        let query = query_bytes(name, RecordType::A);
        let len = u16::try_from(query.len()).unwrap().to_be_bytes();
        stream
            .write_all(&[&len[..], &query].concat())
            .await
            .unwrap();
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).await.unwrap();
        let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
        stream.read_exact(&mut reply).await.unwrap();
        let reply = Message::from_vec(&reply).unwrap();
        assert_eq!(reply.answers.len(), 1);
        assert_eq!(reply.answers[0].data, RData::A(want.into()));
    }
    assert!(server.stats().tcp_responses >= 4, "{:?}", server.stats());
    assert_eq!(server.stats().udp_responses, 0);
}

#[tokio::test]
async fn dropping_the_server_stops_serving() {
    let server = start().await;
    let addr = server.local_addr();
    let query = query_bytes("www.example.test.", RecordType::A);
    assert!(udp_exchange(addr, &query).await.is_some());
    server.shutdown().await;
    assert!(udp_exchange(addr, &query).await.is_none());
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn dig_sees_the_zone() {
    let dig_present = std::process::Command::new("which")
        .arg("dig")
        .output()
        .is_ok_and(|o| o.status.success());
    if !dig_present {
        eprintln!("NOTE: dig is not installed (Debian package dnsutils); skipping the dig test");
        return;
    }
    let server = start().await;
    let port = server.local_addr().port().to_string();
    let dig = |args: &[&str]| {
        let mut command = tokio::process::Command::new("dig");
        command.args(["@127.0.0.1", "-p", &port, "+tries=1", "+time=2"]);
        command.args(args);
        command.output()
    };
    let out = dig(&["MULTI.example.test", "A", "+short"]).await.unwrap();
    assert!(out.status.success());
    let mut lines: Vec<IpAddr> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    lines.sort();
    assert_eq!(lines, [ip(3), ip(4), ip(5)].map(IpAddr::V4));

    let out = dig(&["nope.example.test", "A"]).await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("status: NXDOMAIN"), "{text}");
    assert!(text.contains(" aa"), "{text}");

    let out = dig(&["www.example.test", "A", "+tcp", "+short"])
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "127.0.1.1");
}
