//! The plane's hooks (failures it reports, a reader's cancel), contained.
//!
//! Guarantees: a hook runs outside every plane lock, and a panicking hook is caught and logged,
//! so a hook that errors or panics cannot stall a stream, a checkpoint driver or a relay reader.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::PlaneError;
use crate::options::{CheckpointErrorInfo, Config};
use crate::relay::{RelayErrorInfo, RelayPhase};

pub(crate) fn checkpoint_error(cfg: &Config, stream_id: &str, from: u64, seq: u64, err: &PlaneError) {
    let info = CheckpointErrorInfo { stream_id, from, seq };
    metrics::counter!("twoplane_checkpoint_failures_total").increment(1);
    match &cfg.on_checkpoint_error {
        Some(hook) => {
            if catch_unwind(AssertUnwindSafe(|| hook(info, err))).is_err() {
                tracing::error!(stream_id, "on_checkpoint_error panicked");
            }
        }
        None => tracing::warn!(stream_id, from, seq, error = %err, "checkpoint failed"),
    }
}

pub(crate) fn cancelled(cfg: &Config, stream_id: &str) {
    if let Some(hook) = &cfg.on_cancel {
        if catch_unwind(AssertUnwindSafe(|| hook(stream_id))).is_err() {
            tracing::error!(stream_id, "on_cancel panicked");
        }
    }
}

pub(crate) fn relay_error(cfg: &Config, stream_id: &str, phase: RelayPhase, err: &(dyn std::error::Error + 'static)) {
    let info = RelayErrorInfo { stream_id, phase };
    match &cfg.on_relay_error {
        Some(hook) => {
            if catch_unwind(AssertUnwindSafe(|| hook(info, err))).is_err() {
                tracing::error!(stream_id, "on_relay_error panicked");
            }
        }
        None => tracing::warn!(stream_id, phase = phase.as_str(), error = %err, "relay failed"),
    }
}
