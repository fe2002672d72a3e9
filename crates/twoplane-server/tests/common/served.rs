//! `twoplane serve`'s own assembly (`serve::prepare`) in this process, on a temporary SQLite file
//! and `127.0.0.1:0`, for tests that talk HTTP to it. It stops when dropped.

#![allow(dead_code)] // each test binary uses a different part of `common`

use std::net::SocketAddr;

use twoplane_server::access::Access;
use twoplane_server::producer::Limits;
use twoplane_server::serve::{self, ServeConfig, Store};

pub struct Served {
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A server with `access` and `producer_limits`, everything else as `twoplane serve` defaults.
pub async fn start(access: Access, producer_limits: Limits) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = ServeConfig {
        access,
        producer_limits,
        direct_sse: super::direct_sse(),
        ..ServeConfig::local(Store::Sqlite(dir.path().join("t.db")))
    };
    let running = serve::prepare(&config).await.unwrap();
    let addr = running.addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(running.serve(async {
        let _ = stopped.await;
    }));
    Served { addr, _dir: dir, stop: Some(stop) }
}
