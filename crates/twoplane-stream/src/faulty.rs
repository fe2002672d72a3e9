//! A fault injector around any durable target, for tests (only with the `testing` feature).
//!
//! Guarantees: each call to an operation consumes at most one queued fault for that operation,
//! in the order they were injected; with no fault queued the call passes straight through. The
//! faults model what a real store does: a commit that fails without applying, a commit that
//! applies but whose acknowledgement is lost, a commit whose read-back fails, and a stall.
//! Every consumed fault is logged so a test can tell which failures the plane saw.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use crate::error::PlaneError;
use crate::target::{
    AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, ReopenRequest, StoredMessage, TargetCaps,
};

/// Which target operation a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultOp {
    CheckOpen,
    Open,
    Append,
    Close,
    Probe,
    /// A stream that goes on: reading its message back and claiming its row.
    Reopen,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Not applied; an error is returned.
    FailCommit,
    /// Applied; then an error is returned (the acknowledgement was lost on the way back).
    LoseAck,
    /// Applied; reading the result back fails, so an error is returned. On a probe: it fails.
    FailReadBack,
    /// Wait this long, then behave normally (a stalled store).
    Delay(Duration),
}

#[derive(Default)]
struct FaultState {
    queues: HashMap<FaultOp, VecDeque<Fault>>,
    consumed: Vec<(FaultOp, Fault)>,
    calls: HashMap<FaultOp, usize>,
}

pub struct FaultyTarget {
    inner: Arc<dyn DurableTarget>,
    state: Mutex<FaultState>,
}

impl FaultyTarget {
    pub fn new(inner: Arc<dyn DurableTarget>) -> Self {
        FaultyTarget { inner, state: Mutex::new(FaultState::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, FaultState> {
        twoplane_runtime::lock(&self.state)
    }

    /// Queue `fault` for the next call of `op` that has no earlier fault queued.
    pub fn inject(&self, op: FaultOp, fault: Fault) {
        self.lock().queues.entry(op).or_default().push_back(fault);
    }

    pub fn inject_n(&self, op: FaultOp, fault: Fault, n: usize) {
        for _ in 0..n {
            self.inject(op, fault);
        }
    }

    /// Drop every queued fault.
    pub fn clear(&self) {
        self.lock().queues.clear();
    }

    pub fn pending(&self, op: FaultOp) -> usize {
        self.lock().queues.get(&op).map_or(0, VecDeque::len)
    }

    /// Faults consumed so far, in order.
    pub fn consumed(&self) -> Vec<(FaultOp, Fault)> {
        self.lock().consumed.clone()
    }

    /// Calls of `op` so far (faulted or not).
    pub fn calls(&self, op: FaultOp) -> usize {
        self.lock().calls.get(&op).copied().unwrap_or(0)
    }

    fn take(&self, op: FaultOp) -> Option<Fault> {
        let mut st = self.lock();
        *st.calls.entry(op).or_default() += 1;
        let fault = st.queues.get_mut(&op).and_then(VecDeque::pop_front)?;
        st.consumed.push((op, fault));
        Some(fault)
    }
}

fn injected(op: FaultOp, fault: Fault) -> PlaneError {
    PlaneError::store(format!("injected fault: {fault:?} on {op:?}"))
}

/// Run `apply` under `fault`: the shared shape of every faulted write.
async fn faulted<T, Fut>(op: FaultOp, fault: Option<Fault>, apply: impl FnOnce() -> Fut) -> Result<T, PlaneError>
where
    Fut: std::future::Future<Output = Result<T, PlaneError>>,
{
    match fault {
        None => apply().await,
        Some(f @ Fault::FailCommit) => Err(injected(op, f)),
        Some(f @ (Fault::LoseAck | Fault::FailReadBack)) => {
            // Applied (or attempted) for real; only the answer is lost.
            let _ = apply().await;
            Err(injected(op, f))
        }
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            apply().await
        }
    }
}

impl FaultyTarget {
    /// `apply` with the next fault queued for `op`, if any.
    async fn through<T, Fut>(&self, op: FaultOp, apply: impl FnOnce() -> Fut) -> Result<T, PlaneError>
    where
        Fut: std::future::Future<Output = Result<T, PlaneError>>,
    {
        faulted(op, self.take(op), apply).await
    }
}

#[async_trait]
impl DurableTarget for FaultyTarget {
    fn caps(&self) -> TargetCaps {
        self.inner.caps()
    }

    async fn check_openable(&self, stream_id: &str) -> Result<(), PlaneError> {
        self.through(FaultOp::CheckOpen, || self.inner.check_openable(stream_id)).await
    }

    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError> {
        self.through(FaultOp::Open, || self.inner.open(request)).await
    }

    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError> {
        self.through(FaultOp::Append, || self.inner.append(request)).await
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        self.through(FaultOp::Close, || self.inner.close(request)).await
    }

    async fn load(&self, stream_id: &str) -> Result<Option<StoredMessage>, PlaneError> {
        self.through(FaultOp::Reopen, || self.inner.load(stream_id)).await
    }

    async fn reopen(&self, request: ReopenRequest<'_>) -> Result<(), PlaneError> {
        self.through(FaultOp::Reopen, || self.inner.reopen(request)).await
    }

    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError> {
        match self.take(FaultOp::Probe) {
            None => self.inner.probe_durable_seq(stream_id).await,
            Some(Fault::Delay(d)) => {
                tokio::time::sleep(d).await;
                self.inner.probe_durable_seq(stream_id).await
            }
            Some(f) => Err(injected(FaultOp::Probe, f)),
        }
    }
}
