//! The address policy: refused before any connection unless `allow_private`.

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
    // One fetch allowed to connect: the server accepts in order, so by its answer
    // it has accepted any connection the refused fetch made.
    let allowed = Fetcher::new(config()).unwrap();
    allowed.fetch(&server.job("/")).await.unwrap();
    assert_eq!(server.accepted(), 1, "no connection attempt was made");
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
