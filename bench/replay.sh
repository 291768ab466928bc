#!/usr/bin/env bash
# Replay speed of a long session through the release binary: `rein exec` records one turn of
# STEPS steps against `rein mock-model` (each step a `shell` call running `true`, then a final
# answer), then `rein replay ID` is timed RUNS times (process start, rollout read, kernel
# setup and the comparison included). Prints the median wall time and steps per second.
#
# usage: bench/replay.sh [STEPS] [RUNS]     env: REIN=path/to/rein (default: release build)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-200}
runs=${2:-10}
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
rein=$(realpath "$rein")
work=$(mktemp -d)
cleanup() { [ -n "${mock_pid:-}" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

python3 - "$steps" >"$work/script.json" <<'PY'
import json, sys
n = int(sys.argv[1])
calls = [{"tool_calls": [{"call_id": f"call_{i}", "name": "shell",
                          "arguments": {"command": ["true"]}}]} for i in range(n - 1)]
print(json.dumps({"replies": calls + [{"text": "Done."}]}))
PY
# The server prints its base URL as its first line.
exec 3< <("$rein" mock-model --script "$work/script.json" --listen 127.0.0.1:0)
mock_pid=$!
read -r url <&3 || { echo "mock-model failed to start" >&2; exit 1; }
mkdir -p "$work/home" "$work/cwd"
printf 'model = "mock"\nmodel_provider = "mock"\n[model_providers.mock]\nname = "mock"\nbase_url = "%s"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n' "$url" >"$work/home/config.toml"
export MOCK_API_KEY=bench REIN_HOME="$work/home"
cd "$work/cwd"

# Into a file, not through `head`: with pipefail, exec's SIGPIPE would end the script.
"$rein" exec --json --dangerously-bypass-approvals-and-sandbox 'Run true many times.' </dev/null 2>/dev/null >"$work/events.jsonl"
id=$(head -n1 "$work/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["thread_id"])')
"$rein" replay "$id" >&2 || { echo "replay of the recording failed" >&2; exit 1; }

times=()
for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$rein" replay "$id" >/dev/null
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "replay of $steps steps: median $(awk -v us="$median" 'BEGIN {printf "%.1f", us/1000}') ms over $runs runs," \
    "$(awk -v us="$median" -v n="$steps" 'BEGIN {printf "%.0f", n/(us/1e6)}') steps/s"
