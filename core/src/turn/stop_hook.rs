//! Stop hooks: consulted when the model gives a final answer. A hook may veto stopping and
//! inject an instruction, which continues the turn. The kernel caps consecutive vetoes per
//! turn (`KernelConfig::max_stop_hook_vetoes`) so a hook cannot keep a turn alive forever.

use std::sync::Arc;

use rein_protocol::{Item, ThreadId, TurnId};

pub struct StopContext<'a> {
    pub thread_id: ThreadId,
    pub turn_id: TurnId,
    pub last_agent_message: Option<&'a str>,
    pub history: &'a [Arc<Item>],
    /// How many vetoes this turn has seen already.
    pub vetoes_so_far: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopDecision {
    Stop,
    /// Do not stop; add this instruction to history and sample again.
    Continue {
        instruction: String,
    },
}

pub trait StopHook: Send + Sync + 'static {
    fn on_stop(&self, ctx: &StopContext<'_>) -> StopDecision;
}
