//! The integration tests of rein-tools, in one test binary (its modules are the files of
//! this directory). A new test file: add `tests/all/NAME.rs` and one `mod NAME;` line here.
//! Run one module with `cargo test -p rein-tools --test tools_tests -- NAME::`.
// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod advisor;
mod apply_patch_hostile;
mod supervise_pids;
mod tools_apply_patch;
mod tools_files;
mod tools_in_turn;
mod tools_policy;
mod tools_sandbox;
mod tools_sandbox_verdict;
mod tools_shell;
mod tools_shell_policy;
mod tools_terminals;
