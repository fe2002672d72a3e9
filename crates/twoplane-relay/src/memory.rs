//! In-memory record, change source and log store, for tests and for embedding the relay in a
//! process that keeps its record in memory. Nothing here is durable.
//!
//! - [`MemoryRecord`]: the record's rows and tenants, and a replication slot over its commits:
//!   commits made while the slot exists are retained until acknowledged and replayed to the
//!   next reader; one reader holds the slot at a time; a dropped slot starts fresh (with its
//!   reconcile-pending flag set, cleared only when the relay reports the activation
//!   reconciled); a disconnect keeps the slot and replays.
//! - [`MemorySource`]: a [`ChangeSource`] reading that slot.
//! - [`MemoryLog`]: a [`LogStore`] with S2's semantics (basins must exist; a stream never
//!   written has tail 0; appends are atomic and conditional on the tail).
//!
//! Fault hooks (for the relay's simulation test): failing appends, a log losing a stream or a
//! basin, added latency, slot drops, disconnects (also in the middle of a transaction), lost and
//! duplicated deliveries, and checks that record what should never happen (an append into a
//! basin of an obsolete generation, the slot releasing a row that never reached its log).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::names::BasinName;
use crate::types::{
    Append, ChangeSource, CommittedTx, LogError, LogHead, LogStore, LogTarget, Lsn, RecordError, RecordReader,
    RecordRow, SessionRange, SourceEvent, SourceLink,
};
use twoplane_runtime::lock;

type SessionKey = (Arc<str>, Arc<str>);
/// (basin, stream).
type StreamKey = (String, String);
type FastHash = foldhash::fast::RandomState;
/// A tenant's rows by session.
type TenantRows = HashMap<Arc<str>, Vec<RecordRow>, FastHash>;
/// A basin's streams and their records.
type Streams = HashMap<String, Vec<Arc<str>>, FastHash>;

/// What the slot tells its reader.
enum Delivery {
    Tx(CommittedTx),
    Keepalive(Lsn),
    Lost(String),
}

struct Slot {
    confirmed: u64,
    reconcile_pending: bool,
    retained: VecDeque<CommittedTx>,
}

struct Reader {
    id: u64,
    deliveries: mpsc::UnboundedSender<Delivery>,
    /// A delivery was lost: the connection is found broken at the next delivery attempt.
    broken: bool,
}

/// One-shot faults of the slot's next delivery.
#[derive(Default)]
struct DeliveryFaults {
    duplicate: bool,
    lose: bool,
    disconnect_inside: bool,
}

/// What the slot released when the relay acknowledged a position, as [`MemoryRecord`]'s
/// release hook sees it.
pub struct Released<'a> {
    pub confirmed: Lsn,
    pub txs: &'a [CommittedTx],
    /// The tenant's generation at the moment of release (`None`: gone).
    pub generation: &'a dyn Fn(&str) -> Option<u64>,
}

type ReleaseHook = Box<dyn Fn(Released<'_>) + Send + Sync>;

#[derive(Default)]
struct RecordInner {
    /// Rows by tenant, then session; index = seq. Nested so that lookups take plain `&str`s.
    rows: HashMap<Arc<str>, TenantRows, FastHash>,
    /// The same sessions in (tenant, session) order, for `heads`.
    order: BTreeMap<Arc<str>, BTreeSet<Arc<str>>>,
    generations: HashMap<Arc<str>, u64>,
    lsn: u64,
    slot: Option<Slot>,
    reader: Option<Reader>,
    next_reader: u64,
    faults: DeliveryFaults,
    release_hook: Option<ReleaseHook>,
}

impl RecordInner {
    fn session(&self, tenant_id: &str, session_id: &str) -> Option<&Vec<RecordRow>> {
        self.rows.get(tenant_id).and_then(|sessions| sessions.get(session_id))
    }

    /// The session's rows, created empty when missing.
    fn session_mut(&mut self, tenant_id: &str, session_id: &str) -> &mut Vec<RecordRow> {
        let exists = self.rows.get(tenant_id).is_some_and(|sessions| sessions.contains_key(session_id));
        if !exists {
            let tenant: Arc<str> = match self.rows.get_key_value(tenant_id) {
                Some((tenant, _)) => tenant.clone(),
                None => tenant_id.into(),
            };
            let session: Arc<str> = session_id.into();
            self.order.entry(tenant.clone()).or_default().insert(session.clone());
            self.rows.entry(tenant).or_default().insert(session, Vec::new());
        }
        self.rows.get_mut(tenant_id).and_then(|sessions| sessions.get_mut(session_id)).expect("inserted above")
    }

    /// Hands stored rows to the slot as one committed transaction; returns its end position.
    fn log_commit(&mut self, rows: Vec<RecordRow>) -> Lsn {
        self.lsn += 1;
        let end_lsn = Lsn(self.lsn);
        if rows.is_empty() {
            // Changes to other tables: the position moves, nothing is delivered.
            return end_lsn;
        }
        let tx = CommittedTx { end_lsn, rows };
        // A slot keeps what was committed after it was created.
        let Some(slot) = &mut self.slot else { return end_lsn };
        slot.retained.push_back(tx.clone());
        let faults = std::mem::take(&mut self.faults);
        let broken = self.reader.as_ref().is_some_and(|reader| reader.broken);
        if broken {
            self.lose_reader("replication connection lost (a delivery went missing)");
        } else if faults.disconnect_inside {
            self.lose_reader("replication connection lost inside a transaction");
        } else if faults.lose {
            if let Some(reader) = &mut self.reader {
                reader.broken = true;
            }
        } else {
            if faults.duplicate {
                self.push(Delivery::Tx(tx.clone()));
            }
            self.push(Delivery::Tx(tx));
        }
        end_lsn
    }

    fn push(&mut self, delivery: Delivery) {
        if let Some(reader) = &self.reader {
            let _ = reader.deliveries.send(delivery);
        }
    }

    fn lose_reader(&mut self, error: &str) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.deliveries.send(Delivery::Lost(error.to_owned()));
        }
    }
}

/// An in-memory record with a replication slot (see the module header). Cloning gives another
/// handle to the same record.
#[derive(Clone, Default)]
pub struct MemoryRecord {
    inner: Arc<Mutex<RecordInner>>,
}

/// Why a commit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("commit refused: {0}")]
pub struct CommitError(pub String);

impl MemoryRecord {
    pub fn new() -> Self {
        Self::default()
    }

    /// Commits rows as one transaction; returns its end position. Each row's seq must be its
    /// session's next one (rows are dense from 0); a tenant seen for the first time gets the
    /// row's generation.
    pub fn commit(&self, rows: Vec<RecordRow>) -> Result<Lsn, CommitError> {
        let mut inner = lock(&self.inner);
        let mut next: HashMap<SessionKey, u64> = HashMap::new();
        for row in &rows {
            let key = (row.tenant_id.clone(), row.session_id.clone());
            let head = inner.session(&row.tenant_id, &row.session_id).map_or(0, |list| list.len() as u64);
            let expected = next.entry(key).or_insert(head);
            if row.seq != *expected {
                return Err(CommitError(format!(
                    "row {} of session {} (tenant {}) is not the next one ({expected})",
                    row.seq, row.session_id, row.tenant_id
                )));
            }
            *expected += 1;
        }
        for row in &rows {
            inner.generations.entry(row.tenant_id.clone()).or_insert(row.generation);
            inner.session_mut(&row.tenant_id, &row.session_id).push(row.clone());
        }
        Ok(inner.log_commit(rows))
    }

    /// Commits one event per `(tenant, session, body)`, as one transaction: each gets its
    /// session's next seq and its tenant's current generation (a new tenant starts at 1).
    pub fn commit_events<'a>(&self, events: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> Lsn {
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        let mut rows = Vec::new();
        for (tenant, session, body) in events {
            let generation = match inner.generations.get(tenant) {
                Some(generation) => *generation,
                None => *inner.generations.entry(tenant.into()).or_insert(1),
            };
            let list = inner.session_mut(tenant, session);
            let row = match list.last() {
                // Share the session's strings rather than allocating them again.
                Some(last) => RecordRow {
                    tenant_id: last.tenant_id.clone(),
                    session_id: last.session_id.clone(),
                    seq: list.len() as u64,
                    generation,
                    body: body.into(),
                },
                None => RecordRow {
                    tenant_id: tenant.into(),
                    session_id: session.into(),
                    seq: 0,
                    generation,
                    body: body.into(),
                },
            };
            list.push(row.clone());
            rows.push(row);
        }
        inner.log_commit(rows)
    }

    /// Commits a transaction that touches none of the record's tables (WAL the relay skips).
    pub fn commit_other(&self) -> Lsn {
        lock(&self.inner).log_commit(Vec::new())
    }

    /// Sets a tenant's basin generation.
    pub fn set_generation(&self, tenant_id: &str, generation: u64) {
        lock(&self.inner).generations.insert(tenant_id.into(), generation);
    }

    /// A reset: moves the tenant's generation on and deletes its rows; returns the new one.
    pub fn reset_tenant(&self, tenant_id: &str) -> u64 {
        let mut inner = lock(&self.inner);
        let generation = inner.generations.get(tenant_id).map_or(1, |g| g + 1);
        inner.generations.insert(tenant_id.into(), generation);
        inner.rows.remove(tenant_id);
        inner.order.remove(tenant_id);
        generation
    }

    /// Deletes a tenant's rows and the tenant.
    pub fn delete_tenant(&self, tenant_id: &str) {
        let mut inner = lock(&self.inner);
        inner.generations.remove(tenant_id);
        inner.rows.remove(tenant_id);
        inner.order.remove(tenant_id);
    }

    /// The tenant's generation right now.
    pub fn current_generation(&self, tenant_id: &str) -> Option<u64> {
        lock(&self.inner).generations.get(tenant_id).copied()
    }

    /// A session's rows.
    pub fn session_rows(&self, tenant_id: &str, session_id: &str) -> Vec<RecordRow> {
        let inner = lock(&self.inner);
        inner.session(tenant_id, session_id).cloned().unwrap_or_default()
    }

    /// Every session with rows, in (tenant, session) order.
    pub fn sessions(&self) -> Vec<(Arc<str>, Arc<str>)> {
        let inner = lock(&self.inner);
        inner
            .order
            .iter()
            .flat_map(|(tenant, sessions)| sessions.iter().map(move |session| (tenant.clone(), session.clone())))
            .collect()
    }

    /// The position of the last commit.
    pub fn lsn(&self) -> Lsn {
        Lsn(lock(&self.inner).lsn)
    }

    /// Drops the slot (an operator, or `max_slot_wal_keep_size`): its retained transactions are
    /// gone and its reader loses it. The next reader creates a fresh one.
    pub fn drop_slot(&self) {
        let mut inner = lock(&self.inner);
        inner.slot = None;
        inner.lose_reader("replication slot dropped");
    }

    /// Ends the reader's connection, keeping the slot (a network failure).
    pub fn disconnect(&self) {
        lock(&self.inner).lose_reader("replication connection lost");
    }

    /// The next committed transaction is delivered twice.
    pub fn duplicate_next_delivery(&self) {
        lock(&self.inner).faults.duplicate = true;
    }

    /// The next committed transaction is not delivered; the reader finds its connection broken
    /// at the following delivery (a transaction or a keepalive), as a real stream would.
    pub fn lose_next_delivery(&self) {
        lock(&self.inner).faults.lose = true;
    }

    /// The connection drops while the next transaction is being received: it is not delivered.
    pub fn disconnect_inside_next(&self) {
        lock(&self.inner).faults.disconnect_inside = true;
    }

    /// Calls `hook` (under the record's lock) whenever an acknowledgement releases retained
    /// transactions.
    pub fn on_release(&self, hook: impl Fn(Released<'_>) + Send + Sync + 'static) {
        lock(&self.inner).release_hook = Some(Box::new(hook));
    }

    /// The slot's confirmed position; `None` without a slot.
    pub fn confirmed(&self) -> Option<Lsn> {
        lock(&self.inner).slot.as_ref().map(|slot| Lsn(slot.confirmed))
    }

    /// Whether the slot still waits for a reconciliation; `None` without a slot.
    pub fn reconcile_pending(&self) -> Option<bool> {
        lock(&self.inner).slot.as_ref().map(|slot| slot.reconcile_pending)
    }

    /// Transactions the slot retains.
    pub fn retained(&self) -> usize {
        lock(&self.inner).slot.as_ref().map_or(0, |slot| slot.retained.len())
    }

    /// A change source over this record's slot.
    pub fn source(&self) -> MemorySource {
        MemorySource {
            record: self.clone(),
            keepalive_every: Duration::from_millis(50),
            retry_every: Duration::from_millis(20),
        }
    }

    fn attach(&self) -> Option<(u64, bool, Vec<CommittedTx>, mpsc::UnboundedReceiver<Delivery>)> {
        let mut inner = lock(&self.inner);
        if inner.reader.is_some() {
            return None;
        }
        inner.next_reader += 1;
        let id = inner.next_reader;
        let (deliveries, receiver) = mpsc::unbounded_channel();
        inner.reader = Some(Reader { id, deliveries, broken: false });
        let lsn = inner.lsn;
        let slot = inner.slot.get_or_insert_with(|| Slot {
            confirmed: lsn,
            reconcile_pending: true,
            retained: VecDeque::new(),
        });
        Some((id, slot.reconcile_pending, slot.retained.iter().cloned().collect(), receiver))
    }

    fn is_reader(inner: &RecordInner, id: u64) -> bool {
        inner.reader.as_ref().is_some_and(|reader| reader.id == id)
    }

    fn detach(&self, id: u64) {
        let mut inner = lock(&self.inner);
        if Self::is_reader(&inner, id) {
            inner.reader = None;
        }
    }

    fn keepalive(&self, id: u64) {
        let mut inner = lock(&self.inner);
        if !Self::is_reader(&inner, id) {
            return;
        }
        if inner.reader.as_ref().is_some_and(|reader| reader.broken) {
            inner.lose_reader("replication connection lost (a delivery went missing)");
            return;
        }
        // Every commit so far was pushed to this reader (or is not ours), so the position can
        // move up to the last one.
        let lsn = Lsn(inner.lsn);
        inner.push(Delivery::Keepalive(lsn));
    }

    fn confirm(&self, id: u64, lsn: Lsn) {
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        if !Self::is_reader(inner, id) {
            return;
        }
        let Some(slot) = &mut inner.slot else { return };
        if lsn.0 <= slot.confirmed {
            return;
        }
        slot.confirmed = lsn.0;
        let released = slot.retained.iter().take_while(|tx| tx.end_lsn <= lsn).count();
        let released: Vec<CommittedTx> = slot.retained.drain(..released).collect();
        if let Some(hook) = &inner.release_hook {
            let generations = &inner.generations;
            let generation = |tenant: &str| generations.get(tenant).copied();
            hook(Released { confirmed: lsn, txs: &released, generation: &generation });
        }
    }

    fn reconciled(&self, id: u64) {
        let mut inner = lock(&self.inner);
        if Self::is_reader(&inner, id) {
            if let Some(slot) = &mut inner.slot {
                slot.reconcile_pending = false;
            }
        }
    }
}

#[async_trait]
impl RecordReader for MemoryRecord {
    async fn read_range(&self, range: SessionRange<'_>) -> Result<Vec<RecordRow>, RecordError> {
        let SessionRange { tenant_id, session_id, from, to } = range;
        let inner = lock(&self.inner);
        let Some(list) = inner.session(tenant_id, session_id) else { return Ok(Vec::new()) };
        let end = (to.min(list.len() as u64)) as usize;
        let start = (from as usize).min(end);
        Ok(list[start..end].to_vec())
    }

    async fn heads(&self, after: Option<(&str, &str)>, limit: usize) -> Result<Vec<LogHead>, RecordError> {
        let inner = lock(&self.inner);
        let (tenants, first_sessions) = match after {
            Some((tenant, session)) => (Bound::Included(tenant), Some((tenant, session))),
            None => (Bound::Unbounded, None),
        };
        let mut heads = Vec::new();
        for (tenant_id, sessions) in inner.order.range::<str, _>((tenants, Bound::Unbounded)) {
            let sessions: Box<dyn Iterator<Item = &Arc<str>>> = match first_sessions {
                Some((tenant, session)) if **tenant_id == *tenant => {
                    Box::new(sessions.range::<str, _>((Bound::Excluded(session), Bound::Unbounded)))
                }
                _ => Box::new(sessions.iter()),
            };
            for session_id in sessions {
                if heads.len() >= limit {
                    return Ok(heads);
                }
                let list = inner.session(tenant_id, session_id).map_or(&[][..], Vec::as_slice);
                if let Some(last) = list.last() {
                    heads.push(LogHead {
                        tenant_id: tenant_id.clone(),
                        session_id: session_id.clone(),
                        generation: last.generation,
                        head: list.len() as u64,
                    });
                }
            }
        }
        Ok(heads)
    }

    async fn generation(&self, tenant_id: &str) -> Result<Option<u64>, RecordError> {
        Ok(lock(&self.inner).generations.get(tenant_id).copied())
    }
}

/// A [`ChangeSource`] over a [`MemoryRecord`]'s slot (see the module header).
pub struct MemorySource {
    record: MemoryRecord,
    keepalive_every: Duration,
    retry_every: Duration,
}

impl MemorySource {
    /// How often the source offers a keepalive while it holds the slot (default 50 ms).
    pub fn with_keepalive_every(mut self, every: Duration) -> Self {
        self.keepalive_every = every;
        self
    }
}

#[async_trait]
impl ChangeSource for MemorySource {
    async fn run(&mut self, link: SourceLink) {
        let SourceLink { events, mut acknowledged, mut reconciled, stop } = link;
        let mut activation = 0;
        loop {
            if stop.is_cancelled() {
                return;
            }
            let Some((id, fresh, replay, mut deliveries)) = self.record.attach() else {
                // Another reader holds the slot.
                tokio::select! {
                    _ = tokio::time::sleep(self.retry_every) => continue,
                    () = stop.cancelled() => return,
                }
            };
            activation += 1;
            let mut alive = events.send(SourceEvent::Active { activation, fresh }).await.is_ok();
            // What the relay acknowledged before (under an earlier activation) still holds.
            self.record.confirm(id, *acknowledged.borrow_and_update());
            for tx in replay {
                alive = alive && events.send(SourceEvent::Tx(tx)).await.is_ok();
            }
            let mut keepalive = tokio::time::interval(self.keepalive_every);
            keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let lost = loop {
                if !alive {
                    self.record.detach(id);
                    return;
                }
                tokio::select! {
                    () = stop.cancelled() => {
                        self.record.detach(id);
                        return;
                    }
                    changed = acknowledged.changed() => match changed {
                        Ok(()) => self.record.confirm(id, *acknowledged.borrow_and_update()),
                        Err(_) => alive = false,
                    },
                    changed = reconciled.changed() => match changed {
                        Ok(()) => {
                            let done = *reconciled.borrow_and_update();
                            if done == activation {
                                self.record.reconciled(id);
                            }
                        }
                        Err(_) => alive = false,
                    },
                    delivery = deliveries.recv() => match delivery {
                        Some(Delivery::Tx(tx)) => alive = events.send(SourceEvent::Tx(tx)).await.is_ok(),
                        Some(Delivery::Keepalive(lsn)) => alive = events.send(SourceEvent::Keepalive(lsn)).await.is_ok(),
                        Some(Delivery::Lost(error)) => break error,
                        None => break "replication connection closed".to_owned(),
                    },
                    _ = keepalive.tick() => self.record.keepalive(id),
                }
            };
            self.record.detach(id);
            if events.send(SourceEvent::Inactive { error: Some(lost) }).await.is_err() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.retry_every) => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

#[derive(Default)]
struct LogInner {
    basins: HashMap<String, Streams, FastHash>,
    fail_appends: u32,
    latency: Duration,
    /// Basins of obsolete generations: an append into one is a violation.
    forbidden: HashSet<String>,
    violations: Vec<String>,
    /// Every record ever appended, by (basin, stream), kept across losses (when enabled).
    journal: Option<HashMap<StreamKey, Vec<Arc<str>>>>,
    appends: u64,
}

/// An in-memory log store with S2's semantics (see the module header).
#[derive(Default)]
pub struct MemoryLog {
    inner: Mutex<LogInner>,
}

impl MemoryLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Also keeps every record ever appended, for [`MemoryLog::ever_appended`].
    pub fn with_journal() -> Self {
        let log = Self::default();
        lock(&log.inner).journal = Some(HashMap::new());
        log
    }

    /// The next `n` appends fail as if the store were unreachable.
    pub fn fail_next_appends(&self, n: u32) {
        lock(&self.inner).fail_appends = n;
    }

    /// Every call waits this long first (the append itself stays atomic, at the end).
    pub fn set_latency(&self, latency: Duration) {
        lock(&self.inner).latency = latency;
    }

    /// The store loses a stream (it reads as never written).
    pub fn lose_stream(&self, basin: &BasinName, stream: &str) {
        if let Some(streams) = lock(&self.inner).basins.get_mut(basin.as_str()) {
            streams.remove(stream);
        }
    }

    /// Deletes a basin and everything in it.
    pub fn delete_basin(&self, basin: &BasinName) {
        lock(&self.inner).basins.remove(basin.as_str());
    }

    /// Deletes a basin whose generation is obsolete; any later append into it is recorded as a
    /// violation.
    pub fn retire_basin(&self, basin: &BasinName) {
        let mut inner = lock(&self.inner);
        inner.basins.remove(basin.as_str());
        inner.forbidden.insert(basin.as_str().to_owned());
    }

    /// Appends that landed in a retired basin.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.inner).violations.clone()
    }

    /// A stream's records (empty when it does not exist).
    pub fn records(&self, basin: &BasinName, stream: &str) -> Vec<Arc<str>> {
        let inner = lock(&self.inner);
        inner.basins.get(basin.as_str()).and_then(|streams| streams.get(stream)).cloned().unwrap_or_default()
    }

    /// Whether `body` was ever appended at `seq` of the stream (needs [`MemoryLog::with_journal`]).
    pub fn ever_appended(&self, basin: &BasinName, stream: &str, seq: u64, body: &str) -> bool {
        let inner = lock(&self.inner);
        let journal = inner.journal.as_ref().expect("MemoryLog::with_journal");
        journal
            .get(&(basin.as_str().to_owned(), stream.to_owned()))
            .and_then(|records| records.get(seq as usize))
            .is_some_and(|record| &**record == body)
    }

    /// Successful appends so far.
    pub fn appends(&self) -> u64 {
        lock(&self.inner).appends
    }

    async fn delay(&self) {
        let latency = lock(&self.inner).latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }
}

#[async_trait]
impl LogStore for MemoryLog {
    async fn append(&self, at: LogTarget<'_>, records: &[Arc<str>]) -> Result<Append, LogError> {
        let LogTarget { basin, stream, match_seq } = at;
        self.delay().await;
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        if inner.fail_appends > 0 {
            inner.fail_appends -= 1;
            return Err(LogError::Unavailable("injected append failure".into()));
        }
        let Some(streams) = inner.basins.get_mut(basin.as_str()) else {
            return Err(LogError::BasinMissing(basin.to_string()));
        };
        let tail = streams.get(stream).map_or(0, |log| log.len() as u64);
        if tail != match_seq {
            return Ok(Append::TailMismatch { tail });
        }
        if tail == 0 && !streams.contains_key(stream) {
            streams.insert(stream.to_owned(), Vec::new());
        }
        let log = streams.get_mut(stream).expect("inserted above");
        log.extend(records.iter().cloned());
        let end = log.len() as u64;
        inner.appends += 1;
        if inner.forbidden.contains(basin.as_str()) {
            inner.violations.push(format!("append of {}..{end} to {stream} of retired basin {basin}", match_seq));
        }
        if let Some(journal) = &mut inner.journal {
            let ever = journal.entry((basin.as_str().to_owned(), stream.to_owned())).or_default();
            for (seq, record) in (match_seq..end).zip(records) {
                match ever.get_mut(seq as usize) {
                    Some(slot) => *slot = record.clone(),
                    None => ever.push(record.clone()),
                }
            }
        }
        Ok(Append::Appended { start: match_seq, end })
    }

    async fn check_tail(&self, basin: &BasinName, stream: &str) -> Result<u64, LogError> {
        self.delay().await;
        let inner = lock(&self.inner);
        let streams = inner.basins.get(basin.as_str()).ok_or_else(|| LogError::BasinMissing(basin.to_string()))?;
        Ok(streams.get(stream).map_or(0, |log| log.len() as u64))
    }

    async fn ensure_basin(&self, basin: &BasinName) -> Result<(), LogError> {
        self.delay().await;
        lock(&self.inner).basins.entry(basin.as_str().to_owned()).or_default();
        Ok(())
    }
}
