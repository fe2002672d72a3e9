//! JavaScript number semantics the contract leans on, in one place: what counts as an integer
//! (`Number.isInteger`), how a number prints (`String(n)`), `parseInt(x, 10)`, and the largest
//! offset JavaScript holds exactly.

/// `Number.MAX_SAFE_INTEGER`: offsets above it cannot round-trip through JavaScript.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `Number.isInteger(x)`: finite with no fractional part. NaN and infinities fail.
pub fn is_integer(x: f64) -> bool {
    x.is_finite() && x.trunc() == x
}

/// `String(x)` for a number: `1e+21`, `0.1`, `NaN`, `-Infinity`, and `-0` as `0`.
pub fn format(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format(x).to_owned()
}

/// `parseInt(s, 10)`: leading JavaScript whitespace, an optional sign, then the longest run of
/// ASCII digits. NaN when there is no digit. `"12abc"` is 12, `"0x10"` is 0, `" -3"` is -3.
pub fn parse_int10(s: &str) -> f64 {
    let t = s.trim_start_matches(is_js_whitespace);
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return f64::NAN;
    }
    let magnitude = decimal_digits_value(&rest.as_bytes()[..digits]);
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// The value of a run of ASCII digits, rounded to the nearest f64 like V8's `parseInt` for
/// every run of up to 38 digits (exact in a `u128`, then one correctly rounded conversion).
/// Longer runs are already past any offset JavaScript holds exactly; they keep multiplying in
/// f64. Deliberately not `str::parse::<f64>`: the general float parser and its tables would
/// triple the size of the WebAssembly build, for digits that are always an integer.
fn decimal_digits_value(digits: &[u8]) -> f64 {
    let mut exact: u128 = 0;
    for (i, d) in digits.iter().enumerate() {
        match exact.checked_mul(10).and_then(|v| v.checked_add(u128::from(d - b'0'))) {
            Some(v) => exact = v,
            None => {
                let mut approx = exact as f64;
                for d in &digits[i..] {
                    approx = approx * 10.0 + f64::from(d - b'0');
                }
                return approx;
            }
        }
    }
    exact as f64
}

/// JavaScript's `StrWhiteSpaceChar`: WhiteSpace and LineTerminator code points.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{FEFF}'
            | '\u{000A}'
            | '\u{000D}'
            | '\u{2028}'
            | '\u{2029}'
    ) || (c.is_whitespace() && is_space_separator(c))
}

/// Unicode category Zs (the part of JavaScript whitespace that depends on Unicode data).
fn is_space_separator(c: char) -> bool {
    matches!(c, '\u{1680}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

/// An offset as JavaScript would hold it: an integer in `0..=MAX_SAFE_INTEGER`.
pub fn as_offset(x: f64) -> Option<u64> {
    if is_integer(x) && x >= 0.0 && x <= MAX_SAFE_INTEGER as f64 {
        Some(x as u64)
    } else {
        None
    }
}

/// [`as_offset`] for an argument a caller passed: an `invalid_offset` error naming `what` when `x`
/// is not an offset. Every binding takes offset arguments through this, so they all refuse the
/// same values with the same kind.
pub fn offset_arg(what: &str, x: f64) -> crate::Result<u64> {
    as_offset(x).ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::InvalidOffset,
            format!("{what} {} is not an integer in 0..=2^53-1", format(x)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_javascript() {
        assert_eq!(format(12.0), "12");
        assert_eq!(format(-0.0), "0");
        assert_eq!(format(0.5), "0.5");
        assert_eq!(format(1e21), "1e+21");
        assert_eq!(format(1e20), "100000000000000000000");
        assert_eq!(format(f64::NAN), "NaN");
        assert_eq!(format(f64::INFINITY), "Infinity");
        assert_eq!(format(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(format(1.5e-7), "1.5e-7");
    }

    #[test]
    fn parse_int_like_javascript() {
        assert_eq!(parse_int10("12abc"), 12.0);
        assert_eq!(parse_int10("  \u{a0}42"), 42.0);
        assert_eq!(parse_int10("-5"), -5.0);
        assert_eq!(parse_int10("+7"), 7.0);
        assert_eq!(parse_int10("0x10"), 0.0);
        assert_eq!(parse_int10("1.9"), 1.0);
        assert!(parse_int10("").is_nan());
        assert!(parse_int10("abc").is_nan());
        assert!(parse_int10("-").is_nan());
        assert_eq!(parse_int10("99999999999999999999"), 1e20);
        assert_eq!(parse_int10("9007199254740993"), 9007199254740992.0);
        assert_eq!(parse_int10("123456789012345678901234567890123456789012"), 1.2345678901234568e41);
        assert_eq!(parse_int10(&"9".repeat(400)), f64::INFINITY);
    }

    #[test]
    fn integers_and_offsets() {
        assert!(is_integer(3.0));
        assert!(is_integer(1e300));
        assert!(!is_integer(0.5));
        assert!(!is_integer(f64::NAN));
        assert!(!is_integer(f64::INFINITY));
        assert_eq!(as_offset(9007199254740991.0), Some(MAX_SAFE_INTEGER));
        assert_eq!(as_offset(9007199254740992.0), None);
        assert_eq!(as_offset(-1.0), None);
    }
}
