//! The integration tests of rein-providers, in one test binary (its modules are the files of
//! this directory). A new test file: add `tests/all/NAME.rs` and one `mod NAME;` line here.
//! Run one module with `cargo test -p rein-providers --test providers_tests -- NAME::`.
// Test code: a panic (unwrap, expect) is how a test fails, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod http_providers;
mod kernel_over_http;
mod provider_config;
