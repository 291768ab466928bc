//! The sync threads of a home: group commit, without head-of-line blocking. The intake
//! thread takes every fsync request as it arrives and merges it with the requests for the
//! same thread that wait (turn ends, every event of a thread under `always`), so each file
//! is made durable once however many requests name it; a few sync workers run those
//! fsyncs, one file each, and tell each thread how far it is durable. A thread whose fsync
//! is slow (a large file, a slow disk) holds one worker, and the other threads' turn ends
//! go on with the others. One thread's fsyncs run one at a time, in order, so the durable
//! point it hears about only moves forward. Writing goes on meanwhile on the writer
//! thread, so no fsync holds back any thread's writes.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};

use rein_protocol::ThreadId;

use super::writer::OnDrop;
use crate::indexer::IndexClient;
use crate::io_guard;
use crate::time::now_ms;
use crate::writer::SyncJob;
use rein_core::recorder::RecordProgress;

/// Called on a sync worker just before a rollout's fsync, with the rollout's path: a
/// seam for tests to make one file's fsync slow (as a slow disk would).
pub type BeforeSync = Arc<dyn Fn(&Path) + Send + Sync>;

/// Sync workers of one home at most: enough that a few slow files do not hold back the
/// rest, few enough not to flood the disk with parallel fsyncs.
const MAX_WORKERS: usize = 4;

pub(crate) struct SyncReq {
    pub thread: ThreadId,
    pub job: SyncJob,
    /// The last seq the fsync covers, to report (none for a flush of everything).
    pub seq: Option<u64>,
    pub progress: Option<Arc<dyn RecordProgress>>,
    pub index: Option<IndexClient>,
}

pub(crate) enum SyncCmd {
    Sync(SyncReq),
    /// Fire once every request queued before is done.
    Barrier(OnDrop),
}

/// Requests for one thread merged into one fsync.
struct Group {
    first: SyncReq,
    seq: Option<u64>,
    extra_blobs: Vec<PathBuf>,
    /// The requests it answers (see [`State::outstanding`]).
    tickets: Vec<u64>,
}

impl Group {
    fn merge(&mut self, req: SyncReq, ticket: u64) {
        self.seq = self.seq.max(req.seq);
        self.extra_blobs.extend(req.job.blobs);
        if self.first.job.new_dir.is_none() {
            self.first.job.new_dir = req.job.new_dir;
        }
        if self.first.progress.is_none() {
            self.first.progress = req.progress;
        }
        if self.first.index.is_none() {
            self.first.index = req.index;
        }
        self.tickets.push(ticket);
    }

    /// Runs the fsync and reports it.
    fn run(mut self, before: Option<&BeforeSync>) -> Vec<u64> {
        let thread = self.first.thread;
        self.first.job.blobs.append(&mut self.extra_blobs);
        if let Some(before) = before {
            before(&self.first.job.path);
        }
        let outcome = self.first.job.run();
        match (outcome, &self.first.progress, self.seq) {
            (Ok(()), Some(progress), Some(seq)) => progress.durable(seq),
            (Err(e), Some(progress), Some(seq)) => progress.failed(seq, e),
            (Err(e), _, _) => tracing::warn!(%thread, "rollout fsync failed: {e}"),
            _ => {}
        }
        if let Some(index) = &self.first.index {
            index.touch(thread, now_ms());
        }
        self.tickets
    }
}

#[derive(Default)]
struct State {
    /// Merged requests not yet taken by a worker, by thread.
    waiting: HashMap<ThreadId, Group>,
    /// Threads with a waiting group, in arrival order (a thread may appear while its
    /// previous fsync runs; it is skipped until that is done).
    ready: VecDeque<ThreadId>,
    /// Threads whose fsync a worker is running.
    running: HashSet<ThreadId>,
    /// Requests not yet done, by ticket (arrival order).
    outstanding: BTreeSet<u64>,
    next_ticket: u64,
    /// Barriers with the ticket every request before them is below.
    barriers: Vec<(u64, OnDrop)>,
    workers: usize,
    idle: usize,
    /// The intake is gone: workers finish what waits, then stop.
    closed: bool,
}

impl State {
    /// The first waiting thread whose previous fsync is done.
    fn take(&mut self) -> Option<Group> {
        let at = self.ready.iter().position(|t| !self.running.contains(t))?;
        let thread = self.ready.remove(at)?;
        self.running.insert(thread);
        self.waiting.remove(&thread)
    }

    /// Waiting threads a worker could take now.
    fn runnable(&self) -> usize {
        self.ready
            .iter()
            .filter(|t| !self.running.contains(t))
            .count()
    }

    /// Barriers whose requests are all done.
    fn due_barriers(&mut self) -> Vec<OnDrop> {
        let lowest = self.outstanding.first().copied().unwrap_or(u64::MAX);
        let (due, keep) = std::mem::take(&mut self.barriers)
            .into_iter()
            .partition(|(mark, _)| *mark <= lowest);
        self.barriers = keep;
        due.into_iter().map(|(_, done)| done).collect()
    }
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    before: Option<BeforeSync>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked mid-update leaves consistent enough state: every field
        // is updated in one step.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The intake: runs until every sender is gone, then lets the workers finish.
pub(crate) fn run(rx: &mpsc::Receiver<SyncCmd>, before: Option<BeforeSync>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        work: Condvar::new(),
        before,
    });
    while let Ok(cmd) = rx.recv() {
        let mut state = shared.lock();
        let due = match cmd {
            SyncCmd::Sync(req) => {
                queue(&mut state, req);
                if state.runnable() > state.idle && state.workers < MAX_WORKERS {
                    spawn_worker(&shared, &mut state);
                }
                shared.work.notify_one();
                Vec::new()
            }
            SyncCmd::Barrier(done) => {
                let mark = state.next_ticket;
                state.barriers.push((mark, done));
                state.due_barriers()
            }
        };
        let no_worker = state.workers == 0;
        drop(state);
        drop(due);
        if no_worker {
            // Not a single worker could start: sync here rather than never.
            work(&shared, false);
        }
    }
    shared.lock().closed = true;
    shared.work.notify_all();
}

fn queue(state: &mut State, req: SyncReq) {
    let ticket = state.next_ticket;
    state.next_ticket += 1;
    state.outstanding.insert(ticket);
    let thread = req.thread;
    if let Some(group) = state.waiting.get_mut(&thread) {
        group.merge(req, ticket);
        return;
    }
    state.waiting.insert(
        thread,
        Group {
            seq: req.seq,
            first: req,
            extra_blobs: Vec::new(),
            tickets: vec![ticket],
        },
    );
    state.ready.push_back(thread);
}

fn spawn_worker(shared: &Arc<Shared>, state: &mut State) {
    let worker = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("rein-sync".into())
        .spawn(move || {
            io_guard::mark_store_thread();
            work(&worker, true);
        });
    match spawned {
        Ok(_) => state.workers += 1,
        Err(e) => tracing::error!("cannot start a sync worker: {e}"),
    }
}

/// Runs waiting fsyncs; a worker (`stay`) then waits for more until the intake closes,
/// the intake itself returns once nothing is runnable.
fn work(shared: &Shared, stay: bool) {
    let mut state = shared.lock();
    loop {
        if let Some(group) = state.take() {
            let thread = group.first.thread;
            drop(state);
            let tickets = group.run(shared.before.as_ref());
            state = shared.lock();
            state.running.remove(&thread);
            for ticket in tickets {
                state.outstanding.remove(&ticket);
            }
            let due = state.due_barriers();
            if state.runnable() > 0 {
                shared.work.notify_one();
            }
            drop(state);
            drop(due);
            state = shared.lock();
            continue;
        }
        if !stay {
            return;
        }
        if state.closed && state.waiting.is_empty() {
            state.workers -= 1;
            return;
        }
        state.idle += 1;
        state = shared
            .work
            .wait(state)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.idle -= 1;
    }
}
