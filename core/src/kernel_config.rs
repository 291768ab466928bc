//! Kernel-wide knobs that are not per-thread settings.

use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelConfig {
    /// Capacity of each thread's Op queue. A full queue makes `submit` wait, never drop.
    pub op_queue_capacity: usize,
    /// How long an interrupted turn's work may take to wind down before it is aborted.
    pub interrupt_grace: Duration,
    /// How many times stop hooks may veto the end of one turn before the kernel stops
    /// consulting them (a guard against hooks that never let a turn end).
    pub max_stop_hook_vetoes: u32,
    /// Whether tool calls of one reply run concurrently.
    pub parallel_tool_calls: bool,
}

impl Default for KernelConfig {
    fn default() -> Self {
        Self {
            op_queue_capacity: 64,
            interrupt_grace: Duration::from_millis(100),
            max_stop_hook_vetoes: 3,
            parallel_tool_calls: true,
        }
    }
}
