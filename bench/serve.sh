#!/usr/bin/env bash
# Whole-process benchmark of `rein serve`: many streamed responses at once against
# `rein mock-model` with a set latency (bench/serve.py says what is measured).
# Usage: bench/serve.sh [--streams N] [--latency SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p rein-cli >&2
target=${CARGO_TARGET_DIR:-target}
exec python3 bench/serve.py --rein "$target/release/rein" "$@"
