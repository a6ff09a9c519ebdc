//! HTTP/2 over TLS against an `h2` server on loopback: ALPN picks it by default,
//! the result is the HTTP/1.1 form with `h2` among its protocols, the connection is
//! pooled, the body cap holds, and `http2: false` keeps to HTTP/1.1.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use downloader::{FetchJob, Fetcher, FetcherConfig, Truncation};
use tokio_rustls::TlsAcceptor;

use crate::support::{Server, config, job_for, read_request, response, send};
use crate::tls::pki;

/// The body every HTTP/2 response carries.
const BODY: &[u8] = b"<html>over h2</html>";

/// An https server offering `h2, http/1.1`. Over h2 it answers `/big` with
/// `big` bytes, `/missing` with a 404, anything else with [`BODY`] and a few
/// fields; over HTTP/1.1 with "h1". Logs `alpn=<protocol> <path>` per request.
/// With `one_per_connection` it closes each HTTP/2 connection (GOAWAY) after its
/// first request.
async fn server(big: usize, one_per_connection: bool) -> (Server, tempfile::NamedTempFile) {
    let pki = pki("site.test");
    let mut config = (*pki.server).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let s = Server::start(move |tcp, log| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                while let Some(req) = read_request(&mut tls).await {
                    let path = String::from_utf8_lossy(&req)
                        .split(' ')
                        .nth(1)
                        .unwrap_or("")
                        .to_owned();
                    log.lock()
                        .unwrap()
                        .push(format!("alpn=http/1.1 {path}").into());
                    send(&mut tls, &response("", b"h1")).await;
                }
                return;
            }
            let Ok(mut h2) = h2::server::handshake(tls).await else {
                return;
            };
            while let Some(Ok((req, mut respond))) = h2.accept().await {
                if one_per_connection {
                    h2.graceful_shutdown();
                }
                let log: Arc<Mutex<Vec<Vec<u8>>>> = log.clone();
                tokio::spawn(async move {
                    let path = req.uri().path().to_owned();
                    let mut fields = String::new();
                    for (n, v) in req.headers() {
                        fields.push_str(&format!("{n}={} ", v.to_str().unwrap_or("?")));
                    }
                    log.lock()
                        .unwrap()
                        .push(format!("alpn=h2 {path} {fields}").into());
                    let (status, body) = match path.as_str() {
                        "/big" => (200, Bytes::from(vec![b'x'; big])),
                        "/missing" => (404, Bytes::from_static(b"gone")),
                        _ => (200, Bytes::from_static(BODY)),
                    };
                    let head = http::Response::builder()
                        .status(status)
                        .header("content-type", "text/html")
                        .header("set-cookie", "a=1")
                        .header("set-cookie", "b=2")
                        .body(())
                        .unwrap();
                    let Ok(mut stream) = respond.send_response(head, false) else {
                        return;
                    };
                    // In pieces, as a server sends a body in several DATA frames.
                    for piece in body.chunks(16 * 1024) {
                        stream.reserve_capacity(piece.len());
                        if stream
                            .send_data(Bytes::copy_from_slice(piece), false)
                            .is_err()
                        {
                            return;
                        }
                    }
                    let _ = stream.send_data(Bytes::new(), true);
                });
            }
        }
    })
    .await;
    (s, pki.ca_file)
}

fn fetcher(ca: &tempfile::NamedTempFile, http2: bool, max_body: usize) -> Fetcher {
    Fetcher::new(FetcherConfig {
        extra_ca_file: Some(ca.path().to_owned()),
        max_body_bytes: max_body,
        http2,
        ..config()
    })
    .unwrap()
}

fn job(s: &Server, path: &str) -> FetchJob {
    job_for(
        &format!("https://site.test:{}{path}", s.addr.port()),
        s.addr,
    )
}

fn log(s: &Server) -> Vec<String> {
    s.requests
        .lock()
        .unwrap()
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect()
}

#[tokio::test]
async fn h2_by_default_normalised_to_http11_and_pooled() {
    let (s, ca) = server(0, false).await;
    let f = fetcher(&ca, true, 1 << 20);
    let got = f.fetch(&job(&s, "/a?b=1")).await.unwrap();
    assert_eq!(got.protocols, vec!["h2", "tls/1.3"]);
    let head = std::str::from_utf8(&got.raw[..got.head_len]).unwrap();
    assert_eq!(
        head,
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n\r\n"
    );
    assert_eq!(&got.raw[got.head_len..], BODY);
    assert_eq!(&got.payload[..], BODY);
    assert_eq!((got.head.version, got.status()), (1, 200));
    let request = std::str::from_utf8(&got.request).unwrap();
    let port = s.addr.port();
    assert!(
        request.starts_with(&format!(
            "GET /a?b=1 HTTP/1.1\r\nHost: site.test:{port}\r\nUser-Agent: polycrawl/"
        )),
        "{request}"
    );
    assert!(!request.contains("Connection"), "{request}");
    assert!(request.ends_with("\r\n\r\n"));
    // The server saw HTTP/2 with our fields.
    let seen = log(&s);
    assert!(
        seen[0].starts_with("alpn=h2 /a user-agent=polycrawl/"),
        "{seen:?}"
    );
    assert!(
        seen[0].contains("accept-encoding=gzip, deflate"),
        "{seen:?}"
    );

    // The next fetches run on the pooled connection, one at a time.
    let missing = f.fetch(&job(&s, "/missing")).await.unwrap();
    assert!(missing.reused_connection);
    assert!(missing.raw.starts_with(b"HTTP/1.1 404 Not Found\r\n"));
    assert_eq!(&missing.payload[..], b"gone");
    assert_eq!(s.accepted(), 1);
    assert_eq!(f.idle_connections(), 1);
    assert!(missing.bytes_received > 0 && missing.bytes_sent > 0);
}

#[tokio::test]
async fn h2_bodies_are_capped_and_read_whole_below_the_cap() {
    let (s, ca) = server(100_000, false).await;
    let f = fetcher(&ca, true, 40_000);
    let cut = f.fetch(&job(&s, "/big")).await.unwrap();
    assert_eq!(cut.truncated, Some(Truncation::Length));
    assert_eq!(cut.payload.len(), 40_000);
    assert_eq!(cut.raw.len(), cut.head_len + 40_000);
    assert_eq!(
        f.idle_connections(),
        0,
        "a cut response does not give it back"
    );

    let f = fetcher(&ca, true, 100_000);
    let whole = f.fetch(&job(&s, "/big")).await.unwrap();
    assert_eq!(whole.truncated, None);
    assert_eq!(whole.payload.len(), 100_000);
    assert!(whole.payload.iter().all(|&b| b == b'x'));
}

#[tokio::test]
async fn http2_off_speaks_http11() {
    let (s, ca) = server(0, false).await;
    let f = fetcher(&ca, false, 1 << 20);
    let got = f.fetch(&job(&s, "/a")).await.unwrap();
    assert!(got.protocols.is_empty());
    assert!(got.raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(&got.payload[..], b"h1");
    assert!(got.request.ends_with(b"Connection: keep-alive\r\n\r\n"));
    assert_eq!(log(&s), vec!["alpn=http/1.1 /a"]);
}

#[tokio::test]
async fn a_pooled_connection_the_server_closed_is_replaced() {
    let (s, ca) = server(0, true).await;
    let f = fetcher(&ca, true, 1 << 20);
    for path in ["/a", "/b", "/c"] {
        let got = f.fetch(&job(&s, path)).await.unwrap();
        assert_eq!(got.protocols[0], "h2");
        assert_eq!(&got.payload[..], BODY);
    }
    assert_eq!(s.accepted(), 3, "one connection per request: {:?}", log(&s));
    assert_eq!(log(&s).len(), 3);
}

#[tokio::test]
async fn h2_through_a_connect_tunnel_and_a_socks5_proxy() {
    use std::collections::HashMap;
    use std::net::{IpAddr, Ipv4Addr};

    use downloader::proxy::ProxyConfig;
    use test_support::proxy::{Kind, ProxyOptions, TestProxy};

    let (s, ca) = server(0, false).await;
    for (kind, resolves) in [(Kind::Http, true), (Kind::Socks5, false)] {
        let proxy = TestProxy::start(ProxyOptions {
            kind,
            outgoing: Ipv4Addr::new(127, 0, 0, 3),
            names: HashMap::from([("site.test".to_owned(), IpAddr::from([127, 0, 0, 1]))]),
            auth: None,
        })
        .unwrap();
        let f = Fetcher::new(FetcherConfig {
            extra_ca_file: Some(ca.path().to_owned()),
            proxy: ProxyConfig::parse(Some(&proxy.url(resolves, None)), &[]).unwrap(),
            ..config()
        })
        .unwrap();
        let first = f.fetch(&job(&s, "/x")).await.unwrap();
        let second = f.fetch(&job(&s, "/y")).await.unwrap();
        for got in [&first, &second] {
            assert_eq!(got.protocols, vec!["h2", "tls/1.3"], "{kind:?}");
            assert!(got.raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
            assert!(got.proxy.is_some());
        }
        assert!(second.reused_connection, "{kind:?}: the tunnel is pooled");
        assert_eq!(proxy.forwarded().len(), 1, "{kind:?}: one tunnel");
    }
}
