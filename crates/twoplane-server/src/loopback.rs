//! What counts as this machine: a peer's address, and the name a request addresses the server
//! by. The loopback default of `twoplane serve` (crate::access) and its refusal of what web
//! pages send (crate::browser) both ask here.

/// Whether `ip` is this machine: 127.0.0.0/8, `::1`, or an IPv4 loopback address written as IPv6
/// (`::ffff:127.0.0.1`, how a dual-stack listener sees an IPv4 client).
pub fn is_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

/// `localhost`, an address in 127.0.0.0/8, `[::1]` or `[::ffff:127.x.y.z]`, with or without a
/// port.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || after.starts_with(':') => inside,
            _ => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>().is_ok_and(is_loopback)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_includes_mapped_ipv4() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert!(is_loopback(ip("127.0.0.1")) && is_loopback(ip("127.3.2.1")) && is_loopback(ip("::1")));
        assert!(is_loopback(ip("::ffff:127.0.0.1")));
        assert!(!is_loopback(ip("::ffff:10.0.0.1")) && !is_loopback(ip("10.0.0.1")) && !is_loopback(ip("::2")));
    }

    #[test]
    fn loopback_names_with_and_without_ports() {
        for host in
            ["localhost", "LocalHost:1", "127.0.0.1", "127.1.2.3:80", "[::1]", "[::1]:8787", "[::ffff:127.0.0.1]:1"]
        {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["localhost.evil.example", "10.0.0.1:1", "[::1", "[::1]x", "::1", "evil.example"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
