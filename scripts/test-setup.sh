#!/usr/bin/env bash
# Prepares what the slow end-to-end tests need beyond cargo: the official Codex TypeScript
# SDK (without its optional dependencies, so the Codex binary itself is never fetched),
# installed under target/ so nothing is committed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${REIN_E2E_NODE_DIR:-$root/target/e2e-node}"
if ! command -v npm >/dev/null 2>&1; then
  echo "test-setup: npm not found; the Codex SDK test will be skipped" >&2
  exit 0
fi
mkdir -p "$dir"
if [ ! -f "$dir/package.json" ]; then
  printf '{ "name": "rein-e2e-node", "private": true }\n' >"$dir/package.json"
fi
if [ ! -d "$dir/node_modules/@openai/codex-sdk" ]; then
  npm install --omit=optional --no-audit --no-fund --prefix "$dir" @openai/codex-sdk >&2
fi
echo "test-setup: @openai/codex-sdk ready in $dir" >&2
