//! The vocabulary both directions of the UI mapping share: the replay hints' names, which part
//! kinds are tools and data parts, and the object builder that leaves absent members out.
//!
//! Guarantees: one spelling of each hint and each kind test, so ingest and egress cannot drift
//! apart on what a `$streamed` or a `tool-` part is.

use crate::json::JsonValue;
use crate::text::Text;

/// A tool part whose input arrived as deltas (`tool-input-start` came first).
pub const HINT_STREAMED: &str = "$streamed";
/// A tool part whose input failed to parse (`tool-input-error`, not `tool-output-error`).
pub const HINT_INPUT_ERROR: &str = "$inputError";
/// A tool part's approval answer (`tool-approval-response`): `{approved, reason?}`.
pub const HINT_APPROVAL_RESPONSE: &str = "$approvalResponse";
/// A part a `reset-step` took back (parts are never removed; a replay sends the reset again).
pub const HINT_DROPPED: &str = "$dropped";

/// Whether a part kind is a tool call (`tool-<name>` or `dynamic-tool`).
pub(crate) fn is_tool(kind: &Text) -> bool {
    kind.units().starts_with(&[0x74, 0x6f, 0x6f, 0x6c, 0x2d]) || *kind == "dynamic-tool"
}

/// Whether a part kind is a data part (`data-<name>`).
pub(crate) fn is_data(kind: &Text) -> bool {
    kind.units().starts_with(&[0x64, 0x61, 0x74, 0x61, 0x2d])
}

/// An object built member by member, leaving out the members that are absent (`None`), as
/// `JSON.stringify` leaves out `undefined`.
#[derive(Default)]
pub(crate) struct Obj(Vec<(Text, JsonValue)>);

impl Obj {
    pub fn new() -> Obj {
        Obj(Vec::new())
    }

    /// An object whose first member is `type`.
    pub fn typed(ty: &str) -> Obj {
        Obj::new().with("type", JsonValue::String(ty.into()))
    }

    pub fn with(mut self, key: &str, value: JsonValue) -> Obj {
        self.0.push((key.into(), value));
        self
    }

    pub fn maybe(self, key: &str, value: Option<&JsonValue>) -> Obj {
        match value {
            Some(v) => self.with(key, v.clone()),
            None => self,
        }
    }

    pub fn text(self, key: &str, value: &Text) -> Obj {
        self.with(key, JsonValue::String(value.clone()))
    }

    pub fn members(self) -> Vec<(Text, JsonValue)> {
        self.0
    }

    pub fn build(self) -> JsonValue {
        JsonValue::Object(self.0)
    }
}
