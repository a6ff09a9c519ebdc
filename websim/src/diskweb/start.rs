//! Start-up and shutdown of the disk web. The ready line is the generated web's
//! (see [`crate::cli`]) with the ports of the stored URLs:
//!
//! ```text
//! websim ready dns=127.0.0.1:PORT http_port=P https_port=Q ports=http:P,https:Q out=DIR seeds=FILE manifest=FILE never=FILE unreachable=FILE hosts=FILE log=FILE ca=FILE addresses=FIRST-LAST repository=REPO pages=N
//! ```
//!
//! `http_port` and `https_port` are the first port of each scheme (0 if the stored
//! crawl has no URL of that scheme); `ports` lists them all.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use tokio::task::JoinSet;

use super::index::DiskWeb;
use super::outfiles;
use super::serve::{DiskServer, accept_loop};
use crate::cli::{Args, CliError, Services, io_err};
use crate::listen::bind_all;
use crate::outfiles::OutPaths;
use crate::pace::Pacer;
use crate::respond::Scheme;

/// Serves the repository at `repo` until SIGINT or SIGTERM (or the parent's exit
/// with `--exit-with-parent`). `nofile`: the file-descriptor limit.
pub async fn serve_repository(
    args: &Args,
    repo: &Path,
    paths: &OutPaths,
    nofile: u64,
) -> Result<(), CliError> {
    let load = repo.to_path_buf();
    let web = tokio::task::spawn_blocking(move || DiskWeb::load(&load))
        .await
        .map_err(|e| CliError::Io {
            what: format!("reading {}", repo.display()),
            source: std::io::Error::other(e),
        })??;
    let web = Arc::new(web);
    let addrs: Vec<Ipv4Addr> = web.hosts.iter().map(|h| h.addr).collect();
    let need = (web.listeners.len() * addrs.len()) as u64 + 256;
    if need > nofile {
        return Err(CliError::TooFewFiles {
            need,
            addresses: addrs.len(),
            nofile,
        });
    }
    let mut bound = Vec::new();
    for &(scheme, port) in &web.listeners {
        let (_, listeners) = bind_all(&addrs, port).map_err(io_err(format!(
            "binding the stored crawl's {} port {port} (its URLs carry it, so it must be free)",
            scheme.as_str()
        )))?;
        bound.push((scheme, port, listeners));
    }

    let summary = outfiles::write_all(&web, paths).map_err(io_err("writing the manifest files"))?;
    let services = Services::start(
        args.dns_addr,
        paths,
        web.hosts.iter().map(|h| (h.name.as_str(), h.addr, h.https)),
    )
    .await?;
    let dns = services.dns.local_addr();
    let server = Arc::new(DiskServer {
        web: Arc::clone(&web),
        log: Arc::clone(&services.log),
        pace: args.pace_per_client.map(Pacer::new),
    });
    let mut tasks = JoinSet::new();
    for (scheme, _, listeners) in bound {
        for l in listeners {
            let tls = (scheme == Scheme::Https).then(|| services.acceptor.clone());
            tasks.spawn(accept_loop(l, Arc::clone(&server), tls));
        }
    }

    crate::outfiles::write_crawl_config(paths, dns).map_err(io_err("writing the crawl config"))?;
    print_ready(&web, repo, &addrs, dns, paths, &summary);
    services
        .serve_until_stopped(tasks, args.exit_with_parent)
        .await
}

/// The disk web's start-up lines and its ready line (see the module docs).
fn print_ready(
    web: &DiskWeb,
    repo: &Path,
    addrs: &[Ipv4Addr],
    dns: SocketAddr,
    paths: &OutPaths,
    summary: &outfiles::DiskSummary,
) {
    let first_port = |s: Scheme| {
        web.listeners
            .iter()
            .find(|(scheme, _)| *scheme == s)
            .map_or(0, |&(_, p)| p)
    };
    let ports: Vec<String> = web
        .listeners
        .iter()
        .map(|(s, p)| format!("{}:{p}", s.as_str()))
        .collect();
    let first = addrs.first().copied().unwrap_or(Ipv4Addr::LOCALHOST);
    let last = addrs.last().copied().unwrap_or(Ipv4Addr::LOCALHOST);
    let d = |p: &Path| p.display().to_string();
    println!(
        "websim: disk web of {}: {} stored URLs ({} pages, {} skipped records) on {} hosts, {first}-{last}, {} WARC files",
        d(repo),
        summary.fetched,
        summary.pages,
        web.skipped,
        web.hosts.len(),
        web.files.len(),
    );
    println!(
        "websim: dns {dns}  ports {}  seeds {} ({})",
        ports.join(","),
        d(&paths.seeds),
        summary.seeds
    );
    println!(
        "websim ready dns={dns} http_port={} https_port={} ports={} out={} seeds={} manifest={} never={} unreachable={} hosts={} log={} ca={} addresses={first}-{last} repository={} pages={}",
        first_port(Scheme::Http),
        first_port(Scheme::Https),
        ports.join(","),
        d(&paths.dir),
        d(&paths.seeds),
        d(&paths.manifest),
        d(&paths.never),
        d(&paths.unreachable),
        d(&paths.hosts),
        d(&paths.log),
        d(&paths.ca),
        d(repo),
        summary.pages,
    );
}
