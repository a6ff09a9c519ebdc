//! [`Resolver`]: resolves batches of host names with hickory-resolver, at most
//! `max_concurrent` queries at once, and turns every result into a
//! [`HostAnswer`]. Usable on its own, without the network service (benchmarks and
//! tests do).
//!
//! hickory is set up to ask the configured name servers only: no hosts file, no
//! search list (every name is queried fully qualified), its own options from our
//! config rather than `/etc/resolv.conf`; only when `name_servers` is empty are the
//! servers of `/etc/resolv.conf` used. hickory's response cache is kept (bounded by
//! `cache_size`, TTLs bounded like our answers), so a batch re-sent after a
//! reconnect is answered from memory.
//!
//! This module must never resolve through anything but the configured name
//! servers when some are given, block the runtime (everything is async; no system
//! `getaddrinfo`), or let a name wait longer than [`Config::name_deadline`].
//!
//! Cost: a batch of n names is O(n) futures polled in order of completion, at most
//! `max_concurrent` of them querying; memory is O(n) for the batch and its answers.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::{Resolver as Hickory, TokioResolver};
use spool::protocol::{HostAnswer, Resolution};

use crate::answer::{self, Target, TtlPolicy};
use crate::config::Config;
use crate::error::ResolverError;
use crate::limit::{Limiter, Stats};

/// A DNS resolver bounded in concurrency; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Resolver {
    dns: TokioResolver,
    limiter: Limiter,
    policy: TtlPolicy,
    deadline: Duration,
}

impl Resolver {
    /// Builds a resolver from a config (validated here).
    ///
    /// With `name_servers` empty, reads `/etc/resolv.conf` for the servers (only the
    /// servers: timeouts, attempts and the rest still come from `config`).
    pub fn new(config: &Config) -> Result<Self, ResolverError> {
        config.validate()?;
        let servers = if config.name_servers.is_empty() {
            let (system, _their_opts) = hickory_resolver::system_conf::read_system_conf()
                .map_err(ResolverError::SystemConfig)?;
            let servers = system.name_servers().to_vec();
            if servers.is_empty() {
                return Err(ResolverError::NoNameServers);
            }
            servers
        } else {
            config
                .name_servers
                .iter()
                .map(|addr| {
                    let mut server = NameServerConfig::udp_and_tcp(addr.ip());
                    for connection in &mut server.connections {
                        connection.port = addr.port();
                    }
                    server
                })
                .collect()
        };
        let policy = TtlPolicy::new(config);
        let mut builder = Hickory::builder_with_config(
            ResolverConfig::from_name_servers(servers),
            TokioRuntimeProvider::default(),
        );
        *builder.options_mut() = options(config, &policy);
        let dns = builder.build().map_err(ResolverError::Build)?;
        Ok(Self {
            dns,
            limiter: Limiter::new(config.max_concurrent),
            policy,
            deadline: config.name_deadline(),
        })
    }

    /// Resolves every host of a batch; the answers come back in the order of
    /// `hosts`, one per host (duplicates included).
    pub async fn resolve_batch(&self, hosts: Vec<String>) -> Vec<HostAnswer> {
        join_all(hosts.into_iter().map(|host| async move {
            let result = self.resolve(&host).await;
            HostAnswer { host, result }
        }))
        .await
    }

    /// Resolves one host name (see the crate docs for how answers are classified).
    pub async fn resolve(&self, host: &str) -> Resolution {
        let name = match Target::parse(host) {
            Ok(Target::Query(name)) => name,
            Ok(Target::Literal(ip)) => {
                self.limiter.count_answered();
                return answer::literal(ip, &self.policy);
            }
            Err(detail) => {
                self.limiter.count_answered();
                return answer::invalid_name(detail, &self.policy);
            }
        };
        let _slot = self.limiter.acquire().await;
        match tokio::time::timeout(self.deadline, self.dns.lookup_ip(name)).await {
            Ok(result) => answer::classify(result, &self.policy, Instant::now()),
            Err(_elapsed) => answer::deadline_passed(self.deadline, &self.policy),
        }
    }

    /// The load right now (queries in flight, their peak, names queued, ...).
    pub fn stats(&self) -> Stats {
        self.limiter.stats()
    }

    /// Changes the number of concurrent queries (clamped to
    /// 1..=[`MAX_CONCURRENCY`](crate::MAX_CONCURRENCY)); returns the limit in force.
    /// Lowering never cancels a running query: new ones wait until the number
    /// running is below the new limit.
    pub fn set_concurrency(&self, limit: u32) -> u32 {
        self.limiter.set_limit(limit)
    }
}

/// hickory's options from our config; everything not set here keeps hickory's
/// default.
fn options(config: &Config, policy: &TtlPolicy) -> ResolverOpts {
    let mut opts = ResolverOpts::default();
    opts.timeout = config.timeout();
    // hickory counts retries after the first try.
    opts.attempts = config.attempts.saturating_sub(1) as usize;
    opts.ip_strategy = if config.ipv6 {
        LookupIpStrategy::Ipv4AndIpv6
    } else {
        LookupIpStrategy::Ipv4Only
    };
    opts.cache_size = config.cache_size;
    opts.use_hosts_file = ResolveHosts::Never;
    let (pos_min, pos_max) = policy.positive_bounds();
    let (neg_min, neg_max) = policy.negative_bounds();
    opts.positive_min_ttl = Some(pos_min);
    opts.positive_max_ttl = Some(pos_max);
    opts.negative_min_ttl = Some(neg_min);
    opts.negative_max_ttl = Some(neg_max);
    opts
}
