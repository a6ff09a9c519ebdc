//! The downloader (DESIGN.md section 5): an HTTP/1.1 and HTTP/2 fetch engine and
//! the service around it that `polycrawl downloader` runs.
//!
//! **The engine**: given one [`FetchJob`] (a URL, the address the manager resolved
//! for it, limits), it opens or reuses a connection, sends one request and returns
//! the response exactly as received ([`Fetched`]) with timings, or a typed
//! [`FetchError`] whose [`class`](FetchError::class) is the crawl outcome to report.
//!
//! **The service** ([`service`], entry point [`run`]): registers with the crawl
//! manager over the control protocol, runs the jobs of its `FetchBatch`es on the
//! engine, writes every page as a WARC `response` + `request` record pair into page
//! batches published to `pages/<app>/` (robots.txt into `robots/`), and reports
//! every job (`FetchReports`) and every published batch (`Committed`) back. The
//! contract with the manager is in the [`service`] docs.
//!
//! Main types: [`Fetcher`] (clone-able, used from many tasks, runtime-adjustable
//! concurrency), [`FetcherConfig`], [`FetchJob`] / [`Target`], [`Fetched`],
//! [`FetchError`]; [`run`], [`DownloaderConfig`] (the `downloader:` config
//! section), [`ControlSettings`], [`DownloaderError`].
//!
//! What the engine must never do:
//! - resolve names: it connects to the address in the job, nothing else (or to the
//!   configured proxy for it, which is given the address or, for HTTP and `socks5h`
//!   proxies, the name);
//! - follow redirects: a 3xx is returned like any response, the application treats
//!   `Location` as a link;
//! - connect to private, loopback, link-local or other non-public addresses unless
//!   the config sets `allow_private` (checked on the exact address, before connecting);
//! - turn off certificate verification;
//! - hold more than the configured caps in memory (head, body, decoded body).
//!
//! Modules of the engine, bottom up:
//! - [`address`]: the address policy;
//! - [`job`]: targets and jobs; [`request`]: the request bytes;
//! - `tls`, `conn`: TLS config, connecting, byte counting;
//! - [`head`]: head parsing and body framing; the chunked decoder is `spool::http::ChunkedDecoder`;
//!   `exchange`: one request/response on a connection, with the caps;
//!   `http2`: the same over HTTP/2 (when TLS negotiates `h2`), archived in its
//!   HTTP/1.1 form;
//! - `decode`: gzip/deflate with a decoded-size cap;
//! - [`proxy`]: HTTP and SOCKS5 proxies (settings, handshakes);
//! - `pool`: the keep-alive pool; [`limit`]: the resizable concurrency limit;
//!   `ip_gate`: per-IP spacing of request writes;
//! - [`fetched`]: the result (raw vs payload vs decoded body: see there);
//! - [`fetcher`]: [`Fetcher`], tying it together (`fetcher/transfer.rs`: the
//!   connection part, pooled or new, HTTP/1.1 or HTTP/2); [`error`]: every error type.
//!
//! The service, on top: [`service`] (`run` and the reconnect loop), with
//! `service/config.rs`, `control.rs`, `session.rs` (one manager connection),
//! `task.rs` (one job), `writer.rs` (the WARC writer thread), `batch.rs` (WARC
//! files), `metrics.rs`, `error.rs`.
//!
//! Depends only on `spool` (outcomes, the control protocol, the WARC codec, spool
//! publishing), never on another service crate or on `polycrawl`.

pub mod address;
pub mod config;
mod conn;
mod decode;
pub mod error;
mod exchange;
pub mod fetched;
pub mod fetcher;
pub mod head;
mod http2;
mod ip_gate;
pub mod job;
pub mod limit;
mod pool;
pub mod proxy;
pub mod request;
pub mod service;
mod tls;

pub use address::AddressClass;
pub use config::FetcherConfig;
pub use error::{ConfigError, DecodeError, FetchError};
pub use fetched::{DecodedBody, Fetched, Timings, Truncation, WireTimes};
pub use fetcher::Fetcher;
pub use head::ResponseHead;
pub use job::{FetchJob, JobLimits, Method, Scheme, Target};
pub use limit::{ConcurrencyLimit, Permit};
pub use proxy::{Proxy, ProxyConfig, ProxyKind};
pub use service::config::{DownloaderConfig, InvalidConfig, ProxyRuleConfig};
pub use service::error::{DownloaderError, WriteError};
pub use service::{SHUTDOWN_GRACE, run};
pub use spool::protocol::client::ControlSettings;
