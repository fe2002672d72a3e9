//! UTF-16 across the boundary. JavaScript strings are sequences of UTF-16 code units and may hold
//! unpaired surrogates; reading them as UTF-8 would replace those with U+FFFD, so every string
//! that carries response text or a stream id is read and written here as code units.

use std::ptr;

use napi::bindgen_prelude::JsValue;
use napi::{sys, Env, JsString};
use twoplane_core::ErrorKind;

use crate::error::{err, from_napi, Kind};
use napi::Result;

/// The code units of a JavaScript string, exactly (two Node-API calls: length, then copy).
pub fn units_of(s: &JsString<'_>) -> Result<Vec<u16>, Kind> {
    let value = s.value();
    let mut len = 0usize;
    // SAFETY: `value` is a live handle of the current call; a null buffer asks for the length.
    let status = unsafe { sys::napi_get_value_string_utf16(value.env, value.value, ptr::null_mut(), 0, &mut len) };
    if status != sys::Status::napi_ok {
        return Err(err(ErrorKind::InvalidArgument, "expected a string"));
    }
    // One more unit for the terminator Node-API always writes.
    let mut buf: Vec<u16> = vec![0; len + 1];
    let mut written = 0usize;
    // SAFETY: `buf` has room for `len` units plus the terminator.
    let status =
        unsafe { sys::napi_get_value_string_utf16(value.env, value.value, buf.as_mut_ptr(), len + 1, &mut written) };
    if status != sys::Status::napi_ok {
        return Err(err(ErrorKind::InvalidArgument, "expected a string"));
    }
    buf.truncate(written.min(len));
    Ok(buf)
}

/// A JavaScript string made of exactly these code units.
pub fn js_string<'e>(env: &'e Env, units: &[u16]) -> Result<JsString<'e>, Kind> {
    env.create_string_utf16(units).map_err(from_napi)
}
