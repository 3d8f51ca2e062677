//! `tls_config` -> a rustls client configuration (aws-lc-rs), handed to reqwest preconfigured
//! because reqwest alone cannot verify against a `server_name` other than the URL's host.
//!
//! * CA: `ca_pem`/`ca_file` replace the system roots (as Go's `RootCAs`); without them the
//!   platform verifier uses the system's trust store. As in Go, a server certificate that is
//!   itself one of the given CAs (a self-signed certificate handed over as `ca_file`) is
//!   trusted, still subject to its names, validity period and extended key usage.
//! * `server_name`: certificates are verified against this name instead of the URL's host.
//!   (Go also sends it as SNI; here SNI stays the URL's host.)
//! * `insecure_skip_verify`: any certificate is accepted; handshake signatures are still checked.
//! * `min_version`: `TLS13` allows only TLS 1.3; anything lower allows 1.2 and 1.3 (rustls has
//!   no TLS 1.0/1.1).
//! * ALPN offers `h2` only when `enable_http2` is set.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::TlsConfig;
use super::client::HttpClientError;

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Builds the rustls configuration for `cfg`; ALPN offers `h2` when `http2` is set.
pub(crate) fn client_config(
    cfg: &TlsConfig,
    http2: bool,
) -> Result<rustls::ClientConfig, HttpClientError> {
    let provider = provider();
    let versions: &[&'static rustls::SupportedProtocolVersion] = if cfg.min_version == "TLS13" {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS12, &rustls::version::TLS13]
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| HttpClientError::Tls(e.to_string()))?;

    let algorithms = provider.signature_verification_algorithms;
    let ca = read_pem_source(&cfg.ca_pem, &cfg.ca_file, "CA")?;
    let base: Arc<dyn ServerCertVerifier> = if cfg.insecure_skip_verify {
        Arc::new(AcceptAny { algorithms })
    } else if let Some(ca) = ca {
        // Parsed once: the same certificates are webpki's roots and the pool a pinned leaf is
        // looked up in.
        let pool: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&ca)
            .collect::<Result<_, _>>()
            .map_err(|e| HttpClientError::Tls(format!("parsing CA: {e}")))?;
        if pool.is_empty() {
            return Err(HttpClientError::Tls(
                "unable to use specified CA cert: no certificates found".into(),
            ));
        }
        let mut roots = RootCertStore::empty();
        for cert in &pool {
            roots
                .add(cert.clone())
                .map_err(|e| HttpClientError::Tls(format!("adding CA: {e}")))?;
        }
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .map_err(|e| HttpClientError::Tls(e.to_string()))?;
        Arc::new(GoRoots {
            inner: webpki,
            pool,
        })
    } else {
        Arc::new(
            rustls_platform_verifier::Verifier::new(provider.clone())
                .map_err(|e| HttpClientError::Tls(e.to_string()))?,
        )
    };
    let verifier: Arc<dyn ServerCertVerifier> =
        if !cfg.server_name.is_empty() && !cfg.insecure_skip_verify {
            let name = ServerName::try_from(cfg.server_name.clone()).map_err(|e| {
                HttpClientError::Tls(format!("invalid server_name {:?}: {e}", cfg.server_name))
            })?;
            Arc::new(OverrideName { inner: base, name })
        } else {
            base
        };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);

    let cert = read_pem_source(&cfg.cert_pem, &cfg.cert_file, "client certificate")?;
    let key = read_pem_source(cfg.key_pem.expose(), &cfg.key_file, "client key")?;
    let mut config = match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(&cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| HttpClientError::Tls(format!("parsing client certificate: {e}")))?;
            let key = PrivateKeyDer::from_pem_slice(&key)
                .map_err(|e| HttpClientError::Tls(format!("parsing client key: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| HttpClientError::Tls(format!("client certificate: {e}")))?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// The PEM text given inline, or read from `file`; `None` when neither is set.
fn read_pem_source(
    inline: &str,
    file: &str,
    what: &str,
) -> Result<Option<Vec<u8>>, HttpClientError> {
    if !inline.is_empty() {
        return Ok(Some(inline.as_bytes().to_vec()));
    }
    if file.is_empty() {
        return Ok(None);
    }
    std::fs::read(file)
        .map(Some)
        .map_err(|e| HttpClientError::Tls(format!("unable to read {what} file {file}: {e}")))
}

/// The handshake-signature half of [`ServerCertVerifier`] for a wrapper that only changes how
/// the certificate itself is judged: it is `self.inner`'s, unchanged.
macro_rules! delegate_signatures {
    () => {
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
    };
}

/// Verifies the chain as `inner` would for `name`, whatever host the URL names.
#[derive(Debug)]
struct OverrideName {
    inner: Arc<dyn ServerCertVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for OverrideName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    delegate_signatures!();
}

/// Go's `x509.Certificate.Verify` trusts a leaf found byte for byte in `RootCAs` as a chain of
/// its own; webpki refuses it (`CaUsedAsEndEntity` for the usual self-signed certificate with
/// `CA:TRUE`). Alloy users point `ca_file` at such certificates, so this accepts them the way
/// Go does: the exact certificate must be in the pool, valid now, issued for the name, and
/// usable for server authentication. Everything else is webpki's verdict.
#[derive(Debug)]
struct GoRoots {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    pool: Vec<CertificateDer<'static>>,
}

impl GoRoots {
    fn verify_pinned(
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        use rustls::CertificateError;
        let bad = |_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding);
        webpki::EndEntityCert::try_from(end_entity)
            .map_err(bad)?
            .verify_is_valid_for_subject_name(server_name)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::NotValidForName))?;
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let validity = cert.validity();
        if secs < validity.not_before.timestamp() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if secs > validity.not_after.timestamp() {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        // Go checks the leaf's extended key usage against ServerAuth: absent means any.
        let eku = cert
            .extended_key_usage()
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        if let Some(eku) = eku
            && !(eku.value.any || eku.value.server_auth)
        {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::InvalidPurpose,
            ));
        }
        Ok(())
    }
}

impl ServerCertVerifier for GoRoots {
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
            Ok(v) => Ok(v),
            Err(e) if self.pool.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                // Go judges a pooled certificate by these checks alone, so their error is the
                // one to report; webpki's (usually CaUsedAsEndEntity) goes to debug.
                Self::verify_pinned(end_entity, server_name, now)
                    .map(|()| ServerCertVerified::assertion())
                    .inspect_err(|_| {
                        tracing::debug!(webpki = %e, "certificate from the CA pool refused");
                    })
            }
            Err(e) => Err(unknown_issuer_for_foreign_ca(e)),
        }
    }

    delegate_signatures!();
}

/// webpki says `CaUsedAsEndEntity` for any self-signed CA certificate, also one that is not in
/// the pool; what the user must fix then is trust (Go: "certificate signed by unknown
/// authority"), so say that.
fn unknown_issuer_for_foreign_ca(e: rustls::Error) -> rustls::Error {
    if let rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) = &e
        && let Some(webpki::Error::CaUsedAsEndEntity) = other.0.downcast_ref::<webpki::Error>()
    {
        return rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
    }
    e
}

/// `insecure_skip_verify`: trusts any certificate, but the handshake must still be signed by
/// the key in it.
#[derive(Debug)]
struct AcceptAny {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAny {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
