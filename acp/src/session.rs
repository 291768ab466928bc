//! One ACP session = one rein thread. Its pump is the only task that talks to the client
//! about the session: it reads the thread's events in order, sends what the projector makes
//! of them as `session/update`s, asks the client for permissions, and answers the pending
//! `session/prompt`s when their turn ends — after the turn's last update, since both leave
//! from this one task, in order.
//!
//! A prompt is registered with the pump under the id of the submission that will start
//! its turn *before* it is submitted (a user turn's id is its submission's id), and the
//! pump takes commands before events, so no turn can end unseen by its prompt. A prompt
//! that steered a running turn is moved to that turn; one whose turn already ended is
//! answered from the few endings the pump remembers.
//!
//! Prompts take turns: a prompt holds the session's *line* from its submission until its
//! turn ends (the pump lets go of it after the answer), so one that arrives while a turn
//! runs waits for that turn and then starts its own. A `session/cancel` (or the close of
//! the session) cancels the running turn and every prompt still waiting in line. Adding to
//! the running turn is the `_session/steering` extension's job, not the prompt's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    PromptResponse, SessionId, SessionNotification, SessionUpdate, StopReason, TerminalId,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::Client;
use rein_bootstrap::client_mcp::ClientMcp;
use rein_core::{EventStream, ThreadCreated, ThreadHandle, ThreadOrigin};
use rein_protocol::{Event, EventMsg, Op, ThreadId, TurnAbortReason, TurnId};
use tokio::sync::{broadcast, mpsc, oneshot, OwnedMutexGuard};

use crate::client_fs;
use crate::config::Choices;
use crate::permission;
use crate::project::{Mode, Projector};
use crate::tool_calls::TerminalDisplay;

/// How many ended turns the pump remembers for prompts that arrive late.
const ENDINGS_KEPT: usize = 32;

/// A session the connection serves.
pub struct Session {
    pub thread: ThreadId,
    pub acp_id: SessionId,
    pub handle: ThreadHandle,
    /// What the client chose; applied with the next prompt.
    pub choices: Mutex<Choices>,
    pump: mpsc::UnboundedSender<PumpCmd>,
    /// The MCP servers the client gave this session; they stop with it.
    mcp: Option<ClientMcp>,
    /// Held by the prompt whose turn runs (see the module's doc).
    line: Arc<tokio::sync::Mutex<()>>,
    /// Bumped by each cancel and by the close: a prompt that waited in line across one
    /// is answered `cancelled` instead of starting.
    cancels: AtomicU64,
}

/// The count of cancels a prompt arrived after.
#[derive(Clone, Copy, Debug)]
pub struct Ticket(u64);

/// A place in a session's line: the prompt may start its turn.
pub struct Turn {
    _held: OwnedMutexGuard<()>,
}

/// How a turn ended, as a prompt is answered.
#[derive(Clone, Debug)]
pub enum Ending {
    Stopped(StopReason),
    Failed(String),
}

pub enum PumpCmd {
    /// Answer `responder` when `turn` ends, then leave the line (`place`).
    Await {
        turn: TurnId,
        responder: Responder<PromptResponse>,
        place: Option<Turn>,
    },
    /// The prompt registered under `from` steered `to` instead.
    Moved { from: TurnId, to: TurnId },
    /// The input of the prompt registered under `turn` was refused: answer it with `error`.
    Refused {
        turn: TurnId,
        error: agent_client_protocol::Error,
    },
    /// Send this update (a command's answer) in order with the others.
    Update(Box<SessionUpdate>),
    /// Answer a prompt that ran no turn (a command answered at once), after the updates
    /// sent before this, so the client has the command's message when the prompt ends.
    Answer {
        responder: Responder<PromptResponse>,
        ending: Ending,
    },
    /// The command of call `call_id` runs in the client's `terminal`: show it on the card.
    ClientTerminal {
        call_id: String,
        terminal: TerminalId,
    },
    /// The session is closed: answer what waits as cancelled and send nothing more.
    Close(oneshot::Sender<()>),
}

impl Session {
    /// Start the pump of `thread` on `events` (a subscription taken before anything could
    /// happen that the client must see).
    pub fn start(
        handle: ThreadHandle,
        events: EventStream,
        choices: Choices,
        cx: ConnectionTo<Client>,
        display: TerminalDisplay,
        mcp: Option<ClientMcp>,
        created: broadcast::Receiver<ThreadCreated>,
    ) -> Arc<Self> {
        let thread = handle.id();
        let acp_id = SessionId::new(thread.to_string());
        let (tx, rx) = mpsc::unbounded_channel();
        let pump = Pump {
            own: tx.downgrade(),
            session: acp_id.clone(),
            handle: handle.clone(),
            cx,
            projector: Projector::new(Mode::Live, display),
            waiting: HashMap::new(),
            ended: VecDeque::new(),
            asks: HashMap::new(),
            thread,
        };
        tokio::spawn(pump.run(events, rx, created));
        Arc::new(Self {
            thread,
            acp_id,
            handle,
            choices: Mutex::new(choices),
            pump: tx,
            mcp,
            line: Arc::default(),
            cancels: AtomicU64::new(0),
        })
    }

    /// Where a prompt joins the line: taken by the dispatch loop as the prompt arrives, so
    /// a cancel sent after it (and only such a cancel) cancels it.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.cancels.load(Ordering::SeqCst))
    }

    /// Wait for the turns ahead of the prompt of `ticket`; `None` when a cancel (or the
    /// close) came since, so the prompt is answered `cancelled` and starts nothing.
    pub async fn wait_in_line(&self, ticket: Option<Ticket>) -> Option<Turn> {
        let seen = ticket.unwrap_or_else(|| self.ticket()).0;
        let place = Arc::clone(&self.line).lock_owned().await;
        (self.cancels.load(Ordering::SeqCst) == seen).then_some(Turn { _held: place })
    }

    /// Cancel the prompts waiting in line (the running turn is the caller's to interrupt).
    pub fn cancel_waiting(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
    }

    pub fn send(&self, cmd: PumpCmd) {
        if self.pump.send(cmd).is_err() {
            tracing::debug!("session {}: the pump has stopped", self.acp_id);
        }
    }

    /// Stop the pump once every waiting prompt is answered (cancelled), then the client's
    /// MCP servers.
    pub async fn close(&self) {
        self.cancel_waiting();
        let (tx, rx) = oneshot::channel();
        self.send(PumpCmd::Close(tx));
        let _ = rx.await;
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }
}

/// A prompt waiting for its turn's end, and its place in line, let go once it is answered.
struct Waiter {
    responder: Responder<PromptResponse>,
    _place: Option<Turn>,
}

impl Waiter {
    fn answer(self, ending: &Ending) {
        answer(self.responder, ending);
    }
}

struct Pump {
    /// The pump's own commands, for work it starts (weak: the session's sender is what
    /// keeps it running).
    own: mpsc::WeakUnboundedSender<PumpCmd>,
    session: SessionId,
    handle: ThreadHandle,
    cx: ConnectionTo<Client>,
    projector: Projector,
    waiting: HashMap<TurnId, Vec<Waiter>>,
    ended: VecDeque<(TurnId, Ending)>,
    /// Permission requests and client work in flight, by the kernel's request id: dropping
    /// the sender stops waiting for the client (and cancels its request).
    asks: HashMap<String, oneshot::Sender<()>>,
    thread: ThreadId,
}

/// An event of a sub-agent of the session's thread.
type ChildNews = (ThreadId, EventMsg);

impl Pump {
    async fn run(
        mut self,
        mut events: EventStream,
        mut cmds: mpsc::UnboundedReceiver<PumpCmd>,
        created: broadcast::Receiver<ThreadCreated>,
    ) {
        let mut created = Some(created);
        // A thread that already has a task graph (a loaded session): its next change
        // shows the whole plan, not only what changed.
        if let Ok(state) = self.handle.state().await {
            if !state.task_graph.is_empty() {
                self.projector.seed_graph(state.task_graph, state.last_seq);
            }
        }
        let (news_tx, mut news) = mpsc::unbounded_channel::<ChildNews>();
        let closed = loop {
            tokio::select! {
                biased;
                cmd = cmds.recv() => match cmd {
                    Some(PumpCmd::Close(done)) => break Some(done),
                    Some(cmd) => self.on_cmd(cmd),
                    None => break None,
                },
                event = events.recv() => match event {
                    Some(event) => self.on_event(&event),
                    None => break None,
                },
                Some((child, msg)) = news.recv() => {
                    for update in self.projector.project_child(child, &msg) {
                        self.send(update);
                    }
                }
                thread = next_created(&mut created) => match thread {
                    Ok(thread) => {
                        if matches!(thread.origin, ThreadOrigin::Spawned { parent } if parent == self.thread) {
                            tokio::spawn(follow(thread.handle, news_tx.clone()));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("session {}: {n} thread creations missed", self.session);
                    }
                    Err(broadcast::error::RecvError::Closed) => created = None,
                },
            }
        };
        for (_, waiters) in self.waiting.drain() {
            for waiter in waiters {
                waiter.answer(&Ending::Stopped(StopReason::Cancelled));
            }
        }
        if let Some(done) = closed {
            let _ = done.send(());
        }
    }

    fn on_cmd(&mut self, cmd: PumpCmd) {
        match cmd {
            PumpCmd::Await {
                turn,
                responder,
                place,
            } => self.wait(
                turn,
                Waiter {
                    responder,
                    _place: place,
                },
            ),
            PumpCmd::Moved { from, to } => {
                for waiter in self.waiting.remove(&from).unwrap_or_default() {
                    self.wait(to, waiter);
                }
            }
            PumpCmd::Refused { turn, error } => {
                for waiter in self.waiting.remove(&turn).unwrap_or_default() {
                    if let Err(e) = waiter.responder.respond_with_error(error.clone()) {
                        tracing::debug!("prompt answer not sent: {e:?}");
                    }
                }
            }
            PumpCmd::Update(update) => self.send(*update),
            PumpCmd::Answer { responder, ending } => answer(responder, &ending),
            PumpCmd::ClientTerminal { call_id, terminal } => {
                let update = self.projector.client_terminal(&call_id, terminal);
                self.send(SessionUpdate::ToolCallUpdate(update));
            }
            PumpCmd::Close(_) => {}
        }
    }

    fn wait(&mut self, turn: TurnId, waiter: Waiter) {
        match self.ended.iter().find(|(t, _)| *t == turn) {
            Some((_, ending)) => waiter.answer(ending),
            None => self.waiting.entry(turn).or_default().push(waiter),
        }
    }

    fn on_event(&mut self, event: &Event) {
        for update in self.projector.project(event) {
            self.send(update);
        }
        let ending = match &event.msg {
            EventMsg::TurnCompleted { .. } => Ending::Stopped(StopReason::EndTurn),
            EventMsg::TurnAborted { reason } => Ending::Stopped(match reason {
                TurnAbortReason::Interrupted | TurnAbortReason::Replaced => StopReason::Cancelled,
                TurnAbortReason::BudgetLimited => StopReason::MaxTurnRequests,
                TurnAbortReason::ReviewEnded => StopReason::EndTurn,
            }),
            EventMsg::TurnFailed { message, .. } => Ending::Failed(message.clone()),
            EventMsg::ClientRequested {
                request_id,
                call_id,
                request,
            } => {
                self.ask(request_id, call_id, request);
                return;
            }
            EventMsg::ClientRequestResolved { request_id, .. } => {
                self.asks.remove(request_id);
                return;
            }
            _ => return,
        };
        let Some(turn) = event.turn_id else {
            return;
        };
        for waiter in self.waiting.remove(&turn).unwrap_or_default() {
            waiter.answer(&ending);
        }
        if self.ended.len() == ENDINGS_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back((turn, ending));
    }

    /// Ask the client for a permission; its answer goes to the thread. A question (which
    /// ACP has no stable way to ask) gets no answers.
    fn ask(&mut self, request_id: &str, call_id: &str, request: &rein_protocol::ClientRequest) {
        let handle = self.handle.clone();
        let request_id = request_id.to_owned();
        if request.is_client_work() {
            let (stop, stopped) = oneshot::channel();
            self.asks.insert(request_id.clone(), stop);
            let work = client_fs::Work {
                session: self.session.clone(),
                cx: self.cx.clone(),
                handle,
                request_id,
                call_id: call_id.to_owned(),
                pump: self.own.clone(),
                stopped,
            };
            client_fs::start(work, request.clone());
            return;
        }
        let Some(asking) = permission::request_for(
            &self.session,
            call_id,
            self.projector.open_action(call_id),
            request,
        ) else {
            tokio::spawn(respond(handle, request_id, request.unanswered()));
            return;
        };
        let (stop, stopped) = oneshot::channel();
        self.asks.insert(request_id.clone(), stop);
        let sent = self.cx.send_request(asking).block_task();
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = sent => answer,
                // Answered or cancelled in the thread (the turn ended): dropping `sent`
                // cancels the client's request.
                _ = stopped => return,
            };
            if let Err(e) = &answer {
                tracing::warn!("permission request {request_id}: {e:?}");
            }
            let decision = permission::decision_of(answer.as_ref().ok());
            respond(handle, request_id, permission::response(decision)).await;
        });
    }

    fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session.clone(), update);
        if let Err(e) = self.cx.send_notification(notification) {
            tracing::debug!("session {}: update not sent: {e:?}", self.session);
        }
    }
}

async fn next_created(
    created: &mut Option<broadcast::Receiver<ThreadCreated>>,
) -> Result<ThreadCreated, broadcast::error::RecvError> {
    match created {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Forward what sub-agent `child` says to the pump, from its beginning: the answers it
/// gave before the subscription are read from its state (the card drops repeats).
async fn follow(child: ThreadHandle, news: mpsc::UnboundedSender<ChildNews>) {
    let id = child.id();
    let mut events = child.subscribe();
    if let Ok(state) = child.state().await {
        for item in &state.history {
            let msg = EventMsg::ItemCompleted {
                item: item.as_ref().clone(),
            };
            if news.send((id, msg)).is_err() {
                return;
            }
        }
    }
    while let Some(event) = events.recv().await {
        if news.send((id, event.msg.clone())).is_err() {
            return;
        }
    }
}

async fn respond(
    handle: ThreadHandle,
    request_id: String,
    response: rein_protocol::ClientResponse,
) {
    let op = Op::Respond {
        request_id,
        response,
    };
    if let Err(e) = handle.submit(op).await {
        tracing::debug!("client response: {e}");
    }
}

/// Answer a prompt with how its turn ended: a stop reason, or the turn's error.
pub fn answer(responder: Responder<PromptResponse>, ending: &Ending) {
    let sent = match ending {
        Ending::Stopped(reason) => responder.respond(PromptResponse::new(*reason)),
        Ending::Failed(message) => responder.respond_with_error(agent_client_protocol::Error::new(
            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
            message.clone(),
        )),
    };
    if let Err(e) = sent {
        tracing::debug!("prompt answer not sent: {e:?}");
    }
}
