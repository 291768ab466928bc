//! What a connected server asks of rein and tells it: its tool list changed (listed again
//! by the supervisor), progress of a call (to the call that registered its token), and
//! elicitations (forms, asked of the user of the latest call under way; declined without
//! one). What rein says of itself in `initialize` is here too.

use std::sync::{Arc, PoisonError};

use rein_core::tools::Ask;
use rein_protocol::{ClientRequest, ClientResponse};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::ClientHandler;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::server::Shared;

/// Elicitations of one server asked of the user at most in any [`ELICITATION_WINDOW`];
/// more are declined without asking.
pub(crate) const ELICITATION_LIMIT: usize = 5;
pub(crate) const ELICITATION_WINDOW: Duration = Duration::from_secs(60);

/// Whether one more elicitation may be asked of the user now (and note it if so).
fn elicitation_allowed(asked: &Mutex<VecDeque<Instant>>) -> bool {
    let now = Instant::now();
    let mut asked = asked.lock().unwrap_or_else(PoisonError::into_inner);
    while asked
        .front()
        .is_some_and(|t| now.duration_since(*t) >= ELICITATION_WINDOW)
    {
        asked.pop_front();
    }
    if asked.len() >= ELICITATION_LIMIT {
        return false;
    }
    asked.push_back(now);
    true
}

/// What the server tells rein while connected.
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.tools_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let progress = self
            .shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = progress.get(&params.progress_token) {
            let _ = tx.send(params);
        }
    }

    /// A form for the user, asked through the client of the call under way; declined
    /// when there is none (or the server asks for a URL to be opened: not offered).
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let Some(ctx) = self.shared.current_call() else {
            tracing::info!(server = %self.shared.name, "MCP elicitation outside a tool call: declined");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        // Under `never` nobody is asked anything: declined, as Codex does.
        if ctx.settings.approval_policy == rein_protocol::ApprovalPolicy::Never {
            tracing::info!(server = %self.shared.name, "MCP elicitation under approval policy never: declined");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        if !elicitation_allowed(&self.shared.elicited) {
            tracing::warn!(server = %self.shared.name, "MCP elicitation past the rate limit: declined");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let request = ClientRequest::Elicitation {
            server: self.shared.name.clone(),
            message,
            requested_schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
        };
        let answer = ctx
            .ask(Ask {
                request,
                session_grant: None,
            })
            .await;
        Ok(match answer {
            Ok(ClientResponse::Elicitation { action, content }) => {
                let result = ElicitResult::new(match action {
                    rein_protocol::ElicitationAction::Accept => ElicitationAction::Accept,
                    rein_protocol::ElicitationAction::Decline => ElicitationAction::Decline,
                    rein_protocol::ElicitationAction::Cancel => ElicitationAction::Cancel,
                });
                match content {
                    Some(content) if action == rein_protocol::ElicitationAction::Accept => {
                        result.with_content(content)
                    }
                    _ => result,
                }
            }
            // The turn ended first.
            _ => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        ClientConfig::new(
            capabilities,
            Implementation::new("rein", env!("CARGO_PKG_VERSION")),
        )
    }
}
