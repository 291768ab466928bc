#!/usr/bin/env bash
# Whole-process benchmark of `rein acp` against `rein mock-model` (see bench/acp.py).
# Usage: bench/acp.sh [--runs N] [--turns N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p rein-cli >&2
target=${CARGO_TARGET_DIR:-target}
exec python3 bench/acp.py --rein "$target/release/rein" "$@"
