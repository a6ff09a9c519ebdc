//! The URL Frontier service (issue 43; DESIGN.md section 14): the gRPC API of
//! crawler-commons/url-frontier (`proto/urlfrontier.proto`, copied verbatim) in
//! front of the crawl manager, so that external fetchers (StormCrawler and others)
//! take URLs from polycrawl and report them back while the manager keeps every
//! politeness rule.
//!
//! Toward the manager the frontier is two things at once:
//! - an **application** ([`intake`]): discovered URLs (`PutURLs` with a
//!   `DiscoveredURLItem`, `PutDiscovered`) go through the exact seen set and the
//!   new ones to `requests/<app>/` as request files; the manager's outcome files
//!   are read and counted as URLs done;
//! - a **downloader** ([`role`]): the jobs the manager releases are what `GetURLs`
//!   hands out, by queue (the URL's host); a job is reported when a fetcher sends
//!   the URL back as a `KnownURLItem`, or handed out again when its lease runs
//!   out. robots.txt jobs are fetched here with the downloader's library.
//!
//! Because the manager releases a host's next URL only after the previous job's
//! report plus the host's interval, the per-queue gate holds across every gRPC
//! client by construction (url-frontier#147), and a delay set here holds for all
//! of them (url-frontier#146): there is one owner per host.
//!
//! Modules: [`config`] (the `frontier:` section), [`queues`] (jobs by queue,
//! leases, blocks, delays, limits), [`role`] (the manager session), [`intake`]
//! (seen set, request and outcome files), [`grpc`] (the service), [`error`].
//!
//! What it must never do: fetch a page (fetchers do), send the manager a report
//! for a job of another connection, or hold more jobs than `max_jobs` asks the
//! manager for. It uses `spool`, `seen` and the downloader's library (for
//! robots.txt only); no other service crate.

pub mod config;
pub mod error;
pub mod grpc;
pub mod intake;
pub mod queues;
pub mod role;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use spool::protocol::client::{self, ControlSettings, Stop};
use spool::publish::Publisher;
use spool::{AppId, Spool};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::FrontierConfig;
pub use error::FrontierError;

/// The generated protobuf types and gRPC server of `urlfrontier.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_qualifications)]
pub mod proto {
    tonic::include_proto!("urlfrontier");
}

/// The `file` a page job's `Stored` report and `Committed` name: the page was
/// fetched and kept by an external fetcher, so no spool batch holds it.
pub const EXTERNAL_FILE: &str = "urlfrontier-external";

/// Unix time in milliseconds (0 before 1970).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Binds the gRPC address of `config` (port 0 picks one).
pub async fn bind(config: &FrontierConfig) -> Result<TcpListener, FrontierError> {
    TcpListener::bind(&config.listen)
        .await
        .map_err(|source| FrontierError::Listen {
            addr: config.listen.clone(),
            source,
        })
}

/// Runs the service on `listener` until `shutdown` fires or the manager drains
/// it: the manager session, the intake thread and the gRPC server. `downloader`
/// gives the robots.txt fetcher its settings (user agent, limits, proxies).
pub async fn run(
    config: FrontierConfig,
    downloader: &downloader::DownloaderConfig,
    control: ControlSettings,
    spool: Spool,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), FrontierError> {
    config.validate()?;
    let app = AppId::new(config.app.clone()).map_err(|e| FrontierError::Config {
        field: "frontier.app",
        reason: e.to_string(),
    })?;
    std::fs::create_dir_all(&config.state_dir).map_err(|source| FrontierError::StateDir {
        path: config.state_dir.clone(),
        source,
    })?;
    let fetcher_config = downloader
        .fetcher_config()
        .map_err(|e| FrontierError::Fetcher(e.to_string()))?;
    let fetcher = downloader::Fetcher::new(fetcher_config)
        .map_err(|e| FrontierError::Fetcher(e.to_string()))?;
    let robots = role::RobotsFetch {
        fetcher,
        publisher: Arc::new(Publisher::new(spool.robots()?, control.id.clone())?),
        gzip_level: downloader.gzip_level,
    };
    let (intake, intake_thread) = intake::start(
        &spool,
        intake::IntakeSettings {
            seen_dir: config.state_dir.join("seen"),
            buffer_bytes: config.seen_buffer_bytes,
            merge_interval: std::time::Duration::from_millis(config.merge_interval_ms),
            app: app.clone(),
            id: control.id.clone(),
        },
    )?;
    let (outbox, inbox) = tokio::sync::mpsc::unbounded_channel();
    let shared = Arc::new(role::Shared {
        queues: Mutex::new(queues::Queues::new()),
        outbox,
    });
    let service = grpc::Service::new(Arc::clone(&shared), intake, app, config.lease_ms);
    let local: Option<SocketAddr> = listener.local_addr().ok();
    tracing::info!(addr = ?local, "frontier: gRPC service listening");
    let stop = shutdown.clone();
    let server = tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(proto::url_frontier_server::UrlFrontierServer::new(service))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stop.cancelled_owned(),
            )
            .await
    });
    let mut role = role::FrontierRole::new(shared, inbox, robots, config.max_jobs);
    let ended = client::run(&control, &mut role, &shutdown).await;
    shutdown.cancel();
    let served = server.await;
    drop(role);
    let _ = tokio::task::spawn_blocking(move || intake_thread.join()).await;
    match ended {
        Ok(_) => {}
        Err(Stop::Refused(e)) => return Err(FrontierError::Manager(e.to_string())),
        Err(Stop::Replaced) => {
            return Err(FrontierError::Manager(
                "another frontier took our id".into(),
            ));
        }
        Err(Stop::Role(e)) => return Err(FrontierError::Manager(e.to_string())),
    }
    match served {
        Ok(result) => result.map_err(FrontierError::from),
        Err(e) => Err(FrontierError::Manager(format!("gRPC task: {e}"))),
    }
}
