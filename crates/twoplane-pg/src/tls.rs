//! The rustls client configuration for each PostgreSQL `sslmode`.
//!
//! Guarantees (the same table as docs/server.md, "PostgreSQL over TLS"):
//! - `verify-full`: the certificate chain must lead to a trusted root (the CA file when one is
//!   given, else the system's roots) and the certificate must name the host connected to (a DNS
//!   name or an IP address in its subject alternative names).
//! - `verify-ca`: the chain must lead to a trusted root; the name is not checked (for servers
//!   reached by an address their certificate does not list).
//! - `require` and `prefer`: the traffic is encrypted but the certificate is not checked, as libpq
//!   does; `require` with a CA file checks the chain as `verify-ca` does (libpq does the same
//!   when a root certificate file is present).
//!
//! The handshake signatures are always checked, whatever the mode: an unchecked certificate still
//! binds the session keys to whoever holds its private key. Only the ring provider is used, so no
//! process-wide default is needed or changed.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How a connection is secured, from the URL's `sslmode` (libpq's names and default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP; the server is not asked for TLS.
    Disable,
    /// TLS when the server offers it, plain TCP when it does not; the certificate is not checked.
    Prefer,
    /// TLS or no connection; the certificate is checked only when a CA file is given.
    Require,
    /// TLS; the chain must lead to a trusted root.
    VerifyCa,
    /// TLS; the chain must lead to a trusted root and name the host.
    VerifyFull,
}

impl SslMode {
    /// The mode named by an `sslmode` value, or `None` for a value libpq does not define (or
    /// `allow`, which would start in plain text and which twoplane does not offer).
    pub fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration for `mode`, trusting the certificates in `ca_file` (PEM) when given,
/// else the system's roots (only read when the mode checks certificates). The error is a
/// sentence naming the file.
pub fn client_config(mode: SslMode, ca_file: Option<&Path>) -> Result<ClientConfig, String> {
    let provider = provider();
    let check = match (mode, ca_file) {
        (SslMode::VerifyFull, _) => Check::Full,
        (SslMode::VerifyCa, _) | (SslMode::Require, Some(_)) => Check::ChainOnly,
        _ => Check::Nothing,
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Relaxed { chain: None, algorithms }),
        Check::Full | Check::ChainOnly => {
            let roots = match ca_file {
                Some(path) => roots_from_file(path)?,
                None => system_roots()?,
            };
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("TLS setup: {e}"))?;
            if check == Check::Full {
                webpki
            } else {
                Arc::new(Relaxed { chain: Some(webpki), algorithms })
            }
        }
    };
    Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
}

/// A configuration that checks everything (`verify-full`'s rules): the chain leads to the
/// certificates of `ca_file` (PEM) or to the system's, and the certificate names the host. For
/// any TLS client of twoplane's, PostgreSQL or not.
pub fn verifying_client_config(ca_file: Option<&Path>) -> Result<ClientConfig, String> {
    client_config(SslMode::VerifyFull, ca_file)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    ChainOnly,
    Full,
}

/// The certificates of a PEM file (an operator's CA bundle).
pub fn roots_from_file(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read the CA file {shown}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the CA file {shown} is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("the CA file {shown} holds no certificate"));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| format!("the CA file {shown} holds an unusable certificate: {e}"))?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err("no system CA certificates were found; give a CA file".to_owned());
    }
    Ok(roots)
}

/// The modes that check less than webpki: `require`/`prefer` without a CA file (`chain: None`:
/// any certificate) and `verify-ca` (webpki's whole check except the name; webpki checks the
/// chain, its validity dates and usages before the name, so a name error means everything else
/// passed). The handshake signatures are checked in both, with the provider's algorithms, the
/// ones webpki's own verifier uses.
#[derive(Debug)]
struct Relaxed {
    chain: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_libpq_names() {
        for mode in [SslMode::Disable, SslMode::Prefer, SslMode::Require, SslMode::VerifyCa, SslMode::VerifyFull] {
            assert_eq!(SslMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SslMode::parse("allow"), None);
        assert_eq!(SslMode::parse("VERIFY-FULL"), None);
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named() {
        let err = client_config(SslMode::VerifyFull, Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let dir = std::env::temp_dir().join(format!("twoplane-pg-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = client_config(SslMode::VerifyCa, Some(&empty)).unwrap_err();
        assert!(err.contains("holds no certificate"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unchecked_modes_need_no_roots() {
        assert!(client_config(SslMode::Require, None).is_ok());
        assert!(client_config(SslMode::Prefer, None).is_ok());
    }
}
