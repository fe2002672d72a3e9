//! UI message chunks in, the message's events out (docs/ai-sdk.md, "In").
//!
//! Guarantees:
//! - One chunk gives the events that make the message what the SDK's own reader makes of it: a
//!   streamed part (`text-*`, `reasoning-*`, `tool-input-*`) is a part whose body grows by
//!   deltas; every atomic chunk (`source-url`, `file`, `data-*`, ...) is a part of its own kind
//!   whose attributes are the chunk's fields; a tool's later chunks are `set`s that move its
//!   `state`; a `data-*` chunk with an id seen before replaces that part's `data`; a transient one
//!   is a transient part; metadata is deep-merged as the SDK merges it (each member a chunk names
//!   is sent with its merged value, so the member-wise merge of `meta` gives the deep merge).
//! - A chunk type this module does not know is an atomic part of that kind, its fields its
//!   attributes: never dropped, never an error.
//! - A chunk it cannot place (not an object, no `type`, a delta for an id no part was started
//!   with, a `start` naming another message) is an error with a stable kind naming the field,
//!   and the state is as it was before that chunk.
//! - Part numbers are the plane's: parts are numbered in start order from the `next_part` the
//!   ingest was made with (1 on a fresh stream, whose part 0 is the implicit text).

use std::collections::HashMap;

use super::vocab::{is_data, Obj, HINT_APPROVAL_RESPONSE, HINT_DROPPED, HINT_INPUT_ERROR, HINT_STREAMED};
use crate::error::{Error, ErrorKind, Result};
use crate::json::JsonValue;
use crate::message::{Attrs, Event, Message};
use crate::text::Text;

/// What one chunk asks of the stream.
#[derive(Clone, Debug, PartialEq)]
pub enum UiOp {
    /// A structural event (its part numbers are the plane's).
    Event(Event),
    /// Text appended to a part's body.
    Delta { part: u32, text: Text },
    /// The producer's run was aborted (`abort`): the stream is to end `cancelled`.
    Abort { reason: Option<Text> },
}

/// The ingest of one UI message stream into one message.
#[derive(Clone, Debug, Default)]
pub struct UiIngest {
    stream_id: Text,
    next_part: u32,
    /// Active text and reasoning parts by the id of their `*-start`.
    text_ids: HashMap<Vec<u16>, u32>,
    reasoning_ids: HashMap<Vec<u16>, u32>,
    /// The latest part of each tool call, by `toolCallId`.
    tool_ids: HashMap<Vec<u16>, u32>,
    approval_ids: HashMap<Vec<u16>, u32>,
    /// Data parts that have an id, by (type, id).
    data_ids: HashMap<(Vec<u16>, Vec<u16>), u32>,
    /// Parts started since the last `start-step` (what a `reset-step` takes back).
    step_parts: Vec<u32>,
    /// The `step-start` part still open.
    step_start: Option<u32>,
    /// The metadata merged so far.
    metadata: Option<JsonValue>,
}

impl UiIngest {
    /// The ingest for the message `stream_id`, whose next part is `next_part`.
    pub fn new(stream_id: Text, next_part: u32) -> Self {
        UiIngest { stream_id, next_part, ..UiIngest::default() }
    }

    /// The ingest of a message that goes on (docs/contract.md §9: the SDK's continuation after a
    /// client tool's output or a tool approval), `message` as it stands: the next part after its
    /// parts, and what later chunks name its parts by (each tool call's `toolCallId`, each
    /// approval's id, each data part's type and id) and its metadata, so that a continuation's
    /// `tool-output-available` or `data-*` update reaches the part the first turn made. Text and
    /// reasoning ids are a turn's own, and start afresh.
    pub fn going_on(stream_id: Text, message: &Message) -> Self {
        let mut ui = UiIngest::new(stream_id, u32::try_from(message.parts().len()).unwrap_or(u32::MAX));
        for (i, p) in message.parts().iter().enumerate() {
            let i = i as u32;
            let attr = |k: &str| p.attrs.iter().rev().find(|(key, _)| *key == k).map(|(_, v)| v);
            if let Some(call) = attr("toolCallId").and_then(JsonValue::as_text) {
                ui.tool_ids.insert(call.units().to_vec(), i);
            }
            if let Some(id) = attr("approval").and_then(|a| a.get("id")).and_then(JsonValue::as_text) {
                ui.approval_ids.insert(id.units().to_vec(), i);
            }
            if is_data(&p.kind) {
                if let Some(id) = attr("id").and_then(JsonValue::as_text) {
                    ui.data_ids.insert((p.kind.units().to_vec(), id.units().to_vec()), i);
                }
            }
        }
        if !message.metadata().is_empty() {
            ui.metadata = Some(JsonValue::Object(message.metadata().clone()));
        }
        ui
    }

    /// The events of one chunk (see the module guarantees). On an error nothing changed.
    pub fn feed(&mut self, chunk: &JsonValue) -> Result<Vec<UiOp>> {
        let mut next = self.clone();
        let mut out = Vec::new();
        next.apply(chunk, &mut out)?;
        *self = next;
        Ok(out)
    }

    fn apply(&mut self, c: &JsonValue, out: &mut Vec<UiOp>) -> Result<()> {
        let Some(fields) = c.as_object() else {
            return Err(Error::field(
                ErrorKind::InvalidField,
                "chunk",
                format!("a chunk is an object, not {}", c.type_name()),
            ));
        };
        let ty = match c.get("type") {
            Some(JsonValue::String(t)) => t.to_string_lossy(),
            Some(other) => {
                return Err(Error::field(
                    ErrorKind::InvalidField,
                    "type",
                    format!("type is a string, not {}", other.type_name()),
                ))
            }
            None => return Err(Error::field(ErrorKind::MissingField, "type", "a chunk names its type")),
        };
        let get = |key: &str| c.get(key);
        match ty.as_str() {
            "start" => {
                if let Some(id) = get("messageId") {
                    if id.as_text() != Some(&self.stream_id) {
                        return Err(Error::field(
                            ErrorKind::InvalidField,
                            "messageId",
                            format!(
                                "the stream's messageId must be its stream id {:?} (generateMessageId: () => streamId), so a \
                                 resumed page replaces the message it holds",
                                self.stream_id.to_string_lossy()
                            ),
                        ));
                    }
                }
                self.meta(get("messageMetadata"), out);
            }
            "message-metadata" => self.meta(get("messageMetadata"), out),
            "finish" => {
                self.meta(get("messageMetadata"), out);
                if let Some(reason) = get("finishReason").and_then(JsonValue::as_text) {
                    out.push(UiOp::Event(Event::Finish { reason: reason.clone() }));
                }
            }
            "abort" => out.push(UiOp::Abort { reason: get("reason").and_then(JsonValue::as_text).cloned() }),
            "error" => {
                // Kept at its place, as a part the UI message does not list: a replay repeats it.
                let value = Obj::new().maybe("errorText", get("errorText")).members();
                self.start("error", value, out);
            }
            "start-step" => {
                self.step_parts.clear();
                self.step_start = Some(self.start("step-start", Vec::new(), out));
                self.step_parts.clear();
            }
            "finish-step" => {
                if let Some(part) = self.step_start.take() {
                    out.push(UiOp::Event(Event::End { part, value: Vec::new() }));
                }
                // ai 5 and 6 forget the active text and reasoning parts here.
                self.text_ids.clear();
                self.reasoning_ids.clear();
            }
            "reset-step" => {
                let dropped = std::mem::take(&mut self.step_parts);
                for &part in &dropped {
                    set(part, Obj::new().with(HINT_DROPPED, JsonValue::Bool(true)).members(), out);
                }
                self.text_ids.clear();
                self.reasoning_ids.clear();
                self.tool_ids.retain(|_, p| !dropped.contains(p));
            }
            "text-start" | "reasoning-start" => {
                let id = required_text(c, "id")?;
                let kind = if ty == "text-start" { "text" } else { "reasoning" };
                let mut value = Obj::new();
                if kind == "reasoning" {
                    value = value.text("id", &id);
                }
                let value = value
                    .with("state", JsonValue::String("streaming".into()))
                    .maybe("providerMetadata", get("providerMetadata"))
                    .members();
                let part = self.start(kind, value, out);
                let ids = if kind == "text" { &mut self.text_ids } else { &mut self.reasoning_ids };
                ids.insert(id.into_units(), part);
            }
            "text-delta" | "reasoning-delta" => {
                let part = self.active(c, ty == "text-delta")?;
                let delta = required_text(c, "delta")?;
                if !delta.is_empty() {
                    out.push(UiOp::Delta { part, text: delta });
                }
                if let Some(meta) = get("providerMetadata") {
                    set(part, Obj::new().with("providerMetadata", meta.clone()).members(), out);
                }
            }
            "text-end" | "reasoning-end" => {
                let part = self.active(c, ty == "text-end")?;
                let value = Obj::new()
                    .with("state", JsonValue::String("done".into()))
                    .maybe("providerMetadata", get("providerMetadata"))
                    .maybe("citations", get("citations"))
                    .members();
                out.push(UiOp::Event(Event::End { part, value }));
                let id = required_text(c, "id")?;
                let ids = if ty == "text-end" { &mut self.text_ids } else { &mut self.reasoning_ids };
                ids.remove(id.units());
            }
            "tool-input-start" => {
                let call = required_text(c, "toolCallId")?;
                let value = tool_head(c)?
                    .with("state", JsonValue::String("input-streaming".into()))
                    .with(HINT_STREAMED, JsonValue::Bool(true))
                    .maybe("providerExecuted", get("providerExecuted"))
                    .maybe("title", get("title"))
                    .maybe("toolMetadata", get("toolMetadata"))
                    .maybe("inputEncoding", get("inputEncoding"))
                    .maybe("callProviderMetadata", get("providerMetadata"))
                    .members();
                let part = self.start(&tool_kind(c)?, value, out);
                self.tool_ids.insert(call.into_units(), part);
            }
            "tool-input-delta" => {
                let part = self.tool(c)?;
                let delta = required_text(c, "inputTextDelta")?;
                if !delta.is_empty() {
                    out.push(UiOp::Delta { part, text: delta });
                }
            }
            "tool-input-available" | "tool-input-error" => {
                let part = self.tool_or_start(c, out)?;
                let error = ty == "tool-input-error";
                let mut value = Obj::new()
                    .with("state", JsonValue::String(if error { "output-error" } else { "input-available" }.into()));
                if error {
                    value = value.with(HINT_INPUT_ERROR, JsonValue::Bool(true));
                }
                let value = value
                    .maybe("input", get("input"))
                    .maybe("errorText", get("errorText"))
                    .maybe("providerExecuted", get("providerExecuted"))
                    .maybe("callProviderMetadata", get("providerMetadata"))
                    .maybe("title", get("title"))
                    .maybe("toolMetadata", get("toolMetadata"))
                    .members();
                set(part, value, out);
                out.push(UiOp::Event(Event::End { part, value: Vec::new() }));
            }
            "tool-approval-request" => {
                let part = self.tool(c)?;
                let approval = Obj::new()
                    .maybe("id", get("approvalId"))
                    .maybe("descriptor", get("approvalDescriptor"))
                    .maybe("inputSchemaInput", get("inputSchemaInput"))
                    .maybe("requestReason", get("reason"))
                    .maybe("isAutomatic", get("isAutomatic").filter(|v| v.as_bool() == Some(true)))
                    .maybe("signature", get("signature"))
                    .build();
                if let Some(id) = get("approvalId").and_then(JsonValue::as_text) {
                    self.approval_ids.insert(id.units().to_vec(), part);
                }
                let value = Obj::new()
                    .with("state", JsonValue::String("approval-requested".into()))
                    .with("approval", approval)
                    .members();
                set(part, value, out);
            }
            "tool-approval-response" => {
                let id = required_text(c, "approvalId")?;
                let part = *self.approval_ids.get(id.units()).ok_or_else(|| unknown("approvalId", &id))?;
                let answer = Obj::new().maybe("approved", get("approved")).maybe("reason", get("reason")).build();
                let value = Obj::new()
                    .with("state", JsonValue::String("approval-responded".into()))
                    .with(HINT_APPROVAL_RESPONSE, answer)
                    .maybe("providerExecuted", get("providerExecuted"))
                    .maybe("callProviderMetadata", get("providerMetadata"))
                    .members();
                set(part, value, out);
            }
            "tool-output-available" | "tool-output-error" | "tool-output-denied" => {
                let part = self.tool(c)?;
                let state = &ty["tool-".len()..];
                let mut value = Obj::new().with("state", JsonValue::String(state.into()));
                if ty == "tool-output-available" {
                    let preliminary = get("preliminary").and_then(JsonValue::as_bool) == Some(true);
                    value = value.maybe("output", get("output")).with("preliminary", JsonValue::Bool(preliminary));
                }
                if ty != "tool-output-denied" {
                    value = value
                        .maybe("errorText", get("errorText"))
                        .maybe("providerExecuted", get("providerExecuted"))
                        .maybe("resultProviderMetadata", get("providerMetadata"))
                        .maybe("toolMetadata", get("toolMetadata"));
                }
                set(part, value.members(), out);
            }
            data if data.starts_with("data-") => {
                let id = get("id").and_then(JsonValue::as_text).cloned();
                let value = Obj::new().maybe("id", get("id")).maybe("data", get("data")).members();
                if get("transient").and_then(JsonValue::as_bool) == Some(true) {
                    out.push(UiOp::Event(Event::Transient { kind: Some(data.into()), value }));
                    return Ok(());
                }
                let key = id.map(|id| (data.encode_utf16().collect::<Vec<u16>>(), id.into_units()));
                match key.as_ref().and_then(|k| self.data_ids.get(k)) {
                    Some(&part) => set(part, Obj::new().maybe("data", get("data")).members(), out),
                    None => {
                        let part = self.start(data, value, out);
                        if let Some(key) = key {
                            self.data_ids.insert(key, part);
                        }
                    }
                }
            }
            other => {
                // `source-url`, `source-document`, `file`, `reasoning-file`, `custom`,
                // `steering-message`, and any type this module does not know: an atomic part of
                // that kind whose attributes are the chunk's other fields.
                let value: Attrs = fields.iter().filter(|(k, _)| *k != "type").cloned().collect();
                let value = without_reserved(value);
                self.start(other, value, out);
            }
        }
        Ok(())
    }

    /// Start the next part.
    fn start(&mut self, kind: &str, value: Attrs, out: &mut Vec<UiOp>) -> u32 {
        let part = self.next_part;
        self.next_part = self.next_part.saturating_add(1);
        out.push(UiOp::Event(Event::Start { part, kind: kind.into(), value: without_reserved(value) }));
        self.step_parts.push(part);
        part
    }

    /// Merge `m` into the metadata, sending each member it names with its merged value.
    fn meta(&mut self, m: Option<&JsonValue>, out: &mut Vec<UiOp>) {
        let Some(m) = m.filter(|m| !m.is_null()) else { return };
        let merged = deep_merge(self.metadata.as_ref(), m);
        let value = match (m, &merged) {
            (JsonValue::Object(members), JsonValue::Object(all)) => members
                .iter()
                .filter_map(|(k, _)| all.iter().rev().find(|(key, _)| key == k).cloned())
                .collect::<Attrs>(),
            // Metadata that is not an object is sent whole.
            _ => Obj::new().with("$whole", merged.clone()).members(),
        };
        self.metadata = Some(merged);
        out.push(UiOp::Event(Event::Meta { value: without_reserved(value) }));
    }

    /// The active text (`text`) or reasoning part the chunk's `id` names.
    fn active(&self, c: &JsonValue, text: bool) -> Result<u32> {
        let id = required_text(c, "id")?;
        let ids = if text { &self.text_ids } else { &self.reasoning_ids };
        ids.get(id.units()).copied().ok_or_else(|| unknown("id", &id))
    }

    /// The part of the call the chunk's `toolCallId` names.
    fn tool(&self, c: &JsonValue) -> Result<u32> {
        let call = required_text(c, "toolCallId")?;
        self.tool_ids.get(call.units()).copied().ok_or_else(|| unknown("toolCallId", &call))
    }

    /// The call's part, started here when the call had no `tool-input-start`.
    fn tool_or_start(&mut self, c: &JsonValue, out: &mut Vec<UiOp>) -> Result<u32> {
        if let Ok(part) = self.tool(c) {
            return Ok(part);
        }
        let call = required_text(c, "toolCallId")?;
        let part = self.start(&tool_kind(c)?, tool_head(c)?.members(), out);
        self.tool_ids.insert(call.into_units(), part);
        Ok(part)
    }
}

/// A tool part's kind: `tool-<toolName>`, or `dynamic-tool` for a dynamic call.
fn tool_kind(c: &JsonValue) -> Result<String> {
    if c.get("dynamic").and_then(JsonValue::as_bool) == Some(true) {
        return Ok("dynamic-tool".into());
    }
    Ok(format!("tool-{}", required_text(c, "toolName")?.to_string_lossy()))
}

/// A tool part's first attributes: its call id, and its name when the kind does not say it.
fn tool_head(c: &JsonValue) -> Result<Obj> {
    let head = Obj::new().text("toolCallId", &required_text(c, "toolCallId")?);
    Ok(if c.get("dynamic").and_then(JsonValue::as_bool) == Some(true) {
        head.text("toolName", &required_text(c, "toolName")?)
    } else {
        head
    })
}

/// A `set` of `value`, unless it is empty.
fn set(part: u32, value: Attrs, out: &mut Vec<UiOp>) {
    let value = without_reserved(value);
    if !value.is_empty() {
        out.push(UiOp::Event(Event::Set { part, value }));
    }
}

/// Attributes may not name the kind or the body (docs/contract.md §8): a chunk's own `text` or
/// `type` member is kept under `$text`/`$type`.
fn without_reserved(value: Attrs) -> Attrs {
    value
        .into_iter()
        .map(|(k, v)| {
            if crate::message::frame::RESERVED_KEYS.iter().any(|r| k == *r) {
                (Text::from(format!("${}", k.to_string_lossy()).as_str()), v)
            } else {
                (k, v)
            }
        })
        .collect()
}

fn required_text(c: &JsonValue, key: &'static str) -> Result<Text> {
    match c.get(key) {
        Some(JsonValue::String(t)) => Ok(t.clone()),
        Some(other) => {
            Err(Error::field(ErrorKind::InvalidField, key, format!("{key} is a string, not {}", other.type_name())))
        }
        None => Err(Error::field(ErrorKind::MissingField, key, format!("the chunk has no {key}"))),
    }
}

fn unknown(key: &'static str, id: &Text) -> Error {
    Error::field(
        ErrorKind::InvalidField,
        key,
        format!("no part of this message was started with {key} {:?}", id.to_string_lossy()),
    )
}

/// The SDK's merge of metadata: objects merge member by member, recursively; anything else
/// replaces.
fn deep_merge(base: Option<&JsonValue>, over: &JsonValue) -> JsonValue {
    match (base, over) {
        (Some(JsonValue::Object(b)), JsonValue::Object(o)) => {
            let mut out = b.clone();
            for (k, v) in o {
                match out.iter_mut().find(|(key, _)| key == k) {
                    Some(slot) => slot.1 = deep_merge(Some(&slot.1), v),
                    None => out.push((k.clone(), v.clone())),
                }
            }
            JsonValue::Object(out)
        }
        _ => over.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;

    fn feed_all(ingest: &mut UiIngest, chunks: &[&str]) -> Vec<UiOp> {
        chunks.iter().flat_map(|c| ingest.feed(&parse_value(c).unwrap()).unwrap()).collect()
    }

    #[test]
    fn streamed_parts_and_their_ids() {
        let mut ui = UiIngest::new("m".into(), 1);
        let ops = feed_all(
            &mut ui,
            &[
                r#"{"type":"start","messageId":"m","messageMetadata":{"a":{"x":1}}}"#,
                r#"{"type":"text-start","id":"t"}"#,
                r#"{"type":"text-delta","id":"t","delta":"hi"}"#,
                r#"{"type":"text-end","id":"t"}"#,
                r#"{"type":"message-metadata","messageMetadata":{"a":{"y":2}}}"#,
                r#"{"type":"tool-input-start","toolCallId":"c","toolName":"search"}"#,
                r#"{"type":"tool-input-delta","toolCallId":"c","inputTextDelta":"{}"}"#,
                r#"{"type":"tool-input-available","toolCallId":"c","toolName":"search","input":{}}"#,
                r#"{"type":"data-w","id":"d","data":1}"#,
                r#"{"type":"data-w","id":"d","data":2}"#,
                r#"{"type":"data-w","data":3,"transient":true}"#,
                r#"{"type":"source-url","sourceId":"s","url":"u"}"#,
                r#"{"type":"brand-new","text":"kept"}"#,
                r#"{"type":"finish","finishReason":"stop"}"#,
            ],
        );
        let starts: Vec<(u32, String)> = ops
            .iter()
            .filter_map(|op| match op {
                UiOp::Event(Event::Start { part, kind, .. }) => Some((*part, kind.to_string_lossy())),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            [(1, "text"), (2, "tool-search"), (3, "data-w"), (4, "source-url"), (5, "brand-new")]
                .map(|(p, k)| (p, k.to_owned()))
        );
        assert!(ops.contains(&UiOp::Delta { part: 1, text: "hi".into() }));
        // The second metadata chunk sends `a` deep-merged.
        let meta: Vec<String> = ops
            .iter()
            .filter_map(|op| match op {
                UiOp::Event(Event::Meta { value }) => Some(JsonValue::Object(value.clone()).to_json()),
                _ => None,
            })
            .collect();
        assert_eq!(meta, [r#"{"a":{"x":1}}"#, r#"{"a":{"x":1,"y":2}}"#]);
        // The data part with an id seen before is replaced; the transient one is transient.
        assert!(
            ops.contains(&UiOp::Event(Event::Set { part: 3, value: vec![("data".into(), JsonValue::Number(2.0))] }))
        );
        assert!(ops.iter().any(|op| matches!(op, UiOp::Event(Event::Transient { .. }))));
        // An unknown type keeps its fields; a reserved name moves aside.
        assert!(ops
            .iter()
            .any(|op| matches!(op, UiOp::Event(Event::Start { part: 5, value, .. }) if value[0].0 == "$text")));
        assert!(ops.contains(&UiOp::Event(Event::Finish { reason: "stop".into() })));
    }

    #[test]
    fn a_chunk_that_cannot_be_placed_changes_nothing() {
        let mut ui = UiIngest::new("m".into(), 1);
        feed_all(&mut ui, &[r#"{"type":"text-start","id":"t"}"#]);
        let before = format!("{ui:?}");
        for (bad, field) in [
            (r#"{"type":"text-delta","id":"nope","delta":"x"}"#, "id"),
            (r#"{"type":"text-delta","id":"t"}"#, "delta"),
            (r#"{"type":"tool-input-delta","toolCallId":"c","inputTextDelta":"x"}"#, "toolCallId"),
            (r#"{"type":"start","messageId":"other"}"#, "messageId"),
            (r#"[1]"#, "chunk"),
            (r#"{"delta":"x"}"#, "type"),
        ] {
            let e = ui.feed(&parse_value(bad).unwrap()).unwrap_err();
            assert_eq!(e.field_name(), Some(field), "{bad}: {e}");
            assert_eq!(format!("{ui:?}"), before, "{bad} changed the state");
        }
    }
}
