#!/usr/bin/env bash
# Whole-process benchmark of `rein app-server`, side by side with `codex app-server` when
# CODEX=path/to/codex is set (see ../shared/tools/install-codex-anchor.sh).
# Usage: bench/app_server.sh [--runs N] [--turns N] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p rein-cli >&2
target=${CARGO_TARGET_DIR:-target}
args=(--rein "$target/release/rein")
if [ -n "${CODEX:-}" ]; then
    args+=(--codex "$CODEX")
fi
exec python3 bench/app_server.py "${args[@]}" "$@"
