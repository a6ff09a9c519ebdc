//! The start order of a run: the generated config and tokens, then every
//! process (managers, resolvers, downloaders, the coordinator, the parts), each
//! placed on its simulated machine when there are machines. `start` hands the
//! started processes to [`super::system::System`], which runs them.
//!
//! This module only starts processes; it must never wait on a crawl or stop one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::layout::{random_token, write_config, write_secret};
use super::machines::{Machine, Placement};
use super::supervise::{COORDINATOR, COORDINATOR_READY, LISTENING};
use super::supervised::{Spec, Supervised};
use super::system::{HELD_SAMPLES, Plan};

/// How long the manager (and the coordinator) may take to print its ready line.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The processes of a run, started: what [`super::system::System`] runs.
pub(super) struct Started {
    pub managers: Vec<Supervised>,
    pub coordinator: Option<Supervised>,
    pub resolvers: Vec<Supervised>,
    pub downloaders: Vec<Supervised>,
    /// The application's parts, in part order.
    pub parts: Vec<Supervised>,
    /// Each manager's control address, by system.
    pub manager_addrs: Vec<String>,
    /// The first manager's admin page address, if it is on.
    pub admin_addr: Option<String>,
    /// The run's admin token (also in `<out>/admin-token`).
    pub admin_token: String,
}

/// Writes the config and starts every process of `plan`; returns once they are
/// started (the managers listening). `what` names the run in its lines.
pub(super) fn start(
    plan: &Plan,
    shutdown: &CancellationToken,
    what: &'static str,
) -> anyhow::Result<Started> {
    let l = &plan.layout;
    let systems = plan.systems.max(1);
    let parts = plan.parts.max(1);
    l.create()?;
    for s in 0..systems {
        for dir in [l.spool_of(s), l.manager_state_of(s)] {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
    }
    let mut config = plan.config.clone();
    config.app.parts = parts;
    write_config(&l.config, &config, "polycrawl")?;
    let admin_token = random_token()?;
    write_secret(&l.admin_token, &admin_token)?;
    let launch = Launch {
        plan,
        exe: std::env::current_exe().context("finding the polycrawl binary")?,
        token: random_token()?,
        shutdown,
    };
    let mut managers = Vec::new();
    let mut manager_addrs = Vec::new();
    let mut admin_addr = None;
    for s in 0..systems {
        let (manager, addr, admin) = launch.manager(s, &admin_token)?;
        if s == 0 {
            admin_addr = admin;
        }
        managers.push(manager);
        manager_addrs.push(addr);
    }
    let resolvers = launch.resolvers(&manager_addrs)?;
    let downloaders = launch.downloaders(&manager_addrs, what)?;
    // Two-level mode: the coordinator, before the agents.
    let coordinator = if parts > 1 && config.app.part_mode == app_core::PartMode::TwoLevel {
        Some(launch.coordinator()?)
    } else {
        None
    };
    let parts = launch.parts(&manager_addrs)?;
    Ok(Started {
        managers,
        coordinator,
        resolvers,
        downloaders,
        parts,
        manager_addrs,
        admin_addr,
        admin_token,
    })
}

/// What every start of a run shares: the plan, this binary and the control token.
struct Launch<'a> {
    plan: &'a Plan,
    exe: PathBuf,
    token: String,
    shutdown: &'a CancellationToken,
}

/// `-s<S>` for crawling system `s` after the first (`manager-s1`), else nothing.
fn suffix(s: u32) -> String {
    if s == 0 {
        String::new()
    } else {
        format!("-s{s}")
    }
}

impl Launch<'_> {
    fn systems(&self) -> u32 {
        self.plan.systems.max(1)
    }

    fn placement(&self) -> Option<&Placement> {
        self.plan.placement.as_ref()
    }

    /// With machines: the machine of `role` (its namespace, address and view of
    /// the export).
    fn machine(&self, role: &str) -> Option<&Machine> {
        self.placement().map(|p| p.get(role))
    }

    /// `path` as machine `m` sees it (as it is without machines).
    fn view(&self, m: Option<&Machine>, path: PathBuf) -> PathBuf {
        match (self.placement(), m) {
            (Some(p), Some(m)) => p.view(m, &path),
            _ => path,
        }
    }

    fn spec(&self, sub: &str) -> Spec {
        Spec::new(&self.exe, sub, &self.plan.layout.config, &self.token)
    }

    /// `sub` registering with the manager at `manager`.
    fn service(&self, sub: &str, manager: &str) -> Spec {
        let mut spec = self.spec(sub);
        spec.arg("--manager").arg(manager);
        spec
    }

    fn spawn(&self, name: &str, spec: Spec) -> anyhow::Result<Supervised> {
        Supervised::spawn(name, spec, &self.plan.layout.logs, self.plan.supervision)
    }

    /// System `s`'s manager, started and listening: it, its control address and
    /// its admin page's address (when the admin page is on).
    fn manager(
        &self,
        s: u32,
        admin_token: &str,
    ) -> anyhow::Result<(Supervised, String, Option<String>)> {
        let l = &self.plan.layout;
        let admin_on = !self.plan.config.manager.admin_http.is_empty();
        let m = self.machine(&format!("mgr{s}"));
        let listen = m.map_or("127.0.0.1".to_owned(), |m| m.addr.to_string());
        let mut spec = self.spec("manager");
        spec.arg("--listen")
            .arg(format!("{listen}:0"))
            .arg("--state")
            .arg(l.manager_state_of(s))
            .arg("--spool")
            .arg(self.view(m, l.spool_of(s)))
            .env("POLYCRAWL_ADMIN_TOKEN", admin_token);
        if let Some(m) = m {
            // Reachable from this machine's root namespace, over the bridge.
            if admin_on {
                spec.arg("--admin-listen").arg(format!("{}:0", m.addr));
            }
            spec.in_netns(Some(m.netns.clone()));
        }
        let mut manager = self.spawn(&format!("manager{}", suffix(s)), spec)?;
        let cancelled = || self.shutdown.is_cancelled();
        let line = manager.wait_ready_line(LISTENING, READY_TIMEOUT, cancelled)?;
        let addr = line
            .trim_start_matches(LISTENING)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let admin = if admin_on {
            let line = manager.child_mut().wait_line(
                |l| super::system::admin_address(l).is_some(),
                READY_TIMEOUT,
                cancelled,
            )?;
            super::system::admin_address(&line).map(str::to_owned)
        } else {
            None
        };
        // A restarted manager must be where the others (and the operator's
        // browser) look for it: the ports chosen now are fixed from here on.
        manager.keep_flag("--listen", &addr);
        if let Some(admin) = &admin {
            manager.keep_flag("--admin-listen", admin);
        }
        Ok((manager, addr, admin))
    }

    /// One resolver per system, on its manager's machine.
    fn resolvers(&self, manager_addrs: &[String]) -> anyhow::Result<Vec<Supervised>> {
        let mut resolvers = Vec::new();
        for (s, addr) in (0..self.systems()).zip(manager_addrs) {
            let mut spec = self.service("resolver", addr);
            spec.arg("--id").arg(format!("resolver-{}", s + 1));
            spec.in_netns(self.machine(&format!("mgr{s}")).map(|m| m.netns.clone()));
            resolvers.push(self.spawn(&format!("resolver{}", suffix(s)), spec)?);
        }
        Ok(resolvers)
    }

    /// The downloaders, dealt round-robin among the systems (at least one each).
    fn downloaders(&self, manager_addrs: &[String], what: &str) -> anyhow::Result<Vec<Supervised>> {
        let systems = self.systems();
        let wanted = self.plan.downloaders;
        if wanted < systems {
            eprintln!(
                "polycrawl {what}: {systems} crawling systems need a downloader each: starting {systems} downloaders, not {wanted}",
            );
        }
        let mut downloaders = Vec::new();
        for n in 1..=wanted.max(systems) {
            let s = (n - 1) % systems;
            let id = format!("dl-{n}");
            let mut spec = self.service("downloader", &manager_addrs[s as usize]);
            let m = self.machine(&format!("dl{s}"));
            spec.arg("--spool")
                .arg(self.view(m, self.plan.layout.spool_of(s)))
                .arg("--id")
                .arg(&id);
            spec.in_netns(m.map(|m| m.netns.clone()));
            downloaders.push(self.spawn(&id, spec)?);
        }
        Ok(downloaders)
    }

    /// Two-level mode's coordinator, running: its own process on the first
    /// system's spool, like a part; it needs no manager.
    fn coordinator(&self) -> anyhow::Result<Supervised> {
        let plan = self.plan;
        let mut spec = self.spec("coordinator");
        spec.arg("--state")
            .arg(plan.layout.app_state.with_file_name(COORDINATOR))
            .arg("--seeds")
            .arg(&plan.seeds)
            .arg("--policy")
            .arg(plan.site_policy.to_string())
            .arg("--parts")
            .arg(plan.parts.max(1).to_string());
        let mut co = self.spawn(COORDINATOR, spec)?;
        co.wait_ready_line(COORDINATOR_READY, READY_TIMEOUT, || {
            self.shutdown.is_cancelled()
        })?;
        Ok(co)
    }

    /// The application's parts, part `i` registered with system `i % systems`.
    fn parts(&self, manager_addrs: &[String]) -> anyhow::Result<Vec<Supervised>> {
        let (plan, l) = (self.plan, &self.plan.layout);
        let parts = plan.parts.max(1);
        let mut apps = Vec::new();
        for i in 0..parts {
            let s = i % self.systems();
            let mut spec = self.service("app", &manager_addrs[s as usize]);
            let m = self.machine(&format!("app{s}"));
            if let Some(m) = m {
                spec.in_netns(Some(m.netns.clone()));
                spec.arg("--exchange-root")
                    .arg(self.view(Some(m), l.spool.clone()));
            }
            spec.arg("--spool")
                .arg(self.view(m, l.spool_of(s)))
                .arg("--state")
                .arg(l.app_state_of(i, parts))
                .arg("--repo")
                .arg(l.repository_of(i, parts))
                .arg("--seeds")
                .arg(&plan.seeds);
            let name = if parts == 1 {
                "app".to_owned()
            } else {
                spec.arg("--app")
                    .arg(format!("{}-p{i}", plan.config.app.app))
                    .arg("--part")
                    .arg(i.to_string());
                format!("app-p{i}")
            };
            if let Some(n) = plan.max_pages {
                spec.arg("--max-pages").arg(n.to_string());
            }
            let held: &Path = &l.app_state_of(i, parts).join(HELD_SAMPLES);
            for flag in plan.strategy.app_flags(held) {
                spec.arg(flag);
            }
            apps.push(self.spawn(&name, spec)?);
        }
        Ok(apps)
    }
}
