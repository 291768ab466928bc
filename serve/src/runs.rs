//! The threads this server drives, and how a response starts, is found and is cancelled.
//!
//! Each thread loaded here has one driver task (`crate::driver`), subscribed for its life: it
//! answers what the thread asks a client (approvals, questions) with the answer for when
//! nobody can give one, so a request that would need an approval is declined under the
//! configured policy, never run, and a background run never waits for a person. It also
//! counts the turns running, for the concurrency limit, and unloads the thread once it has
//! been idle a while, so its rollout is free for the other front ends.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rein_bootstrap::sessions::Persistence;
use rein_bootstrap::Kernel;
use rein_core::error::KernelError;
use rein_core::recorder::RecorderError;
use rein_core::store::RolloutError;
use rein_core::{EventStream, NewThread, ThreadError, ThreadHandle};
use rein_protocol::{
    ApprovalDecision, ClientRequest, ClientResponse, Event, EventMsg, InputMode, InputOutcome,
    InputPart, Op, OpResult, RejectReason, SettingsChange, SubmissionId, ThreadId, TurnId,
};
use tokio::sync::{watch, Mutex};

use crate::error::ApiError;
use crate::ids::ResponseId;
use crate::records::{Records, ResponseRecord};
use crate::request::CreateResponse;

/// A thread loaded by this server.
pub struct Loaded {
    pub handle: ThreadHandle,
    /// The last turns its driver counted as running.
    pub(crate) counted: watch::Sender<VecDeque<TurnId>>,
}

/// How many of a thread's last counted turns are remembered for the starts waiting on them.
pub(crate) const COUNTED_KEPT: usize = 64;

/// One start being admitted, until dropped.
struct Admitting<'a>(&'a AtomicUsize);

impl Drop for Admitting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A turn just started: its id, the response it continues, and a subscription opened
/// before it started (so it holds every event of the turn).
pub struct Started {
    pub id: ResponseId,
    pub previous: Option<ResponseId>,
    pub events: EventStream,
}

pub struct Runs {
    kernel: Arc<Kernel>,
    cwd: PathBuf,
    loaded: Threads,
    /// Held while a thread is read back from its rollout.
    loading: Mutex<()>,
    running: Arc<AtomicUsize>,
    /// Starts between the concurrency check and their turn's being counted.
    admitting: AtomicUsize,
    max_runs: usize,
    idle_unload: Duration,
    approvals: Approvals,
    records: Records,
}

/// Who answers a command's or a patch's approval request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approvals {
    /// Nobody: it is declined at once (the tool fails back to the model with the reason).
    #[default]
    Decline,
    /// The client, through `POST /v1/responses/{id}/approvals/{request_id}`; the turn
    /// waits until then.
    Http,
}

/// The threads loaded here, by id.
pub(crate) type Threads = Arc<Mutex<HashMap<ThreadId, Arc<Loaded>>>>;

/// The thread a start found was shut down under it (unloaded while idle): load it again.
struct Unloaded;

impl Runs {
    /// `idle_unload`: how long a thread stays loaded after its turn ends with no other
    /// starting (its rollout is then free for `rein exec resume` and the other front ends).
    pub fn new(
        kernel: Arc<Kernel>,
        cwd: PathBuf,
        max_runs: usize,
        idle_unload: Duration,
        approvals: Approvals,
    ) -> Self {
        Self {
            approvals,
            records: Records::in_home(&kernel.home),
            kernel,
            cwd,
            loaded: Arc::new(Mutex::new(HashMap::new())),
            loading: Mutex::new(()),
            running: Arc::new(AtomicUsize::new(0)),
            admitting: AtomicUsize::new(0),
            max_runs,
            idle_unload,
        }
    }

    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }

    /// What the server records beside the rollouts.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// Start the turn `req` asks for.
    pub async fn start(
        &self,
        req: &CreateResponse,
        parts: Vec<InputPart>,
    ) -> Result<Started, ApiError> {
        let _admitted = self.admit()?;
        let started = match self.start_once(req, parts.clone()).await? {
            Ok(started) => started,
            // Unloaded between finding it and submitting: once more, loading it again.
            Err(Unloaded) => self
                .start_once(req, parts)
                .await?
                .map_err(|Unloaded| ApiError::Conflict("the thread shut down; try again".into()))?,
        };
        // Counted as running (by its driver) before it stops counting as admitted.
        self.counted(started.id.thread, started.id.turn).await;
        Ok(started)
    }

    /// Starts in flight count with the running turns, so a burst of requests cannot all
    /// pass the check before any of their turns is counted.
    fn admit(&self) -> Result<Admitting<'_>, ApiError> {
        let admitting = self.admitting.fetch_add(1, Ordering::SeqCst);
        let admitted = Admitting(&self.admitting);
        if admitting + self.running.load(Ordering::SeqCst) >= self.max_runs {
            return Err(ApiError::TooManyRuns(format!(
                "{} runs are in progress, the most this server takes (--max-runs)",
                self.max_runs
            )));
        }
        Ok(admitted)
    }

    /// Start a turn of `thread` (loaded from its rollout if need be) with `turn` as its
    /// id, if the thread is idle: the Agent Protocol's runs, whose id is chosen before the
    /// turn starts (a queued run has one already).
    pub async fn start_on(
        &self,
        thread: ThreadId,
        turn: TurnId,
        parts: Vec<InputPart>,
    ) -> Result<Started, ApiError> {
        let _admitted = self.admit()?;
        let started = match self.submit_on(thread, turn, parts.clone()).await? {
            Ok(started) => started,
            Err(Unloaded) => self
                .submit_on(thread, turn, parts)
                .await?
                .map_err(|Unloaded| ApiError::Conflict("the thread shut down; try again".into()))?,
        };
        self.counted(started.id.thread, started.id.turn).await;
        Ok(started)
    }

    async fn submit_on(
        &self,
        thread: ThreadId,
        turn: TurnId,
        parts: Vec<InputPart>,
    ) -> Result<Result<Started, Unloaded>, ApiError> {
        let loaded = self.thread(thread).await?;
        let previous = loaded
            .handle
            .state()
            .await
            .ok()
            .and_then(|s| s.turns.last().map(|t| ResponseId { thread, turn: t.id }));
        let events = loaded.handle.subscribe();
        let answer = loaded
            .handle
            .submit_with_id(
                SubmissionId::from_uuid(turn.as_uuid()),
                Op::UserInput {
                    items: parts,
                    mode: InputMode::StartIfIdle,
                    settings: SettingsChange::default(),
                    output_schema: None,
                },
            )
            .await;
        started_from(answer, thread, previous, events)
    }

    /// A new thread with the configured settings, recorded and then unloaded (its first
    /// run loads it back): the Agent Protocol's `POST /threads`.
    pub async fn create_thread(&self) -> Result<ThreadId, ApiError> {
        let settings = self.kernel.default_settings(self.cwd.clone());
        let thread = self
            .kernel
            .start_thread(settings, Persistence::Rollout)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let id = thread.handle.id();
        // Idle from birth: nothing would unload it until a turn had run.
        if let Err(e) = thread.handle.shutdown().await {
            return Err(ApiError::Internal(format!("recording thread {id}: {e}")));
        }
        Ok(id)
    }

    /// Unload `thread` if it is loaded and idle; `false` while a turn runs.
    pub async fn unload_idle(&self, thread: ThreadId) -> bool {
        match self.loaded(thread).await {
            None => true,
            Some(loaded) => unload(&loaded.handle, &self.loaded).await,
        }
    }

    /// Resolves once the driver of `thread` has counted `turn` (or the thread is gone).
    async fn counted(&self, thread: ThreadId, turn: TurnId) {
        let Some(loaded) = self.loaded(thread).await else {
            return;
        };
        let mut seen = loaded.counted.subscribe();
        // Bounded: should the driver miss it, the turn just counts late.
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            seen.wait_for(|recent| recent.contains(&turn)),
        )
        .await;
    }

    async fn start_once(
        &self,
        req: &CreateResponse,
        parts: Vec<InputPart>,
    ) -> Result<Result<Started, Unloaded>, ApiError> {
        let (loaded, previous, change) = match &req.previous_response_id {
            None => (self.new_thread(req).await?, None, SettingsChange::default()),
            Some(prev) => {
                let prev: ResponseId = prev.parse().map_err(|e: crate::ids::NotAnId| {
                    ApiError::NotFound(format!("previous_response_id: {e}"))
                })?;
                if req.instructions.is_some() {
                    return Err(ApiError::bad(
                        "`instructions` apply to a new thread; a continued one keeps its own",
                        Some("instructions"),
                    ));
                }
                let loaded = self.thread(prev.thread).await?;
                if let Err(Unloaded) = self.check_latest(&loaded, prev).await? {
                    return Ok(Err(Unloaded));
                }
                let change = SettingsChange {
                    model: req.model.clone(),
                    ..SettingsChange::default()
                };
                (loaded, Some(prev), change)
            }
        };
        // The turn's id is chosen here so that its record is durable before the turn
        // exists: a crash never leaves a response whose metadata is lost. Only a response
        // with something to record has one (no metadata, not in the background: no file,
        // and no fsync on the way to the common turn).
        let id = ResponseId {
            thread: loaded.handle.id(),
            turn: TurnId::from(SubmissionId::new()),
        };
        let recorded = req.record != ResponseRecord::default();
        if recorded {
            self.records.put_response(id, &req.record).await?;
        }
        let events = loaded.handle.subscribe();
        let answer = loaded
            .handle
            .submit_with_id(
                SubmissionId::from_uuid(id.turn.as_uuid()),
                Op::UserInput {
                    items: parts,
                    mode: InputMode::StartIfIdle,
                    settings: change,
                    output_schema: None,
                },
            )
            .await;
        let started = started_from(answer, id.thread, previous, events);
        if recorded && !matches!(started, Ok(Ok(_))) {
            // Never started: no response of that id exists, so neither does its record.
            if let Err(e) = self.records.remove_response(id).await {
                tracing::warn!("removing the record of {id}: {e}");
            }
        }
        started
    }

    async fn new_thread(&self, req: &CreateResponse) -> Result<Arc<Loaded>, ApiError> {
        let mut settings = self.kernel.default_settings(self.cwd.clone());
        if let Some(model) = &req.model {
            settings.model.clone_from(model);
        }
        if let Some(extra) = &req.instructions {
            settings.instructions = if settings.instructions.trim().is_empty() {
                extra.clone()
            } else {
                format!("{}\n\n{extra}", settings.instructions)
            };
        }
        let thread = self
            .kernel
            .start_thread(settings, Persistence::Rollout)
            .await
            .map_err(|e| match e {
                KernelError::UnknownModel(e) => ApiError::bad(e.to_string(), Some("model")),
                other => ApiError::Internal(other.to_string()),
            })?;
        let loaded = self.adopt(thread);
        self.loaded
            .lock()
            .await
            .insert(loaded.handle.id(), Arc::clone(&loaded));
        Ok(loaded)
    }

    /// The thread, loaded here (from its rollout if need be).
    pub async fn thread(&self, thread: ThreadId) -> Result<Arc<Loaded>, ApiError> {
        if let Some(found) = self.loaded(thread).await {
            return Ok(found);
        }
        // One resume at a time, so a thread is never loaded twice; the map itself stays
        // free meanwhile (every request looks there).
        let _one_at_a_time = self.loading.lock().await;
        if let Some(found) = self.loaded(thread).await {
            return Ok(found);
        }
        let resumed = self
            .kernel
            .resume_thread(thread)
            .await
            .map_err(|e| match e {
                KernelError::Rollout(RolloutError::ThreadNotFound(_)) => {
                    ApiError::NotFound(format!("no response of thread {thread}"))
                }
                KernelError::Rollout(RolloutError::Recorder(RecorderError::Locked {
                    holder,
                    ..
                })) => ApiError::Conflict(format!(
                    "the thread is in use by another rein process ({holder})"
                )),
                other => ApiError::Internal(other.to_string()),
            })?;
        let new = self.adopt(resumed.thread);
        self.loaded.lock().await.insert(thread, Arc::clone(&new));
        Ok(new)
    }

    /// The loaded thread, if this server has it.
    pub async fn loaded(&self, thread: ThreadId) -> Option<Arc<Loaded>> {
        self.loaded
            .lock()
            .await
            .get(&thread)
            .filter(|l| !l.handle.is_closed())
            .cloned()
    }

    /// Whether `id`'s turn is running in this process.
    pub async fn is_running(&self, id: ResponseId) -> bool {
        let Some(loaded) = self.loaded(id.thread).await else {
            return false;
        };
        match loaded.handle.state().await {
            Ok(state) => state.active_turn.is_some_and(|t| t.id == id.turn),
            Err(_) => false,
        }
    }

    /// A continued response must be its thread's latest: rein's threads are linear.
    async fn check_latest(
        &self,
        loaded: &Loaded,
        prev: ResponseId,
    ) -> Result<Result<(), Unloaded>, ApiError> {
        let Ok(state) = loaded.handle.state().await else {
            return Ok(Err(Unloaded));
        };
        let turns: Vec<TurnId> = state.turns.iter().map(|t| t.id).collect();
        if !turns.contains(&prev.turn) {
            return Err(ApiError::NotFound(format!("no response {prev}")));
        }
        if turns.last() != Some(&prev.turn) {
            return Err(ApiError::bad(
                format!(
                    "{prev} is not the latest response of its thread; continue from the latest"
                ),
                Some("previous_response_id"),
            ));
        }
        Ok(Ok(()))
    }

    fn adopt(&self, thread: NewThread) -> Arc<Loaded> {
        let NewThread { handle, events, .. } = thread;
        let loaded = Arc::new(Loaded {
            handle,
            counted: watch::Sender::new(VecDeque::new()),
        });
        tokio::spawn(crate::driver::drive(
            Arc::clone(&loaded),
            events,
            Arc::clone(&self.running),
            Arc::clone(&self.loaded),
            self.idle_unload,
            self.approvals,
        ));
        loaded
    }

    /// Interrupt `id`'s turn if it runs here; resolves once it has ended.
    pub async fn cancel(&self, id: ResponseId) -> Result<bool, ApiError> {
        let Some(loaded) = self.loaded(id.thread).await else {
            return Ok(false);
        };
        let mut events = loaded.handle.subscribe();
        if !self.is_running(id).await {
            return Ok(false);
        }
        loaded
            .handle
            .submit(Op::Interrupt)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        while let Some(event) = events.recv().await {
            if event.turn_id == Some(id.turn) && ends_turn(&event) {
                break;
            }
        }
        Ok(true)
    }

    /// Answer the open approval request `request_id` of `id`'s running turn; resolves once
    /// the answer is recorded.
    pub async fn approve(
        &self,
        id: ResponseId,
        request_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), ApiError> {
        let not_open =
            || ApiError::NotFound(format!("{id} has no open approval request {request_id:?}"));
        let loaded = self.loaded(id.thread).await.ok_or_else(not_open)?;
        let mut events = loaded.handle.subscribe();
        let state = loaded.handle.state().await.map_err(|_| not_open())?;
        let open = state.active_turn.as_ref().is_some_and(|t| t.id == id.turn)
            && state.open_requests.get(request_id).is_some_and(is_approval);
        if !open {
            return Err(not_open());
        }
        loaded
            .handle
            .submit(Op::Respond {
                request_id: request_id.to_owned(),
                response: ClientResponse::Decision { decision },
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        while let Some(event) = events.recv().await {
            match &event.msg {
                EventMsg::ClientRequestResolved { request_id: r, .. } if r == request_id => break,
                _ if event.turn_id == Some(id.turn) && ends_turn(&event) => break,
                _ => {}
            }
        }
        Ok(())
    }

    /// Shut every thread down (their rollouts flushed).
    pub async fn shutdown(&self) {
        self.kernel.shutdown().await;
    }
}

/// What a submitted input became: a started turn, or why not.
fn started_from(
    answer: Result<OpResult, ThreadError>,
    thread: ThreadId,
    previous: Option<ResponseId>,
    events: EventStream,
) -> Result<Result<Started, Unloaded>, ApiError> {
    match answer {
        Err(ThreadError::Closed(_)) => Ok(Err(Unloaded)),
        Ok(OpResult::Input(InputOutcome::Started { turn_id })) => Ok(Ok(Started {
            id: ResponseId {
                thread,
                turn: turn_id,
            },
            previous,
            events,
        })),
        Ok(OpResult::Input(InputOutcome::Rejected { reason })) => Err(rejected(reason)),
        Ok(other) => Err(ApiError::Internal(format!("unexpected answer {other:?}"))),
    }
}

pub fn ends_turn(event: &Event) -> bool {
    matches!(
        event.msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}

fn rejected(reason: RejectReason) -> ApiError {
    match reason {
        RejectReason::Busy { .. } | RejectReason::NotSteerable { .. } => ApiError::Conflict(
            format!("the thread is running a turn already: {reason}; wait for it or cancel it"),
        ),
        RejectReason::InvalidSettings { message } => ApiError::bad(message, Some("model")),
        RejectReason::EmptyInput => ApiError::bad("`input` is empty", Some("input")),
        other => ApiError::Conflict(other.to_string()),
    }
}

pub(crate) fn is_approval(request: &ClientRequest) -> bool {
    request.is_approval()
}

/// Shut an idle thread down and forget it; `false` if it is busy after all.
pub(crate) async fn unload(handle: &ThreadHandle, threads: &Threads) -> bool {
    let mut loaded = threads.lock().await;
    let idle = handle
        .state()
        .await
        .is_ok_and(|s| s.active_turn.is_none() && handle.queued() == 0);
    if !idle {
        return false;
    }
    loaded.remove(&handle.id());
    drop(loaded);
    if let Err(e) = handle.shutdown().await {
        tracing::debug!("unloading {}: {e}", handle.id());
    }
    true
}
