#!/usr/bin/env bash
# Sub-agents through the release `rein app-server`, persistence on (bench/agents.py says
# what is timed). usage: bench/agents.sh [--runs N] [--children N] [--hold-ms MS]
# env: REIN=path/to/rein (default: a release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release --locked -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
exec python3 bench/agents.py --rein "$(realpath "$rein")" "$@"
