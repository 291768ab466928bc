#!/usr/bin/env python3
"""Task-graph scheduler benchmark: `rein exec --strategy planner` against `rein mock-model`.
The planner records --nodes independent worker nodes in one plan_tasks call; the workers'
model answers every request at once. Measures, from the rollouts: the scheduler overhead per
node (its `node_started` record -> the node thread's first model request, `step_requested`),
median and max; the graph's wall time (plan recorded -> last node finished); and the whole
`rein exec` run.
"""
import argparse, glob, json, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from app_server import start_mock  # noqa: E402


def events(path):
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "event":
                yield rec["payload"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--nodes", type=int, default=100)
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    nodes = [{"id": f"n{i}", "title": f"Node {i}"} for i in range(args.nodes)]
    planner, purl = start_mock(args.rein, work, "planner", {"replies": [
        {"tool_calls": [{"call_id": "p", "name": "plan_tasks", "arguments": {"nodes": nodes}}]},
        {"text": "done"}]})
    workers, wurl = start_mock(args.rein, work, "workers", {"replies": [{"text": "ok"}]})
    home = os.path.join(work, "home")
    os.makedirs(home)
    prov = lambda n, u: (f'[model_providers.{n}]\nbase_url = "{u}"\nwire_api = "responses"\n'
                         f'env_key = "MOCK_API_KEY"\n\n')
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('model = "mock"\nmodel_provider = "mock"\nprofile = "g"\n\n[profiles.g]\n'
                'fallback_model = "wmodel"\nfallback_provider = "mockw"\n\n'
                '[agents.roles.worker]\nmodel = "wmodel"\n\n'
                + prov("mock", purl) + prov("mockw", wurl))
    env = dict(os.environ, REIN_HOME=home, MOCK_API_KEY="k")
    t0 = time.perf_counter()
    subprocess.run([args.rein, "exec", "--strategy", "planner", "--json", "go"], env=env,
                   cwd=work, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    run = time.perf_counter() - t0
    planner.kill(); workers.kill()
    files = glob.glob(os.path.join(home, "sessions", "**", "*.jsonl"), recursive=True)
    first_step = {}
    started, planned, finished = {}, None, []
    for path in files:
        evs = list(events(path))
        tid = evs[0]["thread_id"]
        steps = [e["timestamp_ms"] for e in evs if e["msg"]["type"] == "step_requested"]
        if steps:
            first_step[tid] = steps[0]
        for e in evs:
            if e["msg"]["type"] != "task_graph_changed":
                continue
            c = e["msg"]["change"]
            if c["type"] == "planned":
                planned = e["timestamp_ms"]
            elif c["type"] == "node_started":
                started[c["thread_id"]] = e["timestamp_ms"]
            elif c["type"] == "node_finished":
                finished.append(e["timestamp_ms"])
    overhead = [first_step[t] - s for t, s in started.items() if t in first_step]
    assert len(overhead) == args.nodes and len(finished) == args.nodes, (len(overhead), len(finished))
    print(f"nodes {args.nodes}: overhead node_started -> first model request median "
          f"{statistics.median(overhead)} ms, max {max(overhead)} ms; graph {max(finished) - planned} ms "
          f"({(max(finished) - planned) / args.nodes:.1f} ms/node); rein exec {run:.2f} s")


if __name__ == "__main__":
    main()
