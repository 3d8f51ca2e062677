//! Peer addresses in one spelling, so that this instance and its peers name it alike: the ring
//! hashes the address string, and `fd00::1:4040` (our flag) against `[fd00::1]:4040` (the
//! EndpointSlice) would make one instance two members. An `IP:port` is rewritten the way
//! `SocketAddr` prints it (IPv6 bracketed, shortest form); a `host:port` stays as given, host
//! lower-cased (DNS names are case-insensitive).

use std::net::{IpAddr, SocketAddr};

/// The address family of an advertised address, matched against an EndpointSlice's
/// `addressType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
    /// A host name: any slice may list this instance (it is then recognised by its id).
    Name,
}

impl Family {
    pub fn of(address: &str) -> Family {
        match address.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(_)) => Family::V4,
            Ok(SocketAddr::V6(_)) => Family::V6,
            Err(_) => Family::Name,
        }
    }

    /// Whether a slice of `address_type` (`IPv4`, `IPv6`, `FQDN`) can list peers of ours.
    pub fn accepts(self, address_type: &str) -> bool {
        match self {
            Family::V4 => address_type == "IPv4",
            Family::V6 => address_type == "IPv6",
            Family::Name => true,
        }
    }

    /// Whether an endpoint address is one of ours: an IP of this family (a slice that
    /// mislabels one is not trusted), anything for a host name.
    pub fn accepts_host(self, host: &str) -> bool {
        match (self, host.parse::<IpAddr>()) {
            (Family::Name, _) => true,
            (Family::V4, Ok(ip)) => ip.is_ipv4(),
            (Family::V6, Ok(ip)) => ip.is_ipv6(),
            (_, Err(_)) => false,
        }
    }
}

/// `address` in its one spelling, or why it is not a `host:port`.
pub fn normalize(address: &str) -> Result<String, String> {
    let a = address.trim();
    if let Ok(s) = a.parse::<SocketAddr>() {
        return Ok(s.to_string());
    }
    if a.parse::<IpAddr>().is_ok() {
        // `fd00::1:4040` is a whole IPv6 address; it may also mean fd00::1 port 4040.
        return Err(format!(
            "{a:?} has no port, or is an IPv6 address with its port unbracketed: write [ip]:port, e.g. [fd00::1]:4040"
        ));
    }
    let Some((host, port)) = a.rsplit_once(':') else {
        return Err(format!("{a:?} is not host:port"));
    };
    if host.contains(':') || host.starts_with('[') {
        return Err(format!(
            "{a:?} is not host:port (an IPv6 address goes in brackets: [fd00::1]:4040)"
        ));
    }
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!("{a:?} is not host:port"));
    }
    Ok(format!("{}:{port}", host.to_ascii_lowercase()))
}

/// An endpoint address (an IP, or a name in an `FQDN` slice) and a port, in the one spelling.
pub fn join(host: &str, port: u16) -> String {
    match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port).to_string(),
        Err(_) => format!("{}:{port}", host.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_have_one_spelling() {
        let cases: &[(&str, Option<&str>)] = &[
            ("10.0.0.1:4040", Some("10.0.0.1:4040")),
            ("[fd00::1]:4040", Some("[fd00::1]:4040")),
            ("[fd00:0:0::1]:4040", Some("[fd00::1]:4040")),
            ("[FD00::1]:4040", Some("[fd00::1]:4040")),
            (" Peer-A.example:80 ", Some("peer-a.example:80")),
            // Ambiguous or incomplete: refused, never guessed.
            ("fd00::1:4040", None),
            ("10.0.0.1", None),
            ("fd00::1", None),
            ("peer", None),
            ("peer:http", None),
            (":4040", None),
            ("[fd00::1]", None),
            ("a:b:4040", None),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).ok().as_deref(), *want, "{input}");
        }
        let err = normalize("fd00::1:4040").err().unwrap_or_default();
        assert!(err.contains("[fd00::1]:4040"), "{err}");
        assert_eq!(join("fd00:0::1", 4040), "[fd00::1]:4040");
        assert_eq!(join("10.0.0.1", 1), "10.0.0.1:1");
        assert_eq!(
            normalize(&join("fd00::1", 4040)),
            Ok("[fd00::1]:4040".into())
        );
    }

    #[test]
    fn families_pick_slices() {
        assert!(Family::of("10.0.0.1:1").accepts("IPv4"));
        assert!(!Family::of("10.0.0.1:1").accepts("IPv6"));
        assert!(Family::of("[fd00::1]:1").accepts("IPv6"));
        assert!(!Family::of("[fd00::1]:1").accepts("IPv4"));
        assert!(Family::of("peer:1").accepts("FQDN"));
    }
}
