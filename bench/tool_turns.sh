#!/usr/bin/env bash
# N concurrent one-tool turns (`echo hi`, sandboxed, model latency 0.3 s) through the
# release `rein app-server` over stdio with persistence on: wall time and server-tree CPU
# per turn, for the trampoline launch and the older fork launch (REIN_SANDBOX_SPAWN=fork),
# side by side with `codex app-server` when CODEX=path/to/codex is set
# (../shared/tools/install-codex-anchor.sh). See bench/tool_turns.py.
# Usage: bench/tool_turns.sh [--turns 200,1000] [--modes trampoline,fork]
#        env: REIN=path/to/rein (default: the release build)
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
# Codex finds its sandbox helper as `codex-linux-sandbox` on PATH (a link to itself).
if [ -n "${CODEX:-}" ]; then
    helper=$(mktemp -d)
    ln -s "$(readlink -f "$CODEX")" "$helper/codex-linux-sandbox"
    export PATH="$helper:$PATH"
fi
exec python3 bench/tool_turns.py "${args[@]}" "$@"
