//! A temporary SQLite database file for one test: the test's own connection to it (which reads
//! while the plane writes), the plane's target on the same file, and the file (with its WAL and
//! shared-memory companions) removed before and after.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use twoplane_stream::{DurableTarget, SqliteTarget, StreamTables};

pub struct SqliteFile {
    pub path: PathBuf,
    pub conn: Mutex<Connection>,
}

impl SqliteFile {
    /// A fresh file named after `name`, this process and a counter, so tests never share one.
    pub fn new(name: &str) -> SqliteFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("twoplane-{name}-{}-{n}.db", std::process::id()));
        remove(&path);
        let conn = Connection::open(&path).unwrap();
        SqliteFile { path, conn: Mutex::new(conn) }
    }

    /// The chunk rows of stream `id` in `table`, in order.
    pub fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)> {
        let conn = self.conn.lock().unwrap();
        let mut stmt =
            conn.prepare(&format!("SELECT seq, text FROM \"{table}\" WHERE \"streamId\" = ?1 ORDER BY seq")).unwrap();
        stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    /// The plane's target on this file, its chunk table created.
    pub async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget> {
        let target = SqliteTarget::open(&self.path, tables).unwrap();
        target.create_chunk_table().await.unwrap();
        Arc::new(target)
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        remove(&self.path);
    }
}

fn remove(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
