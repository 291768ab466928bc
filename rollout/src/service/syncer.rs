//! The sync thread of a home: group commit. It takes every fsync request that queued
//! while it was busy, makes each file durable once however many requests name it (turn
//! ends of several threads, every event of a thread under `always`), then tells each
//! thread how far it is durable. Writing goes on meanwhile on the writer thread, so one
//! thread's fsync never holds back another thread's writes.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;

use rein_protocol::ThreadId;

use super::writer::OnDrop;
use crate::indexer::IndexClient;
use crate::time::now_ms;
use crate::writer::SyncJob;
use rein_core::recorder::RecordProgress;

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

/// Requests queued together for one thread, merged into one fsync.
struct Group {
    first: SyncReq,
    seq: Option<u64>,
    extra_blobs: Vec<std::path::PathBuf>,
}

pub(crate) fn run(rx: &mpsc::Receiver<SyncCmd>) {
    while let Ok(first) = rx.recv() {
        let mut order: Vec<ThreadId> = Vec::new();
        let mut groups: HashMap<ThreadId, Group> = HashMap::new();
        let mut barriers = Vec::new();
        let mut next = Some(first);
        while let Some(cmd) = next.take() {
            match cmd {
                SyncCmd::Sync(req) => match groups.get_mut(&req.thread) {
                    Some(group) => {
                        group.seq = group.seq.max(req.seq);
                        group.extra_blobs.extend(req.job.blobs);
                        if group.first.job.new_dir.is_none() {
                            group.first.job.new_dir = req.job.new_dir;
                        }
                        if group.first.progress.is_none() {
                            group.first.progress = req.progress;
                        }
                    }
                    None => {
                        order.push(req.thread);
                        groups.insert(
                            req.thread,
                            Group {
                                seq: req.seq,
                                first: req,
                                extra_blobs: Vec::new(),
                            },
                        );
                    }
                },
                SyncCmd::Barrier(done) => barriers.push(done),
            }
            next = rx.try_recv().ok();
        }
        for thread in order {
            let Some(mut group) = groups.remove(&thread) else {
                continue;
            };
            group.first.job.blobs.append(&mut group.extra_blobs);
            let outcome = group.first.job.run();
            let progress = &group.first.progress;
            match (outcome, progress, group.seq) {
                (Ok(()), Some(progress), Some(seq)) => progress.durable(seq),
                (Err(e), Some(progress), Some(seq)) => progress.failed(seq, e),
                (Err(e), _, _) => tracing::warn!(%thread, "rollout fsync failed: {e}"),
                _ => {}
            }
            if let Some(index) = &group.first.index {
                index.touch(thread, now_ms());
            }
        }
        for done in barriers {
            drop(done);
        }
    }
}
