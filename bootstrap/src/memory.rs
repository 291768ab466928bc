//! What the front ends share about memory beyond the kernel's: the store in rein's home,
//! the kernel's memory as `[memory]` configures it, and the clock memories are stamped and
//! retired by, which a test may fix.

use std::path::Path;
use std::sync::Arc;

use rein_config::memory::MemorySettings;
use rein_core::memory::{Memory, MemoryPolicy, MemoryStore};
use rein_rollout::memory::SqliteMemoryStore;

/// Milliseconds since the Unix epoch that memory uses as "now" instead of the system
/// clock, so a test can age memories past `[memory] max_unused_days` across runs of the
/// binary (docs/memory.md). Not for production use.
pub const NOW_ENV: &str = "REIN_MEMORY_NOW_MS";

/// Now for memory, in milliseconds since the Unix epoch: `REIN_MEMORY_NOW_MS` when it is
/// set to a number, else the system clock.
pub fn now_ms() -> u64 {
    std::env::var(NOW_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(rein_core::store::time::now_ms)
}

/// The memory store in `home` (the front ends' `rein memory` reads it whatever the
/// configuration), and the kernel's memory when `[memory]` turns it on.
pub(crate) fn wire(
    home: &Path,
    settings: Option<&MemorySettings>,
) -> (Arc<dyn MemoryStore>, Option<Memory>) {
    let store: Arc<dyn MemoryStore> = Arc::new(SqliteMemoryStore::in_home(home));
    let memory = settings.filter(|m| m.enabled).map(|settings| {
        let mut memory = Memory::new(
            Arc::clone(&store),
            MemoryPolicy {
                consent: settings.consent,
                max_tokens: settings.max_tokens,
                max_unused_days: settings.max_unused_days,
                extract_every: settings.extract_every,
                extract_model: settings.extract_model.as_ref().map(|(m, _)| m.clone()),
                consolidate: settings.consolidate,
            },
        );
        memory.clock = now_ms;
        memory
    });
    (store, memory)
}
