//! twoplane's Node-API addon: conversion between JavaScript values and `twoplane-core`, nothing
//! else. Every rule lives in the core; this crate only moves numbers and UTF-16 text across the
//! boundary (see `docs/js-backend.md` for the interface `npm/twoplane/src/backend-napi.js` adapts).
//!
//! Guarantees:
//! - **No panic crosses into Node.** Node-API aborts the process on an unwinding panic, so every
//!   argument is validated and every failure is returned as a `napi::Error` whose `code` is the
//!   core's stable `ErrorKind` name; the JavaScript adapter copies it onto `.kind`. Exports are
//!   also built with `catch_unwind`, so even a bug here surfaces as a JavaScript error.
//! - **Text is never altered.** Strings that can hold unpaired surrogates are read and written
//!   as UTF-16 code units ([`text`]). A Rust `String` is used only for table and column names,
//!   which are checked to be well-formed first (a lone surrogate is refused, not replaced), and
//!   for a request's URL and header, where the URL parser itself replaces lone surrogates.

#![deny(clippy::all)]
// In unit tests the `#[napi]` exports are not registered with Node, so nothing calls them.
#![cfg_attr(test, allow(dead_code))]

mod conform;
mod error;
mod functions;
mod message;
mod reader;
mod sse;
mod sse_decode;
mod text;
mod ui;

pub use error::Kind;
