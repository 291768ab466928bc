//! The integration tests of rein-rollout, in one test binary (its modules are the files of
//! this directory). A new test file: add `tests/all/NAME.rs` and one `mod NAME;` line here.
//! Run one module with `cargo test -p rein-rollout --test rollout_tests -- NAME::`.
// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod rollout_before_tool_facts;
mod rollout_index;
mod rollout_processes;
mod rollout_reader_corpus;
mod rollout_roundtrip;
mod store_stall;
