//! `twoplane serve`'s own assembly (`serve::prepare`) in this process, on a temporary SQLite file
//! and `127.0.0.1:0`, for tests that talk HTTP to it. It stops when dropped.

#![allow(dead_code)] // each test binary uses a different part of `common`

use std::net::SocketAddr;

use twoplane_server::access::Access;
use twoplane_server::producer::Limits;
use twoplane_server::serve::{self, ServeConfig, Store};

pub struct Served {
    pub addr: SocketAddr,
    dir: Option<tempfile::TempDir>,
    access: Access,
    producer_limits: Limits,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    stopped: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Served {
    /// The same store served by a fresh server at a new address, this one stopped (drained)
    /// first: what a restart of the process is to its readers. Streams it ended are no longer
    /// hosted anywhere, so they are read from the store.
    pub async fn restart(mut self) -> Served {
        let dir = self.dir.take().expect("a served store");
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(stopped) = self.stopped.take() {
            let _ = stopped.await;
        }
        start_in(dir, self.access.clone(), self.producer_limits.clone()).await
    }
}

/// A server with `access` and `producer_limits`, everything else as `twoplane serve` defaults.
pub async fn start(access: Access, producer_limits: Limits) -> Served {
    start_in(tempfile::tempdir().unwrap(), access, producer_limits).await
}

async fn start_in(dir: tempfile::TempDir, access: Access, producer_limits: Limits) -> Served {
    let config = ServeConfig {
        access: access.clone(),
        producer_limits: producer_limits.clone(),
        direct_sse: super::direct_sse(),
        ..ServeConfig::local(Store::Sqlite(dir.path().join("t.db")))
    };
    let running = serve::prepare(&config).await.unwrap();
    let addr = running.addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = running
            .serve(async {
                let _ = stopped.await;
            })
            .await;
    });
    Served { addr, dir: Some(dir), access, producer_limits, stop: Some(stop), stopped: Some(task) }
}
