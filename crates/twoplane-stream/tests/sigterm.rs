//! `drain_on_sigterm`: a SIGTERM seals every live stream `interrupted`. In its own test binary
//! because it signals its own process.

mod common;

use std::sync::Arc;

use common::plane_with;
use twoplane_stream::{MemoryTarget, PlaneErrorKind};

#[tokio::test]
async fn sigterm_drains_the_plane() {
    let store = Arc::new(MemoryTarget::new());
    store.insert_message("m");
    let plane = plane_with(store.clone(), |_| {});
    let handle = plane.open("m").await.unwrap();
    handle.push("cut short").unwrap();
    let drained = plane.drain_on_sigterm().unwrap();
    // SAFETY: signalling our own process; tokio's handler is installed above.
    assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGTERM) }, 0);
    let report = drained.await.unwrap();
    assert_eq!(report.sealed, vec!["m".to_string()]);
    let row = store.row("m").unwrap();
    assert_eq!((row.status.as_deref(), row.body.len()), (Some("interrupted"), 9));
    store.insert_message("n");
    assert_eq!(plane.open("n").await.unwrap_err().kind(), PlaneErrorKind::Draining);
}
