//! Integration tests of the fetch engine against real servers on 127.0.0.1 (port 0),
//! written with tokio inside each test. One test binary; one module per concern.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod support;

mod bodies;
mod concurrency;
mod errors;
mod http2;
mod keepalive;
mod policy;
mod proxy;
mod spacing;
mod timeouts;
mod tls;
