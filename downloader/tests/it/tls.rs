//! https against a CA generated in the test, trusted only through `extra_ca_file`.

use std::io::Write;
use std::sync::Arc;

use downloader::{ConfigError, FetchError, Fetcher, FetcherConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use spool::OutcomeReason;
use tempfile::NamedTempFile;
use tokio::io::AsyncWriteExt;
use tokio_rustls::TlsAcceptor;

use crate::support::{Server, config, job_for, read_request, response};

/// A CA (PEM, in a temp file) and a server certificate it signed for `name`.
pub struct Pki {
    pub ca_file: NamedTempFile,
    pub server: Arc<ServerConfig>,
}

pub fn pki(name: &str) -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "polycrawl test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec![name.to_owned()]).unwrap();
    leaf.distinguished_name.push(DnType::CommonName, name);
    leaf.extended_key_usages
        .push(ExtendedKeyUsagePurpose::ServerAuth);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();

    let mut ca_file = NamedTempFile::new().unwrap();
    ca_file.write_all(ca_cert.pem().as_bytes()).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![leaf_cert.der().clone()];
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Pki {
        ca_file,
        server: Arc::new(server),
    }
}

/// A keep-alive https server; logs the SNI name of each handshake as a "request".
async fn https_server(server_config: Arc<ServerConfig>) -> Server {
    let acceptor = TlsAcceptor::from(server_config);
    Server::start(move |tcp, log| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            let sni = tls.get_ref().1.server_name().unwrap_or("").to_owned();
            log.lock().unwrap().push(format!("sni={sni}").into_bytes());
            while read_request(&mut tls).await.is_some() {
                if tls.write_all(&response("", b"secure")).await.is_err() {
                    return;
                }
            }
        }
    })
    .await
}

pub fn fetcher_trusting(pki: &Pki) -> Fetcher {
    Fetcher::new(FetcherConfig {
        extra_ca_file: Some(pki.ca_file.path().to_owned()),
        ..config()
    })
    .unwrap()
}

#[tokio::test]
async fn trusted_ca_verifies_sends_sni_and_reuses() {
    let pki = pki("site.test");
    let server = https_server(pki.server.clone()).await;
    let f = fetcher_trusting(&pki);
    let job = job_for(
        &format!("https://site.test:{}/", server.addr.port()),
        server.addr,
    );
    let got = f.fetch(&job).await.unwrap();
    assert_eq!(&got.payload[..], b"secure");
    assert!(
        got.bytes_received > got.raw.len() as u64,
        "TLS overhead is counted"
    );
    assert_eq!(server.requests.lock().unwrap()[0], b"sni=site.test");
    let again = f.fetch(&job).await.unwrap();
    assert!(again.reused_connection);
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn untrusted_ca_fails() {
    let pki = pki("site.test");
    let server = https_server(pki.server.clone()).await;
    let f = Fetcher::new(config()).unwrap();
    let job = job_for(
        &format!("https://site.test:{}/", server.addr.port()),
        server.addr,
    );
    let err = f.fetch(&job).await.unwrap_err();
    assert!(matches!(err, FetchError::Tls { .. }), "{err}");
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");
    assert_eq!(err.class(), OutcomeReason::ConnectFailure);
}

#[tokio::test]
async fn name_mismatch_fails() {
    let pki = pki("site.test");
    let server = https_server(pki.server.clone()).await;
    let f = fetcher_trusting(&pki);
    let job = job_for(
        &format!("https://other.test:{}/", server.addr.port()),
        server.addr,
    );
    let err = f.fetch(&job).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::Tls { host, .. } if host == "other.test"),
        "{err}"
    );
    assert!(err.to_string().contains("not valid for name"), "{err}");
}

#[tokio::test]
async fn unusable_ca_file_is_a_config_error() {
    let mut junk = NamedTempFile::new().unwrap();
    junk.write_all(b"no certificates here\n").unwrap();
    let err = Fetcher::new(FetcherConfig {
        extra_ca_file: Some(junk.path().to_owned()),
        ..config()
    })
    .unwrap_err();
    assert!(matches!(err, ConfigError::CaCertificate { .. }), "{err}");
    let err = Fetcher::new(FetcherConfig {
        extra_ca_file: Some("/nonexistent/ca.pem".into()),
        ..config()
    })
    .unwrap_err();
    assert!(matches!(err, ConfigError::CaFile { .. }), "{err}");
}
