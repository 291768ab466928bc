//! What the front ends share about memory beyond the kernel's: the clock memories are
//! stamped and retired by, which a test may fix.

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
