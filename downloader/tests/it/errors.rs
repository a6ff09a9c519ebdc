//! Servers that misbehave: garbage, huge heads, silence, refusal.

use downloader::{FetchError, Fetcher, FetcherConfig};
use spool::OutcomeReason;
use tokio::net::TcpListener;

use crate::support::{Server, config, fetcher, job_for, read_request, send};

#[tokio::test]
async fn garbage_is_a_bad_response() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        send(&mut s, b"SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n\r\n").await;
    })
    .await;
    let err = fetcher().fetch(&server.job("/")).await.unwrap_err();
    assert!(matches!(err, FetchError::BadResponse { .. }), "{err}");
    assert_eq!(err.class(), OutcomeReason::BadResponse);
}

#[tokio::test]
async fn bad_chunking_is_a_bad_response() {
    let server = Server::respond(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n".to_vec(),
    )
    .await;
    let err = fetcher().fetch(&server.job("/")).await.unwrap_err();
    assert!(matches!(err, FetchError::BadResponse { .. }), "{err}");
}

#[tokio::test]
async fn oversized_head_is_refused() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..2200 {
            head.extend_from_slice(format!("X-Filler-{i:04}: {}\r\n", "v".repeat(80)).as_bytes());
        }
        assert!(head.len() > 200_000);
        head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        send(&mut s, &head).await;
    })
    .await;
    // Field count high enough that the byte cap is what trips.
    let f = Fetcher::new(FetcherConfig {
        max_header_fields: 10_000,
        ..config()
    })
    .unwrap();
    let err = f.fetch(&server.job("/")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::HeadersTooLarge { limit: 65536, .. }),
        "{err}"
    );
    assert_eq!(err.class(), OutcomeReason::BadResponse);
}

#[tokio::test]
async fn too_many_header_fields_is_refused() {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..300 {
        head.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    let server = Server::respond(head).await;
    let err = fetcher().fetch(&server.job("/")).await.unwrap_err();
    assert!(matches!(err, FetchError::HeadersTooLarge { .. }), "{err}");
}

#[tokio::test]
async fn silent_close_is_an_empty_response() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
    })
    .await;
    let err = fetcher().fetch(&server.job("/")).await.unwrap_err();
    assert!(matches!(err, FetchError::EmptyResponse), "{err}");
}

#[tokio::test]
async fn refused_connection_is_a_connect_failure() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = fetcher()
        .fetch(&job_for(
            &format!("http://site.test:{}/", addr.port()),
            addr,
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Connect { .. }), "{err}");
    assert_eq!(err.class(), OutcomeReason::ConnectFailure);
}

#[tokio::test]
async fn invalid_config_is_refused() {
    let err = Fetcher::new(FetcherConfig {
        user_agent: "curl/8".into(),
        ..config()
    })
    .unwrap_err();
    assert!(
        matches!(err, downloader::ConfigError::UserAgent(_)),
        "{err}"
    );
}
