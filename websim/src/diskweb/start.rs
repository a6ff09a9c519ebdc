//! Start-up and shutdown of the disk web. The ready line is the generated web's
//! (see [`crate::cli`]) with the ports of the stored URLs:
//!
//! ```text
//! websim ready dns=127.0.0.1:PORT http_port=P https_port=Q ports=http:P,https:Q out=DIR seeds=FILE manifest=FILE never=FILE unreachable=FILE hosts=FILE log=FILE ca=FILE addresses=FIRST-LAST repository=REPO pages=N
//! ```
//!
//! `http_port` and `https_port` are the first port of each scheme (0 if the stored
//! crawl has no URL of that scheme); `ports` lists them all.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::index::DiskWeb;
use super::outfiles;
use super::serve::{DiskServer, accept_loop};
use crate::cli::{Args, CliError, DNS_TTL, io_err, tls_err, wait_for_stop};
use crate::dns::{DnsServer, Zone};
use crate::listen::bind_all;
use crate::log::RequestLog;
use crate::outfiles::OutPaths;
use crate::pace::Pacer;
use crate::respond::Scheme;
use crate::tls::SimCa;

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
    let ca = SimCa::generate().map_err(tls_err("generating the CA"))?;
    ca.write_ca_pem(&paths.ca)
        .map_err(tls_err("writing the CA"))?;
    let https_names = web.hosts.iter().filter(|h| h.https).map(|h| h.name.clone());
    let acceptor = TlsAcceptor::from(
        ca.server_config(https_names)
            .map_err(tls_err("building the TLS config"))?,
    );
    let log = RequestLog::create(&paths.log).map_err(io_err("creating the request log"))?;
    let flusher = log.start_flusher();
    let mut zone = Zone::new(DNS_TTL);
    for h in &web.hosts {
        zone.insert(&h.name, h.addr);
    }
    let dns = DnsServer::start(args.dns_addr, Arc::new(zone))
        .await
        .map_err(io_err(format!(
            "starting the DNS server on {}",
            args.dns_addr
        )))?;
    let mut term =
        signal(SignalKind::terminate()).map_err(io_err("installing the SIGTERM handler"))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(io_err("installing the SIGINT handler"))?;

    let server = Arc::new(DiskServer {
        web: Arc::clone(&web),
        log: Arc::clone(&log),
        pace: args.pace_per_client.map(Pacer::new),
    });
    let mut tasks = JoinSet::new();
    for (scheme, _, listeners) in bound {
        for l in listeners {
            let tls = (scheme == Scheme::Https).then(|| acceptor.clone());
            tasks.spawn(accept_loop(l, Arc::clone(&server), tls));
        }
    }

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
        "websim: dns {}  ports {}  seeds {} ({})",
        dns.local_addr(),
        ports.join(","),
        d(&paths.seeds),
        summary.seeds
    );
    println!(
        "websim ready dns={} http_port={} https_port={} ports={} out={} seeds={} manifest={} never={} unreachable={} hosts={} log={} ca={} addresses={first}-{last} repository={} pages={}",
        dns.local_addr(),
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
    use std::io::Write as _;
    std::io::stdout()
        .flush()
        .map_err(io_err("writing to stdout"))?;

    let why = wait_for_stop(&mut term, &mut int, args.exit_with_parent).await;
    tracing::info!(reason = why, "websim: stopping");
    tasks.abort_all();
    drop(dns);
    log.flush().map_err(io_err("flushing the request log"))?;
    drop(flusher);
    println!("websim stopped ({why})");
    Ok(())
}
