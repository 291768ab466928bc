#!/usr/bin/env bash
# Runs every check and test of the workspace on a fresh clone. Installs what the tests
# need first (scripts/test-setup.sh), so it works on a machine with only the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

# The system tools first: the build scripts probe them (scripts/test_prereqs.rs). The
# packages (npm, PyPI, cargo-deny) are fetched in the background while the checks build,
# since fetching them is mostly waiting on the network; their output is shown once they
# are in.
packages_log=""
packages_pid=""
if [ -x scripts/test-setup.sh ]; then
    scripts/test-setup.sh system
    packages_log=$(mktemp)
    scripts/test-setup.sh packages >"$packages_log" 2>&1 &
    packages_pid=$!
    # A failed check ends the run: the fetch goes with it.
    trap '[ -z "$packages_pid" ] || kill "$packages_pid" 2>/dev/null; rm -f "$packages_log"' EXIT
fi
packages_in() {
    [ -n "$packages_pid" ] || return 0
    local status=0
    wait "$packages_pid" || status=$?
    cat "$packages_log" >&2
    rm -f "$packages_log"
    packages_pid=""
    return "$status"
}

scripts/check-deps.sh
scripts/check-architecture.sh
scripts/check-test-layout.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked
packages_in
# The advisory database is not reachable from the build machines; see deny.toml.
cargo deny --locked check licenses bans sources
# Four test threads on two cores: most end-to-end tests wait on processes and sockets
# (the e2e binary keeps a core about half busy with two threads). RUST_TEST_THREADS
# overrides it.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" cargo test --workspace --locked
