//! Where a row goes: the basin of its (tenant, generation) and the stream of its session.
//!
//! Basin names must be 8 to 48 characters of `[a-z0-9-]`, starting and ending with a letter or
//! digit, while tenant ids are arbitrary text. The mapping is
//!
//! ```text
//! tp-<first 96 bits of SHA-256(tenant id), 24 lower-case hex digits>-<generation in decimal>
//! ```
//!
//! 29 to 48 characters. Distinct (tenant, generation) pairs get distinct names as long as no two
//! tenant ids share the first 96 bits of their SHA-256 (for a billion tenants the chance is
//! about 1 in 10^11); the generation is written out in full, so a reset always gets a new basin.
//! The name does not reveal the tenant id, and the same id maps to the same name everywhere.
//!
//! Streams are `sessions/<session id>`.

use std::fmt;

use sha2::{Digest, Sha256};

/// A valid basin name (see the module header for the mapping from tenants).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BasinName(String);

/// Why a text is not a valid basin name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a basin name (8 to 48 of [a-z0-9-], not starting or ending with '-'): {0:?}")]
pub struct BasinNameError(pub String);

impl BasinName {
    /// The basin of a tenant's generation.
    pub fn for_tenant(tenant_id: &str, generation: u64) -> BasinName {
        let digest = Sha256::digest(tenant_id.as_bytes());
        let mut name = String::with_capacity(48);
        name.push_str("tp-");
        for byte in &digest[..12] {
            name.push(hex_digit(byte >> 4));
            name.push(hex_digit(byte & 0xF));
        }
        name.push('-');
        name.push_str(&generation.to_string());
        BasinName(name)
    }

    /// Checks a name given by hand (configuration, tests).
    pub fn parse(name: &str) -> Result<BasinName, BasinNameError> {
        let valid = (8..=48).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if valid {
            Ok(BasinName(name.to_owned()))
        } else {
            Err(BasinNameError(name.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BasinName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for BasinName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).expect("a nibble is a hex digit")
}

/// The stream of a session inside its tenant's basin.
pub fn session_stream(session_id: &str) -> String {
    format!("sessions/{session_id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tenant_basins_are_valid_and_distinct() {
        let mut seen = HashSet::new();
        for tenant in ["", "a", "A", "tenant-1", "tenant-2", "émoji 🙂", &"x".repeat(10_000)] {
            for generation in [0, 1, 2, 10, u64::MAX] {
                let basin = BasinName::for_tenant(tenant, generation);
                assert_eq!(BasinName::parse(basin.as_str()).as_ref(), Ok(&basin), "{basin}");
                assert!(seen.insert(basin.clone()), "{basin} twice");
            }
        }
        assert_eq!(BasinName::for_tenant("", u64::MAX).as_str().len(), 48);
        // The same tenant maps to the same basin, and the hash is SHA-256's (a fixed vector).
        assert_eq!(BasinName::for_tenant("abc", 3).as_str(), "tp-ba7816bf8f01cfea414140de-3");
    }

    #[test]
    fn basin_names_are_checked() {
        for bad in ["short", "Upper-case-name", "-leading-hyphen", "trailing-hyphen-", "under_score_1", &"a".repeat(49)]
        {
            assert!(BasinName::parse(bad).is_err(), "{bad}");
        }
        assert!(BasinName::parse("abcdefgh").is_ok());
        assert_eq!(session_stream("s-1"), "sessions/s-1");
    }
}
