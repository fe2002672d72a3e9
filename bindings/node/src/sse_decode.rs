//! The core's incremental SSE decoder (`twoplane_core::SseDecoder`) as a JavaScript class. The
//! package's reader decodes SSE in JavaScript (`npm/twoplane/src/sse.js`, see there why); this
//! class is the second, independent implementation that the differential test
//! (`tests/js/sse-differential.test.mjs`) holds it to, and is there for apps that prefer the core's
//! decoder. Event text is well-formed (invalid UTF-8 already became U+FFFD), so `String` loses
//! nothing here.

use napi::bindgen_prelude::Uint8Array;
use napi_derive::napi;
use twoplane_core::SseDecoder;

/// One dispatched event.
#[napi(object)]
pub struct CoreSseEvent {
    /// The `event` field, `"message"` when there was none.
    pub event: String,
    pub data: String,
    pub last_event_id: String,
}

#[napi(js_name = "CoreSseDecoder")]
pub struct NapiSseDecoder {
    core: SseDecoder,
}

#[napi]
impl NapiSseDecoder {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        NapiSseDecoder { core: SseDecoder::new() }
    }

    /// The next bytes of the stream; returns the events they complete, in order.
    #[napi(catch_unwind)]
    pub fn feed(&mut self, bytes: Uint8Array) -> Vec<CoreSseEvent> {
        let mut events = Vec::new();
        self.core.feed(&bytes, &mut events);
        events
            .into_iter()
            .map(|e| CoreSseEvent { event: e.event, data: e.data, last_event_id: e.last_event_id })
            .collect()
    }

    /// The end of the stream: an incomplete event is discarded (`lastEventId` and `retry` stay).
    #[napi(catch_unwind)]
    pub fn finish(&mut self) {
        self.core.finish(&mut Vec::new());
    }

    #[napi(getter, catch_unwind)]
    pub fn last_event_id(&self) -> String {
        self.core.last_event_id().to_owned()
    }

    /// The reconnection time in milliseconds, or null when no valid `retry` came.
    #[napi(getter, catch_unwind)]
    pub fn retry(&self) -> Option<f64> {
        self.core.retry_f64()
    }
}
