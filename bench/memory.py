"""Memory benchmarks (bench/memory.sh).

1. Store N memories (`rein memory import`, user and repo scope, words drawn from a
   vocabulary of 5,000) in a fresh $REIN_HOME.
2. `rein memory search WORDS`: median wall time of the whole process, next to `rein memory
   list --scope thread` (an indexed query that finds nothing: the process's fixed cost), so
   the difference is the full-text search over N memories.
3. Per-turn overhead of the memory step: median wall time of one `rein exec --json` turn
   against `rein mock-model`, memory off, then memory on with the N memories (the prompt
   matches some); the difference is the recall (repository lookup, FTS5 rank, use counts
   written with synchronous=FULL) plus the `remember` tool's spec.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid


def timed(cmd, env, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rein", required=True)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--memories", type=int, default=100_000)
    a = p.parse_args()
    rng = random.Random(7)
    vocab = [f"term{i:04d}" for i in range(5000)]
    home = tempfile.mkdtemp(prefix="rein-bench-memory-")
    repo = tempfile.mkdtemp(prefix="rein-bench-repo-")
    os.mkdir(os.path.join(repo, ".git"))
    env = dict(os.environ, REIN_HOME=home, MOCK_API_KEY="k")
    lines = os.path.join(home, "import.jsonl")
    with open(lines, "w") as f:
        for i in range(a.memories):
            scope = "user" if i % 10 == 0 else "repo"
            record = {
                "id": str(uuid.uuid4()), "scope": scope, "state": "accepted",
                "content": " ".join(rng.choice(vocab) for _ in range(12)),
                "created_ms": 1_700_000_000_000 + i, "use_count": 0,
            }
            if scope == "repo":
                record["repo"] = {"root": f"/src/project{i % 50}"}
            f.write(json.dumps(record) + "\n")
    start = time.perf_counter()
    subprocess.run([a.rein, "memory", "import", lines], env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"import of {a.memories} memories: {time.perf_counter() - start:.1f} s")
    query = " ".join(vocab[:6])
    search = timed([a.rein, "memory", "search", query], env, a.runs)
    base = timed([a.rein, "memory", "list", "--scope", "thread"], env, a.runs)
    print(f"rein memory search ({a.memories} stored): {search:.1f} ms median; "
          f"empty indexed list {base:.1f} ms; search itself ~{search - base:.1f} ms")

    script = os.path.join(home, "script.json")
    with open(script, "w") as f:
        json.dump({"replies": [], "when_exhausted": "echo"}, f)
    mock = subprocess.Popen([a.rein, "mock-model", "--script", script, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    url = mock.stdout.readline().strip()
    config = (f'model = "mock"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
              f'base_url = "{url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')
    turn = [a.rein, "exec", "--json", "-C", repo, f"tell me about {query}"]
    try:
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(config)
        off = timed(turn, env, a.runs)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(config + "\n[memory]\nenabled = true\n")
        on = timed(turn, env, a.runs)
    finally:
        mock.kill()
    exported = subprocess.run([a.rein, "memory", "export"], env=env, check=True,
                              capture_output=True, text=True).stdout.splitlines()
    used = [json.loads(l) for l in exported if '"use_count":0' not in l]
    print(f"memories given to the {a.runs} memory-on turns: {len(used)} distinct, "
          f"{sum(r['use_count'] for r in used)} uses")
    print(f"exec turn: memory off {off:.1f} ms, memory on with {a.memories} stored {on:.1f} ms "
          f"(per-turn overhead ~{on - off:.1f} ms)")
    print(f"load average: {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
