//! Errors as JavaScript sees them: the `code` of every error this addon throws is a stable
//! snake_case kind from [`twoplane_core::ErrorKind`], so the adapter can expose it as `.kind`
//! without parsing messages.

use napi::Error;
use twoplane_core::ErrorKind;

/// An error status that is a kind name; Node-API puts it on the thrown error's `code`.
#[derive(Clone, Copy, Debug)]
pub struct Kind(pub ErrorKind);

impl AsRef<str> for Kind {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

/// A new error of `kind` with a human message.
pub fn err(kind: ErrorKind, message: impl Into<String>) -> Error<Kind> {
    Error::new(Kind(kind), message.into())
}

/// A core error, kind and message kept.
pub fn from_core(e: twoplane_core::Error) -> Error<Kind> {
    Error::new(Kind(e.kind()), e.message().to_owned())
}

/// A Node-API failure (a value of the wrong type reached a conversion, an allocation failed in
/// the engine). The adapter passes correctly typed values, so this is rare; it still gets a kind.
pub fn from_napi(e: napi::Error) -> Error<Kind> {
    let kind = match e.status {
        napi::Status::StringExpected
        | napi::Status::NumberExpected
        | napi::Status::ObjectExpected
        | napi::Status::BooleanExpected
        | napi::Status::ArrayExpected
        | napi::Status::FunctionExpected
        | napi::Status::InvalidArg => ErrorKind::InvalidArgument,
        _ => ErrorKind::InvalidState,
    };
    Error::new(Kind(kind), e.reason.clone())
}
