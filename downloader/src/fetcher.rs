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
use rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use crate::address;
use crate::config::FetcherConfig;
use crate::conn::{self, Conn, TlsParams};
use crate::error::{ConfigError, FetchError};
use crate::exchange::{self, ExchangeError, Limits, RawResponse, Wire};
use crate::fetched::{Fetched, Timings, WireTimes};
use crate::http2::{self, H2Conn, H2Response};
use crate::ip_gate::{HostGate, IpGate};
use crate::job::{FetchJob, Scheme};
use crate::limit::{ConcurrencyLimit, Permit};
use crate::pool::{Pool, PoolKey};
use crate::proxy::{self, Dest, OpenParams, Proxy, ProxyKind};
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

    /// Connection handling: pooled connection first, one retry on a new connection if
    /// the pooled one was dead; HTTP/2 where TLS negotiated it. `request` is the
    /// HTTP/1.1 request and the fields it was made of (for HTTP/2).
    async fn transfer(
        &self,
        job: &FetchJob,
        (request, fields): (&Bytes, &[(&'static str, String)]),
        via: Option<&Arc<Proxy>>,
        server_name: Option<ServerName<'static>>,
        limits: &Limits,
        times: &mut WireTimes,
    ) -> Result<Transfer, FetchError> {
        let mut wire = self.wire(job, times);
        let target = &job.target;
        let key = PoolKey {
            addr: job.addr,
            tls_host: server_name.as_ref().map(|_| target.host().to_owned()),
            via: via.map(|p| (Arc::clone(p), target.host().to_owned(), target.port())),
        };
        // A plain-http request through an HTTP proxy is written in absolute form.
        let forward = via.filter(|p| p.kind == ProxyKind::Http && server_name.is_none());
        let absolute;
        let written = match forward {
            Some(p) => {
                absolute = Bytes::from(proxy::absolute_form(
                    request,
                    &target.to_string(),
                    p.basic_auth().as_deref(),
                ));
                &absolute
            }
            None => request,
        };
        let checked = |response: RawResponse| match forward {
            Some(p) => proxy_error(p, &response.head).map_or(Ok(response), Err),
            None => Ok(response),
        };
        match self.inner.pool.checkout(&key) {
            Some(Link::H1(mut conn)) => {
                let before = conn.wire_bytes();
                match exchange::exchange(&mut conn, &mut wire, written, job.method, limits).await {
                    Ok(response) => {
                        let response = checked(response)?;
                        return Ok(self.finish(key, conn, before, response, None));
                    }
                    Err(e) if e.retryable => {
                        tracing::debug!(addr = %job.addr, error = %e.error, "pooled connection was dead; reconnecting");
                    }
                    Err(e) => return Err(e.error),
                }
            }
            Some(Link::H2(h2)) if !h2.is_closed() => {
                match self
                    .over_h2(key.clone(), h2, &mut wire, job, fields, limits, None)
                    .await
                {
                    Ok(t) => return Ok(t),
                    Err(e) if e.retryable => {
                        tracing::debug!(addr = %job.addr, error = %e.error, "pooled HTTP/2 connection was closed; reconnecting");
                    }
                    Err(e) => return Err(e.error),
                }
            }
            // Closed while idle: dropped.
            Some(Link::H2(_)) | None => {}
        }
        let connect_start = Instant::now();
        let (open, tls) = self.connect_params(job, via, server_name, limits);
        let mut conn = conn::connect(job.addr, open, tls, limits.connect_timeout).await?;
        if conn.is_h2() {
            let left = limits
                .connect_timeout
                .saturating_sub(connect_start.elapsed());
            let h2 = tokio::time::timeout(left, http2::handshake(conn, job.addr, limits))
                .await
                .map_err(|_| FetchError::ConnectTimeout {
                    addr: job.addr,
                    after: limits.connect_timeout,
                })??;
            let connect = Some(connect_start.elapsed());
            return self
                .over_h2(key, h2, &mut wire, job, fields, limits, connect)
                .await
                .map_err(|e| e.error);
        }
        let connect = connect_start.elapsed();
        let response = exchange::exchange(&mut conn, &mut wire, written, job.method, limits)
            .await
            .map_err(|e| e.error)?;
        let response = checked(response)?;
        Ok(self.finish(key, conn, (0, 0), response, Some(connect)))
    }

    /// How to open a connection for `job`: through `via`'s handshake, with TLS
    /// for `server_name`.
    fn connect_params<'a>(
        &'a self,
        job: &'a FetchJob,
        via: Option<&'a Arc<Proxy>>,
        server_name: Option<ServerName<'static>>,
        limits: &Limits,
    ) -> (Option<OpenParams<'a>>, Option<TlsParams<'a>>) {
        let target = &job.target;
        let open = via.map(|p| OpenParams {
            proxy: p,
            dest: match p.kind {
                ProxyKind::Socks5 => Dest::Addr(job.addr),
                ProxyKind::Http | ProxyKind::Socks5h => Dest::Name(target.host(), target.port()),
            },
            tunnel: server_name.is_some(),
            user_agent: &self.inner.config.user_agent,
            max_head_bytes: limits.max_header_bytes,
        });
        let tls = server_name.map(|server_name| TlsParams {
            connector: &self.inner.tls,
            server_name,
            host: target.host(),
        });
        (open, tls)
    }

    /// Where `job`'s request goes and how it is paced.
    fn wire<'a>(&'a self, job: &FetchJob, times: &'a mut WireTimes) -> Wire<'a> {
        Wire {
            addr: job.addr,
            gate: &self.inner.gate,
            spacing: job.limits.min_ip_spacing.unwrap_or_default(),
            host_gate: &self.inner.host_gate,
            host: job.limits.min_host_spacing.map(|d| {
                let t = &job.target;
                (
                    format!("{}://{}:{}", t.scheme().as_str(), t.host(), t.port()),
                    d,
                )
            }),
            times,
        }
    }

    /// Runs the exchange on `h2` (pooled when `connect` is `None`) and gives the
    /// connection back to the pool if it may be reused.
    #[allow(clippy::too_many_arguments)] // the parts of one fetch, as `transfer` has them
    async fn over_h2(
        &self,
        key: PoolKey,
        mut h2: H2Conn,
        wire: &mut Wire<'_>,
        job: &FetchJob,
        fields: &[(&'static str, String)],
        limits: &Limits,
        connect: Option<std::time::Duration>,
    ) -> Result<Transfer, ExchangeError> {
        let before = h2.wire_bytes();
        let r = http2::exchange(&mut h2, wire, job.method, &job.target, fields, limits).await?;
        Ok(self.finish_h2(key, h2, before, r, connect))
    }

    fn finish(
        &self,
        key: PoolKey,
        conn: Conn,
        before: (u64, u64),
        response: RawResponse,
        connect: Option<std::time::Duration>,
    ) -> Transfer {
        let after = conn.wire_bytes();
        if response.reusable {
            self.inner.pool.checkin(key, Link::H1(conn));
        }
        Transfer {
            response,
            request: None,
            protocols: Vec::new(),
            connect,
            bytes: (after.0 - before.0, after.1 - before.1),
            reused: connect.is_none(),
        }
    }

    fn finish_h2(
        &self,
        key: PoolKey,
        h2: H2Conn,
        before: (u64, u64),
        r: H2Response,
        connect: Option<std::time::Duration>,
    ) -> Transfer {
        let after = h2.wire_bytes();
        let protocols = std::iter::once("h2").chain(h2.tls_protocol()).collect();
        if r.response.reusable {
            self.inner.pool.checkin(key, Link::H2(h2));
        }
        Transfer {
            response: r.response,
            request: Some(r.request),
            protocols,
            connect,
            bytes: (
                after.0.saturating_sub(before.0),
                after.1.saturating_sub(before.1),
            ),
            reused: connect.is_none(),
        }
    }
}

/// The proxy's own failure in a response to a plain-http request through an HTTP
/// proxy: `407`, or a `Proxy-Status` field with an `error` parameter (RFC 9209; a
/// proxy that does not send it has its error pages archived like responses).
fn proxy_error(p: &Proxy, head: &crate::head::ResponseHead) -> Option<FetchError> {
    let fail = |reason: String| FetchError::Proxy {
        proxy: p.to_string(),
        reason,
    };
    if head.status == 407 {
        let why = if p.auth.is_some() {
            "credentials refused"
        } else {
            "no credentials configured"
        };
        return Some(fail(format!("407 Proxy Authentication Required ({why})")));
    }
    let status = head.get("proxy-status")?;
    let status = String::from_utf8_lossy(status);
    let error = status
        .split(';')
        .map(str::trim)
        .find_map(|param| param.strip_prefix("error="))?;
    Some(fail(format!(
        "{} {} (Proxy-Status error={error})",
        head.status, head.reason
    )))
}
