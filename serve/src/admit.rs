//! Who may call the server, checked on every request before its body is read:
//!
//! - an `Origin` header is refused (403): browsers send one on every cross-site request and
//!   no SDK does, so no web page the user opens can drive the agent (there is no CORS);
//! - the `Host` header must name the address the client connected to (`IP:PORT`, or
//!   `localhost:PORT` on loopback, or a name given with `--allow-host`): a page that rebinds
//!   its own DNS name to 127.0.0.1 sends its name and is refused (403);
//! - `Authorization: Bearer <token>` must carry the server's token (401).

use std::net::SocketAddr;

use hyper::HeaderMap;

use crate::error::ApiError;

/// The rules for the sockets of one listener.
#[derive(Clone, Debug)]
pub struct Admission {
    token: String,
    port: u16,
    /// Host names (lower case, IPv6 without brackets) that name this server.
    names: Vec<String>,
}

impl Admission {
    pub fn new(token: String, local: SocketAddr, extra_hosts: &[String]) -> Self {
        let ip = local.ip().to_canonical();
        let mut names = vec![ip.to_string(), local.ip().to_string()];
        if ip.is_loopback() {
            names.push("localhost".into());
        }
        names.extend(extra_hosts.iter().map(|h| h.to_ascii_lowercase()));
        Self {
            token,
            port: local.port(),
            names,
        }
    }

    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if headers.contains_key("origin") {
            return Err(ApiError::Forbidden(
                "requests with an Origin header (web pages) are refused",
            ));
        }
        let host = headers.get("host").and_then(|v| v.to_str().ok());
        if !host.is_some_and(|h| self.names_us(h)) {
            return Err(ApiError::Forbidden(
                "the Host header does not name this server",
            ));
        }
        let given = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(given) if same_secret(given.trim().as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err(ApiError::Unauthorized),
        }
    }

    /// Whether a `Host` value names this server (port 80 when it gives none).
    fn names_us(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = match host.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((name, tail)) => (name.to_owned(), tail.strip_prefix(':')),
                None => return false,
            },
            None => match host.rsplit_once(':') {
                Some((name, port)) => (name.to_owned(), Some(port)),
                None => (host.clone(), None),
            },
        };
        let port = match port {
            Some(p) => p.parse::<u16>().ok(),
            None => Some(80),
        };
        port == Some(self.port) && self.names.contains(&name)
    }
}

/// Equality that takes the same time wherever the first difference is.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn origin_host_and_token_rules() {
        let local: SocketAddr = "127.0.0.1:4500".parse().unwrap();
        let rules = Admission::new("t0k".into(), local, &["dev.box".into()]);
        for host in [
            "127.0.0.1:4500",
            "localhost:4500",
            "LOCALHOST:4500",
            "dev.box:4500",
        ] {
            let ok = headers(&[("host", host), ("authorization", "Bearer t0k")]);
            assert!(rules.check(&ok).is_ok(), "{host}");
        }
        for host in [
            "evil.example:4500",
            "127.0.0.1:4501",
            "127.0.0.1",
            "[::1]:4500",
            "",
        ] {
            let bad = headers(&[("host", host), ("authorization", "Bearer t0k")]);
            assert!(
                matches!(rules.check(&bad), Err(ApiError::Forbidden(_))),
                "{host}"
            );
        }
        let origin = headers(&[
            ("host", "127.0.0.1:4500"),
            ("authorization", "Bearer t0k"),
            ("origin", "http://127.0.0.1:4500"),
        ]);
        assert!(matches!(rules.check(&origin), Err(ApiError::Forbidden(_))));
        for auth in ["Bearer t0kk", "Bearer ", "t0k", "Basic dDBr"] {
            let bad = headers(&[("host", "127.0.0.1:4500"), ("authorization", auth)]);
            assert!(
                matches!(rules.check(&bad), Err(ApiError::Unauthorized)),
                "{auth}"
            );
        }
        let none = headers(&[("host", "127.0.0.1:4500")]);
        assert!(matches!(rules.check(&none), Err(ApiError::Unauthorized)));
    }
}
