//! The checks a producer call makes of its stream before it changes anything: the stream is
//! open, an offset is its length, and one streaming body at a time.
//!
//! Guarantees: each check answers with the API's own error (`cancelled`, `stream_closed`,
//! `offset_behind`/`offset_ahead` naming the stream's length, `busy`) and changes nothing; the
//! guard of a streaming body gives the stream back however its handler ends (a dropped
//! connection included).

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use twoplane_stream::{Position, Refusal, Refused};

use super::errors::ApiError;
use super::registry::Producing;

/// Refuse a call on a stream that ended: `cancelled` when a reader cancelled it.
pub(super) fn ensure_open(p: &Producing) -> Result<(), ApiError> {
    if p.handle.cancelled() {
        return Err(ApiError::cancelled(&p.id, p.handle.seq()));
    }
    if p.handle.is_sealed() {
        return Err(ApiError::closed(&p.id, p.handle.seq()));
    }
    Ok(())
}

/// The offset check: `Ok` when `offset` (if given) is the produced length.
fn check_offset(p: &Producing, offset: Option<u64>) -> Result<(), ApiError> {
    let seq = p.handle.seq();
    match offset {
        Some(at) if at != seq => Err(wrong_offset(at, seq)),
        _ => Ok(()),
    }
}

/// The refusal of an offset that is not the stream's length `seq`.
fn wrong_offset(at: u64, seq: u64) -> ApiError {
    let (kind, why) = if at < seq {
        (
            "offset_behind",
            format!("offset {at} is behind the stream, which has {seq} code units (an earlier append landed)"),
        )
    } else {
        (
            "offset_ahead",
            format!("offset {at} is past the end of the stream, which has {seq} code units (an append is missing)"),
        )
    };
    ApiError::new(StatusCode::CONFLICT, kind, why).with_seq(seq)
}

/// A producer's text append: the checks of [`in_order`] and the push under one acquisition of
/// the stream's lock (`StreamHandle::push_checked`), in turn with the stream's other producer
/// calls; the answer says where the stream stood right after it.
pub(super) fn push_in_order(p: &Producing, text: &str, offset: Option<u64>) -> Result<Position, ApiError> {
    let _order = twoplane_runtime::lock(&p.order);
    p.handle.push_checked(text, offset).map_err(|Refused { why, at }| match why {
        Refusal::Cancelled => ApiError::cancelled(&p.id, at.seq),
        Refusal::Sealed => ApiError::closed(&p.id, at.seq),
        Refusal::Offset { asked } => wrong_offset(asked, at.seq),
        Refusal::Plane(e) => ApiError::from_plane(&e, &p.id).at_position(at),
    })
}

/// The one way a producer call changes its stream: under the stream's order lock (so
/// concurrent calls apply whole and in turn), only while it is open, and only at `offset` when
/// one is given; `change` runs with all of that holding, and its answer is the call's.
pub(super) fn in_order<T>(
    p: &Producing,
    offset: Option<u64>,
    change: impl FnOnce() -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let _order = twoplane_runtime::lock(&p.order);
    ensure_open(p)?;
    check_offset(p, offset)?;
    change()
}

/// Clears `body_active` however the body handler ends (including a dropped connection).
pub(super) struct BodyGuard<'a>(&'a Producing);

impl Drop for BodyGuard<'_> {
    fn drop(&mut self) {
        self.0.body_active.store(false, Ordering::SeqCst);
        self.0.touch();
    }
}

/// The checks before a streaming body is read: the stream is open here, the offset (if given)
/// is its length, and no other streaming body is being read for it. The guard ends that.
pub(super) fn start_streaming_body<'a>(p: &'a Producing, offset: Option<u64>) -> Result<BodyGuard<'a>, ApiError> {
    in_order(p, offset, || Ok(()))?;
    if p.body_active.swap(true, Ordering::SeqCst) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "busy",
            "another streaming body is being read for this stream",
        ));
    }
    Ok(BodyGuard(p))
}
