//! Who may talk to a listener (`rein_bootstrap::admission`): the Origin, Host and token
//! rules the app-server's WebSocket and `rein serve` share.

use std::net::SocketAddr;

use http::HeaderMap;
use pretty_assertions::assert_eq;
use rein_bootstrap::admission::{Admission, Refusal};

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
    let rules = Admission::new(Some("t0k".into()), local, &["dev.box".into()]);
    for host in [
        "127.0.0.1:4500",
        "localhost:4500",
        "LOCALHOST:4500",
        "dev.box:4500",
    ] {
        let req = headers(&[("host", host), ("authorization", "Bearer t0k")]);
        assert_eq!(rules.check(&req), Ok(()), "{host}");
    }
    for host in [
        "evil.example:4500",
        "127.0.0.1:4501",
        "127.0.0.1",
        "[::1]:4500",
        "",
    ] {
        let req = headers(&[("host", host), ("authorization", "Bearer t0k")]);
        assert_eq!(rules.check(&req), Err(Refusal::Host), "{host}");
    }
    let no_host = headers(&[("authorization", "Bearer t0k")]);
    assert_eq!(rules.check(&no_host), Err(Refusal::Host));
    let with_origin = headers(&[
        ("host", "127.0.0.1:4500"),
        ("authorization", "Bearer t0k"),
        ("origin", "http://127.0.0.1:4500"),
    ]);
    assert_eq!(rules.check(&with_origin), Err(Refusal::Origin));
    for auth in ["Bearer t0", "Bearer t0kk", "t0k", "Basic t0k"] {
        let req = headers(&[("host", "127.0.0.1:4500"), ("authorization", auth)]);
        assert_eq!(rules.check(&req), Err(Refusal::Token), "{auth}");
    }
    let open = Admission::new(None, "[::1]:9".parse().unwrap(), &[]);
    assert_eq!(open.check(&headers(&[("host", "[::1]:9")])), Ok(()));
    assert_eq!(open.check(&headers(&[("host", "localhost:9")])), Ok(()));
}
