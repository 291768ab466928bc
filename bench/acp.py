#!/usr/bin/env python3
"""Whole-process benchmark of `rein acp` (ACP v1 on stdio) against `rein mock-model`, and,
side by side with --codex-acp, the TypeScript bridge `@agentclientprotocol/codex-acp` in
front of `rein app-server` (the way editors reached rein before `rein acp`).

Measures, each as the median of --runs fresh processes or --turns turns: spawn ->
`initialize` answer; `initialize` answer -> the first `session/update` (session/new and the
commands update that follows its answer); `session/prompt` -> its answer for a plain turn
(the answer follows the turn's last update); RSS after the turns (with the bridge: its node
process plus the `rein app-server` under it).
"""
import argparse, os, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from app_server import Server, rss_kib, start_mock  # noqa: E402


class Agent(Server):
    """The app-server bench's client, with the `jsonrpc` member ACP requires."""

    def send(self, msg):
        msg["jsonrpc"] = "2.0"
        super().send(msg)


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def tree_rss_kib(pid):
    """RSS of `pid` and its children (the bridge runs `rein app-server` under node)."""
    total = rss_kib(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    return total + sum(tree_rss_kib(c) for c in children)


def measure(argv, env, cwd, runs, turns):
    spawn, first_update = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        s = Agent(argv, env)
        s.call("initialize", INIT)
        t1 = time.perf_counter()
        s.request("session/new", {"cwd": cwd, "mcpServers": []})
        s.until(lambda m: m.get("method") == "session/update")
        t2 = time.perf_counter()
        spawn.append(t1 - t0)
        first_update.append(t2 - t1)
        s.close()
    s = Agent(argv, env)
    s.call("initialize", INIT)
    sid = s.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        r = s.call("session/prompt", {"sessionId": sid,
                                      "prompt": [{"type": "text", "text": f"plain turn {i}"}]})
        times.append(time.perf_counter() - t0)
        assert r["stopReason"] == "end_turn", r
    rss = tree_rss_kib(s.p.pid)
    s.close()
    ms = lambda xs: statistics.median(xs) * 1000
    return {"spawn": ms(spawn), "first_update": ms(first_update), "turn": ms(times),
            "rss": rss / 1024}


LABELS = [("spawn", "spawn -> initialize answer", "ms"),
          ("first_update", "initialize answer -> first session/update (session/new)", "ms"),
          ("turn", "session/prompt -> answer, plain turn", "ms"),
          ("rss", "RSS after the turns", "MiB")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--codex-acp", help="codex-acp's dist/index.js, run by node over `rein app-server`")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--turns", type=int, default=20)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rein-acp-bench-")
    mock, url = start_mock(a.rein, work, "script", {"replies": [], "when_exhausted": "echo"})
    home = os.path.join(work, "home")
    os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'model = "mock"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
                f'base_url = "{url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "REIN_HOME": home,
           "MOCK_API_KEY": "bench", "HOME": home}
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd)
    try:
        rows = {"rein acp": measure([a.rein, "acp"], env, cwd, a.runs, a.turns)}
        if a.codex_acp:
            bridge_env = dict(env, CODEX_PATH=os.path.abspath(a.rein))
            rows["codex-acp + rein app-server"] = measure(
                ["node", a.codex_acp], bridge_env, cwd, a.runs, a.turns)
        for key, label, unit in LABELS:
            line = "; ".join(f"{name} {r[key]:.1f} {unit}" for name, r in rows.items())
            print(f"{label}: {line}")
    finally:
        mock.kill()


if __name__ == "__main__":
    main()
