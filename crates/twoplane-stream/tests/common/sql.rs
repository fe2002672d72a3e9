//! Scenarios every SQL target must pass, written once and run against real SQLite and real
//! PostgreSQL. The fixture SQL here (the application's message table, reads for assertions) is
//! test code; the plane's own statements all come from the core's `MappedSql`.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use twoplane_stream::MessageFrame as Frame;
use twoplane_stream::*;

use super::{plane_with, units, Reader};

pub use twoplane_core::sql::Dialect;
use twoplane_core::sql::{stream_chunk_table_ddl, stream_schema};

/// The message row as the application would read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbRow {
    pub body: String,
    pub seq: i64,
    pub status: Option<String>,
    pub cancel: bool,
    pub error: Option<String>,
    pub host: Option<String>,
}

/// One database under test.
#[async_trait]
pub trait Db: Send + Sync {
    fn dialect(&self) -> Dialect;
    async fn exec(&self, sql: &str);
    async fn message(&self, table: &str, id: &str) -> Option<DbRow>;
    /// `(seq, text)` of the stream's chunk rows, in ascending seq.
    async fn chunks(&self, table: &str, id: &str) -> Vec<(i64, String)>;
    /// A target for `tables`, with the chunk table created.
    async fn target(&self, tables: &StreamTables) -> Arc<dyn DurableTarget>;
    /// The test's own executor on the database, to read its catalog.
    fn executor(&self) -> Executor;
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Fresh table names, unique per process and scenario (PostgreSQL is shared by the tests).
pub struct Tables {
    pub tables: StreamTables,
}

impl Tables {
    pub async fn create(db: &dyn Db, mapped_extras: bool) -> Tables {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let message = format!("msg_{}_{n}", std::process::id());
        let chunks = format!("{message}_chunks");
        let (seq_type, cancel_type) = match db.dialect() {
            // `integer` on PostgreSQL is 4 bytes: the target must adapt its parameters to it.
            Dialect::Postgres => ("integer", "boolean NOT NULL DEFAULT false"),
            Dialect::Sqlite => ("INTEGER", "INTEGER NOT NULL DEFAULT 0"),
        };
        db.exec(&format!(
            "CREATE TABLE \"{message}\" (id TEXT PRIMARY KEY, body TEXT NOT NULL DEFAULT '', status TEXT, \
             seq {seq_type} NOT NULL DEFAULT 0, cancel {cancel_type}, error TEXT, host TEXT, role TEXT)"
        ))
        .await;
        let mut columns = StreamColumns::default();
        if mapped_extras {
            columns.cancel = Some("cancel".into());
            columns.error = Some("error".into());
            columns.host = Some("host".into());
        }
        Tables { tables: StreamTables { message, chunks, columns } }
    }

    pub fn message(&self) -> &str {
        &self.tables.message
    }

    pub async fn insert(&self, db: &dyn Db, id: &str) {
        db.exec(&format!("INSERT INTO \"{}\" (id, role) VALUES ('{id}', 'assistant')", self.message())).await;
    }

    pub async fn set(&self, db: &dyn Db, id: &str, assignment: &str) {
        db.exec(&format!("UPDATE \"{}\" SET {assignment} WHERE id = '{id}'", self.message())).await;
    }

    pub async fn request_cancel(&self, db: &dyn Db, id: &str) {
        let value = match db.dialect() {
            Dialect::Postgres => "true",
            Dialect::Sqlite => "1",
        };
        self.set(db, id, &format!("cancel = {value}")).await;
    }

    pub async fn drop_all(&self, db: &dyn Db) {
        db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", self.tables.chunks)).await;
        db.exec(&format!("DROP TABLE IF EXISTS \"{}\"", self.message())).await;
    }
}

fn utf16_len(s: &str) -> i64 {
    s.encode_utf16().count() as i64
}

fn fast(o: &mut PlaneOptions) {
    o.chars = 8;
    o.interval_ms = 20;
    o.retry_backoff_ms = 5;
    o.linger_ms = 200;
}

/// Open, push (with a pair split across pushes), flush, join, close: the whole lifecycle.
pub async fn lifecycle(db: &dyn Db) {
    let t = Tables::create(db, true).await;
    t.insert(db, "m1").await;
    let target = db.target(&t.tables).await;
    let plane = plane_with(target, |o| {
        fast(o);
        o.chars = 1_000_000;
        o.host_id = Some("host-a".into());
    });
    let h = plane.open("m1").await.unwrap();
    let row = db.message(t.message(), "m1").await.unwrap();
    assert_eq!((row.status.as_deref(), row.host.as_deref()), (Some("streaming"), Some("host-a")));

    let mut early = Reader::new(plane.subscribe(&(), "m1", 0).await.unwrap(), 0, &[]);
    h.push("héllo 漢字 ").unwrap();
    let emoji = units("😀");
    h.push_units(&emoji[..1]).unwrap();
    let e = h.flush().await.unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::NotDurable, "half a pair cannot be flushed: {e}");
    h.push_units(&emoji[1..]).unwrap();
    let durable = h.flush().await.unwrap();
    let so_far = "héllo 漢字 😀";
    assert_eq!(durable as i64, utf16_len(so_far));
    let row = db.message(t.message(), "m1").await.unwrap();
    assert_eq!(row.seq, utf16_len(so_far), "the length column counts UTF-16 code units");
    let chunks = db.chunks(&t.tables.chunks, "m1").await;
    assert_eq!(chunks.iter().map(|(_, s)| s.as_str()).collect::<String>(), so_far);
    assert!(chunks.windows(2).all(|w| w[0].0 < w[1].0));

    h.push(" and more 🎉").unwrap();
    let full = "héllo 漢字 😀 and more 🎉";
    let mut late = Reader::new(plane.subscribe(&(), "m1", row.seq as u64).await.unwrap(), row.seq as u64, &units(full));
    h.close().await.unwrap();

    let row = db.message(t.message(), "m1").await.unwrap();
    assert_eq!(row.body, full);
    assert_eq!(row.seq, utf16_len(full));
    assert_eq!((row.status.as_deref(), row.error.as_deref()), (Some("complete"), None));
    assert!(db.chunks(&t.tables.chunks, "m1").await.is_empty(), "compaction deletes the chunk rows");
    for r in [&mut early, &mut late] {
        r.read_to_end().await;
        assert_eq!(r.acc, units(full));
        assert!(matches!(r.terminal(), Some(Frame::End { status: StreamStatus::Complete, .. })));
    }
    t.drop_all(db).await;
}

/// Lost acknowledgements, failed commits and failed read-backs against the real store.
pub async fn faults(db: &dyn Db) {
    let t = Tables::create(db, false).await;
    t.insert(db, "m1").await;
    let faulty = Arc::new(FaultyTarget::new(db.target(&t.tables).await));
    let plane = plane_with(faulty.clone(), |o| {
        fast(o);
        o.chars = 1_000_000;
        o.retries = 1;
    });
    let h = plane.open("m1").await.unwrap();
    h.push("first ").unwrap();
    faulty.inject(FaultOp::Append, Fault::LoseAck);
    faulty.inject(FaultOp::Append, Fault::LoseAck);
    assert_eq!(h.flush().await.unwrap(), 6, "lost acks are absorbed by the read-back");
    assert_eq!(db.chunks(&t.tables.chunks, "m1").await, vec![(6, "first ".to_string())]);

    h.push("second ").unwrap();
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 2);
    faulty.inject(FaultOp::Probe, Fault::FailReadBack);
    assert_eq!(h.flush().await.unwrap_err().kind(), PlaneErrorKind::Store);
    assert_eq!(db.message(t.message(), "m1").await.unwrap().seq, 6);

    faulty.inject(FaultOp::Append, Fault::FailReadBack);
    assert_eq!(h.flush().await.unwrap(), 13, "a failed read-back is retried and confirmed");
    h.push("third").unwrap();
    faulty.inject(FaultOp::Close, Fault::LoseAck);
    h.close().await.unwrap();
    let row = db.message(t.message(), "m1").await.unwrap();
    assert_eq!((row.body.as_str(), row.seq), ("first second third", 18));
    assert!(db.chunks(&t.tables.chunks, "m1").await.is_empty());
    t.drop_all(db).await;
}

/// The open precondition and the host compare-and-swap.
pub async fn open_rules(db: &dyn Db) {
    let t = Tables::create(db, true).await;
    let target = db.target(&t.tables).await;
    let a = plane_with(target.clone(), |o| {
        fast(o);
        o.host_id = Some("a".into());
    });
    let b = plane_with(target.clone(), |o| {
        fast(o);
        o.host_id = Some("b".into());
    });
    assert_eq!(a.open("missing").await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    t.insert(db, "advanced").await;
    t.set(db, "advanced", "seq = 5").await;
    let e = a.open("advanced").await.unwrap_err();
    assert!(e.kind() == PlaneErrorKind::OpenRefused && e.message().contains('5'), "{e}");
    t.insert(db, "held").await;
    t.set(db, "held", "status = 'streaming'").await;
    assert_eq!(a.open("held").await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);

    // Two producers race for one row: the compare-and-swap names exactly one winner.
    t.insert(db, "race").await;
    let (ra, rb) = tokio::join!(a.open("race"), b.open("race"));
    let winners = [ra.is_ok(), rb.is_ok()].iter().filter(|w| **w).count();
    assert_eq!(winners, 1, "exactly one producer wins ({:?} / {:?})", ra.as_ref().err(), rb.as_ref().err());
    let winner_host = if ra.is_ok() { "a" } else { "b" };
    assert_eq!(db.message(t.message(), "race").await.unwrap().host.as_deref(), Some(winner_host));
    let loser = ra.as_ref().err().or(rb.as_ref().err()).unwrap();
    assert_eq!(loser.kind(), PlaneErrorKind::OpenRefused);
    let h = ra.or(rb).unwrap();
    h.push("won").unwrap();
    h.close().await.unwrap();
    t.drop_all(db).await;
}

/// A stream goes on (docs/contract.md §9): a compacted row is claimed again at its durable end,
/// of two producers going on at once one wins, a wrong offset changes nothing, a cancel flag is
/// cleared, and the next seal compacts the whole message.
pub async fn goes_on(db: &dyn Db) {
    let t = Tables::create(db, true).await;
    let target = db.target(&t.tables).await;
    let a = plane_with(target.clone(), |o| {
        fast(o);
        o.host_id = Some("a".into());
    });
    let b = plane_with(target.clone(), |o| {
        fast(o);
        o.host_id = Some("b".into());
    });
    t.insert(db, "on").await;
    let h = a.open("on").await.unwrap();
    h.push("Hello").unwrap();
    h.close().await.unwrap();
    t.request_cancel(db, "on").await;
    assert_eq!(b.reopen("on", 4).await.unwrap_err().kind(), PlaneErrorKind::WrongOffset);
    assert_eq!(b.reopen("missing", 0).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    let row = db.message(t.message(), "on").await.unwrap();
    assert_eq!((row.status.as_deref(), row.seq, row.body.as_str()), (Some("complete"), 5, "Hello"));
    // Two producers go on at once: one wins, the other changes nothing.
    let (ra, rb) = tokio::join!(a.reopen("on", 5), b.reopen("on", 5));
    assert_eq!(
        [ra.is_ok(), rb.is_ok()].iter().filter(|w| **w).count(),
        1,
        "{:?} / {:?}",
        ra.as_ref().err(),
        rb.as_ref().err()
    );
    let loser = ra.as_ref().err().or(rb.as_ref().err()).unwrap();
    assert_eq!(loser.kind(), PlaneErrorKind::OpenRefused, "{loser}");
    let h = ra.or(rb).unwrap();
    let row = db.message(t.message(), "on").await.unwrap();
    assert_eq!((row.status.as_deref(), row.body.as_str(), row.cancel), (Some("streaming"), "", false));
    assert_eq!(db.chunks(&t.tables.chunks, "on").await, vec![(5, "Hello".to_owned())], "back to chunk rows");
    h.push(", world").unwrap();
    h.flush().await.unwrap();
    assert_eq!(db.message(t.message(), "on").await.unwrap().seq, 12);
    h.close().await.unwrap();
    let row = db.message(t.message(), "on").await.unwrap();
    assert_eq!((row.status.as_deref(), row.seq, row.body.as_str()), (Some("complete"), 12, "Hello, world"));
    assert!(db.chunks(&t.tables.chunks, "on").await.is_empty(), "compacted again");

    // A seal that never landed (the store down past the seal deadline): the row stays this
    // host's, holding what was durable, and this host alone goes on with it from there.
    t.insert(db, "short").await;
    let faulty = Arc::new(FaultyTarget::new(target.clone()));
    let c = plane_with(faulty.clone(), |o| {
        fast(o);
        o.host_id = Some("c".into());
        o.retries = 1;
        o.seal_deadline_ms = 300;
    });
    let h = c.open("short").await.unwrap();
    h.push("abc").unwrap();
    h.flush().await.unwrap();
    h.push("def").unwrap();
    faulty.inject_n(FaultOp::Close, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 1_000);
    assert_eq!(h.close().await.unwrap_err().kind(), PlaneErrorKind::NotDurable);
    faulty.clear();
    let row = db.message(t.message(), "short").await.unwrap();
    assert_eq!((row.status.as_deref(), row.seq), (Some("streaming"), 3));
    // The claim takes a row held by its own host only.
    let claim = |host_token| ReopenRequest { stream_id: "short", host_token, at: 3, expand: None };
    assert_eq!(target.reopen(claim("b")).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    assert_eq!(b.reopen("short", 3).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    // Long after its stream here was forgotten, the host goes on.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let h = c.reopen("short", 3).await.unwrap();
    h.push("def!").unwrap();
    h.close().await.unwrap();
    let row = db.message(t.message(), "short").await.unwrap();
    assert_eq!((row.status.as_deref(), row.seq, row.body.as_str()), (Some("complete"), 7, "abcdef!"));
    t.drop_all(db).await;
}

/// The cancel column stops the producer; fail records the error.
pub async fn cancel_and_fail(db: &dyn Db) {
    let t = Tables::create(db, true).await;
    t.insert(db, "c1").await;
    t.insert(db, "f1").await;
    let plane = plane_with(db.target(&t.tables).await, fast);
    let h = plane.open("c1").await.unwrap();
    t.request_cancel(db, "c1").await;
    let deltas = futures::stream::iter((0..10_000).map(|i| format!("{i} "))).then(|d| async move {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        d
    });
    h.pump(deltas).await.unwrap();
    assert!(h.cancelled(), "the read-back saw the cancel column");
    assert!(h.seq() < 10_000, "pump stopped early");
    h.close().await.unwrap();
    let row = db.message(t.message(), "c1").await.unwrap();
    assert_eq!(row.status.as_deref(), Some("cancelled"));
    assert_eq!(row.seq, utf16_len(&row.body));

    let f = plane.open("f1").await.unwrap();
    f.push("partial answer").unwrap();
    f.fail("upstream timed out").await.unwrap();
    let row = db.message(t.message(), "f1").await.unwrap();
    assert_eq!(
        (row.body.as_str(), row.status.as_deref(), row.error.as_deref()),
        ("partial answer", Some("error"), Some("upstream timed out"))
    );
    t.drop_all(db).await;
}

/// A lone surrogate cannot be stored in a text column: the plane says so instead of mangling.
pub async fn lone_surrogate_is_refused(db: &dyn Db) {
    let t = Tables::create(db, false).await;
    t.insert(db, "s1").await;
    let plane = plane_with(db.target(&t.tables).await, |o| {
        fast(o);
        o.retries = 0;
    });
    let h = plane.open("s1").await.unwrap();
    h.push_units(&[0xD800, 0x61]).unwrap();
    assert!(h.flush().await.is_err());
    let e = h.close().await.unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::NotDurable, "{e}");
    let row = db.message(t.message(), "s1").await.unwrap();
    assert_eq!((row.seq, row.body.as_str()), (0, ""), "nothing mangled was written");
    t.drop_all(db).await;
}

use futures::StreamExt;

/// What the database holds of the plane's tables is what the core describes
/// (`twoplane_core::sql::stream_schema`), column by column and index by index: for the
/// application's message table, the columns the plane adds; for the chunk table, all of it.
async fn assert_described(db: &dyn Db, tables: &StreamTables, case: &str) {
    let executor = db.executor();
    for shape in stream_schema(tables, db.dialect()).unwrap() {
        let (columns, indexes) = read_catalog(&executor, &shape).await.unwrap();
        let columns: Vec<_> = if shape.create_table().is_some() {
            columns
        } else {
            columns.into_iter().filter(|c| shape.columns().iter().any(|s| s.name == c.name)).collect()
        };
        assert_eq!(columns, shape.expected_columns(), "{case}: the columns of {}", shape.name());
        assert_eq!(indexes, shape.expected_indexes(), "{case}: the indexes of {}", shape.name());
    }
}

/// The plane's tables from empty, with and without the parts columns, and upgraded from the one
/// older shape there is (tables from before messages had parts, with a text chunk row in them),
/// each opened twice: every time the catalog matches the core's description, and the old row is
/// still there as a text row.
pub async fn schema_matches_the_description(db: &dyn Db) {
    let plain = Tables::create(db, true).await;
    db.target(&plain.tables).await;
    assert_described(db, &plain.tables, "from empty, without parts").await;
    plain.drop_all(db).await;

    let mut parts = Tables::create(db, true).await;
    parts.tables.columns = parts.tables.columns.clone().with_parts();
    for round in ["from empty, with parts", "with parts, opened again"] {
        db.target(&parts.tables).await;
        assert_described(db, &parts.tables, round).await;
    }
    parts.drop_all(db).await;

    let old = Tables::create(db, true).await;
    for ddl in stream_chunk_table_ddl(&old.tables, db.dialect()).unwrap() {
        db.exec(&ddl).await;
    }
    old.insert(db, "s").await;
    db.exec(&format!("INSERT INTO \"{}\" VALUES ('s:3', 's', 3, 'abc')", old.tables.chunks)).await;
    let mut upgraded = StreamTables { ..old.tables.clone() };
    upgraded.columns = upgraded.columns.with_parts();
    for round in ["upgraded from before parts", "upgraded, opened again"] {
        db.target(&upgraded).await;
        assert_described(db, &upgraded, round).await;
    }
    assert_eq!(db.chunks(&old.tables.chunks, "s").await, vec![(3, "abc".to_owned())]);
    old.drop_all(db).await;
}

/// Where a group commit is made to fail (`group_commit_faults`).
#[derive(Clone, Copy, Debug)]
pub enum GroupFault {
    /// One round's own statement fails (SQLite: a trigger's `RAISE(ABORT)`; PostgreSQL: a
    /// trigger's exception, which aborts the transaction for the whole batch).
    Statement,
    /// The transaction fails as a whole (SQLite: a trigger's `RAISE(ROLLBACK)`, which ends the
    /// transaction under the batch; PostgreSQL: a deferred trigger, which fails the `COMMIT`).
    Transaction,
}

/// A generated case: `slices[r][s]` is stream `s`'s text in round `r` (never empty); the fault
/// hits stream `fault_stream`'s chunk row in round `fault_round`.
#[derive(Clone, Debug)]
pub struct GroupCase {
    pub slices: Vec<Vec<String>>,
    pub fault_round: usize,
    pub fault_stream: usize,
    pub fault: GroupFault,
}

/// Many streams checkpoint at once (their appends are group-committed), one round fails where
/// the case says. Checked: an append answered `Ok` is in the store, whole, and every stream's
/// store text is always a prefix of what it produced (nothing acknowledged lost, nothing
/// duplicated); outside the fault round every append succeeds (no round dropped from a batch);
/// a statement fault fails only its own round on SQLite, and on PostgreSQL the others go on in
/// a transaction without it; in the end every stream's store holds exactly what it produced.
pub async fn group_commit_faults(db: &dyn Db, case: &GroupCase) {
    let t = Tables::create(db, true).await;
    let target = db.target(&t.tables).await;
    let streams = case.slices[0].len();
    let ids: Vec<String> = (0..streams).map(|s| format!("g{s}")).collect();
    for id in &ids {
        t.insert(db, id).await;
        target.open(OpenRequest { stream_id: id, host_token: "h" }).await.unwrap();
    }
    let mut produced: Vec<Vec<u16>> = vec![Vec::new(); streams];
    let mut durable = vec![0u64; streams];
    for (round, slices) in case.slices.iter().enumerate() {
        for (s, text) in slices.iter().enumerate() {
            produced[s].extend(text.encode_utf16());
        }
        let faulty = round == case.fault_round;
        if faulty {
            let at = produced[case.fault_stream].len();
            install_group_fault(db, &t, &ids[case.fault_stream], at, case.fault).await;
        }
        let outcomes = append_all(&*target, &ids, &produced, &durable).await;
        if faulty {
            remove_group_fault(db, &t).await;
        }
        let mut failed = 0;
        for (s, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Ok(ack) => {
                    assert_eq!(ack.durable_seq, produced[s].len() as u64, "round {round}, stream {s}: a whole ack");
                    durable[s] = ack.durable_seq;
                }
                Err(e) => {
                    failed += 1;
                    assert!(faulty, "round {round}, stream {s}: failed with no fault armed: {e:?}");
                    if let (GroupFault::Statement, Dialect::Sqlite) = (case.fault, db.dialect()) {
                        assert_eq!(s, case.fault_stream, "a statement fault fails its own round only: {e:?}");
                    }
                }
            }
        }
        if faulty {
            assert!(failed >= 1, "the fault fired");
            if let GroupFault::Statement = case.fault {
                assert_eq!(failed, 1, "the others went on without the failed round");
            }
        }
        for (s, id) in ids.iter().enumerate() {
            let stored = stored_text(db, &t, id).await;
            assert!(stored.len() as u64 >= durable[s], "round {round}, stream {s}: an acknowledged append was lost");
            assert_eq!(&produced[s][..stored.len()], &stored[..], "round {round}, stream {s}: the store is a prefix");
        }
    }
    // The failed rounds go again (as a stream's retry would) and land.
    let outcomes = append_all(&*target, &ids, &produced, &durable).await;
    for (s, outcome) in outcomes.into_iter().enumerate() {
        if durable[s] < produced[s].len() as u64 {
            assert_eq!(outcome.unwrap().durable_seq, produced[s].len() as u64);
        }
        let stored = stored_text(db, &t, &ids[s]).await;
        assert_eq!(stored, produced[s], "stream {s}: exactly what it produced, once");
    }
    t.drop_all(db).await;
}

/// Every stream's append from its durable length to its produced end, all at once (so they
/// are group-committed); a stream with nothing outstanding appends nothing.
async fn append_all(
    target: &dyn DurableTarget,
    ids: &[String],
    produced: &[Vec<u16>],
    durable: &[u64],
) -> Vec<Result<AppendAck, PlaneError>> {
    let appends = ids.iter().enumerate().map(|(s, id)| async move {
        let (from, to) = (durable[s], produced[s].len() as u64);
        if from == to {
            return Ok(AppendAck { durable_seq: to, cancel_requested: false });
        }
        let text = &produced[s][from as usize..];
        target.append(AppendRequest { stream_id: id, host_token: "h", from, seq: to, text, parts: None }).await
    });
    futures::future::join_all(appends).await
}

/// The stream's text as the store holds it (its chunk rows in order), checked against its row:
/// contiguous chunks that end at the row's length.
async fn stored_text(db: &dyn Db, t: &Tables, id: &str) -> Vec<u16> {
    let row = db.message(t.message(), id).await.unwrap();
    let mut text = Vec::new();
    for (seq, chunk) in db.chunks(&t.tables.chunks, id).await {
        text.extend(chunk.encode_utf16());
        assert_eq!(text.len() as i64, seq, "stream {id}: chunk rows are contiguous, none twice");
    }
    assert_eq!(text.len() as i64, row.seq, "stream {id}: the chunk rows end at the row's length");
    text
}

async fn install_group_fault(db: &dyn Db, t: &Tables, id: &str, seq: usize, fault: GroupFault) {
    let (chunks, name) = (&t.tables.chunks, format!("{}_fault", t.message()));
    let when = format!("NEW.\"streamId\" = '{id}' AND NEW.seq = {seq}");
    match db.dialect() {
        Dialect::Sqlite => {
            let raise = match fault {
                GroupFault::Statement => "ABORT",
                GroupFault::Transaction => "ROLLBACK",
            };
            db.exec(&format!(
                "CREATE TRIGGER \"{name}\" BEFORE INSERT ON \"{chunks}\" WHEN {when} \
                 BEGIN SELECT RAISE({raise}, 'injected fault'); END"
            ))
            .await;
        }
        Dialect::Postgres => {
            db.exec(&format!(
                "CREATE FUNCTION \"{name}\"() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$"
            ))
            .await;
            let trigger = match fault {
                GroupFault::Statement => format!("CREATE TRIGGER \"{name}\" BEFORE INSERT ON \"{chunks}\""),
                GroupFault::Transaction => format!(
                    "CREATE CONSTRAINT TRIGGER \"{name}\" AFTER INSERT ON \"{chunks}\" DEFERRABLE INITIALLY DEFERRED"
                ),
            };
            db.exec(&format!("{trigger} FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION \"{name}\"()")).await;
        }
    }
}

async fn remove_group_fault(db: &dyn Db, t: &Tables) {
    let (chunks, name) = (&t.tables.chunks, format!("{}_fault", t.message()));
    match db.dialect() {
        Dialect::Sqlite => db.exec(&format!("DROP TRIGGER \"{name}\"")).await,
        Dialect::Postgres => {
            db.exec(&format!("DROP TRIGGER \"{name}\" ON \"{chunks}\"; DROP FUNCTION \"{name}\"()")).await;
        }
    }
}

/// Cases for `group_commit_faults`: 2 to 24 streams, 2 to 4 rounds of 1 to 6 characters (some
/// outside the BMP), the fault anywhere.
pub fn group_cases() -> impl proptest::strategy::Strategy<Value = GroupCase> {
    use proptest::prelude::*;
    (2usize..24, 2usize..5).prop_flat_map(|(streams, rounds)| {
        let text = proptest::string::string_regex("[a-zé😀]{1,6}").unwrap();
        (
            proptest::collection::vec(proptest::collection::vec(text, streams), rounds),
            0..rounds,
            0..streams,
            prop_oneof![Just(GroupFault::Statement), Just(GroupFault::Transaction)],
        )
            .prop_map(|(slices, fault_round, fault_stream, fault)| GroupCase {
                slices,
                fault_round,
                fault_stream,
                fault,
            })
    })
}
