//! The address policy: refused before any connection unless `allow_private`.

use std::time::Duration;

use downloader::{AddressClass, FetchError, Fetcher, FetcherConfig};
use spool::OutcomeReason;

use crate::support::{Server, config, response};

#[tokio::test]
async fn loopback_is_refused_without_connecting() {
    let server = Server::respond(response("", b"should not be served")).await;
    let f = Fetcher::new(FetcherConfig {
        allow_private: false,
        ..config()
    })
    .unwrap();
    let err = f.fetch(&server.job("/")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::ForbiddenAddress { class: AddressClass::Loopback, ip } if ip == server.addr.ip()),
        "{err}"
    );
    assert_eq!(err.class(), OutcomeReason::ForbiddenAddress);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.accepted(), 0, "no connection attempt was made");
}

#[tokio::test]
async fn loopback_is_allowed_when_configured() {
    let server = Server::respond(response("", b"ok")).await;
    let f = Fetcher::new(FetcherConfig {
        allow_private: true,
        ..config()
    })
    .unwrap();
    assert_eq!(&f.fetch(&server.job("/")).await.unwrap().payload[..], b"ok");
    assert_eq!(server.accepted(), 1);
}
