#!/usr/bin/env bash
# spawn -> `initialize` of the release `rein app-server`, sandbox verdict cached and not,
# side by side with `codex app-server` when CODEX=path/to/codex is set. See bench/startup.py.
# Usage: bench/startup.sh [--runs N]     env: REIN=path/to/rein (default: the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release --locked -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
args=(--rein "$rein")
if [ -n "${CODEX:-}" ]; then
    args+=(--codex "$CODEX")
fi
exec python3 bench/startup.py "${args[@]}" "$@"
