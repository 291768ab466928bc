//! The integration tests of rein-bootstrap, in one test binary (its modules are the files of
//! this directory). A new test file: add `tests/all/NAME.rs` and one `mod NAME;` line here.
//! Run one module with `cargo test -p rein-bootstrap --test bootstrap_tests -- NAME::`.
// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admission;
mod agents_tree;
mod client_mcp;
mod hook_files;
mod replay_confinement;
mod replay_recording;
mod sessions;
