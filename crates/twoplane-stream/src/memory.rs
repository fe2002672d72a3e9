//! An in-memory model of the mapped tables: the reference the SQL targets are tested against,
//! and a store for tests and benchmarks (only with the `testing` feature).
//!
//! Guarantees: it applies exactly the semantics of the docs/contract.md §6 statements (the
//! compare-and-swap guarded by `seq = from`, the chunk insert by the row standing at the slice's
//! end, a deterministic chunk id that absorbs a replay, compaction as a whole-row overwrite that
//! drops the chunks, the open precondition and the host compare-and-swap, and the fence: a write
//! lands only while the row is `streaming` and, with a host column, names the writer's token),
//! in UTF-16, keeping every code unit. It also records every write it was asked to make, so tests
//! can inspect the slices' boundaries.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use twoplane_core::message::{assemble_durable_message, Message, MessageChunkRow};
use twoplane_core::{Text, STREAM_STATUS_STREAMING};

use crate::error::PlaneError;
use crate::target::{
    AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, ReopenRequest, StoredMessage, TargetCaps,
    TargetMode,
};

/// One message row and its chunk rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryRow {
    pub body: Vec<u16>,
    pub seq: u64,
    pub status: Option<String>,
    pub cancel: bool,
    pub error: Option<String>,
    pub host: Option<String>,
    /// Text chunk rows by their end offset (the chunk id is `"<streamId>:<seq>"`, so one row
    /// per seq, text or parts).
    pub chunks: BTreeMap<u64, Vec<u16>>,
    /// Parts chunk rows (docs/contract.md §8) by their end offset: the JSON of their frames.
    pub parts: BTreeMap<u64, String>,
    /// The message document written at the seal of a message with parts.
    pub document: Option<String>,
}

impl MemoryRow {
    /// What a reader assembles: the body, then the chunks in ascending `seq`.
    pub fn durable_text(&self) -> Vec<u16> {
        let mut out = self.body.clone();
        for text in self.chunks.values() {
            out.extend_from_slice(text);
        }
        out
    }

    /// What a reader of a message assembles (docs/contract.md §8): the row (its body, document
    /// and `seq`) and every chunk row, text and parts alike, by the core's assembly.
    pub fn durable_message(&self) -> Result<Message, twoplane_core::Error> {
        let body = Text::from_slice(&self.body);
        let document = self.document.as_deref().map(Text::from);
        assemble_durable_message(Some(&body), document.as_ref(), self.seq, &self.chunk_rows())
    }

    /// Its chunk rows, text and parts alike, in ascending `seq`.
    pub fn chunk_rows(&self) -> Vec<MessageChunkRow> {
        let mut rows: Vec<MessageChunkRow> = self
            .chunks
            .iter()
            .map(|(&seq, text)| MessageChunkRow { seq, text: Some(Text::from_slice(text)), parts: None })
            .collect();
        rows.extend(self.parts.iter().map(|(&seq, json)| MessageChunkRow {
            seq,
            text: Some(Text::new()),
            parts: Some(Text::from(json.as_str())),
        }));
        rows.sort_by_key(|c| c.seq);
        rows
    }
}

impl MemoryRow {
    /// The fence: the row is `streaming` and (with a host column) names `token`.
    fn claimed_by(&self, token: &str, has_host: bool) -> bool {
        self.status.as_deref() == Some(STREAM_STATUS_STREAMING) && (!has_host || self.host.as_deref() == Some(token))
    }

    fn check_claim(&self, stream_id: &str, token: &str, has_host: bool) -> Result<(), PlaneError> {
        if self.claimed_by(token, has_host) {
            return Ok(());
        }
        Err(PlaneError::new(
            crate::PlaneErrorKind::Fenced,
            format!("stream {stream_id}: the row is no longer this producer's"),
        ))
    }
}

/// A write the target was asked to make (applied or not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryWrite {
    Append { stream_id: String, from: u64, seq: u64, text: Vec<u16>, parts: Option<String> },
    Close { stream_id: String, body_from: u64, body: Vec<u16>, document: Option<String> },
}

#[derive(Default)]
struct MemoryState {
    rows: HashMap<String, MemoryRow>,
    writes: Vec<MemoryWrite>,
}

pub struct MemoryTarget {
    state: Mutex<MemoryState>,
    caps: TargetCaps,
}

impl Default for MemoryTarget {
    fn default() -> Self {
        MemoryTarget::new()
    }
}

impl MemoryTarget {
    /// Tables with a `cancel` column, the parts columns and no `host` column.
    pub fn new() -> Self {
        MemoryTarget::with_columns(false, true)
    }

    /// Tables with the parts columns, and a `host` and a `cancel` column as asked.
    pub fn with_columns(has_host: bool, has_cancel: bool) -> Self {
        MemoryTarget {
            state: Mutex::new(MemoryState::default()),
            caps: TargetCaps { mode: TargetMode::Tables, has_host, has_cancel, has_parts: true },
        }
    }

    /// Tables without the parts columns (a plane on them refuses parts).
    pub fn without_parts(mut self) -> Self {
        self.caps.has_parts = false;
        self
    }

    fn lock(&self) -> MutexGuard<'_, MemoryState> {
        twoplane_runtime::lock(&self.state)
    }

    /// What the application's own mutator does before a stream opens: write the message row.
    pub fn insert_message(&self, stream_id: &str) {
        self.lock().rows.insert(stream_id.to_owned(), MemoryRow::default());
    }

    pub fn row(&self, stream_id: &str) -> Option<MemoryRow> {
        self.lock().rows.get(stream_id).cloned()
    }

    /// What a sweeper does to a stream whose host's lease expired: `streaming` becomes
    /// `interrupted`, nothing else changes. Returns whether the row changed.
    pub fn sweep(&self, stream_id: &str) -> bool {
        let mut st = self.lock();
        match st.rows.get_mut(stream_id) {
            Some(row) if row.status.as_deref() == Some(STREAM_STATUS_STREAMING) => {
                row.status = Some(twoplane_core::StreamStatus::Interrupted.as_str().to_owned());
                true
            }
            _ => false,
        }
    }

    /// A reader asking the producer to stop (sets the mapped cancel column).
    pub fn request_cancel(&self, stream_id: &str) {
        if let Some(row) = self.lock().rows.get_mut(stream_id) {
            row.cancel = true;
        }
    }

    pub fn writes(&self) -> Vec<MemoryWrite> {
        self.lock().writes.clone()
    }

    fn missing(stream_id: &str) -> PlaneError {
        PlaneError::store(format!("stream {stream_id}: no message row"))
    }
}

#[async_trait]
impl DurableTarget for MemoryTarget {
    fn caps(&self) -> TargetCaps {
        self.caps
    }

    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        let st = self.lock();
        let row = st
            .rows
            .get(stream_id)
            .ok_or_else(|| PlaneError::open_refused(format!("stream {stream_id}: no message row")))?;
        if row.seq != 0 {
            return Err(PlaneError::open_refused(format!(
                "stream {stream_id}: the message row already holds {} code units",
                row.seq
            )));
        }
        if row.status.as_deref() == Some(STREAM_STATUS_STREAMING) {
            return Err(PlaneError::open_refused(format!("stream {stream_id}: another producer holds the row")));
        }
        Ok(())
    }

    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError> {
        let mut st = self.lock();
        let has_host = self.caps.has_host;
        let row = st.rows.get_mut(request.stream_id).ok_or_else(|| Self::missing(request.stream_id))?;
        if has_host {
            if row.status.as_deref() != Some(STREAM_STATUS_STREAMING) {
                row.status = Some(STREAM_STATUS_STREAMING.to_owned());
                row.host = Some(request.host_token.to_owned());
            }
            if row.host.as_deref() != Some(request.host_token) {
                return Err(PlaneError::open_refused(format!(
                    "stream {}: another producer won the open race",
                    request.stream_id
                )));
            }
        } else {
            row.status = Some(STREAM_STATUS_STREAMING.to_owned());
        }
        Ok(())
    }

    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError> {
        let mut st = self.lock();
        st.writes.push(MemoryWrite::Append {
            stream_id: request.stream_id.to_owned(),
            from: request.from,
            seq: request.seq,
            text: request.text.to_vec(),
            parts: request.parts.map(str::to_owned),
        });
        let has_host = self.caps.has_host;
        let row = st.rows.get_mut(request.stream_id).ok_or_else(|| Self::missing(request.stream_id))?;
        let claimed = row.claimed_by(request.host_token, has_host);
        if claimed && row.seq == request.from {
            row.seq = request.seq;
        }
        if claimed && row.seq == request.seq && !row.chunks.contains_key(&request.seq) {
            match request.parts {
                None => drop(row.chunks.insert(request.seq, request.text.to_vec())),
                Some(parts) => drop(row.parts.entry(request.seq).or_insert_with(|| parts.to_owned())),
            }
        }
        row.check_claim(request.stream_id, request.host_token, has_host)?;
        Ok(AppendAck { durable_seq: row.seq, cancel_requested: self.caps.has_cancel && row.cancel })
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        if request.body_from != 0 {
            return Err(PlaneError::store("table mode compacts the whole body; this one was trimmed"));
        }
        let mut st = self.lock();
        st.writes.push(MemoryWrite::Close {
            stream_id: request.stream_id.to_owned(),
            body_from: request.body_from,
            body: request.body.to_vec(),
            document: request.document.map(str::to_owned),
        });
        // A message's row holds its length in the coordinate; a text's, its body's length.
        let len = if request.document.is_some() { request.seq } else { request.body.len() as u64 };
        let has_host = self.caps.has_host;
        let row = st.rows.get_mut(request.stream_id).ok_or_else(|| Self::missing(request.stream_id))?;
        if !row.claimed_by(request.host_token, has_host) {
            // Fenced, or this seal's own earlier attempt (the SQL targets' read-back rule).
            let replayed = row.chunks.is_empty()
                && row.parts.is_empty()
                && row.status.as_deref() == Some(request.status.as_str())
                && row.seq == len
                && (!has_host || row.host.as_deref() == Some(request.host_token));
            if replayed {
                return Ok(());
            }
            return Err(PlaneError::new(
                crate::PlaneErrorKind::Fenced,
                format!("stream {}: the row is no longer this producer's", request.stream_id),
            ));
        }
        row.body = request.body.to_vec();
        row.seq = len;
        row.document = request.document.map(str::to_owned);
        row.status = Some(request.status.as_str().to_owned());
        row.error = request.error.map(str::to_owned);
        row.chunks.clear();
        row.parts.clear();
        Ok(())
    }

    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError> {
        let st = self.lock();
        let row = st.rows.get(stream_id).ok_or_else(|| Self::missing(stream_id))?;
        Ok(Some(row.seq))
    }

    async fn load(&self, stream_id: &str) -> Result<Option<StoredMessage>, PlaneError> {
        let st = self.lock();
        let Some(row) = st.rows.get(stream_id) else { return Ok(None) };
        let chunks = row.chunk_rows();
        Ok(Some(StoredMessage {
            seq: row.seq,
            status: row.status.clone(),
            body: Some(String::from_utf16_lossy(&row.body)),
            document: row.document.clone(),
            chunks,
        }))
    }

    async fn reopen(&self, request: ReopenRequest<'_>) -> Result<(), PlaneError> {
        let mut st = self.lock();
        let has_host = self.caps.has_host;
        let Some(row) = st.rows.get_mut(request.stream_id) else {
            return crate::verdict::reopened(request.stream_id, request.at, None, request.host_token, has_host);
        };
        // As the SQL targets' claim: a row no producer holds, or one this host holds itself.
        let free = row.status.as_deref() != Some(STREAM_STATUS_STREAMING)
            || (has_host && row.host.as_deref() == Some(request.host_token));
        if row.seq == request.at && free {
            row.status = Some(STREAM_STATUS_STREAMING.to_owned());
            row.cancel = false;
            if has_host {
                row.host = Some(request.host_token.to_owned());
            }
            if let Some(expand) = request.expand {
                row.body.clear();
                row.document = None;
                match expand.parts {
                    None => drop(row.chunks.insert(request.at, expand.text.encode_utf16().collect())),
                    Some(parts) => drop(row.parts.insert(request.at, parts.to_owned())),
                }
            }
        }
        let seen = (Some(row.seq as i64), row.status.clone(), row.host.clone());
        crate::verdict::reopened(request.stream_id, request.at, Some(seen), request.host_token, has_host)
    }
}
