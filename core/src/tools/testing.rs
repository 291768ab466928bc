//! A [`ToolHost`] that records what tools emit and answers approval requests from a
//! script, keeping each thread's tool state (terminals, session grants) as a thread's loop
//! would. Used by unit and integration tests, and handy for embedding tools without a
//! thread loop.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use rein_protocol::{
    ApprovalDecision, ClientRequest, ClientResponse, EventMsg, ThreadId, ThreadSettings, TurnId,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Ask, ThreadTools, ToolCall, ToolContext, ToolEvent, ToolHost};

/// How the host answers the next approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptedAnswer {
    Decide(ApprovalDecision),
    /// Never answer (the sender is kept alive): the request stays parked.
    Park,
    /// Drop the sender: the request resolves as cancelled.
    Drop,
}

#[derive(Default)]
struct Inner {
    events: Vec<EventMsg>,
    requests: Vec<ClientRequest>,
    answers: VecDeque<ScriptedAnswer>,
    /// Parked requests by request index, until answered, with their thread and grant.
    parked: Vec<(usize, Parked)>,
    /// Woken whenever a request arrives.
    arrived: Arc<tokio::sync::Notify>,
    threads: HashMap<ThreadId, Arc<ThreadTools>>,
}

struct Parked {
    thread: ThreadId,
    ask: Ask,
    reply: oneshot::Sender<ClientResponse>,
}

/// Records events; answers approvals in order from a queue (denies when it runs out).
#[derive(Default, Clone)]
pub struct RecordingHost {
    inner: Arc<Mutex<Inner>>,
}

impl RecordingHost {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue answers for the next approval requests.
    pub fn answering(self, answers: impl IntoIterator<Item = ScriptedAnswer>) -> Self {
        self.lock().answers.extend(answers);
        self
    }

    pub fn events(&self) -> Vec<EventMsg> {
        self.lock().events.clone()
    }

    pub fn approval_requests(&self) -> Vec<ClientRequest> {
        self.lock().requests.clone()
    }

    /// The tool state of `thread` (created on first use), as its loop would keep it.
    pub fn thread_tools(&self, thread: ThreadId) -> Arc<ThreadTools> {
        Arc::clone(self.lock().threads.entry(thread).or_default())
    }

    /// Forget `thread`'s tool state (its terminals die, its grants are gone), as when a
    /// thread ends; a later context of it starts afresh.
    pub fn forget_thread(&self, thread: ThreadId) {
        let removed = self.lock().threads.remove(&thread);
        if let Some(tools) = removed {
            tools.shutdown();
        }
    }

    /// Wait until at least `n` approval requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let arrived = Arc::clone(&self.lock().arrived);
            let notified = arrived.notified();
            if self.lock().requests.len() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Answer the parked request that arrived `index`-th (0-based). Returns whether such a
    /// request was still parked.
    pub fn answer_parked(&self, index: usize, decision: ApprovalDecision) -> bool {
        let parked = {
            let mut inner = self.lock();
            match inner.parked.iter().position(|(i, _)| *i == index) {
                Some(pos) => inner.parked.remove(pos).1,
                None => return false,
            }
        };
        self.decide(parked.thread, &parked.ask, decision);
        parked
            .reply
            .send(ClientResponse::Decision { decision })
            .is_ok()
    }

    /// What the loop does with a decision: an approval for the session adds its grant to
    /// the thread's grants before the call is woken.
    fn decide(&self, thread: ThreadId, ask: &Ask, decision: ApprovalDecision) {
        if decision != ApprovalDecision::ApproveForSession {
            return;
        }
        if let Some(grant) = &ask.session_grant {
            let tools = self.thread_tools(thread);
            let mut grants = (*tools.grants()).clone();
            grants.grant(grant);
            tools.set_grants(grants);
        }
    }

    /// The concatenated output deltas of one call.
    pub fn output_of(&self, call_id: &str) -> String {
        self.lock()
            .events
            .iter()
            .filter_map(|e| match e {
                EventMsg::ToolOutputDelta { call_id: c, delta } if c == call_id => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect()
    }

    /// A context for one call of a thread/turn using this host.
    pub fn context(
        &self,
        thread_id: ThreadId,
        settings: ThreadSettings,
        cancel: CancellationToken,
    ) -> ToolContext {
        ToolContext::new(
            (thread_id, TurnId::new(), "call-1".to_owned()),
            Arc::new(settings),
            cancel,
            Arc::new(ThreadHost {
                host: self.clone(),
                thread: thread_id,
            }),
        )
        .with_thread(self.thread_tools(thread_id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The host as one thread's calls see it.
struct ThreadHost {
    host: RecordingHost,
    thread: ThreadId,
}

impl ToolHost for ThreadHost {
    fn emit(&self, call_id: &str, event: ToolEvent) {
        self.host.lock().events.push(event.into_event(call_id));
    }

    fn ask(&self, _call_id: String, ask: Ask) -> oneshot::Receiver<ClientResponse> {
        let (tx, rx) = oneshot::channel();
        let answer = {
            let mut inner = self.host.lock();
            let index = inner.requests.len();
            inner.requests.push(ask.request.clone());
            inner.arrived.notify_waiters();
            let answer = inner
                .answers
                .pop_front()
                .unwrap_or(ScriptedAnswer::Decide(ApprovalDecision::Deny));
            if answer == ScriptedAnswer::Park {
                inner.parked.push((
                    index,
                    Parked {
                        thread: self.thread,
                        ask,
                        reply: tx,
                    },
                ));
                return rx;
            }
            answer
        };
        match answer {
            ScriptedAnswer::Decide(decision) => {
                self.host.decide(self.thread, &ask, decision);
                let _ = tx.send(ClientResponse::Decision { decision });
            }
            ScriptedAnswer::Park | ScriptedAnswer::Drop => drop(tx),
        }
        rx
    }
}

/// A call of `name` with the given JSON arguments.
pub fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        call_id: "call-1".to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_string(),
    }
}

/// Settings for a thread working in `cwd`.
pub fn settings(
    cwd: &std::path::Path,
    approval: rein_protocol::ApprovalPolicy,
    sandbox: rein_protocol::SandboxPolicy,
) -> ThreadSettings {
    ThreadSettings {
        model: "test".to_owned(),
        cwd: cwd.to_path_buf(),
        approval_policy: approval,
        sandbox_policy: sandbox,
        sandbox_options: None,
        reasoning_effort: None,
        budget: rein_protocol::TurnBudget::default(),
        instructions: String::new(),
    }
}

/// The first of `candidates` that exists and lies outside the temp dir and `/tmp`
/// (which workspace-write leaves writable), for tests that need a place the sandbox
/// must not let a command write to. Links are resolved before comparing.
pub fn base_outside_temp<'a>(
    candidates: impl IntoIterator<Item = &'a std::path::Path>,
) -> Option<std::path::PathBuf> {
    let temp_roots: Vec<std::path::PathBuf> = [std::env::temp_dir(), "/tmp".into()]
        .into_iter()
        .filter_map(|t| t.canonicalize().ok())
        .collect();
    candidates
        .into_iter()
        .filter_map(|c| c.canonicalize().ok())
        .find(|c| !temp_roots.iter().any(|t| c.starts_with(t)))
}

/// Every file and directory under `root` with its content (`<dir>` for directories),
/// sorted: the whole observable state of a tree, for tests that prove nothing changed.
/// Unreadable entries show the error instead of their content.
pub fn tree_snapshot(root: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                out.push((path.display().to_string(), "<dir>".to_owned()));
                stack.push(path);
            } else {
                let content = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("<{e}>"));
                out.push((path.display().to_string(), content));
            }
        }
    }
    out.sort();
    out
}

/// A FIFO whose writer pours one endless line into it for as long as anyone reads.
pub struct EndlessFifo {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    path: std::path::PathBuf,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EndlessFifo {
    /// Makes the FIFO at `path` and starts its writer.
    ///
    /// # Panics
    /// When the FIFO cannot be made (tests only).
    pub fn start(path: &std::path::Path) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        make_fifo(path);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (stop, path) = (stop.clone(), path.to_owned());
            move || {
                let chunk = vec![b'x'; 64 * 1024];
                while !stop.load(Ordering::Relaxed) {
                    // Blocks until a reader opens the FIFO; then writes until it closes.
                    let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&path) else {
                        return;
                    };
                    while !stop.load(Ordering::Relaxed) {
                        if std::io::Write::write(&mut w, &chunk).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Self {
            stop,
            path: path.to_owned(),
            thread: Some(thread),
        }
    }
}

impl Drop for EndlessFifo {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // Open and close a reader until the writer has seen the stop: that frees it
            // from a blocking open or write.
            while !t.is_finished() {
                let _ = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(&self.path);
                std::thread::yield_now();
            }
            let _ = t.join();
        }
    }
}

/// Makes a FIFO at `path`.
///
/// # Panics
/// When it cannot (tests only).
pub fn make_fifo(path: &std::path::Path) {
    if let Err(e) = rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    ) {
        panic!("cannot make a FIFO at {}: {e}", path.display());
    }
}

/// Writes `content` to `root/rel`, making its directories.
///
/// # Panics
/// When the file cannot be written (tests only).
pub fn write_file(root: &std::path::Path, rel: &str, content: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            panic!("cannot make {}: {e}", parent.display());
        }
    }
    if let Err(e) = std::fs::write(&path, content) {
        panic!("cannot write {}: {e}", path.display());
    }
}

/// The text of `root/rel`.
///
/// # Panics
/// When the file cannot be read (tests only).
pub fn read_file(root: &std::path::Path, rel: &str) -> String {
    let path = root.join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}
