//! Redis clients for `redis://` and `rediss://` URLs.
//!
//! Guarantees: a `rediss://` URL connects over TLS (rustls, ring provider) and checks the
//! server's certificate and name against the system's roots, or against the CA file when one is
//! given; the redis crate's `#insecure` fragment is its own opt-out. The ring provider is made
//! the process default when none is (the redis crate asks for the default), and a provider
//! another part of the program installed first is kept.

use std::path::Path;

use redis::{ErrorKind, RedisError, TlsCertificates};

/// A client for `url`, trusting `ca_file` (PEM) instead of the system's roots when given. The
/// error never holds the URL.
pub(crate) fn client(url: &str, ca_file: Option<&Path>) -> Result<redis::Client, RedisError> {
    // Err means a provider is installed already: that one is used, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match ca_file {
        None => redis::Client::open(url),
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| {
                RedisError::from((
                    ErrorKind::InvalidClientConfig,
                    "cannot read the CA file",
                    format!("{}: {e}", path.display()),
                ))
            })?;
            redis::Client::build_with_tls(url, TlsCertificates { client_tls: None, root_cert: Some(pem) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_ca_file_is_named() {
        let err = client("rediss://:pw@127.0.0.1:1/", Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("/nonexistent/ca.pem"), "{shown}");
        assert!(!shown.contains("pw@"), "{shown}");
    }

    #[test]
    fn rediss_urls_build_a_client() {
        assert!(client("rediss://127.0.0.1:6380/", None).is_ok());
    }
}
