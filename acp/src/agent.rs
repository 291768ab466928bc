//! The connection's state and what each request does with the kernel. Handlers that wait
//! on the kernel run as spawned tasks (the SDK's dispatch loop must stay free, or
//! `session/cancel` would not be read while a prompt runs); every such task answers its
//! request itself and never fails the connection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, ClientCapabilities, CloseSessionRequest,
    CloseSessionResponse, ContentBlock, ContentChunk, ForkSessionRequest, ForkSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionConfigOption, SessionForkCapabilities, SessionId, SessionInfo, SessionInfoUpdate,
    SessionListCapabilities, SessionModeState, SessionNotification, SessionResumeCapabilities,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use rein_bootstrap::sessions::Persistence;
use rein_bootstrap::Kernel;
use rein_core::store::ListQuery;
use rein_core::tools::ClientCapabilities as ClientWork;
use rein_core::NewThread;
use rein_protocol::{
    InputMode, InputOutcome, Op, OpResult, SandboxOptions, SubmissionId, ThreadId, TurnId,
};

use crate::client_fs;
use crate::config::{Choices, MODEL};
use crate::mcp::ClientServers;
use crate::project::{one_line, Mode, Projector};
use crate::prompt::{self, Command};
use crate::session::{answer, Ending, PumpCmd, Session, Ticket};
use crate::steering::{self, SteeringOutcome, SteeringRequest, SteeringResponse};
use crate::tool_calls::TerminalDisplay;

mod goal;
mod turns;

/// How many sessions a `session/list` page holds.
const LIST_PAGE: usize = 50;

/// What one client connection shares between its handlers.
pub struct Agent {
    kernel: Arc<Kernel>,
    initialized: AtomicBool,
    display: Mutex<TerminalDisplay>,
    /// What the client does for the tools of every session's thread.
    client: Mutex<ClientWork>,
    sessions: Mutex<HashMap<ThreadId, Arc<Session>>>,
}

impl Agent {
    pub fn new(kernel: Arc<Kernel>) -> Arc<Self> {
        Arc::new(Self {
            kernel,
            initialized: AtomicBool::new(false),
            display: Mutex::new(TerminalDisplay::Text),
            client: Mutex::new(ClientWork::default()),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// `initialize`: what rein really does. Only the first one is answered.
    pub fn initialize(&self, request: &InitializeRequest) -> Result<InitializeResponse, Error> {
        if self.initialized.swap(true, Ordering::SeqCst) {
            return Err(invalid_request("the connection is initialized already"));
        }
        let client_terminals = self
            .kernel
            .config
            .as_ref()
            .is_some_and(|c| c.acp.client_terminals);
        let client = client_fs::capabilities_for(&request.client_capabilities, client_terminals);
        *lock(&self.client) = client;
        // Commands in the client's terminals are shown there, not as display-only terminals.
        *lock(&self.display) = if client.terminal {
            TerminalDisplay::Text
        } else {
            display_for(&request.client_capabilities)
        };
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new())
                    .fork(SessionForkCapabilities::new()),
            );
        Ok(InitializeResponse::new(request.protocol_version)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("rein", env!("CARGO_PKG_VERSION")).title("rein"))
            .meta(steering::advertised()))
    }

    fn ready(&self) -> Result<(), Error> {
        if self.initialized.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(invalid_request("initialize first"))
        }
    }

    fn display(&self) -> TerminalDisplay {
        *lock(&self.display)
    }

    fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        self.ready()?;
        let thread = thread_id(id)?;
        lock(&self.sessions).get(&thread).cloned().ok_or_else(|| {
            agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
        })
    }

    fn models(&self) -> Vec<String> {
        self.kernel
            .models
            .models()
            .into_iter()
            .map(|m| m.id)
            .collect()
    }

    /// Register a thread as a session, with the client's MCP servers, and start its pump.
    async fn open(
        &self,
        new: NewThread,
        servers: ClientServers,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        let state = new.handle.state().await.map_err(internal)?;
        let settings = state
            .settings
            .clone()
            .ok_or_else(|| internal("the thread has no settings"))?;
        let mcp = servers.attach(&new.handle, &settings).await;
        new.handle.set_client_capabilities(*lock(&self.client));
        let session = Session::start(
            new.handle,
            new.events,
            Choices::of(&settings),
            cx.clone(),
            self.display(),
            mcp,
            self.kernel.manager.subscribe_created(),
        );
        lock(&self.sessions).insert(session.thread, Arc::clone(&session));
        Ok(session)
    }

    /// What the client learns once a session is set up: the commands (rein's, then each
    /// skill of the session's directory as `/name`), the title.
    async fn announce(&self, session: &Session, title: Option<String>) {
        let mut commands = prompt::available();
        if let Some(settings) = session.handle.state().await.ok().and_then(|s| s.settings) {
            let skills = self.kernel.skills(settings.cwd).await;
            commands.extend(prompt::skill_commands(&skills.skills));
        }
        session.send(PumpCmd::Update(Box::new(
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
        )));
        if let Some(title) = title.filter(|t| !t.trim().is_empty()) {
            session.send(PumpCmd::Update(Box::new(SessionUpdate::SessionInfoUpdate(
                SessionInfoUpdate::new().title(one_line(&title)),
            ))));
        }
    }

    fn config_of(&self, session: &Session) -> (Vec<SessionConfigOption>, SessionModeState) {
        let choices = lock(&session.choices);
        (choices.options(&self.models()), choices.modes())
    }

    /// Answer a request that opened a session (new, load, resume, fork) with the response
    /// `build` makes of its configuration; then tell the client the session's commands and
    /// (`titled`) its title, after the answer as clients require.
    async fn answer_opened<T: agent_client_protocol::JsonRpcResponse>(
        &self,
        opened: Result<Arc<Session>, Error>,
        responder: Responder<T>,
        titled: bool,
        build: impl FnOnce(&Session, Vec<SessionConfigOption>, SessionModeState) -> T,
    ) {
        let session = match opened {
            Ok(session) => session,
            Err(e) => return reply(responder, Err(e)),
        };
        let (options, modes) = self.config_of(&session);
        if responder.respond(build(&session, options, modes)).is_ok() {
            let title = if titled {
                self.title_of(&session).await
            } else {
                None
            };
            self.announce(&session, title).await;
        }
    }

    pub async fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opened = async {
            self.ready()?;
            let cwd = absolute(&request.cwd, "cwd")?;
            let mut settings = self.kernel.default_settings(cwd);
            if !request.additional_directories.is_empty() {
                let mut roots = Vec::new();
                for dir in &request.additional_directories {
                    roots.push(absolute(dir, "additionalDirectories")?);
                }
                settings.sandbox_options = Some(SandboxOptions {
                    writable_roots: roots,
                    ..SandboxOptions::default()
                });
            }
            let servers = ClientServers::of(&request.mcp_servers)?;
            let new = self
                .kernel
                .start_thread(settings, Persistence::Rollout)
                .await
                .map_err(|e| invalid_params(&e.to_string()))?;
            self.open(new, servers, &cx).await
        }
        .await;
        self.answer_opened(opened, responder, false, |session, options, modes| {
            NewSessionResponse::new(session.acp_id.clone())
                .config_options(options)
                .modes(modes)
        })
        .await;
    }

    /// `session/load` (`replay`) and `session/resume`: the thread continues here; a load
    /// first replays its history as updates, from the rollout, writing nothing.
    async fn reopen(
        &self,
        id: &SessionId,
        replay: bool,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        self.ready()?;
        let thread = thread_id(id)?;
        let servers = ClientServers::of(servers)?;
        if lock(&self.sessions).contains_key(&thread) {
            return Err(invalid_request(
                "the session is open on this connection already",
            ));
        }
        let resumed = self.kernel.resume_thread(thread).await.map_err(|e| {
            let message = e.to_string();
            if message.contains("not found") {
                agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
            } else {
                invalid_request(&message)
            }
        })?;
        if replay {
            let loaded = self
                .kernel
                .store()
                .read(thread)
                .await
                .map_err(|e| internal(e.to_string()))?;
            let mut projector = Projector::new(Mode::Replay, self.display());
            for event in &loaded.events {
                for update in projector.project(event) {
                    cx.send_notification(SessionNotification::new(id.clone(), update))
                        .map_err(internal)?;
                }
            }
        }
        self.open(resumed.thread, servers, cx).await
    }

    async fn title_of(&self, session: &Session) -> Option<String> {
        let state = session.handle.state().await.ok()?;
        state.name.clone().or_else(|| {
            state.history.iter().find_map(|i| match i.as_ref() {
                rein_protocol::Item::UserMessage { .. } => i.message_text(),
                _ => None,
            })
        })
    }

    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opened = self
            .reopen(&request.session_id, true, &request.mcp_servers, &cx)
            .await;
        self.answer_opened(opened, responder, true, |_, options, modes| {
            LoadSessionResponse::new()
                .config_options(options)
                .modes(modes)
        })
        .await;
    }

    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opened = self
            .reopen(&request.session_id, false, &request.mcp_servers, &cx)
            .await;
        self.answer_opened(opened, responder, true, |_, options, modes| {
            ResumeSessionResponse::new()
                .config_options(options)
                .modes(modes)
        })
        .await;
    }

    pub async fn fork_session(
        &self,
        request: ForkSessionRequest,
        responder: Responder<ForkSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let forked = async {
            self.ready()?;
            let parent = thread_id(&request.session_id)?;
            let servers = ClientServers::of(&request.mcp_servers)?;
            let new = self
                .kernel
                .fork_thread(parent, None)
                .await
                .map_err(|e| invalid_request(&e.to_string()))?;
            self.open(new, servers, &cx).await
        }
        .await;
        self.answer_opened(forked, responder, true, |session, options, modes| {
            ForkSessionResponse::new(session.acp_id.clone())
                .config_options(options)
                .modes(modes)
        })
        .await;
    }

    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        self.ready()?;
        let cwd = match &request.cwd {
            Some(cwd) => Some(absolute(cwd, "cwd")?),
            None => None,
        };
        let page = self
            .kernel
            .store()
            .list(ListQuery {
                limit: LIST_PAGE,
                cursor: request.cursor.clone(),
                cwd,
                ..ListQuery::default()
            })
            .await
            .map_err(|e| invalid_params(&e.to_string()))?;
        let sessions = page
            .threads
            .iter()
            .map(|t| {
                let mut info = SessionInfo::new(t.thread_id.to_string(), t.cwd.clone())
                    .updated_at(rein_core::store::time::rfc3339_ms(t.updated_ms));
                if let Some(title) = t.name.clone().or_else(|| t.title.clone()) {
                    info = info.title(one_line(&title));
                }
                info
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(page.next_cursor))
    }

    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let session = self.session(&request.session_id)?;
        lock(&self.sessions).remove(&session.thread);
        let _ = session.handle.submit(Op::Interrupt).await;
        session.close().await;
        self.kernel.manager.shutdown_thread(session.thread).await;
        Ok(CloseSessionResponse::new())
    }

    pub fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self.session(&request.session_id)?;
        let models = self.models();
        let value = match request.value.as_value_id() {
            Some(v) => v.0.to_string(),
            None => return Err(invalid_params("a select option takes a value id")),
        };
        let mut choices = lock(&session.choices);
        choices
            .set(&request.config_id.0, &value, &models)
            .map_err(|m| invalid_params(&m))?;
        Ok(SetSessionConfigOptionResponse::new(
            choices.options(&models),
        ))
    }

    pub fn set_mode(
        &self,
        request: &SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&request.session_id)?;
        lock(&session.choices)
            .set_mode(&request.mode_id.0)
            .map_err(|m| invalid_params(&m))?;
        Ok(SetSessionModeResponse::new())
    }

    /// Every session's thread shut down, its rollout flushed: the end of the connection.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.close().await;
        }
        self.kernel.manager.shutdown_all().await;
    }
}

/// Zed's display-only terminals when the client asked for them, else fenced text.
fn display_for(capabilities: &ClientCapabilities) -> TerminalDisplay {
    let wants = capabilities
        .meta
        .as_ref()
        .and_then(|m| m.get("terminal_output"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if wants {
        TerminalDisplay::Meta
    } else {
        TerminalDisplay::Text
    }
}

/// Answer a request, logging a failure to send (the connection is going away).
pub fn reply<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, Error>,
) {
    if let Err(e) = responder.respond_with_result(result) {
        tracing::debug!("answer not sent: {e:?}");
    }
}

fn thread_id(id: &SessionId) -> Result<ThreadId, Error> {
    id.0.parse::<ThreadId>()
        .map_err(|_| invalid_params(&format!("sessionId {:?} is not a rein session id", id.0)))
}

fn absolute(path: &std::path::Path, field: &str) -> Result<PathBuf, Error> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Err(invalid_params(&format!(
            "{field}: {} is not an absolute path",
            path.display()
        )))
    }
}

pub fn invalid_params(message: &str) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

pub fn invalid_request(message: &str) -> Error {
    Error::new(ErrorCode::INVALID_REQUEST, message)
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, e.to_string())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
