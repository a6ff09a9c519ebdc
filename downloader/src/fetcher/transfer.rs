//! The connection part of a fetch ([`Fetcher`]'s `transfer`): a pooled connection
//! or a new one (through a proxy, TLS, HTTP/2 where negotiated), the exchange on
//! it, and the connection back to the pool when it may be reused. Split from
//! `fetcher.rs` so that each stays readable; it must never resolve a name, follow
//! a redirect or retry a request that got an answer (see `fetcher.rs`).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rustls::pki_types::ServerName;

use super::{Fetcher, Link, Transfer};
use crate::conn::{self, Conn, TlsParams};
use crate::error::FetchError;
use crate::exchange::{self, ExchangeError, Limits, RawResponse, Wire};
use crate::fetched::WireTimes;
use crate::http2::{self, H2Conn, H2Response};
use crate::job::FetchJob;
use crate::pool::PoolKey;
use crate::proxy::{self, Dest, OpenParams, Proxy, ProxyKind};

impl Fetcher {
    /// Connection handling: pooled connection first, one retry on a new connection if
    /// the pooled one was dead; HTTP/2 where TLS negotiated it. `request` is the
    /// HTTP/1.1 request and the fields it was made of (for HTTP/2).
    pub(super) async fn transfer(
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
