#!/usr/bin/env bash
# Task-graph scheduler overhead through `rein exec --strategy planner` (bench/graph.py says
# what is timed). usage: bench/graph.sh [--nodes N]
# env: REIN=path/to/rein (default: a release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release --locked -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
exec python3 bench/graph.py --rein "$(realpath "$rein")" "$@"
