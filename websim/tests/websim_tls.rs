//! websim's CA and TLS configs in real handshakes over loopback with tokio-rustls.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use websim::tls::{SimCa, TlsError, client_config_trusting};

const WAIT: Duration = Duration::from_secs(5);

/// A TLS echo server: every connection echoes what it reads until EOF. Handshake failures
/// are ignored (the client sees them).
async fn echo_server(config: Arc<ServerConfig>) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = TlsAcceptor::from(config);
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = tls.read(&mut buf).await {
                    if tls.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
                let _ = tls.shutdown().await;
            });
        }
    });
    (addr, task)
}

struct Session {
    echoed: Vec<u8>,
    alpn: Option<Vec<u8>>,
    leaf: CertificateDer<'static>,
}

/// Connects with `sni`, sends a message and reads the echo.
async fn talk(
    addr: SocketAddr,
    client: Arc<ClientConfig>,
    sni: &str,
) -> Result<Session, std::io::Error> {
    let stream = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(sni.to_owned()).unwrap();
    let connect = TlsConnector::from(client).connect(name, stream);
    let mut tls = tokio::time::timeout(WAIT, connect).await??;
    let message = format!("hello {sni}");
    tls.write_all(message.as_bytes()).await?;
    let mut echoed = vec![0u8; message.len()];
    tokio::time::timeout(WAIT, tls.read_exact(&mut echoed)).await??;
    let (_, connection) = tls.get_ref();
    Ok(Session {
        echoed,
        alpn: connection.alpn_protocol().map(<[u8]>::to_vec),
        leaf: connection.peer_certificates().unwrap()[0].clone(),
    })
}

fn rustls_error(error: &std::io::Error) -> Option<&rustls::Error> {
    error.get_ref()?.downcast_ref::<rustls::Error>()
}

fn names() -> Vec<String> {
    ["www.example.test", "Blog.Example.TEST.", "shop.test"]
        .map(String::from)
        .to_vec()
}

#[tokio::test]
async fn listed_names_handshake_and_echo() {
    let ca = SimCa::generate().unwrap();
    let (addr, _server) = echo_server(ca.server_config(names()).unwrap()).await;
    let client = client_config_trusting(ca.ca_pem()).unwrap();
    for sni in ["www.example.test", "blog.example.test", "SHOP.test"] {
        let session = talk(addr, client.clone(), sni).await.unwrap();
        assert_eq!(session.echoed, format!("hello {sni}").as_bytes());
        assert_eq!(session.alpn.as_deref(), Some(&b"http/1.1"[..]));
    }
}

/// `config` without TLS session resumption, so that every handshake shows a certificate.
fn no_resumption(config: Arc<ClientConfig>) -> Arc<ClientConfig> {
    let mut config = Arc::unwrap_or_clone(config);
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

#[tokio::test]
async fn leaves_are_cached_per_name_and_distinct_between_names() {
    let ca = SimCa::generate().unwrap();
    let (addr, _server) = echo_server(ca.server_config(names()).unwrap()).await;
    let client = no_resumption(ca.client_config().unwrap());
    let first = talk(addr, client.clone(), "www.example.test")
        .await
        .unwrap();
    let again = talk(addr, client.clone(), "www.example.test")
        .await
        .unwrap();
    let other = talk(addr, client, "shop.test").await.unwrap();
    assert_eq!(first.leaf, again.leaf);
    assert_ne!(first.leaf, other.leaf);
    assert_eq!(ca.leaves_issued(), 2);
}

#[tokio::test]
async fn unlisted_or_missing_sni_fails() {
    let ca = SimCa::generate().unwrap();
    let (addr, _server) = echo_server(ca.server_config(names()).unwrap()).await;
    let client = no_resumption(client_config_trusting(ca.ca_pem()).unwrap());
    let error = talk(addr, client.clone(), "evil.test").await.err().unwrap();
    assert!(rustls_error(&error).is_some(), "{error:?}");
    // A parent or child of a listed name is not listed either.
    assert!(talk(addr, client.clone(), "example.test").await.is_err());
    assert!(
        talk(addr, client.clone(), "a.www.example.test")
            .await
            .is_err()
    );

    let mut no_sni = (*client).clone();
    no_sni.enable_sni = false;
    assert!(
        talk(addr, Arc::new(no_sni), "www.example.test")
            .await
            .is_err()
    );
    // The server still works after refusing those.
    assert!(talk(addr, client, "www.example.test").await.is_ok());
}

#[tokio::test]
async fn client_not_trusting_the_ca_fails_verification() {
    let ca = SimCa::generate().unwrap();
    let stranger = SimCa::generate().unwrap();
    let (addr, _server) = echo_server(ca.server_config(names()).unwrap()).await;
    let client = client_config_trusting(stranger.ca_pem()).unwrap();
    let error = talk(addr, client, "www.example.test").await.err().unwrap();
    assert!(
        matches!(
            rustls_error(&error),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature
            ))
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn written_ca_pem_loads_in_a_fresh_client() {
    let ca = SimCa::generate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("websim-ca.pem");
    ca.write_ca_pem(&path).unwrap();
    let pem = std::fs::read_to_string(&path).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    assert!(!pem.contains("PRIVATE KEY"));
    assert_eq!(pem, ca.ca_pem());

    let (addr, _server) = echo_server(ca.server_config(names()).unwrap()).await;
    let client = client_config_trusting(&pem).unwrap();
    talk(addr, client, "shop.test").await.unwrap();

    let missing = dir.path().join("no-such-dir").join("ca.pem");
    assert!(matches!(
        ca.write_ca_pem(&missing),
        Err(TlsError::WriteCaPem { .. })
    ));
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert!(matches!(
        client_config_trusting("not a pem"),
        Err(TlsError::NoCaCertificate)
    ));
    assert!(matches!(
        client_config_trusting("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"),
        Err(TlsError::ParsePem { .. } | TlsError::BadCaCertificate { .. })
    ));
    let ca = SimCa::generate().unwrap();
    assert!(matches!(
        ca.server_config(vec!["bad name!".to_owned()]),
        Err(TlsError::InvalidName { .. })
    ));
}

#[tokio::test]
async fn thousands_of_names_cost_nothing_until_used() {
    let ca = SimCa::generate().unwrap();
    let many: Vec<String> = (0..20_000).map(|i| format!("host{i}.sim.test")).collect();
    let config = ca.server_config(many).unwrap();
    assert_eq!(ca.leaves_issued(), 0);
    let (addr, _server) = echo_server(config).await;
    let client = no_resumption(ca.client_config().unwrap());
    talk(addr, client.clone(), "host19999.sim.test")
        .await
        .unwrap();
    talk(addr, client.clone(), "host7.sim.test").await.unwrap();
    talk(addr, client, "host7.sim.test").await.unwrap();
    assert_eq!(ca.leaves_issued(), 2);
}
