//! DNS events: the names the frontier needs resolved, and what an answer does to the
//! hosts that waited for it.
//!
//! - An address: the host goes on (to robots.txt, or to ready).
//! - Only private/loopback addresses while they are forbidden: the host's URLs end
//!   with `forbidden_address`, and so do new ones for the answer's TTL.
//! - NXDOMAIN or no address: the host's URLs end with `dns_failure`, and so do new
//!   ones for the answer's TTL.
//! - A failed lookup (SERVFAIL, timeout): a host failure (back-off, then ask again;
//!   after `max_failures` the URLs end with `dns_failure`).
//!
//! For a robots.txt redirect to another host name the same answers decide whether
//! the redirect can be followed (a name that does not resolve counts as "robots.txt
//! unavailable"). This module must never resolve anything itself.

use spool::OutcomeReason;
use spool::protocol::{NegativeKind, Resolution};

use super::dns::DnsAnswer;
use super::hosts::{HostId, HostState};
use super::store::Batch;
use super::{Frontier, FrontierError};
use crate::robots::RobotsPolicy;

impl Frontier {
    /// Host names to hand to resolvers now (lower-case, punycode, no port). Each name
    /// is handed out once; if no answer comes within `dns_retry_ms` it is handed out
    /// again. The hosts waiting for them become `Resolving`.
    pub fn hosts_needing_dns(&mut self, now_ms: u64) -> Vec<String> {
        let names = self.dns.take_to_ask(now_ms, self.config.dns_retry_ms);
        for name in &names {
            for id in self.dns.waiters_of(name) {
                if self
                    .hosts
                    .get(id)
                    .is_some_and(|h| h.state() == HostState::NeedsDns)
                {
                    self.hosts.set_state(id, HostState::Resolving);
                }
            }
        }
        names
    }

    /// A resolver answered for `name` (exactly as it was handed out).
    pub fn on_dns(
        &mut self,
        name: &str,
        resolution: &Resolution,
        now_ms: u64,
    ) -> Result<(), FrontierError> {
        let allow = self.config.allow_private_addresses;
        let (answer, waiters) = self.dns.answer(name, resolution, allow, now_ms);
        let expires = self
            .dns
            .lookup(name, now_ms)
            .map(|(_, e)| e)
            .unwrap_or(now_ms);
        let mut batch = Batch::default();
        for id in waiters {
            let waiting = self
                .hosts
                .get(id)
                .is_some_and(|h| matches!(h.state(), HostState::NeedsDns | HostState::Resolving));
            if waiting {
                self.apply_dns(id, name, answer.clone(), expires, now_ms, &mut batch)?;
            }
        }
        self.commit(batch)
    }

    /// Applies a DNS answer for `name` to host `id`, whose own name or robots.txt
    /// redirect target it is.
    pub(crate) fn apply_dns(
        &mut self,
        id: HostId,
        name: &str,
        answer: DnsAnswer,
        expires_ms: u64,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        let for_chase = &*host.name != name && host.chase.name.as_deref() == Some(name);
        if for_chase {
            match answer {
                DnsAnswer::Addr(ip) => {
                    host.chase.addr = Some(ip);
                    return self.advance(id, now_ms, batch);
                }
                DnsAnswer::Negative(NegativeKind::Failure, detail) => {
                    let detail = format!("robots.txt redirect target {name}: {detail}");
                    return self.robots_unreachable(id, &detail, now_ms, batch);
                }
                DnsAnswer::Negative(_, _) | DnsAnswer::Forbidden(_) => {
                    // The redirect leads nowhere we may go: robots.txt is unavailable.
                    return self.install_robots(id, RobotsPolicy::AllowAll, None, now_ms, batch);
                }
            }
        }
        match answer {
            DnsAnswer::Addr(ip) => {
                host.addr = Some((ip, expires_ms));
                self.advance(id, now_ms, batch)
            }
            DnsAnswer::Forbidden(ip) => {
                let detail = format!("{name} resolves to {ip}, which is not a public address");
                let until = expires_ms.min(now_ms.saturating_add(self.config.dead_host_ttl_ms));
                self.drop_host(
                    id,
                    OutcomeReason::ForbiddenAddress,
                    &detail,
                    Some(until),
                    now_ms,
                    batch,
                )
            }
            DnsAnswer::Negative(NegativeKind::Failure, detail) => {
                let detail = format!("lookup of {name} failed: {detail}");
                if !self.host_failed(id, OutcomeReason::DnsFailure, &detail, now_ms, batch)? {
                    self.advance(id, now_ms, batch)?;
                }
                Ok(())
            }
            DnsAnswer::Negative(kind, detail) => {
                let what = match kind {
                    NegativeKind::NxDomain => "does not exist",
                    _ => "has no address",
                };
                let detail = format!("{name} {what}: {detail}");
                let until = expires_ms.min(now_ms.saturating_add(self.config.dead_host_ttl_ms));
                self.drop_host(
                    id,
                    OutcomeReason::DnsFailure,
                    &detail,
                    Some(until),
                    now_ms,
                    batch,
                )
            }
        }
    }
}
