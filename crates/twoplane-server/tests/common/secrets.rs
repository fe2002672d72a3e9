//! The passwords the test run was configured with, and a check that none of them shows up in
//! what the processes under test wrote (log lines, error messages, `/status` bodies).
//!
//! Guarantees: [`configured_secrets`] returns every password found in the service URLs the test
//! command exports (`TWOPLANE_PG_URL`, `TWOPLANE_REDIS_URL`, the TLS variants and any other
//! `TWOPLANE_*_URL`) plus `PGPASSWORD`, each both as written and percent-decoded, because a
//! process may print either form. [`assert_no_secrets`] panics when any text holds any of them,
//! and its message says which text, which line and which column, but never the secret itself
//! (the panic message is a log line too).
#![allow(dead_code)] // each test binary uses a different part of `common`

/// Passwords shorter than this are not searched for: a one- or two-character password would
/// match ordinary text everywhere, and the test services always use long random ones.
const MIN_SECRET_LEN: usize = 6;

/// Every configured password (see the module guarantees), without duplicates.
pub fn configured_secrets() -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for (name, value) in std::env::vars() {
        if name.starts_with("TWOPLANE_") && name.ends_with("_URL") && !value.is_empty() {
            urls.push(value);
        }
    }
    let mut secrets = Vec::new();
    for url in &urls {
        secrets.extend(passwords_in_url(url));
    }
    if let Ok(p) = std::env::var("PGPASSWORD") {
        secrets.push(p);
    }
    let mut all = Vec::new();
    for s in secrets {
        let decoded = percent_decode(&s);
        for candidate in [s, decoded] {
            if candidate.len() >= MIN_SECRET_LEN && !all.contains(&candidate) {
                all.push(candidate);
            }
        }
    }
    all
}

/// Panics naming every place where a configured secret appears in `texts` (by index, line and
/// column; the secret itself is shown as `<secret #k>`).
pub fn assert_no_secrets(texts: &[String]) {
    let named: Vec<(String, String)> =
        texts.iter().enumerate().map(|(i, t)| (format!("text #{i}"), t.clone())).collect();
    assert_no_secrets_named(&named);
}

/// [`assert_no_secrets`] over `(where it came from, text)` pairs, so that the panic names a log
/// file or an endpoint instead of an index.
pub fn assert_no_secrets_named(texts: &[(String, String)]) {
    assert_no_secrets_among(&configured_secrets(), texts);
}

/// The check against an explicit list of secrets (the self-test below uses it).
pub fn assert_no_secrets_among(secrets: &[String], texts: &[(String, String)]) {
    let found = find_secrets(secrets, texts);
    if !found.is_empty() {
        panic!("{} configured secret(s) leaked:\n  {}", found.len(), found.join("\n  "));
    }
}

/// Where each secret occurs: one line per occurrence, in a form safe to print.
pub fn find_secrets(secrets: &[String], texts: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in texts {
        for (l, line) in text.lines().enumerate() {
            for (k, secret) in secrets.iter().enumerate() {
                if secret.is_empty() {
                    continue;
                }
                for (col, _) in line.match_indices(secret.as_str()) {
                    let shown: String = mask(line, secrets).chars().take(200).collect();
                    found.push(format!("{name}, line {}, column {}: <secret #{k}> in: {shown}", l + 1, col + 1));
                }
            }
        }
    }
    found
}

/// `line` with every secret replaced by a placeholder.
fn mask(line: &str, secrets: &[String]) -> String {
    let mut out = line.to_owned();
    for (k, secret) in secrets.iter().enumerate() {
        if !secret.is_empty() {
            out = out.replace(secret.as_str(), &format!("<secret #{k}>"));
        }
    }
    out
}

/// The password in a URL's user-info and in `password=`/`pass=` query items.
fn passwords_in_url(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some((_, rest)) = url.split_once("://") else { return out };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if let Some((userinfo, _host)) = authority.rsplit_once('@') {
        if let Some((_user, password)) = userinfo.split_once(':') {
            out.push(password.to_owned());
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        let query = query.split('#').next().unwrap_or("");
        for item in query.split('&') {
            if let Some((key, value)) = item.split_once('=') {
                if key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("pass") {
                    out.push(value.to_owned());
                }
            }
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[test]
fn secrets_check_finds_a_planted_password_and_nothing_else() {
    let secrets = vec!["s3cret-pw%21".to_owned(), percent_decode("s3cret-pw%21")];
    assert_eq!(secrets[1], "s3cret-pw!");
    let named = |texts: &[&str]| -> Vec<(String, String)> {
        texts.iter().enumerate().map(|(i, t)| (format!("t{i}"), t.to_string())).collect()
    };
    let clean = named(&["connect postgresql://u:***@127.0.0.1:5432/db", ""]);
    assert!(find_secrets(&secrets, &clean).is_empty());
    let leaked = named(&["ok", "line one\nerror: redis://:s3cret-pw!@h/ refused"]);
    let found = find_secrets(&secrets, &leaked);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("t1, line 2, column 17: <secret #1>"), "{}", found[0]);
    assert!(!found[0].contains("s3cret"), "the report must not print the secret: {}", found[0]);
    let panicked = std::panic::catch_unwind(|| assert_no_secrets_among(&secrets, &leaked));
    assert!(panicked.is_err());
    assert_eq!(passwords_in_url("postgresql://tp:abc%40def@127.0.0.1:5/db?sslmode=require"), ["abc%40def"]);
    assert_eq!(passwords_in_url("redis://:pw@h:1/?pass=two"), ["pw", "two"]);
    assert!(passwords_in_url("redis://h:1/").is_empty());
}
