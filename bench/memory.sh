#!/usr/bin/env bash
# Memory benchmarks of the `rein` binary (bench/memory.py says what each figure times):
# `rein memory search` with 100,000 memories stored, and the per-turn overhead of the memory
# step (a `rein exec` turn with `[memory] enabled = true` and 100,000 memories, against the
# same turn with memory off).
# Usage: bench/memory.sh [--runs N] [--memories N]
#        env: REIN=path/to/rein (default: the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rein=${REIN:-}
if [ -z "$rein" ]; then
    CARGO_INCREMENTAL=0 cargo build --release --locked -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
exec python3 bench/memory.py --rein "$rein" "$@"
