//! The demo's own statements on the server's [`Database`]: a chat exchange's rows. The view the
//! page renders is the store's ([`crate::store::messages`]).
//!
//! Guarantees: the rows of one exchange are inserted in one transaction: both or neither. The
//! statement is built for the database's dialect and runs through the plane's executor.

use twoplane_core::sql::{quote_ident, SqlValue, Statement};
use twoplane_stream::PlaneError;

use crate::store::{messages, Database, MessageView, MESSAGE_TABLE};

/// A message row to insert: the user's (complete, with its text) or an empty assistant row
/// ready for [`twoplane_stream::Plane::open`].
struct NewRow {
    id: String,
    role: &'static str,
    body: String,
    status: Option<&'static str>,
    seq: i64,
}

impl NewRow {
    fn assistant(id: String) -> NewRow {
        NewRow { id, role: "assistant", body: String::new(), status: None, seq: 0 }
    }

    fn params(self) -> Vec<SqlValue> {
        let text = |s: &str| SqlValue::Text(s.to_owned());
        vec![
            SqlValue::Text(self.id),
            text(self.role),
            SqlValue::Text(self.body),
            self.status.map_or(SqlValue::Null, text),
            SqlValue::Int(self.seq),
        ]
    }
}

/// The demo's view of the server's database. Cheap to clone.
#[derive(Clone)]
pub struct DemoDb {
    db: Database,
}

impl DemoDb {
    pub fn new(db: Database) -> DemoDb {
        DemoDb { db }
    }

    /// The server's database underneath.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Insert the user's message and an empty assistant row ready for `open`.
    pub async fn insert_exchange(&self, user: MessageView, assistant_id: String) -> Result<(), PlaneError> {
        let user = NewRow { id: user.id, role: "user", body: user.body, status: Some("complete"), seq: user.seq };
        self.insert(vec![user, NewRow::assistant(assistant_id)]).await
    }

    /// Insert an empty assistant row, ready for [`twoplane_stream::Plane::open`] (tests and
    /// benchmarks drive their own producers with it).
    pub async fn insert_assistant(&self, id: &str) -> Result<(), PlaneError> {
        self.insert(vec![NewRow::assistant(id.to_owned())]).await
    }

    /// Every message in creation order, with durable text assembled, from one snapshot.
    pub async fn messages(&self) -> Result<Vec<MessageView>, PlaneError> {
        messages::all(&self.db).await
    }

    /// One message's durable view.
    pub async fn message(&self, id: String) -> Result<Option<MessageView>, PlaneError> {
        messages::one(&self.db, &id).await
    }

    async fn insert(&self, rows: Vec<NewRow>) -> Result<(), PlaneError> {
        let executor = self.db.executor();
        let d = executor.dialect();
        let sql = format!(
            "INSERT INTO {} (id, role, body, status, seq) VALUES ({}, {}, {}, {}, {})",
            quote_ident(MESSAGE_TABLE)?,
            d.placeholder(1),
            d.placeholder(2),
            d.placeholder(3),
            d.placeholder(4),
            d.placeholder(5)
        );
        let statements = rows.into_iter().map(|row| Statement { sql: sql.clone(), params: row.params() }).collect();
        executor.transact(statements, "inserting a chat exchange").await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_exchange_reads_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = DemoDb::new(Database::open_sqlite(&dir.path().join("x.db"), true).await.unwrap());
        let user = MessageView {
            id: "u1".into(),
            role: "user".into(),
            body: "hi".into(),
            status: None,
            seq: 2,
            host: None,
            document: None,
            rows: None,
        };
        db.insert_exchange(user, "a1".into()).await.unwrap();
        let all = db.messages().await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].id.as_str(), all[0].role.as_str(), all[0].body.as_str()), ("u1", "user", "hi"));
        assert_eq!(all[0].status.as_deref(), Some("complete"));
        assert_eq!((all[1].id.as_str(), all[1].role.as_str(), all[1].status.as_deref()), ("a1", "assistant", None));
        assert_eq!(db.message("a1".into()).await.unwrap(), Some(all[1].clone()));
        assert_eq!(db.message("nope".into()).await.unwrap(), None);
        // An id taken already fails the whole exchange: the new user row is not left behind.
        let again = MessageView {
            id: "u2".into(),
            role: "user".into(),
            body: "x".into(),
            status: None,
            seq: 1,
            host: None,
            document: None,
            rows: None,
        };
        assert!(db.insert_exchange(again, "a1".into()).await.is_err());
        assert_eq!(db.message("u2".into()).await.unwrap(), None);
    }
}
