//! The TLS client configuration: rustls with the ring provider, certificate
//! verification always on.
//!
//! Trust anchors are the Mozilla roots compiled in through `webpki-roots` (so a
//! downloader behaves the same on every machine, whatever the OS store holds) plus
//! the certificates of an optional extra CA PEM file (the simulated web's generated
//! CA; a corporate CA). There is deliberately no switch to turn verification off.
//! ALPN offers `h2, http/1.1` when the fetcher's `http2` switch is on (the
//! default), so a server that speaks HTTP/2 answers in it (`crate::http2`), and
//! only `http/1.1` when it is off. Session tickets are
//! cached in memory by rustls, which makes reconnects to the same host cheaper.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};

use crate::error::{ConfigError, FetchError};

/// Builds the client config shared by every https fetch of one fetcher.
pub(crate) fn client_config(
    extra_ca_file: Option<&Path>,
    http2: bool,
) -> Result<Arc<ClientConfig>, ConfigError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca_file {
        add_pem_file(&mut roots, path)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

fn add_pem_file(roots: &mut RootCertStore, path: &Path) -> Result<(), ConfigError> {
    let io_err = |e: rustls::pki_types::pem::Error| ConfigError::CaFile {
        path: path.to_owned(),
        source: match e {
            rustls::pki_types::pem::Error::Io(io) => io,
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        },
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(io_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_err)?;
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(ConfigError::CaCertificate {
            path: path.to_owned(),
            reason: format!("{ignored} certificate(s) could not be parsed"),
        });
    }
    Ok(())
}

/// The SNI name (and name the certificate must match) for `host`.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, FetchError> {
    ServerName::try_from(host.to_owned())
        .map_err(|_| FetchError::invalid(format!("host {host:?} is not a valid TLS server name")))
}
