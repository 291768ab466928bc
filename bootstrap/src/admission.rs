//! Who may talk to one of rein's listeners (the app-server's WebSocket, `rein serve`'s
//! HTTP), checked on the request's headers before anything else is read. One set of rules
//! for both, so a fix to one is a fix to the other:
//!
//! - an `Origin` header is refused, whatever its value: browsers send one on every
//!   cross-site request and WebSocket upgrade and no IDE client or SDK does, so no web page
//!   the user opens can drive the agent, without an allow-list to get wrong (`null`
//!   origins, look-alike hosts, ports);
//! - the `Host` header must name the address the client connected to (`IP:PORT`, or
//!   `localhost:PORT` on loopback, or a name the user allowed): a page that rebinds its own
//!   DNS name to 127.0.0.1 sends its name and is refused;
//! - with a token, `Authorization: Bearer <token>` must carry it.

use std::net::SocketAddr;

use http::HeaderMap;

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("requests with an Origin header (web pages) are refused")]
    Origin,
    #[error("the Host header does not name this server")]
    Host,
    #[error("missing or wrong bearer token")]
    Token,
}

/// The rules for the sockets of one listener.
#[derive(Clone, Debug)]
pub struct Admission {
    token: Option<String>,
    port: u16,
    /// Host names (lower case, IPv6 without brackets) that name this server.
    names: Vec<String>,
}

impl Admission {
    /// For clients connected to `local`; `extra_hosts` are names the user allowed. Without
    /// a token, the token rule is off (the WebSocket listener's explicit `--no-auth`).
    pub fn new(token: Option<String>, local: SocketAddr, extra_hosts: &[String]) -> Self {
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

    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if headers.contains_key(http::header::ORIGIN) {
            return Err(Refusal::Origin);
        }
        let host = headers
            .get(http::header::HOST)
            .and_then(|v| v.to_str().ok());
        if !host.is_some_and(|h| self.names_us(h)) {
            return Err(Refusal::Host);
        }
        let Some(token) = &self.token else {
            return Ok(());
        };
        let given = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(given) if same_secret(given.trim().as_bytes(), token.as_bytes()) => Ok(()),
            _ => Err(Refusal::Token),
        }
    }

    /// Whether a `Host` header value names this server (port 80 when it gives none).
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
