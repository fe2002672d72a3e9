//! Choosing an adapter by name, for deployments that pick it in configuration
//! (`--relay broadcast|log`).

use std::str::FromStr;
use std::sync::Arc;

use twoplane_stream::Relay;

use crate::error::RedisRelayError;
use crate::options::{LogOptions, RedisRelayOptions};
use crate::{BroadcastRelay, LogRelay};

/// The two topologies (see the crate documentation for which to pick).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Pub/sub: [`BroadcastRelay`].
    Broadcast,
    /// Redis Streams: [`LogRelay`].
    Log,
}

impl Topology {
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Broadcast => "broadcast",
            Topology::Log => "log",
        }
    }
}

impl FromStr for Topology {
    type Err = RedisRelayError;

    fn from_str(s: &str) -> Result<Topology, RedisRelayError> {
        match s {
            "broadcast" => Ok(Topology::Broadcast),
            "log" => Ok(Topology::Log),
            other => Err(RedisRelayError::new(format!("unknown relay topology {other:?}: use broadcast or log"))),
        }
    }
}

/// Connect the adapter of `topology`. `log` options belong to the log topology; passing them
/// with `Broadcast` is refused (they would do nothing), and `None` takes their defaults.
pub async fn connect_relay(
    url: &str,
    topology: Topology,
    options: RedisRelayOptions,
    log: Option<LogOptions>,
) -> Result<Arc<dyn Relay>, RedisRelayError> {
    match topology {
        Topology::Broadcast => {
            if log.is_some() {
                return Err(RedisRelayError::new("log options do nothing with the broadcast topology"));
            }
            Ok(Arc::new(BroadcastRelay::connect(url, options).await?))
        }
        Topology::Log => Ok(Arc::new(LogRelay::connect(url, options, log.unwrap_or_default()).await?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [Topology::Broadcast, Topology::Log] {
            assert_eq!(t.as_str().parse::<Topology>().unwrap(), t);
        }
        assert!("pubsub".parse::<Topology>().unwrap_err().message().contains("broadcast or log"));
    }
}
