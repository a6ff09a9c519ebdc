//! websim's https: a certificate authority generated for one run, and rustls configs that
//! serve (and trust) certificates it signs.
//!
//! - [`SimCa::generate`] makes a self-signed ECDSA P-256 CA, "polycrawl websim CA".
//! - [`SimCa::server_config`] answers SNI for exactly the names it is given, with a leaf
//!   certificate per name signed by the CA. Leaves are made on the first handshake for a name
//!   and cached; all leaves of one CA share one key pair (only the certificate differs), so
//!   thousands of hosts cost one signature each, once. ALPN is `http/1.1`.
//! - [`client_config_trusting`] trusts only the CA in a PEM (for tests and for the
//!   downloader's extra-CA option).
//!
//! What this module must never do: write or expose the CA's key or the in-process leaves'
//! key (the CA key lives only in memory, so a CA that somebody installs somewhere dies with
//! the process; the one key it hands out is [`SimCa::static_leaf`]'s, made for that leaf); serve a
//! certificate for a name it was not given, or for a handshake without SNI; trust anything
//! but the given CA in [`client_config_trusting`] (no system or built-in roots).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, SerialNumber,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, DnsName, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::{CertifiedKey, SigningKey};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tracing::{debug, warn};

/// Common name of every websim CA.
pub const CA_COMMON_NAME: &str = "polycrawl websim CA";
/// The one ALPN protocol websim's TLS configs offer.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// Why a TLS set-up step failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rcgen could not generate a key or certificate.
    #[error("websim tls: {what}: {source}")]
    Generate {
        /// The step, such as "signing the leaf for www.example.test".
        what: String,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// `server_config` was given a name that is not a valid DNS name.
    #[error("websim tls: {name:?} is not a valid DNS name")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// rustls rejected a key or a configuration.
    #[error("websim tls: {what}: {source}")]
    Rustls {
        /// The step, such as "loading the leaf key".
        what: &'static str,
        /// rustls's error.
        source: rustls::Error,
    },
    /// The CA PEM could not be written.
    #[error("websim tls: writing the CA certificate to {}: {source}", path.display())]
    WriteCaPem {
        /// Where it was to go.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text given as CA PEM is not well-formed PEM.
    #[error("websim tls: reading the CA PEM: {source}")]
    ParsePem {
        /// The PEM parser's error.
        source: rustls::pki_types::pem::Error,
    },
    /// The text given as CA PEM holds no `CERTIFICATE` block.
    #[error("websim tls: the CA PEM holds no certificate")]
    NoCaCertificate,
    /// A certificate in the CA PEM cannot be used as a trust anchor.
    #[error("websim tls: the CA certificate cannot be trusted: {source}")]
    BadCaCertificate {
        /// rustls's (webpki's) error.
        source: rustls::Error,
    },
}

/// A CA generated for one websim run; the key never leaves memory.
pub struct SimCa {
    ca_der: CertificateDer<'static>,
    ca_pem: String,
    minter: Arc<LeafMinter>,
}

impl fmt::Debug for SimCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimCa").finish_non_exhaustive()
    }
}

impl SimCa {
    /// Generates a self-signed CA (ECDSA P-256, CN "polycrawl websim CA") and the key pair
    /// its leaves will share.
    pub fn generate() -> Result<SimCa, TlsError> {
        let ca_key = new_key("generating the CA key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, CA_COMMON_NAME);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params
            .self_signed(&ca_key)
            .map_err(|source| TlsError::Generate {
                what: "self-signing the CA certificate".to_owned(),
                source,
            })?;

        let leaf_key = new_key("generating the leaf key")?;
        let pkcs8 = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let leaf_signing_key =
            provider()
                .key_provider
                .load_private_key(pkcs8)
                .map_err(|source| TlsError::Rustls {
                    what: "loading the leaf key",
                    source,
                })?;
        Ok(SimCa {
            ca_der: ca_cert.der().clone(),
            ca_pem: ca_cert.pem(),
            minter: Arc::new(LeafMinter {
                issuer: Issuer::new(params, ca_key),
                leaf_key,
                leaf_signing_key,
                next_serial: AtomicU64::new(1),
            }),
        })
    }

    /// The CA certificate, PEM-encoded.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER-encoded.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// Writes the CA certificate (never its key) as PEM to `path`.
    pub fn write_ca_pem(&self, path: &Path) -> Result<(), TlsError> {
        std::fs::write(path, &self.ca_pem).map_err(|source| TlsError::WriteCaPem {
            path: path.to_owned(),
            source,
        })
    }

    /// Server config answering SNI for exactly `names` with leaf certs signed by this CA
    /// (generate leaves lazily on first SNI and cache them — there may be thousands of names;
    /// unknown SNI or missing SNI -> handshake fails). ALPN http/1.1.
    ///
    /// Names are case-insensitive and may carry a trailing dot.
    pub fn server_config(
        &self,
        names: impl IntoIterator<Item = String>,
    ) -> Result<Arc<ServerConfig>, TlsError> {
        let mut allowed = HashSet::new();
        for name in names {
            let normal = normalize(&name);
            if DnsName::try_from(normal.as_str()).is_err() {
                return Err(TlsError::InvalidName { name });
            }
            allowed.insert(normal.into_boxed_str());
        }
        let resolver = LeafResolver {
            allowed,
            leaves: Mutex::new(HashMap::new()),
            minter: self.minter.clone(),
        };
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Rustls {
                what: "choosing protocol versions",
                source,
            })?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Ok(Arc::new(config))
    }

    /// A leaf certificate for all of `names` (one SAN each) with a key pair of its
    /// own, both PEM-encoded, for a web server that serves the static export
    /// (`export.rs`). The key is made for this leaf alone: it is not the key the
    /// in-process leaves share, and the CA's key stays in memory.
    pub fn static_leaf(
        &self,
        names: impl IntoIterator<Item = String>,
    ) -> Result<(String, String), TlsError> {
        let generate = |source| TlsError::Generate {
            what: "signing the static export's leaf".to_owned(),
            source,
        };
        let key = new_key("generating the static export's leaf key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "polycrawl websim static export");
        for name in names {
            let normal = normalize(&name);
            let dns_name = normal
                .as_str()
                .try_into()
                .map_err(|_| TlsError::InvalidName { name: name.clone() })?;
            params.subject_alt_names.push(SanType::DnsName(dns_name));
        }
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let serial = self.minter.next_serial.fetch_add(1, Ordering::Relaxed);
        params.serial_number = Some(SerialNumber::from_slice(&serial.to_be_bytes()));
        let cert = params
            .signed_by(&key, &self.minter.issuer)
            .map_err(generate)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// How many leaf certificates this CA has signed so far (each name costs one, on its
    /// first handshake).
    pub fn leaves_issued(&self) -> u64 {
        self.minter.next_serial.load(Ordering::Relaxed) - 1
    }

    /// A client config trusting only this CA; same as [`client_config_trusting`] on
    /// [`SimCa::ca_pem`].
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        client_config_trusting(&self.ca_pem)
    }
}

/// A client config trusting only the CA in `ca_pem` (for tests and for the downloader's
/// extra-CA option). Every `CERTIFICATE` block in the PEM becomes a trust anchor; other blocks
/// are ignored. It offers ALPN `http/1.1`.
pub fn client_config_trusting(ca_pem: &str) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|source| TlsError::ParsePem { source })?;
        roots
            .add(cert)
            .map_err(|source| TlsError::BadCaCertificate { source })?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCaCertificate);
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| TlsError::Rustls {
            what: "choosing protocol versions",
            source,
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(Arc::new(config))
}

/// The ring provider, named explicitly so that no process-wide default is needed.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn new_key(what: &str) -> Result<KeyPair, TlsError> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|source| TlsError::Generate {
        what: what.to_owned(),
        source,
    })
}

/// `name` lower-cased (ASCII) without its trailing dot.
fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Signs leaf certificates; shared by every server config of one CA.
struct LeafMinter {
    issuer: Issuer<'static, KeyPair>,
    /// The key pair of every leaf, as rcgen needs it to put the public key in a certificate.
    leaf_key: KeyPair,
    /// The same key pair, as rustls needs it to sign handshakes.
    leaf_signing_key: Arc<dyn SigningKey>,
    /// Serial numbers must differ between leaves of one issuer (they share a key, so
    /// rcgen's default, a hash of the public key, would not).
    next_serial: AtomicU64,
}

impl LeafMinter {
    fn mint(&self, name: &str) -> Result<Arc<CertifiedKey>, TlsError> {
        let generate = |source| TlsError::Generate {
            what: format!("signing the leaf for {name}"),
            source,
        };
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let dns_name = name.try_into().map_err(generate)?;
        params.subject_alt_names = vec![SanType::DnsName(dns_name)];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
        params.serial_number = Some(SerialNumber::from_slice(&serial.to_be_bytes()));
        let cert = params
            .signed_by(&self.leaf_key, &self.issuer)
            .map_err(generate)?;
        Ok(Arc::new(CertifiedKey::new(
            vec![cert.der().clone()],
            self.leaf_signing_key.clone(),
        )))
    }
}

/// Picks (and on first use makes) the leaf for a ClientHello's SNI.
struct LeafResolver {
    allowed: HashSet<Box<str>>,
    leaves: Mutex<HashMap<Box<str>, Arc<CertifiedKey>>>,
    minter: Arc<LeafMinter>,
}

impl fmt::Debug for LeafResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeafResolver")
            .field("allowed", &self.allowed.len())
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for LeafResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let Some(sni) = client_hello.server_name() else {
            debug!("websim tls: handshake without SNI refused");
            return None;
        };
        let name = normalize(sni);
        if !self.allowed.contains(name.as_str()) {
            debug!(sni, "websim tls: handshake for an unknown name refused");
            return None;
        }
        let cached = self
            .leaves
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name.as_str())
            .cloned();
        if cached.is_some() {
            return cached;
        }
        // Sign outside the lock; two handshakes racing for a new name both sign, one wins.
        let leaf = match self.minter.mint(&name) {
            Ok(leaf) => leaf,
            Err(error) => {
                warn!(%error, "websim tls: cannot make a leaf certificate");
                return None;
            }
        };
        let mut leaves = self.leaves.lock().unwrap_or_else(PoisonError::into_inner);
        Some(leaves.entry(name.into_boxed_str()).or_insert(leaf).clone())
    }
}
