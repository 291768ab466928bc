//! A debug check that rollout I/O never runs on an async executor thread. The store's own
//! threads and the blocking threads it runs operations on mark themselves; file, fsync
//! and SQLite calls assert they are on such a thread or outside any tokio runtime (the
//! `rein sessions` command, tests that drive a writer directly). Every test that drives
//! the kernel or the app-server in a debug build is thereby a test of the rule.

use std::cell::Cell;

thread_local! {
    static STORE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// This thread belongs to the store (its own threads, or a blocking thread it runs on).
pub(crate) fn mark_store_thread() {
    STORE_THREAD.with(|s| s.set(true));
}

/// Panics in debug builds if `what` is about to run on an async executor thread.
pub(crate) fn assert_off_executor(what: &str) {
    if cfg!(debug_assertions) {
        let allowed =
            STORE_THREAD.with(Cell::get) || tokio::runtime::Handle::try_current().is_err();
        assert!(allowed, "{what} on an async executor thread");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn io_on_an_executor_thread_is_caught_and_on_store_threads_allowed() {
        let caught = std::panic::catch_unwind(|| assert_off_executor("a test write"));
        assert_eq!(caught.is_err(), cfg!(debug_assertions));
        tokio::task::spawn_blocking(|| {
            mark_store_thread();
            assert_off_executor("a write on a store thread");
        })
        .await
        .unwrap();
        std::thread::spawn(|| assert_off_executor("a write outside any runtime"))
            .join()
            .unwrap();
    }
}
