//! rustls configurations: the client side from a connection string's `tls*` options (proxy to
//! upstream, replayer to target) and the server side from certificate files (clients to proxy).
//! The crypto provider is always ring, named explicitly, so no process-wide default is needed.

use super::error::NetError;

/// The connection-string TLS options [`ClientTls`] honours (lower-case), for the proxy's upstream and
/// the replayer's target alike. rustls checks neither OCSP nor revocation lists: disabling them is
/// what it does anyway.
pub const TLS_OPTIONS: &[&str] = &[
    "tls",
    "ssl",
    "tlscafile",
    "tlscertificatekeyfile",
    "tlsallowinvalidhostnames",
    "tlsallowinvalidcertificates",
    "tlsinsecure",
    "tlsdisableocspendpointcheck",
    "tlsdisablecertificaterevocationcheck",
];
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// TLS towards a server, as a connection string sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// `tlsCAFile`: trusted CAs; without it, the Mozilla roots.
    pub ca_file: Option<PathBuf>,
    /// `tlsCertificateKeyFile`: one PEM file with the client certificate chain and its key.
    pub cert_key_file: Option<PathBuf>,
    pub allow_invalid_certificates: bool,
    pub allow_invalid_hostnames: bool,
}

/// TLS for a listener: its certificate, its key, and optionally the CA client certificates must
/// chain to (which makes a client certificate required).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub client_ca_file: Option<PathBuf>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(crypto::ring::default_provider())
}

fn tls_err(e: impl std::fmt::Display) -> NetError {
    NetError::Tls(e.to_string())
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, NetError> {
    std::fs::read(path).map_err(|source| NetError::ReadFile {
        what,
        path: path.to_owned(),
        source,
    })
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let pem = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| NetError::Tls(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(NetError::EmptyPem {
            what,
            path: path.to_owned(),
            expected: "PEM certificate",
        });
    }
    Ok(certs)
}

fn private_key(what: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, NetError> {
    let pem = read(what, path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| NetError::EmptyPem {
        what,
        path: path.to_owned(),
        expected: "PEM private key",
    })
}

fn roots(what: &'static str, path: &Path) -> Result<RootCertStore, NetError> {
    let mut store = RootCertStore::empty();
    for cert in certificates(what, path)? {
        store
            .add(cert)
            .map_err(|e| NetError::Tls(format!("{what} {}: {e}", path.display())))?;
    }
    Ok(store)
}

impl ClientTls {
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, NetError> {
        let provider = provider();
        let roots = match &self.ca_file {
            Some(path) => roots("tlsCAFile", path)?,
            None => RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            },
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?;
        let verifier: Arc<dyn ServerCertVerifier> = if self.allow_invalid_certificates {
            Arc::new(AcceptAnyCertificate { provider })
        } else {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(tls_err)?;
            if self.allow_invalid_hostnames {
                Arc::new(IgnoreHostname { inner: webpki })
            } else {
                webpki
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.cert_key_file {
            Some(path) => {
                let chain = certificates("tlsCertificateKeyFile", path)?;
                let key = private_key("tlsCertificateKeyFile", path)?;
                builder.with_client_auth_cert(chain, key).map_err(tls_err)?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

impl ServerTls {
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, NetError> {
        let provider = provider();
        // Named by the options that give them: the files are the user's choice, not a driver's.
        let chain = certificates("--tls-cert", &self.cert_file)?;
        let key = private_key("--tls-key", &self.key_file)?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?;
        let builder = match &self.client_ca_file {
            Some(path) => {
                let roots = roots("--tls-ca", path)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .map_err(tls_err)?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder.with_single_cert(chain, key).map_err(|e| {
            NetError::Tls(format!(
                "--tls-key {} does not go with --tls-cert {}: {e}",
                self.key_file.display(),
                self.cert_file.display()
            ))
        })?;
        Ok(Arc::new(config))
    }
}

/// The name a server certificate must carry for `host` (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, NetError> {
    ServerName::try_from(host.to_owned()).map_err(|_| NetError::ServerName {
        host: host.to_owned(),
    })
}

/// `tlsAllowInvalidHostnames`: the chain must still verify, only the name may differ.
#[derive(Debug)]
struct IgnoreHostname {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for IgnoreHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // NotValidForName, or NotValidForNameContext in later rustls releases.
            Err(rustls::Error::InvalidCertificate(e))
                if format!("{e:?}").starts_with("NotValidForName") =>
            {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `tlsAllowInvalidCertificates`: any certificate is accepted, but the handshake signatures are
/// still checked (the peer must hold the key of the certificate it shows).
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let tls = ClientTls {
            ca_file: Some(empty.clone()),
            ..ClientTls::default()
        };
        let err = tls.client_config().unwrap_err();
        assert!(matches!(err, NetError::EmptyPem { .. }), "{err}");
        let srv = ServerTls {
            cert_file: dir.path().join("nope.pem"),
            key_file: empty,
            client_ca_file: None,
        };
        let err = srv.server_config().unwrap_err();
        assert!(err.to_string().contains("nope.pem"), "{err}");
        assert!(ClientTls::default().client_config().is_ok());
        assert!(server_name("127.0.0.1").is_ok() && server_name("localhost").is_ok());
    }
}
