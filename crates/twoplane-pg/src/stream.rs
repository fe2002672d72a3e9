//! A connection to PostgreSQL past its TLS negotiation, for a client that speaks the protocol
//! itself but cannot be given a TLS configuration (the relay's replication client).
//!
//! Guarantees:
//! - The negotiation is the one tokio-postgres performs for [`PgEndpoint::connect`], with the
//!   same rustls configuration, so a URL's `sslmode` and `sslrootcert` mean the same here:
//!   `disable` sends no TLS request; `prefer` falls back to plain TCP when the server declines;
//!   `require`, `verify-ca` and `verify-full` fail when it declines or when its certificate does
//!   not pass the mode's check.
//! - The returned stream is positioned where a client's startup message goes; nothing of the
//!   protocol beyond the TLS request has been exchanged.
//! - Failures are [`PgConnectError`]s in the same classes and words as the endpoint's own
//!   (`connection refused (...)`, `TLS failed (error performing TLS handshake: ...)`), naming
//!   the server; the URL's connect timeout bounds the connection and the handshake together.

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_postgres::config::Host;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::endpoint::{io_failure, lead};
use crate::{PgConnectError, PgEndpoint, PgFailure, SslMode};

/// The protocol's SSLRequest: length 8, then the request code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A connection to the server, plain or encrypted as the endpoint's mode decided.
#[derive(Debug)]
pub enum PgStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl PgStream {
    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        matches!(self, PgStream::Tls(_))
    }
}

impl PgEndpoint {
    /// A connection to the first of the URL's TCP hosts that accepts one, past the TLS
    /// negotiation (see the module guarantees). A host's `hostaddr`, when the URL gives one, is
    /// the address connected to, and the host name is still what the certificate must carry, as
    /// with tokio-postgres. Unix-socket hosts are skipped; a URL with none but those is refused
    /// as [`PgFailure::Config`].
    pub async fn connect_stream(&self) -> Result<PgStream, PgConnectError> {
        let config = self.config();
        let ports = config.get_ports();
        let port_at = |i: usize| ports.get(i).or_else(|| ports.first()).copied().unwrap_or(5432);
        let addrs = config.get_hostaddrs();
        let mut last = None;
        for (i, host) in config.get_hosts().iter().enumerate() {
            let Host::Tcp(name) = host else { continue };
            let attempt = self.stream_to(name, addrs.get(i).copied(), port_at(i));
            let result = match config.get_connect_timeout() {
                Some(limit) => tokio::time::timeout(*limit, attempt).await.unwrap_or_else(|_| {
                    Err(self.failed(PgFailure::Unreachable, format!("timed out after {} ms", limit.as_millis())))
                }),
                None => attempt.await,
            };
            match result {
                Ok(stream) => return Ok(stream),
                // A certificate or a refusal of TLS is the operator's to fix; another host will
                // not fix it, and trying on would hide the message.
                Err(e) if e.failure() == PgFailure::Tls => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| self.failed(PgFailure::Config, "the URL names no TCP host".to_owned())))
    }

    async fn stream_to(&self, host: &str, addr: Option<IpAddr>, port: u16) -> Result<PgStream, PgConnectError> {
        let io_error = |e: io::Error| self.failed(io_failure(&e).unwrap_or(PgFailure::Other), e.to_string());
        let tcp = match addr {
            Some(addr) => TcpStream::connect((addr, port)).await,
            None => TcpStream::connect((host, port)).await,
        };
        let mut tcp = tcp.map_err(io_error)?;
        tcp.set_nodelay(true).map_err(io_error)?;
        if self.ssl_mode() == SslMode::Disable {
            return Ok(PgStream::Plain(tcp));
        }
        tcp.write_all(&SSL_REQUEST).await.map_err(io_error)?;
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer).await.map_err(io_error)?;
        match answer[0] {
            b'S' => {}
            b'N' if self.ssl_mode() == SslMode::Prefer => return Ok(PgStream::Plain(tcp)),
            b'N' => {
                return Err(
                    self.failed(PgFailure::Tls, "error performing TLS handshake: server does not support TLS".into())
                )
            }
            other => {
                return Err(self.failed(PgFailure::Other, format!("unexpected answer {other:#04x} to the TLS request")))
            }
        }
        let name = ServerName::try_from(host.to_owned()).map_err(|e| {
            self.failed(PgFailure::Config, format!("{host} is not a name a certificate can carry ({e})"))
        })?;
        let tls = TlsConnector::from(self.rustls_config()).connect(name, tcp).await.map_err(|e| {
            let failure = io_failure(&e).unwrap_or(PgFailure::Tls);
            self.failed(failure, format!("error performing TLS handshake: {e}"))
        })?;
        Ok(PgStream::Tls(Box::new(tls)))
    }

    /// `words` as this server's failure, led like every other connection failure.
    fn failed(&self, failure: PgFailure, words: String) -> PgConnectError {
        PgConnectError::new(self.server(), failure, format!("{} ({words})", lead(failure)))
    }
}

impl AsyncRead for PgStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            PgStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for PgStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            PgStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            PgStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Plain(s) => Pin::new(s).poll_flush(cx),
            PgStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            PgStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A one-connection server that reads the TLS request and answers `answer`.
    async fn answering(answer: u8) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 8];
            socket.read_exact(&mut request).await.unwrap();
            assert_eq!(request, SSL_REQUEST);
            socket.write_all(&[answer]).await.unwrap();
            // Hold the socket until the client is done with it.
            let _ = socket.read(&mut [0u8; 1]).await;
        });
        port
    }

    fn endpoint(port: u16, mode: &str) -> PgEndpoint {
        PgEndpoint::parse(&format!("postgresql://u:hunter22@127.0.0.1:{port}/db?sslmode={mode}"), None).unwrap()
    }

    #[tokio::test]
    async fn a_declined_request_is_plain_under_prefer_and_refused_under_require() {
        let plain = endpoint(answering(b'N').await, "prefer").connect_stream().await.unwrap();
        assert!(!plain.is_tls());
        let port = answering(b'N').await;
        let err = endpoint(port, "require").connect_stream().await.unwrap_err();
        assert_eq!(err.failure(), PgFailure::Tls, "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "PostgreSQL at 127.0.0.1:{port}, database db, user u: TLS failed (error performing TLS handshake: \
                 server does not support TLS)"
            )
        );
    }

    #[tokio::test]
    async fn disable_sends_no_request() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let stream = endpoint(port, "disable").connect_stream().await.unwrap();
        let (mut socket, _) = listener.accept().await.unwrap();
        drop(stream);
        let mut got = Vec::new();
        socket.read_to_end(&mut got).await.unwrap();
        assert!(got.is_empty(), "disable sent {got:?}");
    }

    #[tokio::test]
    async fn a_closed_port_is_refused_and_a_strange_answer_named() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let err = endpoint(port, "require").connect_stream().await.unwrap_err();
        assert_eq!(err.failure(), PgFailure::Refused, "{err}");
        assert!(err.to_string().contains("connection refused ("), "{err}");
        let err = endpoint(answering(b'E').await, "require").connect_stream().await.unwrap_err();
        assert_eq!(err.failure(), PgFailure::Other, "{err}");
        assert!(err.to_string().contains("unexpected answer 0x45"), "{err}");
        assert!(!err.to_string().contains("hunter22"));
    }
}
