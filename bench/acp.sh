#!/usr/bin/env bash
# Whole-process benchmark of `rein acp` against `rein mock-model` (see bench/acp.py), next to
# the TypeScript bridge @agentclientprotocol/codex-acp in front of `rein app-server` when npm
# can install it (under target/bench-node, without the optional Codex binaries).
# Usage: bench/acp.sh [--runs N] [--turns N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p rein-cli >&2
target=${CARGO_TARGET_DIR:-target}
bridge="target/bench-node/node_modules/@agentclientprotocol/codex-acp/dist/index.js"
if [ ! -f "$bridge" ] && command -v npm >/dev/null; then
    mkdir -p target/bench-node
    [ -f target/bench-node/package.json ] || printf '{ "name": "rein-bench-node", "private": true }\n' >target/bench-node/package.json
    npm install --no-audit --no-fund --omit=optional --prefix target/bench-node @agentclientprotocol/codex-acp@2.6.0 >&2 \
        || echo "bench/acp.sh: could not install codex-acp; measuring rein acp alone" >&2
fi
extra=()
[ -f "$bridge" ] && command -v node >/dev/null && extra=(--codex-acp "$bridge")
exec python3 bench/acp.py --rein "$target/release/rein" "${extra[@]}" "$@"
