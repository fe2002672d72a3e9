//! Messages made of parts through the producer API (docs/server.md, "Messages with parts"): the
//! events a producer sends, applied to its stream.
//!
//! Guarantees:
//! - An event names a part by its number or by the id its producer gave it at its start; ids are
//!   the producer's own names, kept per stream, and a second start with an id already in use is
//!   refused (`duplicate_part_id`), as is an id or number no part has (`unknown_part`).
//! - Every event is decoded by the core ([`parse_producer_event`]) and checked by the plane's part
//!   rules before anything changes: a refused event appends nothing, and the events before it
//!   stay.
//! - [`Lines`] splits a streaming body into its lines exactly, whatever the chunking: a line is
//!   applied once it is complete (its `\n` arrived, or the body ended), a trailing `\r` and
//!   blank lines are ignored, and a line longer than the bound is refused before it is kept.

use axum::http::StatusCode;
use twoplane_core::message::{parse_producer_event, PartRef, ProducerEvent};

use super::errors::ApiError;
use super::registry::Producing;

/// Decode one event's JSON text (a bad one is `400 bad_event`, naming the core's kind and field).
pub(super) fn decode(json: &str) -> Result<ProducerEvent, ApiError> {
    parse_producer_event(json).map_err(|e| {
        let field = e.field_name().map(|f| format!(" (field {f})")).unwrap_or_default();
        ApiError::bad_request("bad_event", format!("{}: {}{field}", e.kind().as_str(), e.message()))
    })
}

/// Apply one event to `p`'s stream (the caller holds `p.order`). Returns the part it touched (for
/// a start, the new part's number).
pub(super) fn apply(p: &Producing, event: ProducerEvent) -> Result<Option<u32>, ApiError> {
    let id = &p.id;
    let plane = |e: twoplane_stream::PlaneError| ApiError::from_plane(&e, id).at(&p.handle);
    match event {
        ProducerEvent::Start { kind, id: name, value } => {
            let mut ids = twoplane_runtime::lock(&p.part_ids);
            if let Some(name) = &name {
                if ids.get(name.units()).is_some() {
                    return Err(ApiError::bad_request(
                        "duplicate_part_id",
                        format!("a part of this message already has the id {:?}", name.to_string_lossy()),
                    )
                    .at(&p.handle));
                }
            }
            let part = p.handle.start_part(&kind.to_string_lossy(), value).map_err(plane)?;
            if let Some(name) = name {
                ids.insert(name.into_units(), part);
            }
            Ok(Some(part))
        }
        ProducerEvent::Chunk { part, text } => {
            let part = resolve(p, &part)?;
            p.handle.push_part_units(part, text.units()).map_err(plane)?;
            Ok(Some(part))
        }
        ProducerEvent::End { part, value } => {
            let part = resolve(p, &part)?;
            p.handle.end_part(part, value).map_err(plane)?;
            Ok(Some(part))
        }
        ProducerEvent::Set { part, value } => {
            let part = resolve(p, &part)?;
            p.handle.set_part(part, value).map_err(plane)?;
            Ok(Some(part))
        }
        ProducerEvent::Meta { value } => p.handle.meta(value).map(|_| None).map_err(plane),
        ProducerEvent::Finish { reason } => p.handle.finish(&reason.to_string_lossy()).map(|_| None).map_err(plane),
        ProducerEvent::Transient { kind, value } => {
            let kind = kind.map(|k| k.to_string_lossy());
            p.handle.transient(kind.as_deref(), value).map(|_| None).map_err(plane)
        }
    }
}

/// The number of the part `r` names.
fn resolve(p: &Producing, r: &PartRef) -> Result<u32, ApiError> {
    let known = match r {
        PartRef::Number(n) => (*n as usize) < p.handle.part_count(),
        PartRef::Id(_) => true,
    };
    let found = match r {
        PartRef::Number(n) => known.then_some(*n),
        PartRef::Id(name) => twoplane_runtime::lock(&p.part_ids).get(name.units()),
    };
    found.ok_or_else(|| {
        let named = match r {
            PartRef::Number(n) => format!("part {n}"),
            PartRef::Id(name) => format!("the id {:?}", name.to_string_lossy()),
        };
        ApiError::new(StatusCode::BAD_REQUEST, "unknown_part", format!("no part of this message is {named}"))
            .at(&p.handle)
    })
}

/// A streaming body's text, split into lines (see the module guarantees).
pub(super) struct Lines {
    pending: String,
    max_line: usize,
    /// Lines handed out so far (for error messages: the first line is line 1).
    pub count: u64,
}

impl Lines {
    pub fn new(max_line: usize) -> Lines {
        Lines { pending: String::new(), max_line, count: 0 }
    }

    /// Feed text; `out` gets every line it completes, in order.
    pub fn feed(&mut self, text: &str, out: &mut Vec<String>) -> Result<(), ApiError> {
        let mut rest = text;
        while let Some(nl) = rest.find('\n') {
            self.pending.push_str(&rest[..nl]);
            self.check()?;
            let line = std::mem::take(&mut self.pending);
            self.emit(line, out);
            rest = &rest[nl + 1..];
        }
        self.pending.push_str(rest);
        self.check()
    }

    /// The body ended: the last line, if it was not empty.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        let line = std::mem::take(&mut self.pending);
        self.emit(line, out);
    }

    fn check(&self) -> Result<(), ApiError> {
        if self.pending.len() > self.max_line {
            return Err(ApiError::too_large(self.max_line, "one line of an event stream"));
        }
        Ok(())
    }

    fn emit(&mut self, mut line: String, out: &mut Vec<String>) {
        if line.ends_with('\r') {
            line.pop();
        }
        if !line.trim().is_empty() {
            self.count += 1;
            out.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(body: &str, cuts: &[usize]) -> Vec<String> {
        let mut lines = Lines::new(64);
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
            lines.feed(&body[at..cut], &mut out).unwrap();
            at = cut;
        }
        lines.finish(&mut out);
        out
    }

    #[test]
    fn lines_are_the_same_however_the_body_is_cut() {
        let body = "{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}";
        let want = vec!["{\"a\":1}".to_owned(), "{\"b\":2}".to_owned(), "{\"c\":3}".to_owned()];
        for i in 0..=body.len() {
            for j in i..=body.len() {
                assert_eq!(split(body, &[i, j]), want, "cut at {i} and {j}");
            }
        }
    }

    #[test]
    fn a_line_past_the_bound_is_refused() {
        let mut lines = Lines::new(4);
        let mut out = Vec::new();
        assert!(lines.feed("abc\nde", &mut out).is_ok());
        assert_eq!(lines.feed("fgh", &mut out).unwrap_err().kind, "too_large");
    }
}
