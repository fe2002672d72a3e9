//! The JSON value model: strings are UTF-16 [`Text`], so a value holds whatever a JavaScript value
//! holds, lone surrogates included; objects keep every member in document order.

use crate::text::Text;

/// A JSON value whose strings are UTF-16, so they can hold whatever JavaScript strings hold.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    Number(f64),
    String(Text),
    Array(Vec<JsonValue>),
    /// Members in document order, duplicates included; see [`JsonValue::get`].
    Object(Vec<(Text, JsonValue)>),
}

impl JsonValue {
    /// The member named `key`; with duplicate keys the last one wins, as with `JSON.parse`.
    /// `None` when absent or when `self` is not an object.
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// [`JsonValue::get`] for a key that may itself hold unpaired surrogates.
    pub fn get_units(&self, key: &[u16]) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members.iter().rev().find(|(k, _)| k.units() == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&Text> {
        match self {
            JsonValue::String(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            JsonValue::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            JsonValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(Text, JsonValue)]> {
        match self {
            JsonValue::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, JsonValue::Null)
    }

    /// The JSON type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "boolean",
            JsonValue::Number(_) => "number",
            JsonValue::String(_) => "string",
            JsonValue::Array(_) => "array",
            JsonValue::Object(_) => "object",
        }
    }
}
