//! Fetches through the HTTP proxy and SOCKS5 server of `test_support::proxy`: the
//! request archived stays origin-form, the connection is reused per origin, the
//! target's address is known only when the crawler resolved, and every failure of
//! the proxy is a `FetchError::Proxy`, reported as a connection failure.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use downloader::proxy::ProxyConfig;
use downloader::{FetchError, Fetcher, FetcherConfig};
use spool::OutcomeReason;
use test_support::proxy::{Kind, ProxyOptions, TestProxy};

use crate::support::{Server, config, response};

fn start(kind: Kind, auth: Option<(&str, &str)>) -> TestProxy {
    TestProxy::start(ProxyOptions {
        kind,
        outgoing: Ipv4Addr::new(127, 0, 0, 3),
        names: HashMap::from([("site.test".to_owned(), IpAddr::from([127, 0, 0, 1]))]),
        auth: auth.map(|(u, p)| (u.to_owned(), p.to_owned())),
    })
    .unwrap()
}

fn through(url: &str) -> Fetcher {
    Fetcher::new(FetcherConfig {
        proxy: ProxyConfig::parse(Some(url), &[]).unwrap(),
        ..config()
    })
    .unwrap()
}

fn proxy_error(result: Result<downloader::Fetched, FetchError>) -> String {
    let err = result.unwrap_err();
    assert!(matches!(err, FetchError::Proxy { .. }), "{err}");
    assert_eq!(err.class(), OutcomeReason::ConnectFailure);
    err.to_string()
}

#[tokio::test]
async fn http_proxy_forwards_in_absolute_form_and_archives_origin_form() {
    let server = Server::respond(response("", b"ok")).await;
    let proxy = start(Kind::Http, Some(("u", "p w")));
    let f = through(&proxy.url(true, Some(("u", "p%20w"))));
    for path in ["/a", "/b?x=1"] {
        let got = f.fetch(&server.job(path)).await.unwrap();
        assert_eq!(got.status(), 200);
        let sent = String::from_utf8(got.request.to_vec()).unwrap();
        assert!(
            sent.starts_with(&format!("GET {path} HTTP/1.1\r\n")),
            "{sent}"
        );
        assert!(!sent.contains("Proxy-Authorization"), "{sent}");
        assert_eq!(got.target_ip, None, "the proxy resolved");
        assert!(got.proxy.as_deref().unwrap().contains("u:***@"));
    }
    let seen = server.requests.lock().unwrap().clone();
    let first = String::from_utf8_lossy(&seen[0]);
    assert!(first.starts_with("GET /a HTTP/1.1\r\n"), "{first}");
    assert!(
        !first.contains("roxy-"),
        "proxy fields reach the site: {first}"
    );
    let forwarded = proxy.forwarded();
    assert_eq!(forwarded.len(), 2);
    let origin = format!("site.test:{}", server.addr.port());
    assert!(
        forwarded.iter().all(|f| f.target == origin),
        "{forwarded:?}"
    );
    assert_eq!(server.accepted(), 1, "one connection per origin, reused");
}

#[tokio::test]
async fn socks5_sends_the_address_and_reuses_the_connection() {
    let server = Server::respond(response("", b"ok")).await;
    let proxy = start(Kind::Socks5, Some(("crawler", "s3cret")));
    let f = through(&proxy.url(false, Some(("crawler", "s3cret"))));
    for _ in 0..3 {
        let got = f.fetch(&server.job("/")).await.unwrap();
        assert_eq!(got.status(), 200);
        assert_eq!(got.target_ip, Some(server.addr.ip()));
    }
    let forwarded = proxy.forwarded();
    assert_eq!(forwarded.len(), 1, "{forwarded:?}");
    assert!(!forwarded[0].by_name);
    assert_eq!(forwarded[0].target, server.addr.to_string());
    assert_eq!(server.request_count(), 3);

    let h = through(&proxy.url(true, Some(("crawler", "s3cret"))));
    h.fetch(&server.job("/")).await.unwrap();
    let last = proxy.forwarded().pop().unwrap();
    assert!(
        last.by_name && last.target.starts_with("site.test:"),
        "{last:?}"
    );
}

#[tokio::test]
async fn proxy_failures_are_connection_failures_with_a_reason() {
    let server = Server::respond(response("", b"ok")).await;
    let http = start(Kind::Http, Some(("u", "right")));
    let msg = proxy_error(
        through(&http.url(true, Some(("u", "wrong"))))
            .fetch(&server.job("/"))
            .await,
    );
    assert!(msg.contains("407") && !msg.contains("wrong"), "{msg}");
    let msg = proxy_error(through(&http.url(true, None)).fetch(&server.job("/")).await);
    assert!(msg.contains("no credentials configured"), "{msg}");

    let socks = start(Kind::Socks5, Some(("u", "right")));
    let msg = proxy_error(
        through(&socks.url(true, Some(("u", "wrong"))))
            .fetch(&server.job("/"))
            .await,
    );
    assert!(msg.contains("authentication failed"), "{msg}");
    let msg = proxy_error(
        through(&socks.url(true, None))
            .fetch(&server.job("/"))
            .await,
    );
    assert!(msg.contains("none of our methods"), "{msg}");

    // A target that refuses: SOCKS5 reply 5, and an HTTP proxy's 502 with
    // Proxy-Status.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let job = crate::support::job_for(&format!("http://site.test:{}/", dead.port()), dead);
    let open = start(Kind::Socks5, None);
    let msg = proxy_error(through(&open.url(false, None)).fetch(&job).await);
    assert!(msg.contains("connection refused"), "{msg}");
    let plain = start(Kind::Http, None);
    let msg = proxy_error(through(&plain.url(true, None)).fetch(&job).await);
    assert!(
        msg.contains("502") && msg.contains("destination_unavailable"),
        "{msg}"
    );
    let https = crate::support::job_for(&format!("https://site.test:{}/", dead.port()), dead);
    let msg = proxy_error(through(&plain.url(true, None)).fetch(&https).await);
    assert!(
        msg.contains("CONNECT site.test") && msg.contains("502"),
        "{msg}"
    );

    // No proxy listening at all.
    let msg = proxy_error(
        through(&format!("socks5://{dead}"))
            .fetch(&server.job("/"))
            .await,
    );
    assert!(msg.contains("refused"), "{msg}");
}
