#!/usr/bin/env bash
# Cost of an MCP tool call over stdio through `rein app-server`, next to a bare client of the
# same server, and the memory of N threads sharing one server (see bench/mcp.py).
# The server is bench/mcp_server.py (python3, no SDK).
#
# usage: bench/mcp.sh [--calls N] [--work-ms MS] [--threads 1,10,50]
#        env: REIN=path/to/rein (default: a release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release --locked -p rein-cli >&2
    rein="$target/release/rein"
fi
exec python3 bench/mcp.py --rein "$(realpath "$rein")" "$@"
