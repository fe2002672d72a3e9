//! The SSE endpoint (docs/contract.md §5): `GET <path>?streamId=<id>&from=<n>` answered with a
//! plane subscription encoded as server-sent events.
//!
//! Guarantees:
//! - Response headers are exactly [`STREAM_SSE_HEADERS`]; each frame is one event with an `id:`
//!   line when the frame has a resume point, so a reconnecting `EventSource` sends
//!   `Last-Event-ID` naming exactly where it got to (and that header wins over `?from`).
//! - One write per wakeup, no encoding per client: everything the subscription owes when the
//!   body is polled comes as one buffer (up to [`SseConfig::max_batch_bytes`]) from
//!   [`Subscription::poll_sse`], which hands over the SSE bytes the stream's log encoded once for
//!   every subscriber (one owed event is those shared bytes themselves, a longer span is one
//!   concatenation), and goes out as one body chunk. Under load a client therefore costs
//!   one system call per batch, not per frame, and no JSON encoding at all.
//! - No buffering of its own: the body pulls a frame only when its writer asks for more, which
//!   [`crate::sse_conn`] does once the previous batch is written (and hyper, for a body it serves,
//!   only while its per-connection buffer has room, see [`crate::server`]). A client that
//!   stops reading leaves frames in the plane's bounded subscriber queue, where overflow ends
//!   that subscriber with `stale`; the server's memory does not grow with the backlog.
//! - Teardown: when the client disconnects, its writer drops the body, which drops the subscription,
//!   which detaches it from the stream at once. The keep-alive comment (every
//!   [`SseConfig::keep_alive`]) bounds how long a silent, vanished client can go unnoticed.
//! - A denial is `403` with the same body whether or not the stream exists; a request without a
//!   stream id is `400`; every refusal is JSON with a `kind` ([`crate::refusal`]).
//! - Bounds: past [`SseConfig::max_subscribers`] a subscribe is `503`; past a per-stream or
//!   per-address bound ([`SseConfig::subscriber_caps`]) it is `503` with the JSON error
//!   `{"kind":"too_many_subscribers",...}` and a `Retry-After`. Both are answered before the
//!   plane is asked, and a subscriber's places are given back when its response body goes.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use twoplane_core::request::stream_request_from_http;
use twoplane_core::sse::{DEFAULT_KEEP_ALIVE_MS, KEEP_ALIVE_COMMENT, STREAM_SSE_HEADERS};
use twoplane_stream::{Plane, PlaneErrorKind, SseBatch, SseSink, Subscription, UiOutcome};

use crate::conn_limits::{CapReached, SubscriberCaps, SubscriberPass};

/// The path [`sse_router`] mounts the endpoint at.
pub const STREAM_PATH: &str = "/api/stream";

/// Settings of the SSE endpoint.
#[derive(Clone, Debug)]
pub struct SseConfig {
    /// Interval of the `: ping` comment. Default 15 s (docs/contract.md §5).
    pub keep_alive: Duration,
    /// A batch stops growing at this many bytes; the rest goes in the next write. Bounds the
    /// memory one connection can hold between the subscription and the socket.
    pub max_batch_bytes: usize,
    /// At most this many subscriptions at once; past it a subscribe is `503` (none: no bound).
    pub max_subscribers: Option<usize>,
    /// Bounds per stream and per client address; past one a subscribe is `503` with the JSON
    /// error `too_many_subscribers` and a `Retry-After` (none: no such bounds).
    pub subscriber_caps: Option<Arc<SubscriberCaps>>,
}

impl SseConfig {
    /// A 15 s keep-alive (docs/contract.md §5), 32 KiB batches, no bound on subscribers.
    pub const DEFAULT: SseConfig = SseConfig {
        keep_alive: Duration::from_millis(DEFAULT_KEEP_ALIVE_MS),
        max_batch_bytes: 32 * 1024,
        max_subscribers: None,
        subscriber_caps: None,
    };
}

impl Default for SseConfig {
    fn default() -> Self {
        SseConfig::DEFAULT
    }
}

/// Counters of the endpoint, shared by every response it serves (tests and health checks read
/// them; updating them is one relaxed atomic add per event).
#[derive(Debug, Default)]
pub struct SseStats {
    /// SSE responses whose body (and so whose subscription) is still alive.
    pub active: AtomicUsize,
    /// Responses started.
    pub opened: AtomicU64,
    /// Frames encoded.
    pub frames: AtomicU64,
    /// Body chunks handed to the writer (one per wakeup).
    pub writes: AtomicU64,
    /// Bytes of events in those chunks (keep-alive comments and chunk framing not counted).
    pub bytes: AtomicU64,
    /// Keep-alive comments sent.
    pub pings: AtomicU64,
    /// Times a caught-up subscription was handed to its stream's writer task
    /// ([`crate::sse_conn`]'s direct delivery).
    pub handovers: AtomicU64,
    /// Times direct delivery found the socket full and handed the rest back to the connection.
    pub holds: AtomicU64,
    /// Of the `active` bodies, those of the AI SDK's resume route (`crate::ui_stream`).
    pub ui_active: AtomicUsize,
}

impl SseStats {
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// The caller as [`sse_router`] identifies it: the request's headers, from which an
/// [`twoplane_stream::Authorizer`] can read a cookie or a bearer token
/// (`request.user::<HttpCaller>()`).
#[derive(Clone, Debug)]
pub struct HttpCaller {
    pub headers: HeaderMap,
}

type Identify<U> = Arc<dyn Fn(&HeaderMap) -> U + Send + Sync>;

struct Endpoint<U> {
    plane: Plane,
    config: SseConfig,
    stats: Arc<SseStats>,
    identify: Identify<U>,
}

impl<U> Clone for Endpoint<U> {
    fn clone(&self) -> Self {
        Endpoint {
            plane: self.plane.clone(),
            config: self.config.clone(),
            stats: self.stats.clone(),
            identify: self.identify.clone(),
        }
    }
}

/// A router serving `GET /api/stream` for `plane`, identifying callers as [`HttpCaller`].
/// Returns the router and its counters.
pub fn sse_router(plane: Plane, config: SseConfig) -> (Router, Arc<SseStats>) {
    sse_router_with(plane, config, |headers: &HeaderMap| HttpCaller { headers: headers.clone() })
}

/// Like [`sse_router`], with the application's own user type: `identify` turns a request's
/// headers into the user handed to [`Plane::subscribe`] (and so to the authorizer).
pub fn sse_router_with<U, F>(plane: Plane, config: SseConfig, identify: F) -> (Router, Arc<SseStats>)
where
    U: Any + Send + Sync,
    F: Fn(&HeaderMap) -> U + Send + Sync + 'static,
{
    let stats = Arc::new(SseStats::default());
    let endpoint = Endpoint { plane, config, stats: stats.clone(), identify: Arc::new(identify) };
    let router = Router::new().route(STREAM_PATH, get(stream_handler::<U>)).with_state(endpoint);
    (router, stats)
}

async fn stream_handler<U: Any + Send + Sync>(State(endpoint): State<Endpoint<U>>, request: Request) -> Response {
    let headers = request.headers();
    // A header that is not valid UTF-8 still counts as present (docs/contract.md §5: present wins, even
    // empty); its garbage parses to offset 0, as `parseInt` would.
    let last_event_id = headers.get("last-event-id").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let target = request.uri().path_and_query().map_or("", |pq| pq.as_str());
    let wanted = stream_request_from_http(target, last_event_id.as_deref());
    if wanted.stream_id.is_empty() {
        return crate::refusal::refuse(StatusCode::BAD_REQUEST, "missing_stream_id", "the query needs streamId=<id>");
    }
    let pass = match admit(&endpoint.config, &endpoint.stats, &wanted.stream_id, &request) {
        Ok(pass) => pass,
        Err(reached) => return too_many_subscribers(reached),
    };
    let user = (endpoint.identify)(headers);
    let from = wanted.from_offset();
    match endpoint.plane.subscribe(&user, &wanted.stream_id, from).await {
        Ok(subscription) => {
            tracing::debug!(stream_id = ?wanted.stream_id, from, "sse subscriber joined");
            body_response(SseBody::new(subscription, &endpoint.config, endpoint.stats.clone()).admitted(pass))
        }
        // Same status and body for a stream that exists and one that does not.
        Err(e) if e.kind() == PlaneErrorKind::Forbidden => forbidden(),
        Err(e) => {
            tracing::warn!(stream_id = ?wanted.stream_id, error = %e, "subscribe failed");
            crate::refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the stream plane is unavailable")
        }
    }
}

/// A reader of `stream_id` under `config`'s bounds, before the plane is asked (a full server
/// spends nothing on the request): past the server-wide bound of live readers (`stats`), or past
/// the per-stream or per-address bound, `503 too_many_subscribers` with a `Retry-After`. Every
/// reader endpoint (this one, the AI SDK's resume route) admits its readers here; the pass gives
/// the places back when it drops.
pub(crate) fn admit(
    config: &SseConfig,
    stats: &SseStats,
    stream_id: &str,
    request: &Request,
) -> Result<Option<SubscriberPass>, CapReached> {
    if config.max_subscribers.is_some_and(|max| stats.active() >= max) {
        return Err(CapReached::Server);
    }
    let Some(caps) = &config.subscriber_caps else { return Ok(None) };
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    caps.admit(stream_id, peer).map(Some)
}

/// One live reader in [`SseStats::active`] (and `opened`), for as long as this lives: what an
/// [`SseBody`] holds, and what a reader endpoint that writes its own body holds for it.
pub(crate) struct ActiveReader(Arc<SseStats>);

impl ActiveReader {
    pub(crate) fn new(stats: Arc<SseStats>) -> ActiveReader {
        stats.active.fetch_add(1, Ordering::SeqCst);
        stats.opened.fetch_add(1, Ordering::Relaxed);
        ActiveReader(stats)
    }
}

impl Drop for ActiveReader {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reader's refusal: the same status and body whether or not the stream exists, wherever a
/// reader is refused (this endpoint, the reader's cancel).
pub fn forbidden() -> Response {
    crate::refusal::refuse(StatusCode::FORBIDDEN, "forbidden", "this reader may not read this stream")
}

/// Seconds a refused subscriber is told to wait: subscribers come and go within seconds.
const SUBSCRIBER_RETRY_AFTER_S: u64 = 5;

/// `503` with `{"kind":"too_many_subscribers","message":...}` and a `Retry-After`.
pub(crate) fn too_many_subscribers(reached: CapReached) -> Response {
    crate::refusal::refuse_retry(
        StatusCode::SERVICE_UNAVAILABLE,
        reached.kind(),
        reached.message(),
        SUBSCRIBER_RETRY_AFTER_S,
    )
}

/// An SSE response for `subscription`: the contract's headers and an [`SseBody`]. Use this to
/// serve a subscription from a route of your own.
pub fn sse_response(subscription: Subscription, config: &SseConfig, stats: Arc<SseStats>) -> Response {
    body_response(SseBody::new(subscription, config, stats))
}

fn body_response(body: SseBody) -> Response {
    handoff_response(body, &STREAM_SSE_HEADERS)
}

/// The response of a reader's `body` with `headers`: its body for hyper, and the hand-off the
/// direct SSE path takes it through.
pub(crate) fn handoff_response(body: SseBody, headers: &[(&'static str, &'static str)]) -> Response {
    let (body, extension) = SseHandoff::new(body);
    // As the body hyper polls, and as an extension the direct SSE path (`crate::sse_conn`) takes
    // the body out of to serve the subscription itself.
    let mut response = Response::new(Body::new(body));
    response.extensions_mut().insert(extension);
    let map = response.headers_mut();
    for (name, value) in headers {
        map.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
    }
    response
}

/// The [`SseBody`] of a response from [`sse_response`], seen from the response's body (which owns
/// it: dropping the response body drops the subscription, whoever else holds a hand-off) and from
/// its extensions (which only reach it while the body lives). Whichever side takes it first
/// serves it; the other then finds nothing.
#[derive(Clone)]
pub(crate) struct SseHandoff(Side);

#[derive(Clone)]
enum Side {
    Body(Arc<Mutex<Option<SseBody>>>),
    Extension(Weak<Mutex<Option<SseBody>>>),
}

impl SseHandoff {
    /// The body's side and the extension's side of `body`.
    fn new(body: SseBody) -> (SseHandoff, SseHandoff) {
        let owner = Arc::new(Mutex::new(Some(body)));
        let viewer = Arc::downgrade(&owner);
        (SseHandoff(Side::Body(owner)), SseHandoff(Side::Extension(viewer)))
    }

    fn with<R>(&self, f: impl FnOnce(&mut Option<SseBody>) -> R) -> R {
        // A panic while polling leaves the body as it was: still usable.
        match &self.0 {
            Side::Body(owner) => f(&mut twoplane_runtime::lock(owner)),
            Side::Extension(viewer) => match viewer.upgrade() {
                Some(owner) => f(&mut twoplane_runtime::lock(&owner)),
                None => f(&mut None),
            },
        }
    }

    /// The body, for a writer that serves it itself; the response's own body is then empty.
    pub(crate) fn take(&self) -> Option<SseBody> {
        self.with(Option::take)
    }
}

impl http_body::Body for SseHandoff {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.with(|body| match body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        })
    }

    fn is_end_stream(&self) -> bool {
        self.with(|body| body.as_ref().is_none_or(|b| b.done))
    }
}

/// What [`SseBody::poll_step`] gave a writer that can take over delivery.
pub(crate) enum Step {
    /// Bytes to write: events, or a keep-alive comment that was due.
    Data(Bytes),
    /// The body is over.
    End,
    /// Caught up: the subscription now delivers through the sink it was offered, until the sink
    /// is resumed.
    Handed,
}

/// The response body: a subscription's frames as SSE events, coalesced per wakeup, with
/// keep-alive comments between.
pub struct SseBody {
    /// `None` once the terminal frame is encoded: dropping it detaches from the stream before
    /// the last bytes even reach the socket.
    subscription: Option<Subscription>,
    ping: Pin<Box<tokio::time::Sleep>>,
    keep_alive: Duration,
    max_batch_bytes: usize,
    /// Whether the body is over (terminal sent, or the subscription ran dry).
    done: bool,
    stats: Arc<SseStats>,
    /// The subscriber's places under the per-stream and per-address bounds, given back when
    /// the body goes (with its subscription).
    _pass: Option<SubscriberPass>,
    /// Counted among the live readers until the body goes.
    _active: ActiveReader,
    /// A UI reader: counted as one until the body goes.
    _ui: Option<UiReader>,
    /// What continues a UI reader whose subscription ended short of `[DONE]` (`None`: a reader
    /// of frames, whose client resumes by itself), and the continuation under way.
    resume: Option<Box<dyn Continue>>,
    resuming: Option<Pin<Box<dyn Future<Output = Option<Continuation>> + Send>>>,
    /// The body ends at the next poll (its last bytes went out with this poll).
    ending: bool,
}

/// What continues a UI reader's response after its subscription ended short of the stream's end
/// (a `stale`, an `absent`; see [`twoplane_stream::Subscription::ui_outcome`]): the AI SDK's
/// reader cannot resume by itself, so its server does.
pub(crate) trait Continue: Send {
    /// The continuation of a reader that got to `outcome`; `None` ends the response as it is.
    fn next(&mut self, outcome: UiOutcome) -> Pin<Box<dyn Future<Output = Option<Continuation>> + Send>>;
}

/// One UI reader among the live readers, counted apart (and in its metrics gauge).
struct UiReader(Arc<SseStats>, #[allow(dead_code)] Box<dyn Send>);

impl Drop for UiReader {
    fn drop(&mut self) {
        self.0.ui_active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes to write next, then the subscription to read after them (`None`: the response ends).
pub(crate) struct Continuation {
    pub bytes: Bytes,
    pub subscription: Option<Subscription>,
}

impl SseBody {
    pub fn new(subscription: Subscription, config: &SseConfig, stats: Arc<SseStats>) -> SseBody {
        let active = ActiveReader::new(stats.clone());
        let keep_alive = config.keep_alive.max(Duration::from_millis(1));
        SseBody {
            subscription: Some(subscription),
            ping: Box::pin(tokio::time::sleep(keep_alive)),
            keep_alive,
            max_batch_bytes: config.max_batch_bytes.max(1),
            done: false,
            stats,
            _pass: None,
            _active: active,
            _ui: None,
            resume: None,
            resuming: None,
            ending: false,
        }
    }

    /// This body, holding its places under the subscriber bounds (given back when it goes).
    pub(crate) fn admitted(mut self, pass: Option<SubscriberPass>) -> SseBody {
        self._pass = pass;
        self
    }

    /// This body, counted as a UI reader (in [`SseStats::ui_active`], and by `gauge`, which the
    /// body holds while it lives) while it lives.
    pub(crate) fn counted_as_ui(mut self, gauge: impl Send + 'static) -> SseBody {
        self.stats.ui_active.fetch_add(1, Ordering::SeqCst);
        self._ui = Some(UiReader(self.stats.clone(), Box::new(gauge)));
        self
    }

    /// This body, continued by `resume` whenever its UI subscription ends short of `[DONE]`.
    pub(crate) fn continued_by(mut self, resume: Box<dyn Continue>) -> SseBody {
        self.resume = Some(resume);
        self
    }

    /// The subscription is over (its terminal went out, or it ran dry): a UI reader that did not
    /// reach `[DONE]` is continued, anything else ends.
    fn subscription_over(&mut self) {
        let outcome = self.subscription.take().and_then(|sub| sub.ui_outcome());
        match (outcome, self.resume.as_mut()) {
            (Some(outcome), Some(resume)) if !outcome.ended => self.resuming = Some(resume.next(outcome)),
            _ => self.done = true,
        }
    }

    /// The next thing to write, or, once the subscription has caught up, its hand-over to
    /// `sink` (direct delivery, `crate::sse_conn`): the writer then waits for the sink's resume.
    pub(crate) fn poll_step(&mut self, cx: &mut Context<'_>, sink: &Arc<dyn SseSink>) -> Poll<Step> {
        match http_body::Body::poll_frame(Pin::new(&mut *self), cx) {
            Poll::Ready(Some(Ok(frame))) => {
                return Poll::Ready(frame.into_data().map_or(Step::Data(Bytes::new()), Step::Data));
            }
            Poll::Ready(Some(Err(never))) => match never {},
            Poll::Ready(None) => return Poll::Ready(Step::End),
            Poll::Pending => {}
        }
        let max = self.max_batch_bytes;
        if self.subscription.as_mut().is_some_and(|sub| sub.deliver_to(sink.clone(), max)) {
            return Poll::Ready(Step::Handed);
        }
        // Not a hosted stream's, or frames arrived since the poll: the poll registered this task, so
        // it is woken for them.
        Poll::Pending
    }

    /// The endpoint's counters, which a writer of its own keeps too.
    pub(crate) fn stats(&self) -> &Arc<SseStats> {
        &self.stats
    }

    /// A keep-alive comment when one is due (counted, and the next one scheduled), for a writer
    /// that does not poll the body while its subscription is delivered directly.
    pub(crate) fn poll_ping(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        if self.done || self.ping.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let next = tokio::time::Instant::now() + self.keep_alive;
        self.ping.as_mut().reset(next);
        self.stats.pings.fetch_add(1, Ordering::Relaxed);
        Poll::Ready(Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes()))
    }

    /// Account for one batch and, after a terminal, end the body.
    fn sent(&mut self, batch: &SseBatch) {
        if batch.terminal {
            // Nothing follows a terminal (docs/contract.md §1): end the body after this write and
            // release the subscription now (unless a UI reader's continuation follows).
            self.subscription_over();
        }
        self.stats.frames.fetch_add(batch.frames, Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(batch.bytes.len() as u64, Ordering::Relaxed);
    }
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.ending {
            this.done = true;
        }
        if this.done {
            return Poll::Ready(None);
        }
        // A UI reader's continuation: its bytes, then the subscription it brings.
        if let Some(resuming) = this.resuming.as_mut() {
            match resuming.as_mut().poll(cx) {
                Poll::Pending => {}
                Poll::Ready(next) => {
                    this.resuming = None;
                    let Some(next) = next else {
                        this.done = true;
                        return Poll::Ready(None);
                    };
                    this.subscription = next.subscription;
                    this.ending = this.subscription.is_none();
                    if !next.bytes.is_empty() {
                        this.stats.bytes.fetch_add(next.bytes.len() as u64, Ordering::Relaxed);
                        this.stats.writes.fetch_add(1, Ordering::Relaxed);
                        return Poll::Ready(Some(Ok(http_body::Frame::data(next.bytes))));
                    }
                    if this.ending {
                        this.done = true;
                        return Poll::Ready(None);
                    }
                }
            }
        }
        // Frames first: a pending ping can wait for the next poll.
        if let Some(sub) = this.subscription.as_mut() {
            match sub.poll_sse(cx, this.max_batch_bytes) {
                Poll::Ready(Some(batch)) => {
                    this.sent(&batch);
                    if batch.bytes.is_empty() {
                        // A terminal with nothing to write (a UI reader's `stale`): what follows
                        // (a continuation, or the end) is the next poll's.
                        if this.done {
                            return Poll::Ready(None);
                        }
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    return Poll::Ready(Some(Ok(http_body::Frame::data(batch.bytes))));
                }
                Poll::Ready(None) => {
                    // The subscription ran dry: after a terminal a direct writer delivered, or
                    // (it cannot, by contract) without one; a UI reader may be continued.
                    this.subscription_over();
                    if this.done {
                        return Poll::Ready(None);
                    }
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => {}
            }
        }
        match this.poll_ping(cx) {
            Poll::Ready(ping) => Poll::Ready(Some(Ok(http_body::Frame::data(ping)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // The subscription (if still held) detaches in its own Drop, right here, before the
        // reader stops counting as live.
        self.subscription = None;
    }
}
