//! Errors turned into the one sentence a person reads: a startup failure, a log line.
//!
//! Guarantees: the sentence is the most specific one available (the database server's own
//! words when it sent some), and never a connection string: those pass through
//! [`twoplane_stream::redact_url`] before they are put into any message.

use twoplane_stream::PlaneError;

/// The most useful sentence in a plane error: its cause when there is one.
pub(crate) fn cause(e: &PlaneError) -> String {
    match std::error::Error::source(e) {
        Some(source) => match source.downcast_ref::<tokio_postgres::Error>() {
            Some(pg) => {
                let inner = std::error::Error::source(pg).map(ToString::to_string);
                match (pg.as_db_error(), inner) {
                    (Some(db), _) => db.message().to_owned(),
                    (None, Some(inner)) => format!("{pg}: {inner}"),
                    (None, None) => pg.to_string(),
                }
            }
            None => source.to_string(),
        },
        None => e.message().to_owned(),
    }
}
