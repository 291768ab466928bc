#!/usr/bin/env bash
# The kernel's overhead per goal continuation: `rein exec --goal` against `rein mock-model`
# with a model that changes a file every turn (so every turn is progress and the next
# starts at once), then, from the rollout's timestamps, the time from each goal turn's end
# (`turn_completed`) to the next goal turn's first model request (`step_requested`), and
# the time of each verifier run (the `update_goal` call of the last turn).
#
# usage: bench/goals.sh [TURNS]     env: REIN=path/to/rein (default: release build)
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-20}
rein=${REIN:-}
[ -n "$rein" ] && rein=$(realpath "$rein")
if [ -z "$rein" ]; then
    cargo build --release -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
work=$(mktemp -d)
cleanup() { [ -n "${mock_pid:-}" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

python3 - "$turns" >"$work/script.json" <<'PY'
import json, sys
n = int(sys.argv[1])
replies = []
for i in range(n):
    patch = f"*** Begin Patch\n*** Add File: f{i}.txt\n+x\n*** End Patch\n"
    replies.append({"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]})
    replies.append({"text": f"turn {i}"})
replies.append({"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]})
replies.append({"text": "done"})
print(json.dumps({"replies": replies, "when_exhausted": "error"}))
PY
exec 3< <("$rein" mock-model --script "$work/script.json" --listen 127.0.0.1:0)
mock_pid=$!
read -r url <&3 || { echo "mock-model failed to start" >&2; exit 1; }
mkdir -p "$work/home" "$work/cwd"
printf 'model = "mock"\nmodel_provider = "mock"\n[model_providers.mock]\nbase_url = "%s"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n' "$url" >"$work/home/config.toml"
export MOCK_API_KEY=bench REIN_HOME="$work/home"
cd "$work/cwd"
"$rein" exec --json -s workspace-write --goal "write the files" --verify "test -f f0.txt" \
    </dev/null >"$work/out.jsonl" 2>/dev/null || true
thread=$(head -1 "$work/out.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["thread_id"])')
"$rein" sessions show "$thread" --json >"$work/rollout.jsonl"
python3 - "$work/rollout.jsonl" <<'PY'
import json, statistics, sys
events = [json.loads(l) for l in open(sys.argv[1])]
gaps, verifies, ended = [], [], None
starts = {}
for e in events:
    t, at = e["msg"]["type"], e["timestamp_ms"]
    if t == "turn_completed":
        ended = at
    elif t == "step_requested" and ended is not None:
        gaps.append(at - ended)
        ended = None
    elif t == "tool_call_begin" and e["msg"]["name"] == "update_goal":
        starts[e["msg"]["call_id"]] = at
    elif t == "tool_call_end" and e["msg"]["call_id"] in starts:
        verifies.append(e["msg"]["duration_ms"])
print(f"continuations: {len(gaps)}; turn end -> next model request: "
      f"median {statistics.median(gaps)} ms, max {max(gaps)} ms")
print(f"update_goal with one shell verifier: {verifies} ms")
PY
echo "load: $(uptime)"
