//! How a thread is to be created: where its history comes from, who created it and why,
//! and what a new one starts with (its recorder, context, strategy, a sub-agent's origin).

use rein_protocol::{AgentOrigin, Event, Item, SessionId, ThreadContext, ThreadId, ThreadSettings};

use crate::agents::Strategy;
use crate::recorder::{EventRecorder, NullRecorder};

/// Where a thread's history comes from.
pub enum ThreadStart {
    /// A new, empty thread.
    New { settings: ThreadSettings },
    /// Continue a thread from the events of an earlier life (read back from its rollout and
    /// repaired, so no turn is left open, or a fork's copied history). They are folded,
    /// not re-emitted or re-recorded: the store already holds them.
    Resume { events: Vec<Event> },
}

pub struct ThreadOptions {
    pub start: ThreadStart,
    pub recorder: Box<dyn EventRecorder>,
    /// The id of a new thread (so its rollout can be created first); generated when `None`.
    pub thread_id: Option<ThreadId>,
    /// How the thread came to be, as the "thread created" broadcast says.
    pub origin: ThreadOrigin,
    /// A new sub-agent: where it comes from, its tree's session id, and the history it
    /// starts with (a forked context). Recorded right after `ThreadConfigured`.
    pub agent: Option<SpawnedAgent>,
    /// What a new thread's requests send before its history (recorded as
    /// `ContextLoaded`); `None` or empty: nothing.
    pub context: Option<ThreadContext>,
    /// Said to the new thread's clients as warnings right after its context (what was cut
    /// from it or could not be read).
    pub context_warnings: Vec<String>,
    /// A new root's strategy as its client asked; `None`: the configuration's. Ignored for
    /// sub-agents and on resume (a thread keeps the strategy it was created with).
    pub strategy: Option<Strategy>,
}

/// What a new sub-agent starts with.
pub struct SpawnedAgent {
    pub origin: AgentOrigin,
    pub session_id: SessionId,
    pub history: Vec<Item>,
}

/// Why a thread was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadOrigin {
    New,
    Resumed,
    Forked {
        parent: ThreadId,
    },
    /// A sub-agent spawned by `parent`'s model.
    Spawned {
        parent: ThreadId,
    },
}

impl ThreadOptions {
    pub fn new(settings: ThreadSettings) -> Self {
        Self {
            start: ThreadStart::New { settings },
            recorder: Box::new(NullRecorder),
            thread_id: None,
            origin: ThreadOrigin::New,
            agent: None,
            context: None,
            context_warnings: Vec::new(),
            strategy: None,
        }
    }

    /// Continue a thread from the events of an earlier life (already recorded).
    pub fn resume(events: Vec<Event>, recorder: Box<dyn EventRecorder>) -> Self {
        Self {
            start: ThreadStart::Resume { events },
            recorder,
            thread_id: None,
            origin: ThreadOrigin::Resumed,
            agent: None,
            context: None,
            context_warnings: Vec::new(),
            strategy: None,
        }
    }

    pub fn with_strategy(mut self, strategy: Option<Strategy>) -> Self {
        self.strategy = strategy;
        self
    }

    pub fn with_recorder(mut self, recorder: Box<dyn EventRecorder>) -> Self {
        self.recorder = recorder;
        self
    }

    pub fn with_origin(mut self, origin: ThreadOrigin) -> Self {
        self.origin = origin;
        self
    }

    /// A new thread's fixed prefix (ignored when resuming: the rollout has its own), and
    /// what its clients should be told about it.
    pub fn with_context(mut self, context: ThreadContext, warnings: Vec<String>) -> Self {
        self.context = Some(context).filter(|c| !c.is_empty());
        self.context_warnings = warnings;
        self
    }
}
