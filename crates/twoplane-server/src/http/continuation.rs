//! A UI reader's continuation: what goes on writing a response of the AI SDK's resume route
//! after its subscription ended short of the stream's end (a `stale`, an `absent`; see
//! [`twoplane_stream::Subscription::ui_outcome`]). The AI SDK's reader cannot resume by itself,
//! so its server does, in the same response.
//!
//! Guarantees:
//! - Only a UI reader that did not reach the end is continued: a reader of frames (whose client
//!   resumes by itself) and a UI reader that saw `[DONE]` end with their subscription.
//! - A continuation's bytes go out before anything of the subscription it brings; one that
//!   brings no subscription ends the response right after its bytes, and one that gives up
//!   (`None`) ends it as it is.
//! - One continuation at a time, and the response's keep-alives go on while it is under way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use twoplane_stream::{Subscription, UiOutcome};

/// What continues a UI reader's response after its subscription ended short of the stream's end
/// (a `stale`, an `absent`; see [`twoplane_stream::Subscription::ui_outcome`]): the AI SDK's
/// reader cannot resume by itself, so its server does.
pub(crate) trait Continue: Send {
    /// The continuation of a reader that got to `outcome`; `None` ends the response as it is.
    fn next(&mut self, outcome: UiOutcome) -> Pin<Box<dyn Future<Output = Option<Continuation>> + Send>>;
}

/// Bytes to write next, then the subscription to read after them (`None`: the response ends).
pub(crate) struct Continuation {
    pub bytes: Bytes,
    pub subscription: Option<Subscription>,
}

/// A response body's side of continuing: what continues it, and the continuation under way.
/// Boxed, and made only for a UI reader: every reader's body holds this (one pointer), and
/// readers of frames, most of them, never continue.
#[derive(Default)]
pub(super) struct Resume(Option<Box<Continuing>>);

struct Continuing {
    /// What continues a UI reader whose subscription ended short of `[DONE]`.
    by: Box<dyn Continue>,
    /// The continuation under way.
    under_way: Option<Pin<Box<dyn Future<Output = Option<Continuation>> + Send>>>,
    /// The last continuation brought no subscription: the body ends at the next poll (its last
    /// bytes went out with this one).
    ending: bool,
}

impl Resume {
    /// Continued by `by` whenever the UI subscription ends short of `[DONE]`.
    pub fn by(&mut self, by: Box<dyn Continue>) {
        self.0 = Some(Box::new(Continuing { by, under_way: None, ending: false }));
    }

    /// The subscription is over, having got to `outcome` (`None`: not a UI reader's). Starts the
    /// continuation of a UI reader that did not reach `[DONE]`; `false` when the response is to
    /// end instead.
    pub fn start(&mut self, outcome: Option<UiOutcome>) -> bool {
        match (outcome, self.0.as_mut()) {
            (Some(outcome), Some(c)) if !outcome.ended => {
                c.under_way = Some(c.by.next(outcome));
                true
            }
            _ => false,
        }
    }

    /// What the continuation under way brought, once it has; `Pending` while it runs, or when
    /// none is under way.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Continuation>> {
        let Some(c) = self.0.as_mut() else { return Poll::Pending };
        let Some(under_way) = c.under_way.as_mut() else { return Poll::Pending };
        let next = std::task::ready!(under_way.as_mut().poll(cx));
        c.under_way = None;
        if let Some(next) = &next {
            c.ending = next.subscription.is_none();
        }
        Poll::Ready(next)
    }

    /// The last continuation brought no subscription: nothing follows its bytes.
    pub fn ending(&self) -> bool {
        self.0.as_ref().is_some_and(|c| c.ending)
    }
}
