//! The adapters' error type: a message for humans and, when Redis said something, its error.

use std::fmt;

/// An adapter failure: refused options, a failed connection, a payload that is not a frame, a
/// lost message. It travels to the plane boxed as a `twoplane_stream::RelayError`.
#[derive(Debug)]
pub struct RedisRelayError {
    message: String,
    source: Option<redis::RedisError>,
}

impl RedisRelayError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        RedisRelayError { message: message.into(), source: None }
    }

    pub(crate) fn redis(context: impl Into<String>, source: redis::RedisError) -> Self {
        RedisRelayError { message: context.into(), source: Some(source) }
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether Redis itself reported the failure (as opposed to a refusal or a bad payload).
    pub fn is_redis(&self) -> bool {
        self.source.is_some()
    }
}

impl fmt::Display for RedisRelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, " ({source})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RedisRelayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
