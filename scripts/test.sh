#!/usr/bin/env bash
# Runs every check and test of the workspace on a fresh clone. Installs what the tests
# need first (scripts/test-setup.sh), so it works on a machine with only the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/test-setup.sh ]; then
    scripts/test-setup.sh
fi

scripts/check-deps.sh
scripts/check-architecture.sh
scripts/check-test-layout.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked
# The advisory database is not reachable from the build machines; see deny.toml.
cargo deny --locked check licenses bans sources
cargo test --workspace --locked
