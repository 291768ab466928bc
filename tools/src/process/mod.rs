//! Running real processes for tools: output capture, environment policy, process-group
//! ownership and the run-to-completion loop. Knows nothing about policies or the model.

// Bounded capture is the kernel's (any tool source bounds its output the same way).
pub(crate) use rein_core::tools::capture;
pub mod env;
pub mod exec;
pub mod group;

pub use capture::HeadTailBuffer;
pub use env::{EnvInheritance, EnvPolicy};
pub use exec::{ExecError, ExecLimits, ExecOutcome, ExitKind};
pub use group::ProcessGroupGuard;
