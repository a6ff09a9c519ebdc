//! [`Fetcher`]: the engine's entry point, shared by many tokio tasks.
//!
//! One `fetch` call: check the address policy (before any socket exists), build the
//! request, wait for a concurrency permit, then within the total timeout take a pooled
//! connection or open one, run the exchange, return the connection to the pool if it
//! may be reused, and finally undo the Content-Encoding. Every request waits for
//! its address's turn at the fetcher's per-IP gate (`ip_gate.rs`) right before it
//! is written (the job's `min_ip_spacing`; with a `min_host_spacing`, its host's
//! turn at the per-host gate first), and its [`WireTimes`] are stamped
//! around the write and the last read. A pooled connection that turns
//! out dead before any response byte is replaced by a new one, once. Nothing here
//! resolves names, follows redirects or retries a request that got an answer.
//!
//! HTTP/2 (`http2.rs`): when a new TLS connection negotiated `h2` (offered unless
//! the config's `http2` is off), the exchange runs over HTTP/2 and the connection
//! is pooled under the same key as an HTTP/1.1 one would be; either kind is taken
//! by one fetch at a time.
//!
//! Proxies (`proxy.rs`): the config's rules pick a proxy (or none) by the URL's host.
//! The address policy and the per-IP and per-host gates work on the job's address
//! and origin exactly as without a proxy: the proxy is only the path. The request
//! archived ([`Fetched::request`]) is always origin-form; the bytes written to an
//! HTTP proxy for a plain-http target are the absolute-form version of it.
//!
//! Everything is async on tokio: thousands of fetches in flight cost thousands of
//! sockets and small buffers, no threads. Large compressed bodies are inflated on the
//! blocking pool so they do not stall other connections.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio_rustls::TlsConnector;

use crate::address;
use crate::config::FetcherConfig;
use crate::conn::Conn;
use crate::error::{ConfigError, FetchError};
use crate::exchange::{Limits, RawResponse};
use crate::fetched::{Fetched, Timings, WireTimes};
use crate::http2::H2Conn;
use crate::ip_gate::{HostGate, IpGate};
use crate::job::{FetchJob, Scheme};

mod transfer;
use crate::limit::{ConcurrencyLimit, Permit};
use crate::pool::Pool;
use crate::request;
use crate::tls;

/// The HTTP/1.1 and HTTP/2 fetch engine. Cheap to clone; clones share the pool and
/// the limit.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

struct Inner {
    config: FetcherConfig,
    tls: TlsConnector,
    pool: Pool<Link>,
    limit: ConcurrencyLimit,
    gate: IpGate,
    host_gate: HostGate,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("config", &self.inner.config)
            .field("concurrency", &self.inner.limit.limit())
            .field("idle_connections", &self.inner.pool.idle())
            .finish_non_exhaustive()
    }
}

/// A connection kept in the pool: HTTP/1.1, or HTTP/2 (TLS that negotiated `h2`).
#[derive(Debug)]
enum Link {
    H1(Conn),
    H2(H2Conn),
}

/// What the connection part of a fetch produced, before decoding.
struct Transfer {
    response: RawResponse,
    /// Over HTTP/2, the HTTP/1.1 form of the request sent (HTTP/1.1: the bytes
    /// written, which the caller has).
    request: Option<Bytes>,
    /// `WARC-Protocol` values (empty for HTTP/1.1).
    protocols: Vec<&'static str>,
    connect: Option<std::time::Duration>,
    bytes: (u64, u64),
    reused: bool,
}

impl Fetcher {
    /// Validates `config`, loads the TLS trust anchors and builds an empty pool.
    pub fn new(config: FetcherConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let tls = TlsConnector::from(tls::client_config(
            config.extra_ca_file.as_deref(),
            config.http2,
        )?);
        let pool = Pool::new(
            config.pool_idle_timeout,
            config.pool_max_idle_per_key,
            config.pool_max_idle,
        );
        let limit = ConcurrencyLimit::new(config.concurrency);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                tls,
                pool,
                limit,
                gate: IpGate::default(),
                host_gate: HostGate::default(),
            }),
        })
    }

    /// The config this fetcher was built with.
    pub fn config(&self) -> &FetcherConfig {
        &self.inner.config
    }

    /// The current concurrency limit.
    pub fn concurrency(&self) -> usize {
        self.inner.limit.limit()
    }

    /// Changes the concurrency limit. Raising takes effect at once; lowering never
    /// interrupts a running fetch: new fetches wait until enough have finished.
    pub fn set_concurrency(&self, n: usize) {
        self.inner.limit.set_limit(n);
    }

    /// Fetches running now (waiting ones not counted).
    pub fn in_flight(&self) -> usize {
        self.inner.limit.in_use()
    }

    /// Idle keep-alive connections in the pool.
    pub fn idle_connections(&self) -> usize {
        self.inner.pool.idle()
    }

    /// Fetches `job`: one request, one response, no redirects followed. Waits for a
    /// concurrency slot first (after the address check, so a refused address never
    /// waits).
    pub async fn fetch(&self, job: &FetchJob) -> Result<Fetched, FetchError> {
        self.fetch_inner(job, None, &mut WireTimes::default()).await
    }

    /// Waits for a concurrency slot of this fetcher (first come, first served).
    /// With [`fetch_with_permit`](Self::fetch_with_permit), a caller that queues
    /// jobs itself decides which job gets the next slot (the service starts jobs in
    /// the manager's order and knows which ones have not started).
    pub async fn acquire(&self) -> Permit {
        self.inner.limit.acquire().await
    }

    /// [`fetch`](Self::fetch) with a slot already taken by [`acquire`](Self::acquire)
    /// on this fetcher; the slot is released when the fetch ends.
    pub async fn fetch_with_permit(
        &self,
        job: &FetchJob,
        permit: Permit,
    ) -> Result<Fetched, FetchError> {
        self.fetch_inner(job, Some(permit), &mut WireTimes::default())
            .await
    }

    /// [`fetch_with_permit`](Self::fetch_with_permit) that also leaves the request's
    /// wire stamps in `times` when it fails (a successful fetch has them in
    /// [`Fetched::wire`]); stamps of what did not happen stay 0.
    pub async fn fetch_stamped(
        &self,
        job: &FetchJob,
        permit: Permit,
        times: &mut WireTimes,
    ) -> Result<Fetched, FetchError> {
        self.fetch_inner(job, Some(permit), times).await
    }

    async fn fetch_inner(
        &self,
        job: &FetchJob,
        permit: Option<Permit>,
        times: &mut WireTimes,
    ) -> Result<Fetched, FetchError> {
        let config = &self.inner.config;
        let ip = job.addr.ip();
        if let Some(class) = address::classify(ip).filter(|_| !config.allow_private) {
            return Err(FetchError::ForbiddenAddress { ip, class });
        }
        let server_name = match job.target.scheme() {
            Scheme::Https => Some(tls::server_name(job.target.host())?),
            Scheme::Http => None,
        };
        let fields = request::fields(&config.user_agent, &job.validators);
        let request = request::http1(job.method, &job.target, &fields);
        let total_timeout = job
            .limits
            .total_timeout
            .map_or(config.total_timeout, |t| t.min(config.total_timeout));
        let limits = Limits {
            connect_timeout: job
                .limits
                .connect_timeout
                .map_or(config.connect_timeout, |t| t.min(config.connect_timeout)),
            first_byte_timeout: job
                .limits
                .first_byte_timeout
                .map_or(config.first_byte_timeout, |t| {
                    t.min(config.first_byte_timeout)
                }),
            max_header_bytes: config.max_header_bytes,
            max_header_fields: config.max_header_fields,
            max_body_bytes: job
                .limits
                .max_body_bytes
                .map_or(config.max_body_bytes, |b| b.min(config.max_body_bytes)),
        };

        let via = config.proxy.route(job.target.host()).cloned();
        let queued_at = Instant::now();
        let _permit = match permit {
            Some(permit) => permit,
            None => self.inner.limit.acquire().await,
        };
        let start = Instant::now();
        let transfer = tokio::time::timeout(
            total_timeout,
            self.transfer(
                job,
                (&request, &fields),
                via.as_ref(),
                server_name,
                &limits,
                times,
            ),
        )
        .await
        .map_err(|_| FetchError::TotalTimeout {
            after: total_timeout,
        })??;
        let total = start.elapsed();

        let response = transfer.response;
        // The target's address is known unless a proxy resolved the name.
        let target_ip: Option<IpAddr> = match &via {
            Some(p) if p.kind.proxy_resolves() => None,
            _ => Some(job.addr.ip()),
        };
        Ok(Fetched {
            addr: job.addr,
            target_ip,
            proxy: via.map(|p| p.to_string()),
            request: transfer.request.unwrap_or(request),
            protocols: transfer.protocols,
            raw: response.raw,
            head_len: response.head_len,
            head: response.head,
            truncated: response.truncated,
            payload: response.payload,
            max_decoded_bytes: self.inner.config.max_decoded_bytes,
            timings: Timings {
                queued: start - queued_at,
                connect: transfer.connect,
                first_byte: response.first_byte,
                total,
            },
            wire: *times,
            bytes_sent: transfer.bytes.0,
            bytes_received: transfer.bytes.1,
            reused_connection: transfer.reused,
        })
    }
}
