//! The replication client's way to a server over TLS: a connection made by `twoplane-pg` (the
//! same sslmode rules, CA file and refusal messages as `twoplane serve`), handed to the
//! replication client through a private Unix socket that is spliced to it.
//!
//! Why not the replication client's own TLS: `pgwire-replication` 0.5 takes neither a rustls
//! configuration nor a stream of ours, only paths, and its `tls-rustls` feature turns on rustls's
//! default aws-lc-rs provider (a C library built with cmake) and bundled web roots, beside the
//! ring provider the workspace uses, with a certificate check and messages of its own. One TLS
//! implementation for every connection is worth a loopback copy per byte; the replication
//! stream's rate is bounded by PostgreSQL's decoding long before that copy.
//!
//! Guarantees:
//! - The socket lives in a fresh directory that only this user can enter (mode 0700) and accepts
//!   one connection: it is unlinked, with its directory, as soon as that connection arrives, or
//!   after [`ACCEPT_WITHIN`] if none does.
//! - Bytes pass unchanged both ways until either side closes; dropping the [`Bridge`] closes
//!   both, so a session that ends leaves no connection behind.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::task::JoinHandle;
use twoplane_pg::PgStream;

/// How long the socket waits for the replication client to connect.
const ACCEPT_WITHIN: Duration = Duration::from_secs(10);

/// The port number in the socket's name (`.s.PGSQL.<port>`, the name libpq-style clients
/// derive from a directory and a port); any number does, since the directory is private.
pub(crate) const SOCKET_PORT: u16 = 5432;

/// One spliced connection (see the module guarantees).
pub(crate) struct Bridge {
    dir: PathBuf,
    task: JoinHandle<()>,
}

impl Bridge {
    /// A socket in a new private directory, spliced to `server` once a client connects.
    pub(crate) fn open(server: PgStream) -> Result<Bridge, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "twoplane-relay-{}-{}-{nonce:08x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot make the replication socket's directory {}: {e}", dir.display()))?;
        let path = dir.join(format!(".s.PGSQL.{SOCKET_PORT}"));
        let listener = match UnixListener::bind(&path) {
            Ok(listener) => listener,
            Err(e) => {
                remove(&dir);
                return Err(format!("cannot listen on the replication socket {}: {e}", path.display()));
            }
        };
        let owned = dir.clone();
        let task = tokio::spawn(async move {
            let accepted = tokio::time::timeout(ACCEPT_WITHIN, listener.accept()).await;
            drop(listener);
            remove(&owned);
            let Ok(Ok((mut client, _))) = accepted else { return };
            let mut server = server;
            if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut server).await {
                tracing::debug!(error = %e, "replication connection ended");
            }
        });
        Ok(Bridge { dir, task })
    }

    /// The directory to give the replication client as its host.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.task.abort();
        remove(&self.dir);
    }
}

fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, UnixStream};

    /// A server that echoes what it reads, reached in `disable` mode (plain TCP).
    async fn echo_server() -> PgStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let (mut r, mut w) = socket.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
        let url = format!("postgresql://u@127.0.0.1:{port}/db?sslmode=disable");
        twoplane_pg::PgEndpoint::parse(&url, None).unwrap().connect_stream().await.unwrap()
    }

    #[tokio::test]
    async fn one_private_connection_passes_bytes_and_leaves_nothing() {
        let bridge = Bridge::open(echo_server().await).unwrap();
        let mode = std::fs::metadata(bridge.dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let path = bridge.dir().join(format!(".s.PGSQL.{SOCKET_PORT}"));
        let mut client = UnixStream::connect(&path).await.unwrap();
        client.write_all(b"startup").await.unwrap();
        let mut got = [0u8; 7];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"startup");
        // The first connection took the socket away: nobody else can reach the server.
        for _ in 0..100 {
            if !bridge.dir().exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!bridge.dir().exists(), "the socket's directory outlived the accept");
        assert!(UnixStream::connect(&path).await.is_err());
        drop(bridge);
        let mut rest = Vec::new();
        // Dropping the bridge closed the splice: the client reads the end.
        client.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}
