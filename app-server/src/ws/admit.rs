//! Who may open a WebSocket session: the upgrade request passes the listeners' shared rules
//! (`rein_bootstrap::admission`: no `Origin`, a `Host` naming this server, the bearer
//! token) before any JSON-RPC is read. Codex's app-server refuses every `Origin` too. This
//! module turns a refusal into the HTTP answer tungstenite sends.

use rein_bootstrap::admission::Refusal;
use tokio_tungstenite::tungstenite::handshake::server::ErrorResponse;
use tokio_tungstenite::tungstenite::http::StatusCode;

/// The HTTP answer to a refused upgrade: 403 for a web page or a foreign `Host`, 401 for a
/// missing or wrong token.
pub fn refused(refusal: Refusal) -> ErrorResponse {
    let status = match refusal {
        Refusal::Origin | Refusal::Host => StatusCode::FORBIDDEN,
        Refusal::Token => StatusCode::UNAUTHORIZED,
    };
    let mut answer = ErrorResponse::new(Some(refusal.to_string()));
    *answer.status_mut() = status;
    answer
}
