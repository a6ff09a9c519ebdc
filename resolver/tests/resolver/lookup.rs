//! `Resolver::resolve_batch` against websim's DNS server on loopback.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use resolver::{Config, Resolver};
use spool::protocol::{NegativeKind, Resolution};

use crate::support::{addr_of, config_for, dns_server, negative, positive, silent_server};

fn v4(ip: Ipv4Addr) -> IpAddr {
    IpAddr::V4(ip)
}

#[tokio::test]
async fn batch_resolves_to_the_right_addresses() {
    let server = dns_server(50, 300).await;
    let resolver = Resolver::new(&config_for(server.local_addr())).unwrap();
    let mut hosts: Vec<String> = (0..50).map(|i| format!("name-{i}.test")).collect();
    hosts.push("multi.test".into());
    let answers = resolver.resolve_batch(hosts.clone()).await;
    assert_eq!(answers.len(), hosts.len());
    for (i, answer) in answers.iter().take(50).enumerate() {
        assert_eq!(answer.host, hosts[i], "answers keep the order of the batch");
        assert_eq!(positive(answer), (vec![v4(addr_of(i as u32))], 300));
    }
    let multi = positive(&answers[50]);
    let want = [Ipv4Addr::new(127, 9, 0, 1), Ipv4Addr::new(127, 9, 0, 2)];
    assert_eq!(multi.0, want.map(v4).to_vec());
}

#[tokio::test]
async fn ttl_is_clamped_both_ways() {
    let server = dns_server(2, 300).await;
    let raised = Config {
        min_ttl_secs: 1000,
        max_ttl_secs: 5000,
        ..config_for(server.local_addr())
    };
    let lowered = Config {
        min_ttl_secs: 10,
        max_ttl_secs: 100,
        ..config_for(server.local_addr())
    };
    for (config, want) in [(raised, 1000), (lowered, 100)] {
        let resolver = Resolver::new(&config).unwrap();
        let answers = resolver.resolve_batch(vec!["name-1.test".into()]).await;
        assert_eq!(positive(&answers[0]).1, want, "{config:?}");
    }
}

#[tokio::test]
async fn nxdomain_is_reported_as_nxdomain_with_the_zone_ttl_capped() {
    let server = dns_server(1, 7200).await;
    let config = Config {
        negative_ttl_secs: 900,
        ..config_for(server.local_addr())
    };
    let resolver = Resolver::new(&config).unwrap();
    let answers = resolver
        .resolve_batch(vec!["missing.test".into(), "name-0.test".into()])
        .await;
    match &answers[0].result {
        Resolution::Negative { kind, ttl_secs, .. } => {
            assert_eq!(*kind, NegativeKind::NxDomain);
            assert_eq!(
                *ttl_secs, 900,
                "the zone's 7200 s capped at negative_ttl_secs"
            );
        }
        other => panic!("{other:?}"),
    }
    positive(&answers[1]);
}

#[tokio::test]
async fn silent_name_server_gives_a_failure_quickly() {
    let silent = silent_server().await;
    let config = Config {
        timeout_ms: 200,
        attempts: 2,
        failure_ttl_secs: 45,
        ..config_for(silent.local_addr().unwrap())
    };
    let resolver = Resolver::new(&config).unwrap();
    let started = Instant::now();
    let answers = resolver
        .resolve_batch(vec!["a.test".into(), "b.test".into()])
        .await;
    let took = started.elapsed();
    for answer in &answers {
        assert_eq!(negative(answer), NegativeKind::Failure);
        let Resolution::Negative { ttl_secs, .. } = &answer.result else {
            unreachable!()
        };
        assert_eq!(*ttl_secs, 45);
    }
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(
        took < Duration::from_secs(2),
        "two tries of 200 ms took {took:?}"
    );
}

#[tokio::test]
async fn concurrency_bound_is_respected() {
    let server = dns_server(1000, 300).await;
    let config = Config {
        max_concurrent: 8,
        ..config_for(server.local_addr())
    };
    let resolver = Resolver::new(&config).unwrap();
    let hosts: Vec<String> = (0..1000).map(|i| format!("name-{i}.test")).collect();
    let answers = resolver.resolve_batch(hosts).await;
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(positive(answer).0, vec![v4(addr_of(i as u32))]);
    }
    let stats = resolver.stats();
    assert!(stats.peak_in_flight <= 8, "{stats:?}");
    assert!(
        stats.peak_in_flight >= 2,
        "queries ran concurrently: {stats:?}"
    );
    assert_eq!(
        (stats.in_flight, stats.queued, stats.resolved),
        (0, 0, 1000)
    );
}

#[tokio::test]
async fn lowered_concurrency_applies_to_the_next_batch() {
    let server = dns_server(200, 300).await;
    let resolver = Resolver::new(&config_for(server.local_addr())).unwrap();
    assert_eq!(resolver.set_concurrency(1), 1);
    let hosts: Vec<String> = (0..200).map(|i| format!("name-{i}.test")).collect();
    resolver.resolve_batch(hosts).await;
    assert_eq!(resolver.stats().peak_in_flight, 1);
}

#[tokio::test]
async fn literals_and_invalid_names_need_no_query() {
    let server = dns_server(1, 300).await;
    let resolver = Resolver::new(&config_for(server.local_addr())).unwrap();
    let hosts = ["127.0.0.7", "::1", "bad name.test", "", "host:8080"];
    let answers = resolver
        .resolve_batch(hosts.iter().map(|h| h.to_string()).collect())
        .await;
    assert_eq!(
        positive(&answers[0]).0,
        vec![v4(Ipv4Addr::new(127, 0, 0, 7))]
    );
    assert_eq!(
        positive(&answers[1]).0,
        vec!["::1".parse::<IpAddr>().unwrap()]
    );
    for answer in &answers[2..] {
        assert_eq!(negative(answer), NegativeKind::NxDomain);
    }
    let stats = server.stats();
    assert_eq!(stats.udp_responses + stats.tcp_responses, 0, "{stats:?}");
}

#[tokio::test]
async fn repeated_names_are_answered_from_the_cache() {
    let server = dns_server(3, 300).await;
    let resolver = Resolver::new(&config_for(server.local_addr())).unwrap();
    let batch = || vec!["name-1.test".to_string(), "missing.test".to_string()];
    let first = resolver.resolve_batch(batch()).await;
    let second = resolver.resolve_batch(batch()).await;
    assert_eq!(positive(&first[0]).0, positive(&second[0]).0);
    assert_eq!(negative(&second[1]), NegativeKind::NxDomain);
    assert_eq!(
        server.stats().udp_responses,
        2,
        "the second batch asked nobody"
    );
}

#[tokio::test]
async fn with_ipv6_a_name_without_aaaa_keeps_its_ipv4_addresses() {
    let server = dns_server(1, 300).await;
    let config = Config {
        ipv6: true,
        ..config_for(server.local_addr())
    };
    let resolver = Resolver::new(&config).unwrap();
    let answers = resolver
        .resolve_batch(vec!["name-0.test".into(), "nothing.test".into()])
        .await;
    assert_eq!(positive(&answers[0]).0, vec![v4(addr_of(0))]);
    assert_eq!(negative(&answers[1]), NegativeKind::NxDomain);
    assert_eq!(server.stats().udp_responses, 4, "A and AAAA for each name");
}

#[tokio::test]
async fn invalid_config_is_refused() {
    let config = Config {
        name_servers: vec!["127.0.0.1:53".parse().unwrap()],
        min_ttl_secs: 10,
        max_ttl_secs: 5,
        ..Config::default()
    };
    let err = Resolver::new(&config).unwrap_err();
    assert!(err.to_string().contains("resolver.min_ttl_secs"), "{err}");
}
