//! Connection strings made safe for logs and error messages.
//!
//! Guarantees: [`redact_url`] replaces every password it recognises with `***` and leaves the
//! rest of the string byte for byte as it was, so the host, port and database still show. It
//! recognises the password of a URL's user-info (`scheme://user:password@host`), URL query
//! parameters named `password` or `pass` (Redis puts a Unix socket's password there), and the
//! `password=` item of a PostgreSQL key/value string. Anything it does not recognise is left
//! alone, so a caller still never puts a connection string it did not pass through here into a
//! message.

/// `url` with its passwords replaced by `***` (see the module guarantees).
pub fn redact_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", redact_url_rest(rest)),
        None => redact_key_values(url),
    }
}

/// Everything after `scheme://`: the authority, then a path, a query and a fragment.
fn redact_url_rest(rest: &str) -> String {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.find('#') {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    let query = match before_fragment.split_once('?') {
        Some((path, query)) => {
            let items: Vec<String> = query
                .split('&')
                .map(|item| match item.split_once('=') {
                    Some((key, _)) if is_password_key(key) => format!("{key}=***"),
                    _ => item.to_owned(),
                })
                .collect();
            format!("{path}?{}", items.join("&"))
        }
        None => before_fragment.to_owned(),
    };
    format!("{authority}{query}{fragment}")
}

fn is_password_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("pass")
}

/// A PostgreSQL key/value string (`host=h user=u password=secret`); a quoted value may hold
/// spaces and `\'`.
fn redact_key_values(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(eq) = rest.find('=') {
        let head = rest[..eq].trim_end();
        let key = &head[head.rfind(char::is_whitespace).map_or(0, |i| i + 1)..];
        out.push_str(&rest[..=eq]);
        let value = &rest[eq + 1..];
        let lead = value.len() - value.trim_start().len();
        let len = lead + value_len(&value[lead..]);
        if key.eq_ignore_ascii_case("password") {
            out.push_str(&value[..lead]);
            out.push_str("***");
        } else {
            out.push_str(&value[..len]);
        }
        rest = &value[len..];
    }
    out.push_str(rest);
    out
}

/// The length of the value at the start of `s`: through the closing quote of a quoted value,
/// else up to the next whitespace.
fn value_len(s: &str) -> usize {
    if let Some(quoted) = s.strip_prefix('\'') {
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '\'' => return 1 + i + 1,
                _ => {}
            }
        }
        return s.len();
    }
    s.find(char::is_whitespace).unwrap_or(s.len())
}

/// The passwords [`redact_url`] would hide in `url`, as written: what each `***` of the redacted
/// form stands for (for scrubbing another library's message that may quote the string).
pub(crate) fn secrets_in(url: &str) -> Vec<String> {
    let redacted = redact_url(url);
    let mut out = Vec::new();
    let (mut rest, mut shown) = (url, redacted.as_str());
    while let Some(at) = shown.find("***") {
        // Both agree up to the mask. The secret ends where the text between this mask and the
        // next (or the end) starts again: a separator (`@`, `&`, ` `, `#`) that a secret cannot
        // hold, or for the last mask exactly the remaining tail.
        let after = &shown[at + 3..];
        let from = &rest[at..];
        let len = match after.find("***") {
            Some(next) => from.find(&after[..next]).unwrap_or(from.len()),
            None => from.len().saturating_sub(after.len()),
        };
        if len > 0 {
            out.push(from[..len].to_owned());
        }
        rest = &from[len..];
        shown = after;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_hidden_and_nothing_else_changes() {
        assert_eq!(redact_url("postgresql://u:secret@h:5432/db"), "postgresql://u:***@h:5432/db");
        assert_eq!(redact_url("redis://:pw@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(redact_url("rediss://user:p%40ss@Host:6380"), "rediss://user:***@Host:6380");
        // An `@` inside the password: the host is after the last one.
        assert_eq!(redact_url("redis://u:a@b@h/"), "redis://u:***@h/");
        assert_eq!(
            redact_url("redis+unix:///run/redis.sock?db=1&pass=pw"),
            "redis+unix:///run/redis.sock?db=1&pass=***"
        );
        assert_eq!(redact_url("postgres://h/db?user=u&password=pw#frag"), "postgres://h/db?user=u&password=***#frag");
    }

    #[test]
    fn strings_without_a_password_pass_unchanged() {
        for s in ["postgresql://u@h/db", "redis://h/?a=b@c", "redis://127.0.0.1:6379", "host=h user=u", "", "plain"] {
            assert_eq!(redact_url(s), s);
        }
    }

    #[test]
    fn key_value_passwords_are_hidden() {
        assert_eq!(redact_url("host=h password=secret user=u"), "host=h password=*** user=u");
        assert_eq!(redact_url("password='a b\\' c' host=h"), "password=*** host=h");
        assert_eq!(redact_url("host=h password = spaced"), "host=h password = ***");
        assert_eq!(redact_url("user=passer"), "user=passer");
    }

    #[test]
    fn secrets_are_what_the_masks_stand_for() {
        assert_eq!(secrets_in("postgresql://u:a@b@h:1/db?password=two&x=1"), ["a@b", "two"]);
        assert_eq!(secrets_in("host=h password='x y' user=u"), ["'x y'"]);
        assert_eq!(secrets_in("redis://:pw@h/?pass=p2"), ["pw", "p2"]);
        assert!(secrets_in("redis://h/").is_empty());
    }
}
