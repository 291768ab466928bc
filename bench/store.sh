#!/usr/bin/env bash
# Session-store benchmarks of the release `rein` binary (thread/list with 600, 6,000 and
# 50,000 threads on disk, thread/resume, thread/start, durable vs ephemeral turns), over
# stdio with persistence on. See bench/store.py for what each figure times.
# Usage: bench/store.sh [--runs N] [--threads 600,6000,50000] [--keep]
#        env: REIN=path/to/rein (default: the release build), BENCH_DIR=where the homes go
#             (default: $TMPDIR; put it on the disk you want fsync timed on)
set -euo pipefail
cd "$(dirname "$0")/.."
rein=${REIN:-}
if [ -z "$rein" ]; then
    CARGO_INCREMENTAL=0 cargo build --release --locked -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
exec python3 bench/store.py --rein "$rein" "$@"
