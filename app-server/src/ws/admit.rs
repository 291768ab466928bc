//! Who may open a WebSocket session: the checks on the upgrade request, before any
//! JSON-RPC is read.
//!
//! - An `Origin` header is refused (403), whatever its value, as Codex's app-server does:
//!   browsers always send one on a WebSocket upgrade and no IDE client does, so any web
//!   page the user opens is kept out without an allow-list to get wrong (`null` origins,
//!   look-alike hosts, ports).
//! - The `Host` header must name the address the client connected to (`IP:PORT`, or
//!   `localhost:PORT` on loopback, or a name given with `--ws-allow-host`): a page that
//!   rebinds its own DNS name to 127.0.0.1 sends its name and is refused (403).
//! - With a token, `Authorization: Bearer <token>` must carry it (401 otherwise).

use std::net::SocketAddr;

use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};
use tokio_tungstenite::tungstenite::http::StatusCode;

/// Why an upgrade request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("requests with an Origin header (browsers) are refused")]
    Origin,
    #[error("the Host header does not name this server")]
    Host,
    #[error("missing or wrong bearer token")]
    Token,
}

impl Refusal {
    fn status(self) -> StatusCode {
        match self {
            Refusal::Origin | Refusal::Host => StatusCode::FORBIDDEN,
            Refusal::Token => StatusCode::UNAUTHORIZED,
        }
    }

    /// The HTTP answer tungstenite sends for it.
    pub fn response(self) -> ErrorResponse {
        let mut refused = ErrorResponse::new(Some(self.to_string()));
        *refused.status_mut() = self.status();
        refused
    }
}

/// The rules for one accepted socket.
#[derive(Clone, Debug)]
pub struct Admission {
    token: Option<String>,
    port: u16,
    /// Host names (lower case, IPv6 without brackets) that name this server.
    names: Vec<String>,
}

impl Admission {
    /// For a client connected to `local`; `extra_hosts` are names the user allowed.
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

    pub fn check(&self, req: &Request) -> Result<(), Refusal> {
        let headers = req.headers();
        if headers.contains_key("origin") {
            return Err(Refusal::Origin);
        }
        let host = headers.get("host").and_then(|v| v.to_str().ok());
        if !host.is_some_and(|h| self.names_us(h)) {
            return Err(Refusal::Host);
        }
        let Some(token) = &self.token else {
            return Ok(());
        };
        let given = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(given) if same_secret(given.as_bytes(), token.as_bytes()) => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().uri("/");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder.body(()).unwrap_or_default()
    }

    #[test]
    fn origin_host_and_token_rules() {
        let local: SocketAddr = "127.0.0.1:4500"
            .parse()
            .unwrap_or(SocketAddr::from(([0; 4], 0)));
        let rules = Admission::new(Some("t0k".into()), local, &["dev.box".into()]);
        let ok = [("host", "127.0.0.1:4500"), ("authorization", "Bearer t0k")];
        assert_eq!(rules.check(&request(&ok)), Ok(()));
        for host in ["localhost:4500", "LOCALHOST:4500", "dev.box:4500"] {
            let req = request(&[("host", host), ("authorization", "Bearer t0k")]);
            assert_eq!(rules.check(&req), Ok(()), "{host}");
        }
        for host in [
            "evil.example:4500",
            "127.0.0.1:4501",
            "127.0.0.1",
            "[::1]:4500",
            "",
        ] {
            let req = request(&[("host", host), ("authorization", "Bearer t0k")]);
            assert_eq!(rules.check(&req), Err(Refusal::Host), "{host}");
        }
        let no_host = request(&[("authorization", "Bearer t0k")]);
        assert_eq!(rules.check(&no_host), Err(Refusal::Host));
        let with_origin = [ok[0], ok[1], ("origin", "http://127.0.0.1:4500")];
        assert_eq!(rules.check(&request(&with_origin)), Err(Refusal::Origin));
        for auth in ["Bearer t0", "Bearer t0kk", "t0k", "Basic t0k"] {
            let req = request(&[ok[0], ("authorization", auth)]);
            assert_eq!(rules.check(&req), Err(Refusal::Token), "{auth}");
        }
        let v6 = Admission::new(None, "[::1]:9".parse().unwrap_or(local), &[]);
        assert_eq!(v6.check(&request(&[("host", "[::1]:9")])), Ok(()));
        assert_eq!(v6.check(&request(&[("host", "localhost:9")])), Ok(()));
    }
}
