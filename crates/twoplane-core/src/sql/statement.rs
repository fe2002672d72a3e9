//! A statement and its parameters: values never appear in SQL text, they travel as numbered
//! parameters (see the guarantees in `sql/mod.rs`).

/// One bound parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlValue {
    Text(String),
    Int(i64),
    Null,
}

/// A statement and its parameters, in placeholder order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<SqlValue>,
}

/// An offset as a parameter. Offsets are at most 2^53 - 1, so they fit; anything larger (which no
/// valid frame carries) saturates rather than wrapping into a negative number.
pub(crate) fn int(v: u64) -> SqlValue {
    SqlValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

pub(crate) fn text(v: &str) -> SqlValue {
    SqlValue::Text(v.to_owned())
}
