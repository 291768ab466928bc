#!/usr/bin/env bash
# Per-call overhead of user hooks: one `exec --json` turn of CALLS sequential shell calls
# (`true`) against `rein mock-model`, with no hooks, with a hook file whose matcher fits no
# call, and with a no-op PreToolUse command hook (`true`) on every call. Prints the mean
# wall time per turn over RUNS and the difference per call.
#
# usage: bench/hooks.sh [RUNS] [CALLS]   env: REIN=path/to/rein (default: release build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
calls=${2:-40}
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
rein=$(realpath "$rein")
work=$(mktemp -d)
cleanup() { [ -n "${mock_pid:-}" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

python3 - "$calls" >"$work/script.json" <<'PY'
import json, sys
n = int(sys.argv[1])
call = lambda i: {"tool_calls": [{"call_id": f"c{i}", "name": "shell", "arguments": {"command": ["true"]}}]}
print(json.dumps({"replies": [call(i) for i in range(n)] + [{"text": "done"}], "when_exhausted": "repeat_last"}))
PY

mkdir -p "$work/home" "$work/user" "$work/cwd"
export MOCK_API_KEY=bench REIN_HOME="$work/home" HOME="$work/user"
cd "$work/cwd"

turn_ms() { # mean ms of one turn over $runs, each against a fresh mock server
    local total=0 start end
    for _ in $(seq "$runs"); do
        exec 3< <("$rein" mock-model --script "$work/script.json" --listen 127.0.0.1:0)
        mock_pid=$!
        read -r url <&3
        printf 'model = "mock"\nmodel_provider = "mock"\n[model_providers.mock]\nbase_url = "%s"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n' "$url" >"$REIN_HOME/config.toml"
        start=$(date +%s%N)
        "$rein" exec --json --ephemeral -s workspace-write 'Go.' </dev/null >/dev/null 2>&1
        end=$(date +%s%N)
        kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null || true
        total=$(( total + (end - start) / 1000 ))
    done
    echo $(( total / runs ))
}

rm -f "$REIN_HOME/hooks.json"
none=$(turn_ms)
echo '{"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": [{"type": "command", "command": "true"}]}]}}' >"$REIN_HOME/hooks.json"
unmatched=$(turn_ms)
echo '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}' >"$REIN_HOME/hooks.json"
noop=$(turn_ms)
echo "load: $(uptime)"
echo "turn of $calls shell calls, mean of $runs runs (µs): no hooks $none, unmatched hook $unmatched, no-op hook $noop"
echo "per call: unmatched hook $(( (unmatched - none) / calls )) µs, no-op command hook $(( (noop - none) / calls )) µs"
