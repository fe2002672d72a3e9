//! Decoding of PostgreSQL's `pgoutput` logical replication messages (protocol version 1), the
//! payload of each `XLogData` frame on a logical replication stream.
//!
//! Guarantees: [`decode`] is a pure function over one message's bytes; it never panics, never
//! allocates more than the input can justify (every count is checked against the bytes left
//! before anything is reserved), and reports every malformed input as a [`DecodeError`]. Column
//! values are borrowed from the input, not copied. Every message kind of protocol version 1 is
//! decoded, so a stream that carries updates, deletes, truncates, origins, types or logical
//! messages of other tables is walked safely; the relay uses Begin, Relation, Insert and Commit
//! and ignores the rest. Protocol 2+ streaming messages (in-progress transactions) are only sent
//! when a client asks for `streaming`, which the relay does not: they are refused as
//! [`DecodeError::UnknownTag`].
//!
//! Written here rather than taken from `pg_walstream`: that crate's parser is stateful, converts
//! values into its own types and brings a date/time stack, while the relay needs only the raw
//! text of a few columns; `pgwire-replication` (the transport) leaves the payload to its user.

use std::fmt;

/// PostgreSQL epoch-based microseconds (since 2000-01-01), as the protocol sends them.
pub type PgTimestamp = i64;

/// One decoded `pgoutput` message. Borrowed data points into the decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    Begin(Begin),
    Commit(Commit),
    Origin {
        commit_lsn: u64,
        name: &'a str,
    },
    Relation(Relation),
    Type {
        id: u32,
        namespace: &'a str,
        name: &'a str,
    },
    Insert {
        relation: u32,
        new: Tuple<'a>,
    },
    Update {
        relation: u32,
        old: Option<OldTuple<'a>>,
        new: Tuple<'a>,
    },
    Delete {
        relation: u32,
        old: OldTuple<'a>,
    },
    Truncate {
        options: u8,
        relations: Vec<u32>,
    },
    /// A `pg_logical_emit_message()` message; bit 1 of `flags`: transactional.
    LogicalMessage {
        flags: u8,
        lsn: u64,
        prefix: &'a str,
        content: &'a [u8],
    },
}

/// Start of a transaction: its commit position and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Begin {
    pub final_lsn: u64,
    pub commit_time: PgTimestamp,
    pub xid: u32,
}

/// End of a transaction. `end_lsn` is where a reader resumes after it: the position to
/// acknowledge once the transaction is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    pub flags: u8,
    pub commit_lsn: u64,
    pub end_lsn: u64,
    pub commit_time: PgTimestamp,
}

/// A table's shape, sent before the first change of that table in a session (and again when it
/// changes). Later tuples of the relation list their columns in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub id: u32,
    pub namespace: String,
    pub name: String,
    pub replica_identity: u8,
    pub columns: Vec<RelationColumn>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationColumn {
    /// Bit 1: the column is part of the replica identity key.
    pub flags: u8,
    pub name: String,
    pub type_oid: u32,
    pub type_modifier: i32,
}

impl Relation {
    /// The position of a column by name, in the order tuples of this relation use.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// The old row of an update or delete: only its key columns (`K`) or the whole row (`O`, with
/// `REPLICA IDENTITY FULL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OldTuple<'a> {
    Key(Tuple<'a>),
    Full(Tuple<'a>),
}

/// The column values of one row, in the relation's column order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuple<'a>(pub Vec<Value<'a>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Null,
    /// A TOASTed value the change did not touch: the server does not resend it.
    UnchangedToast,
    /// The value in the type's text output format (the default).
    Text(&'a [u8]),
    /// The value in the type's binary format (only when the client asks for `binary`).
    Binary(&'a [u8]),
}

/// Why bytes are not a valid `pgoutput` message. `at` is the byte offset where decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The message has no bytes at all.
    Empty,
    /// The input ended before a field of `needed` bytes.
    Truncated { at: usize, needed: usize },
    /// A message tag this decoder does not know (including protocol 2+ streaming messages).
    UnknownTag(u8),
    /// A tuple, old-tuple or column marker byte that is not one the protocol defines.
    BadMarker { at: usize, byte: u8 },
    /// A string without its terminating NUL byte.
    UnterminatedString { at: usize },
    /// A name that is not UTF-8 (the relay needs database encoding UTF8 for names).
    NotUtf8 { at: usize },
    /// A negative count or length.
    NegativeLength { at: usize, value: i64 },
    /// Bytes left over after a complete message.
    TrailingBytes { at: usize, left: usize },
}

impl DecodeError {
    /// A stable snake_case name of the error, for logs and status.
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::Empty => "empty",
            DecodeError::Truncated { .. } => "truncated",
            DecodeError::UnknownTag(_) => "unknown_tag",
            DecodeError::BadMarker { .. } => "bad_marker",
            DecodeError::UnterminatedString { .. } => "unterminated_string",
            DecodeError::NotUtf8 { .. } => "not_utf8",
            DecodeError::NegativeLength { .. } => "negative_length",
            DecodeError::TrailingBytes { .. } => "trailing_bytes",
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => write!(f, "empty pgoutput message"),
            DecodeError::Truncated { at, needed } => {
                write!(f, "pgoutput message truncated at byte {at} ({needed} more bytes needed)")
            }
            DecodeError::UnknownTag(tag) => write!(f, "unknown pgoutput message tag 0x{tag:02x}"),
            DecodeError::BadMarker { at, byte } => {
                write!(f, "unexpected marker byte 0x{byte:02x} at byte {at} of a pgoutput message")
            }
            DecodeError::UnterminatedString { at } => {
                write!(f, "unterminated string at byte {at} of a pgoutput message")
            }
            DecodeError::NotUtf8 { at } => write!(f, "name at byte {at} is not UTF-8"),
            DecodeError::NegativeLength { at, value } => {
                write!(f, "negative length {value} at byte {at} of a pgoutput message")
            }
            DecodeError::TrailingBytes { at, left } => {
                write!(f, "{left} bytes left after a complete pgoutput message (at byte {at})")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one `pgoutput` message (the whole payload of one `XLogData` frame).
pub fn decode(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let mut r = Cursor { bytes, at: 0 };
    let tag = r.u8().map_err(|_| DecodeError::Empty)?;
    let message = match tag {
        b'B' => Message::Begin(Begin { final_lsn: r.u64()?, commit_time: r.i64()?, xid: r.u32()? }),
        b'C' => {
            Message::Commit(Commit { flags: r.u8()?, commit_lsn: r.u64()?, end_lsn: r.u64()?, commit_time: r.i64()? })
        }
        b'O' => Message::Origin { commit_lsn: r.u64()?, name: r.str()? },
        b'R' => Message::Relation(relation(&mut r)?),
        b'Y' => Message::Type { id: r.u32()?, namespace: r.str()?, name: r.str()? },
        b'I' => {
            let relation = r.u32()?;
            r.expect_marker(b"N")?;
            Message::Insert { relation, new: tuple(&mut r)? }
        }
        b'U' => {
            let relation = r.u32()?;
            let at = r.at;
            let old = match r.u8()? {
                b'K' => Some(OldTuple::Key(tuple(&mut r)?)),
                b'O' => Some(OldTuple::Full(tuple(&mut r)?)),
                b'N' => None,
                byte => return Err(DecodeError::BadMarker { at, byte }),
            };
            if old.is_some() {
                r.expect_marker(b"N")?;
            }
            Message::Update { relation, old, new: tuple(&mut r)? }
        }
        b'D' => {
            let relation = r.u32()?;
            let at = r.at;
            let old = match r.u8()? {
                b'K' => OldTuple::Key(tuple(&mut r)?),
                b'O' => OldTuple::Full(tuple(&mut r)?),
                byte => return Err(DecodeError::BadMarker { at, byte }),
            };
            Message::Delete { relation, old }
        }
        b'T' => {
            let count = r.count_i32(4)?;
            let options = r.u8()?;
            let mut relations = Vec::with_capacity(count);
            for _ in 0..count {
                relations.push(r.u32()?);
            }
            Message::Truncate { options, relations }
        }
        b'M' => {
            let flags = r.u8()?;
            let lsn = r.u64()?;
            let prefix = r.str()?;
            let len = r.count_i32(1)?;
            Message::LogicalMessage { flags, lsn, prefix, content: r.take(len)? }
        }
        other => return Err(DecodeError::UnknownTag(other)),
    };
    if r.at != bytes.len() {
        return Err(DecodeError::TrailingBytes { at: r.at, left: bytes.len() - r.at });
    }
    Ok(message)
}

fn relation(r: &mut Cursor<'_>) -> Result<Relation, DecodeError> {
    let id = r.u32()?;
    let namespace = r.str()?.to_owned();
    let name = r.str()?.to_owned();
    let replica_identity = r.u8()?;
    // Each column takes at least 1 + 1 + 4 + 4 bytes (flags, empty name, oid, modifier).
    let count = r.count_i16(10)?;
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        columns.push(RelationColumn {
            flags: r.u8()?,
            name: r.str()?.to_owned(),
            type_oid: r.u32()?,
            type_modifier: r.i32()?,
        });
    }
    Ok(Relation { id, namespace, name, replica_identity, columns })
}

fn tuple<'a>(r: &mut Cursor<'a>) -> Result<Tuple<'a>, DecodeError> {
    // Each value takes at least its one marker byte.
    let count = r.count_i16(1)?;
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        let at = r.at;
        values.push(match r.u8()? {
            b'n' => Value::Null,
            b'u' => Value::UnchangedToast,
            b't' => {
                let len = r.count_i32(1)?;
                Value::Text(r.take(len)?)
            }
            b'b' => {
                let len = r.count_i32(1)?;
                Value::Binary(r.take(len)?)
            }
            byte => return Err(DecodeError::BadMarker { at, byte }),
        });
    }
    Ok(Tuple(values))
}

/// A bounds-checked reader over one message; every method fails instead of panicking.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.left() {
            return Err(DecodeError::Truncated { at: self.at, needed: n - self.left() });
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// A signed 16-bit count of items of at least `min_item` bytes each. Refused when negative
    /// or when the bytes left cannot hold that many items, so no count forces a large
    /// allocation.
    fn count_i16(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let at = self.at;
        let n = i16::from_be_bytes(self.array()?);
        self.count(at, i64::from(n), min_item)
    }

    fn count_i32(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let at = self.at;
        let n = i32::from_be_bytes(self.array()?);
        self.count(at, i64::from(n), min_item)
    }

    fn count(&self, at: usize, n: i64, min_item: usize) -> Result<usize, DecodeError> {
        let n = usize::try_from(n).map_err(|_| DecodeError::NegativeLength { at, value: n })?;
        let needed = n.saturating_mul(min_item);
        if needed > self.left() {
            return Err(DecodeError::Truncated { at: self.at, needed: needed - self.left() });
        }
        Ok(n)
    }

    /// A NUL-terminated UTF-8 string.
    fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.at;
        let rest = &self.bytes[self.at..];
        let len = rest.iter().position(|&b| b == 0).ok_or(DecodeError::UnterminatedString { at })?;
        let s = std::str::from_utf8(&rest[..len]).map_err(|_| DecodeError::NotUtf8 { at })?;
        self.at += len + 1;
        Ok(s)
    }

    fn expect_marker(&mut self, allowed: &[u8]) -> Result<u8, DecodeError> {
        let at = self.at;
        let byte = self.u8()?;
        if allowed.contains(&byte) {
            Ok(byte)
        } else {
            Err(DecodeError::BadMarker { at, byte })
        }
    }
}

/// The inverse of [`decode`]: the bytes PostgreSQL sends for a message. For tests and the fuzz
/// target, which checks that `message(&decode(b)?) == b` for every input `decode` accepts.
pub mod encode {
    use super::*;

    pub fn message(m: &Message<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        match m {
            Message::Begin(b) => {
                out.push(b'B');
                out.extend_from_slice(&b.final_lsn.to_be_bytes());
                out.extend_from_slice(&b.commit_time.to_be_bytes());
                out.extend_from_slice(&b.xid.to_be_bytes());
            }
            Message::Commit(c) => {
                out.push(b'C');
                out.push(c.flags);
                out.extend_from_slice(&c.commit_lsn.to_be_bytes());
                out.extend_from_slice(&c.end_lsn.to_be_bytes());
                out.extend_from_slice(&c.commit_time.to_be_bytes());
            }
            Message::Origin { commit_lsn, name } => {
                out.push(b'O');
                out.extend_from_slice(&commit_lsn.to_be_bytes());
                cstr(&mut out, name);
            }
            Message::Relation(rel) => {
                out.push(b'R');
                out.extend_from_slice(&rel.id.to_be_bytes());
                cstr(&mut out, &rel.namespace);
                cstr(&mut out, &rel.name);
                out.push(rel.replica_identity);
                out.extend_from_slice(&(rel.columns.len() as i16).to_be_bytes());
                for c in &rel.columns {
                    out.push(c.flags);
                    cstr(&mut out, &c.name);
                    out.extend_from_slice(&c.type_oid.to_be_bytes());
                    out.extend_from_slice(&c.type_modifier.to_be_bytes());
                }
            }
            Message::Type { id, namespace, name } => {
                out.push(b'Y');
                out.extend_from_slice(&id.to_be_bytes());
                cstr(&mut out, namespace);
                cstr(&mut out, name);
            }
            Message::Insert { relation, new } => {
                out.push(b'I');
                out.extend_from_slice(&relation.to_be_bytes());
                out.push(b'N');
                tuple(&mut out, new);
            }
            Message::Update { relation, old, new } => {
                out.push(b'U');
                out.extend_from_slice(&relation.to_be_bytes());
                if let Some(old) = old {
                    old_tuple(&mut out, old);
                }
                out.push(b'N');
                tuple(&mut out, new);
            }
            Message::Delete { relation, old } => {
                out.push(b'D');
                out.extend_from_slice(&relation.to_be_bytes());
                old_tuple(&mut out, old);
            }
            Message::Truncate { options, relations } => {
                out.push(b'T');
                out.extend_from_slice(&(relations.len() as i32).to_be_bytes());
                out.push(*options);
                for r in relations {
                    out.extend_from_slice(&r.to_be_bytes());
                }
            }
            Message::LogicalMessage { flags, lsn, prefix, content } => {
                out.push(b'M');
                out.push(*flags);
                out.extend_from_slice(&lsn.to_be_bytes());
                cstr(&mut out, prefix);
                out.extend_from_slice(&(content.len() as i32).to_be_bytes());
                out.extend_from_slice(content);
            }
        }
        out
    }

    fn cstr(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    fn old_tuple(out: &mut Vec<u8>, old: &OldTuple<'_>) {
        match old {
            OldTuple::Key(t) => {
                out.push(b'K');
                tuple(out, t);
            }
            OldTuple::Full(t) => {
                out.push(b'O');
                tuple(out, t);
            }
        }
    }

    fn tuple(out: &mut Vec<u8>, t: &Tuple<'_>) {
        out.extend_from_slice(&(t.0.len() as i16).to_be_bytes());
        for v in &t.0 {
            match v {
                Value::Null => out.push(b'n'),
                Value::UnchangedToast => out.push(b'u'),
                Value::Text(b) | Value::Binary(b) => {
                    out.push(if matches!(v, Value::Text(_)) { b't' } else { b'b' });
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(b);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn events_relation() -> Relation {
        Relation {
            id: 16384,
            namespace: "public".into(),
            name: "twoplane_relay_events".into(),
            replica_identity: b'd',
            columns: ["tenant_id", "session_id", "seq", "generation", "body"]
                .iter()
                .enumerate()
                .map(|(i, n)| RelationColumn {
                    flags: u8::from(i < 3),
                    name: (*n).into(),
                    type_oid: if i < 2 { 25 } else { 20 },
                    type_modifier: -1,
                })
                .collect(),
        }
    }

    #[test]
    fn decodes_a_transaction_as_postgres_sends_it() {
        let rel = events_relation();
        let msgs = [
            Message::Begin(Begin { final_lsn: 0x0100_0028, commit_time: 7, xid: 742 }),
            Message::Relation(rel.clone()),
            Message::Insert {
                relation: 16384,
                new: Tuple(vec![
                    Value::Text(b"t1"),
                    Value::Text(b"s1"),
                    Value::Text(b"0"),
                    Value::Text(b"1"),
                    Value::Text(br#"{"a":1}"#),
                ]),
            },
            Message::Commit(Commit { flags: 0, commit_lsn: 0x0100_0028, end_lsn: 0x0100_0058, commit_time: 7 }),
        ];
        for m in &msgs {
            let bytes = encode::message(m);
            assert_eq!(&decode(&bytes).unwrap(), m);
        }
        assert_eq!(rel.column_index("seq"), Some(2));
        assert_eq!(rel.column_index("nope"), None);
    }

    #[test]
    fn a_known_begin_layout() {
        // Tag, final LSN 0/16B3748, commit time 1, xid 0x2a: checked byte by byte against the
        // protocol's documented layout rather than against our own encoder.
        let mut b = vec![b'B'];
        b.extend_from_slice(&0x016B_3748u64.to_be_bytes());
        b.extend_from_slice(&1i64.to_be_bytes());
        b.extend_from_slice(&42u32.to_be_bytes());
        assert_eq!(decode(&b).unwrap(), Message::Begin(Begin { final_lsn: 0x016B_3748, commit_time: 1, xid: 42 }));
    }

    #[test]
    fn malformed_inputs_are_typed_errors() {
        assert_eq!(decode(&[]), Err(DecodeError::Empty));
        assert_eq!(decode(b"Z"), Err(DecodeError::UnknownTag(b'Z')));
        // Protocol 2 stream start: refused, the relay never asks for streaming.
        assert_eq!(decode(b"S\0\0\0\x01\x01"), Err(DecodeError::UnknownTag(b'S')));
        assert_eq!(decode(b"B\0\0"), Err(DecodeError::Truncated { at: 1, needed: 6 }));
        // Insert whose tuple marker is not 'N'.
        assert_eq!(decode(b"I\0\0\0\x01X"), Err(DecodeError::BadMarker { at: 5, byte: b'X' }));
        // A tuple claiming 30000 columns in 3 bytes: refused before allocating.
        assert!(matches!(decode(b"I\0\0\0\x01N\x75\x30nnn"), Err(DecodeError::Truncated { .. })));
        // A negative text length.
        assert!(matches!(
            decode(b"I\0\0\0\x01N\0\x01t\xff\xff\xff\xff"),
            Err(DecodeError::NegativeLength { value: -1, .. })
        ));
        assert!(matches!(decode(b"O\0\0\0\0\0\0\0\0abc"), Err(DecodeError::UnterminatedString { at: 9 })));
        assert!(matches!(decode(b"Y\0\0\0\x01\xff\0x\0"), Err(DecodeError::NotUtf8 { at: 5 })));
        let mut begin = encode::message(&Message::Begin(Begin { final_lsn: 1, commit_time: 2, xid: 3 }));
        begin.push(0);
        assert_eq!(decode(&begin), Err(DecodeError::TrailingBytes { at: 21, left: 1 }));
        assert_eq!(DecodeError::Empty.kind(), "empty");
    }

    #[test]
    fn updates_deletes_and_truncates_decode() {
        let t = Tuple(vec![Value::Null, Value::UnchangedToast, Value::Binary(b"\x00\x01")]);
        for m in [
            Message::Update { relation: 5, old: None, new: t.clone() },
            Message::Update { relation: 5, old: Some(OldTuple::Key(t.clone())), new: t.clone() },
            Message::Delete { relation: 5, old: OldTuple::Full(t.clone()) },
            Message::Truncate { options: 1, relations: vec![5, 6] },
            Message::LogicalMessage { flags: 1, lsn: 9, prefix: "p", content: b"x\0y" },
            Message::Origin { commit_lsn: 3, name: "origin" },
            Message::Type { id: 600, namespace: "public", name: "point" },
        ] {
            assert_eq!(decode(&encode::message(&m)).unwrap(), m);
        }
    }

    fn value() -> impl Strategy<Value = (u8, Vec<u8>)> {
        (0u8..4, proptest::collection::vec(any::<u8>(), 0..12))
    }

    proptest! {
        #[test]
        fn inserts_round_trip(relation in any::<u32>(), cols in proptest::collection::vec(value(), 0..8)) {
            let values: Vec<Value<'_>> = cols
                .iter()
                .map(|(k, b)| match k {
                    0 => Value::Null,
                    1 => Value::UnchangedToast,
                    2 => Value::Text(b),
                    _ => Value::Binary(b),
                })
                .collect();
            let m = Message::Insert { relation, new: Tuple(values) };
            let bytes = encode::message(&m);
            prop_assert_eq!(decode(&bytes).unwrap(), m);
            // Every strict prefix is incomplete: an error, never a panic or a shorter message.
            for cut in 0..bytes.len() {
                prop_assert!(decode(&bytes[..cut]).is_err());
            }
        }

        #[test]
        fn whatever_decodes_encodes_back_to_the_same_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(m) = decode(&bytes) {
                prop_assert_eq!(encode::message(&m), bytes);
            }
        }
    }
}
