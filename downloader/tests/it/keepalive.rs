//! Keep-alive reuse, Connection: close, and the retry on a dead pooled connection.

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

use crate::support::{Server, fetcher, read_request, response};

#[tokio::test]
async fn two_fetches_one_connection() {
    let server = Server::respond(response("", b"same socket")).await;
    let f = fetcher();
    let first = f.fetch(&server.job("/1")).await.unwrap();
    let second = f.fetch(&server.job("/2")).await.unwrap();
    assert!(!first.reused_connection && second.reused_connection);
    assert_eq!(second.timings.connect, None);
    assert_eq!(server.accepted(), 1);
    assert_eq!(server.request_count(), 2);
    assert_eq!(
        second.bytes_sent,
        second.request.len() as u64,
        "counted per fetch"
    );
}

#[tokio::test]
async fn connection_close_is_not_reused() {
    let server = Server::respond(response("Connection: close\r\n", b"bye")).await;
    let f = fetcher();
    f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(f.idle_connections(), 0);
    let second = f.fetch(&server.job("/")).await.unwrap();
    assert!(!second.reused_connection);
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn dead_pooled_connection_is_retried_once_on_a_new_one() {
    // Answers one request per connection, then closes without saying so (and
    // tells the test it has).
    let closed = Arc::new(Notify::new());
    let server = Server::start({
        let closed = closed.clone();
        move |mut s, log| {
            let closed = closed.clone();
            async move {
                if let Some(req) = read_request(&mut s).await {
                    log.lock().unwrap().push(req);
                    let _ = s.write_all(&response("", b"once")).await;
                }
                drop(s);
                closed.notify_one();
            }
        }
    })
    .await;
    let f = fetcher();
    f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(f.idle_connections(), 1);
    closed.notified().await;
    let second = f.fetch(&server.job("/")).await.unwrap();
    assert_eq!(&second.payload[..], b"once");
    assert!(!second.reused_connection);
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn different_addresses_do_not_share() {
    let a = Server::respond(response("", b"a")).await;
    let b = Server::respond(response("", b"b")).await;
    let f = fetcher();
    assert_eq!(&f.fetch(&a.job("/")).await.unwrap().payload[..], b"a");
    assert_eq!(&f.fetch(&b.job("/")).await.unwrap().payload[..], b"b");
    assert_eq!(&f.fetch(&a.job("/")).await.unwrap().payload[..], b"a");
    assert_eq!(
        (a.accepted(), b.accepted(), f.idle_connections()),
        (1, 1, 2)
    );
}
