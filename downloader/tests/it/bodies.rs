//! Body framing, raw preservation, content decoding and the caps.

use std::time::Duration;

use downloader::{Fetcher, FetcherConfig, Method, Truncation};
use tokio::io::AsyncWriteExt;

use crate::support::{Server, config, fetcher, gzip, read_request, response, send, zlib};

#[tokio::test]
async fn content_length_body_and_exact_bytes() {
    let resp = response("Content-Type: text/html\r\n", b"Hello, world!");
    let server = Server::respond(resp.clone()).await;
    let got = fetcher().fetch(&server.job("/a?b=c")).await.unwrap();

    assert_eq!(got.status(), 200);
    assert_eq!(got.raw, resp, "raw is the response as sent");
    assert_eq!(&got.raw[got.head_len..], b"Hello, world!");
    assert_eq!(&got.payload[..], b"Hello, world!");
    assert_eq!(&got.decode().unwrap().body[..], b"Hello, world!");
    assert_eq!(got.truncated, None);
    assert_eq!(got.header("content-type"), Some(&b"text/html"[..]));
    assert_eq!(got.bytes_received, resp.len() as u64);
    assert_eq!(got.bytes_sent, got.request.len() as u64);
    assert!(got.timings.connect.is_some() && !got.reused_connection);
    assert!(got.timings.total >= got.timings.first_byte);
    assert_eq!(got.addr, server.addr);

    let seen = server.requests.lock().unwrap()[0].clone();
    assert_eq!(seen, got.request, "the request returned is the one sent");
    let text = String::from_utf8(seen).unwrap();
    let port = server.addr.port();
    assert!(text.starts_with(&format!(
        "GET /a?b=c HTTP/1.1\r\nHost: site.test:{port}\r\n"
    )));
    assert!(text.contains("\r\nUser-Agent: polycrawl/"));
    assert!(text.contains("\r\nAccept-Encoding: gzip, deflate\r\n"));
    assert!(text.contains("\r\nConnection: keep-alive\r\n"));
}

#[tokio::test]
async fn chunked_with_extensions_and_trailers() {
    let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;ext=1\r\nHello\r\n8 ; a=\"b\"\r\n, chunky\r\n1\r\n!\r\n0\r\nX-Checksum: abc\r\nX-More: 1\r\n\r\n";
    let server = Server::respond(&resp[..]).await;
    let f = fetcher();
    let got = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.raw, &resp[..], "chunk framing and trailers kept in raw");
    assert_eq!(&got.payload[..], b"Hello, chunky!");
    assert_eq!(got.truncated, None);
    assert_eq!(
        f.idle_connections(),
        1,
        "a complete chunked body leaves the connection reusable"
    );
}

#[tokio::test]
async fn close_delimited_body() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        send(
            &mut s,
            b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ",
        )
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        send(&mut s, b"the end").await;
    })
    .await;
    let f = fetcher();
    let got = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(&got.payload[..], b"until the end");
    assert_eq!(got.truncated, None);
    assert_eq!(f.idle_connections(), 0);
}

#[tokio::test]
async fn gzip_and_deflate_are_decoded_and_raw_is_kept() {
    let page = b"<html><a href=/x>x</a></html>".repeat(50);
    for (name, encoded) in [("gzip", gzip(&page)), ("deflate", zlib(&page))] {
        let resp = response(&format!("Content-Encoding: {name}\r\n"), &encoded);
        let server = Server::respond(resp.clone()).await;
        let got = fetcher().fetch(&server.job("/")).await.unwrap();
        assert_eq!(got.raw, resp, "{name}: raw keeps the compressed bytes");
        assert_eq!(got.payload, encoded, "{name}: payload is still encoded");
        let decoded = got.decode().unwrap();
        assert_eq!(decoded.body, &page[..], "{name}");
        assert!(!decoded.truncated);
    }
}

#[tokio::test]
async fn chunked_gzip_is_dechunked_then_decoded() {
    let page = b"chunked and compressed ".repeat(100);
    let encoded = gzip(&page);
    let (a, b) = encoded.split_at(encoded.len() / 2);
    let mut resp =
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for part in [a, b] {
        resp.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        resp.extend_from_slice(part);
        resp.extend_from_slice(b"\r\n");
    }
    resp.extend_from_slice(b"0\r\n\r\n");
    let server = Server::respond(resp.clone()).await;
    let got = fetcher().fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.raw, resp);
    assert_eq!(got.payload, encoded);
    assert_eq!(got.decode().unwrap().body, &page[..]);
}

#[tokio::test]
async fn gzip_bomb_stops_at_decoded_cap() {
    let bomb = gzip(&vec![0u8; 16 << 20]);
    assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
    let server = Server::respond(response("Content-Encoding: gzip\r\n", &bomb)).await;
    let f = Fetcher::new(FetcherConfig {
        max_decoded_bytes: 256 * 1024,
        ..config()
    })
    .unwrap();
    let got = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.truncated, None, "the raw body is complete");
    assert_eq!(got.payload.len(), bomb.len());
    let decoded = got.decode().unwrap();
    assert_eq!(decoded.body.len(), 256 * 1024);
    assert!(decoded.truncated);
}

#[tokio::test]
async fn corrupt_gzip_is_archived_with_a_decode_error() {
    let server = Server::respond(response(
        "Content-Encoding: gzip\r\n",
        b"definitely not gzip",
    ))
    .await;
    let got = fetcher().fetch(&server.job("/")).await.unwrap();
    assert_eq!(&got.payload[..], b"definitely not gzip");
    let err = got.decode().unwrap_err();
    assert!(
        matches!(err, downloader::FetchError::BodyDecode(_)),
        "{err}"
    );
    assert_eq!(err.class(), spool::OutcomeReason::BadResponse);
}

#[tokio::test]
async fn body_cap_truncates_and_closes() {
    let body = vec![b'x'; 5000];
    let server = Server::respond(response("", &body)).await;
    let f = Fetcher::new(FetcherConfig {
        max_body_bytes: 1000,
        ..config()
    })
    .unwrap();
    let got = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.truncated, Some(Truncation::Length));
    assert_eq!(got.truncated.unwrap().as_warc_str(), "length");
    assert_eq!(got.raw.len() - got.head_len, 1000);
    assert_eq!(got.payload.len(), 1000);
    assert_eq!(f.idle_connections(), 0, "a cut connection is not reused");
    f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn chunked_body_cap_counts_raw_bytes() {
    let mut resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..100 {
        resp.extend_from_slice(b"a\r\n0123456789\r\n");
    }
    resp.extend_from_slice(b"0\r\n\r\n");
    let server = Server::respond(resp.clone()).await;
    let f = Fetcher::new(FetcherConfig {
        max_body_bytes: 150,
        ..config()
    })
    .unwrap();
    let got = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.truncated, Some(Truncation::Length));
    assert_eq!(got.raw.len() - got.head_len, 150);
    assert_eq!(got.raw, &resp[..got.raw.len()]);
    assert_eq!(
        got.payload.len(),
        100,
        "ten whole chunks of 15 raw bytes each"
    );
}

#[tokio::test]
async fn early_close_is_a_disconnect_truncation() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        send(
            &mut s,
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten!!",
        )
        .await;
    })
    .await;
    let got = fetcher().fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.truncated, Some(Truncation::Disconnect));
    assert_eq!(&got.payload[..], b"only ten!!");
}

#[tokio::test]
async fn interim_responses_are_skipped() {
    let resp = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let server = Server::respond(&resp[..]).await;
    let got = fetcher().fetch(&server.job("/")).await.unwrap();
    assert_eq!(got.status(), 200);
    assert!(got.raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(&got.payload[..], b"ok");
    assert_eq!(got.bytes_received, resp.len() as u64);
}

#[tokio::test]
async fn bodiless_responses_keep_the_connection() {
    // 304 and HEAD carry a Content-Length but no body; 204 none at all.
    let server = Server::start(|mut s, _| async move {
        let answers: [&[u8]; 3] = [
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 500\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n",
        ];
        for a in answers {
            if read_request(&mut s).await.is_none() {
                return;
            }
            let _ = s.write_all(a).await;
        }
    })
    .await;
    let f = fetcher();
    assert_eq!(f.fetch(&server.job("/")).await.unwrap().status(), 304);
    assert_eq!(f.fetch(&server.job("/")).await.unwrap().status(), 204);
    let mut head = server.job("/");
    head.method = Method::Head;
    let got = f.fetch(&head).await.unwrap();
    assert_eq!((got.status(), got.payload.len()), (200, 0));
    assert!(got.reused_connection);
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn redirects_are_returned_not_followed() {
    let server301 = Server::respond(
        b"HTTP/1.1 301 Moved Permanently\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"
            .to_vec(),
    )
    .await;
    let f = fetcher();
    let got = f.fetch(&server301.job("/")).await.unwrap();
    assert_eq!(got.status(), 301);
    assert_eq!(got.header("location"), Some(&b"/elsewhere"[..]));
    // A second fetch after it: a redirect followed would be among the requests
    // the server read by the time it answers this one.
    f.fetch(&server301.job("/again")).await.unwrap();
    let targets: Vec<String> = server301
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| {
            String::from_utf8_lossy(r)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(targets, ["GET / HTTP/1.1", "GET /again HTTP/1.1"]);
}
