//! A [`LogStore`] on Redis Streams, for deployments that run Redis rather than S2.
//!
//! Layout (the basin name in braces is a hash tag, so a basin's keys share a Redis Cluster slot):
//! - `<prefix>:{<basin>}`: the basin's marker (a string); the basin exists while it does.
//! - `<prefix>:{<basin>}:<stream>`: the stream, a Redis Stream whose entry for log position
//!   `seq` has the id `0-<seq + 1>` and one field, `record`, holding the JSON text. A reader
//!   resumes after position `p` with `XRANGE key (0-<p + 1> +`.
//!
//! The tail (the number of records) is read from the last entry's id, so it survives nothing
//! but the key itself: a deleted stream reads as never written (tail 0), as in S2.
//!
//! Guarantees: an append checks the basin, reads the tail and adds the records in one Lua
//! script, so it is atomic against every other client; it adds nothing unless the tail equals
//! `match_seq`. An entry id not in the relay's form fails the append (`Rejected`) rather than
//! being guessed at. Connection failures are `Unavailable` (the connection manager reconnects).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, RetryMethod, Script};

use crate::names::BasinName;
use crate::types::{Append, LogError, LogStore, LogTarget};

/// Checks the basin and the tail, then adds the records. KEYS: marker, stream. ARGV: match_seq,
/// then the records. Returns {1, end} appended, {0, tail} on a mismatch, {-1, 0} without basin.
const APPEND: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local tail = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then
  local n = string.match(last[1][1], '^0%-(%d+)$')
  if n == nil then
    return redis.error_reply('entry ' .. last[1][1] .. ' of ' .. KEYS[2] .. ' was not written by the relay')
  end
  tail = tonumber(n)
end
local match = tonumber(ARGV[1])
if tail ~= match then return {0, tail} end
for i = 2, #ARGV do
  redis.call('XADD', KEYS[2], string.format('0-%d', match + i - 1), 'record', ARGV[i])
end
return {1, match + #ARGV - 1}
"#;

/// The tail, or -1 without basin. KEYS: marker, stream.
const TAIL: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last == 0 then return 0 end
local n = string.match(last[1][1], '^0%-(%d+)$')
if n == nil then
  return redis.error_reply('entry ' .. last[1][1] .. ' of ' .. KEYS[2] .. ' was not written by the relay')
end
return tonumber(n)
"#;

/// Settings of a [`RedisLog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLogOptions {
    /// Prepended to every key (default `twoplane:relay`).
    pub prefix: String,
    pub connect_timeout: Duration,
    /// How long one command may take before it counts as failed (the relay retries).
    pub response_timeout: Duration,
}

impl Default for RedisLogOptions {
    fn default() -> Self {
        RedisLogOptions {
            prefix: "twoplane:relay".to_owned(),
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(5),
        }
    }
}

/// The Redis Streams log store (see the module header). Cheap to clone.
#[derive(Clone)]
pub struct RedisLog {
    connection: ConnectionManager,
    prefix: Arc<str>,
    append: Arc<Script>,
    tail: Arc<Script>,
}

impl RedisLog {
    /// Connects to Redis at `url` (`redis://host:port/db`).
    pub async fn connect(url: &str, options: RedisLogOptions) -> Result<RedisLog, LogError> {
        let client =
            redis::Client::open(url).map_err(|e| LogError::Rejected(format!("the Redis URL is not usable: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.connect_timeout))
            .set_response_timeout(Some(options.response_timeout));
        let connection = client.get_connection_manager_with_config(config).await.map_err(classify)?;
        Ok(RedisLog {
            connection,
            prefix: options.prefix.into(),
            append: Arc::new(Script::new(APPEND)),
            tail: Arc::new(Script::new(TAIL)),
        })
    }

    /// The key of a basin's marker.
    pub fn basin_key(&self, basin: &BasinName) -> String {
        format!("{}:{{{basin}}}", self.prefix)
    }

    /// The key of a stream.
    pub fn stream_key(&self, basin: &BasinName, stream: &str) -> String {
        format!("{}:{{{basin}}}:{stream}", self.prefix)
    }
}

/// Failures a retry may cure are `Unavailable`; the rest (a script's refusal, a wrong type)
/// are `Rejected`.
fn classify(error: RedisError) -> LogError {
    match error.retry_method() {
        RetryMethod::NoRetry => LogError::Rejected(error.to_string()),
        _ => LogError::Unavailable(error.to_string()),
    }
}

fn seq(n: i64) -> Result<u64, LogError> {
    u64::try_from(n).map_err(|_| LogError::Rejected(format!("redis returned a negative position {n}")))
}

#[async_trait]
impl LogStore for RedisLog {
    async fn append(&self, at: LogTarget<'_>, records: &[Arc<str>]) -> Result<Append, LogError> {
        let LogTarget { basin, stream, match_seq } = at;
        let mut invocation = self.append.key(self.basin_key(basin));
        invocation.key(self.stream_key(basin, stream)).arg(match_seq);
        for record in records {
            invocation.arg(&**record);
        }
        let mut connection = self.connection.clone();
        let reply: (i64, i64) = invocation.invoke_async(&mut connection).await.map_err(classify)?;
        match reply {
            (1, end) => Ok(Append::Appended { start: match_seq, end: seq(end)? }),
            (0, tail) => Ok(Append::TailMismatch { tail: seq(tail)? }),
            (-1, _) => Err(LogError::BasinMissing(basin.to_string())),
            other => Err(LogError::Rejected(format!("unexpected reply to an append: {other:?}"))),
        }
    }

    async fn check_tail(&self, basin: &BasinName, stream: &str) -> Result<u64, LogError> {
        let mut invocation = self.tail.key(self.basin_key(basin));
        invocation.key(self.stream_key(basin, stream));
        let mut connection = self.connection.clone();
        let tail: i64 = invocation.invoke_async(&mut connection).await.map_err(classify)?;
        if tail == -1 {
            return Err(LogError::BasinMissing(basin.to_string()));
        }
        seq(tail)
    }

    async fn ensure_basin(&self, basin: &BasinName) -> Result<(), LogError> {
        let mut connection = self.connection.clone();
        redis::cmd("SET").arg(self.basin_key(basin)).arg(1).query_async::<()>(&mut connection).await.map_err(classify)
    }
}
