//! The integration tests of rein-core, in one test binary (its modules are the files of
//! this directory). A new test file: add `tests/all/NAME.rs` and one `mod NAME;` line here.
//! Run one module with `cargo test -p rein-core --test core_tests -- NAME::`.
// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents;
mod agents_limits;
mod agents_restore;
mod compaction;
mod interrupt;
mod lifecycle;
mod routing;
mod tool_sources;
mod turns;
