#!/usr/bin/env bash
# Whole-process benchmark of a plain `exec --json` turn against `rein mock-model`: wall time
# (hyperfine when installed, else a timed loop) and peak RSS (GNU time), for rein and — when
# a Codex binary is given — for `codex exec --json` against the same server.
#
# usage: bench/exec.sh [RUNS]       env: REIN=path/to/rein (default: release build)
#                                        CODEX=path/to/codex (optional side-by-side)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
rein=${REIN:-}
if [ -z "$rein" ]; then
    cargo build --release -p rein-cli >&2
    rein="${CARGO_TARGET_DIR:-target}/release/rein"
fi
work=$(mktemp -d)
cleanup() { [ -n "${mock_pid:-}" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cat >"$work/script.json" <<'JSON'
{"replies": [{"text": "Hello from the mock model.", "deltas": 3}], "when_exhausted": "repeat_last"}
JSON
# The server prints its base URL as its first line.
exec 3< <("$rein" mock-model --script "$work/script.json" --listen 127.0.0.1:0)
mock_pid=$!
read -r url <&3 || { echo "mock-model failed to start" >&2; exit 1; }

mkdir -p "$work/rein_home" "$work/codex_home" "$work/cwd"
provider="[model_providers.mock]
name = \"mock\"
base_url = \"$url\"
wire_api = \"responses\"
env_key = \"MOCK_API_KEY\""
printf 'model = "mock"\nmodel_provider = "mock"\n%s\n' "$provider" >"$work/rein_home/config.toml"
printf 'model = "mock"\nmodel_provider = "mock"\n%s\n' "$provider" >"$work/codex_home/config.toml"
export MOCK_API_KEY=bench REIN_HOME="$work/rein_home" CODEX_HOME="$work/codex_home"
cd "$work/cwd"

rein_cmd="$rein exec --json --ephemeral 'Say hello.' </dev/null >/dev/null 2>&1"
# Persisted like Codex's runs: a rollout file and the SQLite listing index per run.
rein_saved_cmd="$rein exec --json 'Say hello.' </dev/null >/dev/null 2>&1"
codex_cmd="${CODEX:-} exec --json --skip-git-repo-check 'Say hello.' </dev/null >/dev/null 2>&1"

peak_rss() { # KiB, the max over 5 runs
    local max=0 v
    for _ in 1 2 3 4 5; do
        v=$( { /usr/bin/time -f '%M' sh -c "$1" ; } 2>&1 >/dev/null | tail -n1)
        [ "$v" -gt "$max" ] && max=$v
    done
    echo "$max"
}

loop_wall() { # mean ms over $runs
    local start end
    start=$(date +%s%N)
    for _ in $(seq "$runs"); do sh -c "$1"; done
    end=$(date +%s%N)
    echo $(( (end - start) / runs / 1000000 ))
}

report() { # name cmd
    if command -v hyperfine >/dev/null 2>&1; then
        hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/result.json" "sh -c \"$2\"" >/dev/null 2>&1 \
            || hyperfine --warmup 3 --runs "$runs" --export-json "$work/result.json" "$2" >/dev/null
        mean=$(python3 -c "import json;r=json.load(open('$work/result.json'))['results'][0];print(f\"{r['mean']*1000:.1f} ms ± {r['stddev']*1000:.1f}\")")
    else
        mean="$(loop_wall "$2") ms"
    fi
    echo "$1: wall $mean, peak RSS $(peak_rss "$2") KiB"
}

check() { # the run must end with a completed turn
    sh -c "${1% >/dev/null 2>&1}" 2>/dev/null | grep -q '"turn.completed"' || { echo "$2 exec failed" >&2; exit 1; }
}
check "$rein_cmd" rein
report "rein (--ephemeral)" "$rein_cmd"
report "rein (persisted)" "$rein_saved_cmd"
if [ -n "${CODEX:-}" ]; then
    check "$codex_cmd" codex
    report codex "$codex_cmd"
fi
