#!/usr/bin/env python3
"""Whole-process benchmark of `rein app-server` (and, side by side, `codex app-server`).

Both servers talk to `rein mock-model` (an instant scripted model) through the same
JSON-RPC client below. Measures: spawn -> initialize response; turn/start ->
turn/completed for a plain turn and for a turn that runs one shell command (each server's
mock calls the tool that server knows: rein's `shell`, Codex's `exec_command`); RSS after
20 turns; RSS with 100 loaded threads. Prints one line per figure and, with Codex, the ratio rein/codex.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

class Server:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next_id = 1
    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n"); self.p.stdin.flush()
    def request(self, method, params):
        i = self.next_id; self.next_id += 1
        self.send({"id": i, "method": method, "params": params}); return i
    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("server closed its stdout")
        return json.loads(line)
    def until(self, pred):
        while True:
            m = self.recv()
            if pred(m):
                return m
    def call(self, method, params):
        i = self.request(method, params)
        m = self.until(lambda m: m.get("id") == i and "method" not in m)
        if "error" in m:
            raise RuntimeError(f"{method}: {m['error']}")
        return m["result"]
    def close(self):
        self.p.stdin.close()
        try: self.p.wait(timeout=30)
        except subprocess.TimeoutExpired: self.p.kill()

INIT = {"clientInfo": {"name": "bench", "title": None, "version": "0.0.1"},
        "capabilities": {"experimentalApi": True}}

def spawn_to_initialize(argv, env, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s = Server(argv, env)
        s.call("initialize", INIT)
        times.append(time.perf_counter() - t0)
        s.close()
    return statistics.median(times)

def turns_and_rss(argv, env, cwd, turns, threads):
    s = Server(argv, env)
    s.call("initialize", INIT)
    s.send({"method": "initialized"})
    tid = s.call("thread/start", {"cwd": cwd})["thread"]["id"]
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        s.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": f"turn {i}"}]})
        m = s.until(lambda m: m.get("method") == "turn/completed")
        times.append(time.perf_counter() - t0)
        assert m["params"]["turn"]["status"] == "completed", m
    rss_turns = rss_kib(s.p.pid)
    for _ in range(threads - 1):
        s.call("thread/start", {"cwd": cwd})
    rss_threads = rss_kib(s.p.pid)
    s.close()
    return statistics.median(times), rss_turns, rss_threads

def start_mock(rein, work, name, script):
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(script, f)
    mock = subprocess.Popen([rein, "mock-model", "--script", path, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    return mock, mock.stdout.readline().strip()

def tool_turns(argv, env, cwd, turns):
    """turn/start -> turn/completed for turns that run one shell command each."""
    s = Server(argv, env)
    s.call("initialize", INIT)
    s.send({"method": "initialized"})
    tid = s.call("thread/start", {"cwd": cwd, "approvalPolicy": "never",
                                  "sandbox": "danger-full-access"})["thread"]["id"]
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        s.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": f"run {i}"}]})
        m = s.until(lambda m: m.get("method") == "turn/completed")
        times.append(time.perf_counter() - t0)
        assert m["params"]["turn"]["status"] == "completed", m
    s.close()
    return statistics.median(times)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--codex")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--threads", type=int, default=100)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rein-bench-")
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"replies": [], "when_exhausted": "echo"}, f)
    mock = subprocess.Popen([a.rein, "mock-model", "--script", script, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    url = mock.stdout.readline().strip()
    cwd = os.path.join(work, "cwd"); os.makedirs(cwd)
    env = dict(os.environ, MOCK_API_KEY="bench", RUST_LOG="error")
    provider = (f'[model_providers.mock]\nname = "mock"\nbase_url = "{url}"\n'
                f'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')
    results = {}
    mocks = [mock]
    # One-tool turns: each server gets its own mock, scripted with the tool it knows.
    def tool_script(call):
        return {"replies": [r for _ in range(a.turns) for r in ({"tool_calls": [call]}, {"text": "done"})]}
    try:
        rein_home = os.path.join(work, "rein_home"); os.makedirs(rein_home)
        with open(os.path.join(rein_home, "config.toml"), "w") as f:
            f.write('model = "mock"\nmodel_provider = "mock"\n\n' + provider)
        rein_env = dict(env, REIN_HOME=rein_home)
        argv = [a.rein, "app-server"]
        results["rein"] = (spawn_to_initialize(argv, rein_env, a.runs),
                           *turns_and_rss(argv, rein_env, cwd, a.turns, a.threads))
        tmock, turl = start_mock(a.rein, work, "rein_tool", tool_script(
            {"name": "shell", "arguments": {"command": ["echo", "hi"]}}))
        mocks.append(tmock)
        tool_home = os.path.join(work, "rein_tool_home"); os.makedirs(tool_home)
        with open(os.path.join(tool_home, "config.toml"), "w") as f:
            f.write('model = "mock"\nmodel_provider = "mock"\n\n' + provider.replace(url, turl))
        results["rein"] += (tool_turns(argv, dict(env, REIN_HOME=tool_home), cwd, a.turns),)
        if a.codex:
            codex_home = os.path.join(work, "codex_home"); os.makedirs(codex_home)
            with open(os.path.join(codex_home, "config.toml"), "w") as f:
                f.write('model = "gpt-5.5"\nmodel_provider = "mock"\napproval_policy = "never"\n'
                        'sandbox_mode = "danger-full-access"\n\n' + provider)
            codex_env = dict(env, CODEX_HOME=codex_home)
            argv = [a.codex, "app-server"]
            results["codex"] = (spawn_to_initialize(argv, codex_env, a.runs),
                                *turns_and_rss(argv, codex_env, cwd, a.turns, a.threads))
            tmock, turl = start_mock(a.rein, work, "codex_tool", tool_script(
                {"name": "exec_command", "arguments": {"cmd": "echo hi", "yield_time_ms": 250}}))
            mocks.append(tmock)
            tool_home = os.path.join(work, "codex_tool_home"); os.makedirs(tool_home)
            with open(os.path.join(tool_home, "config.toml"), "w") as f:
                f.write('model = "gpt-5.5"\nmodel_provider = "mock"\napproval_policy = "never"\n'
                        'sandbox_mode = "danger-full-access"\n\n' + provider.replace(url, turl))
            results["codex"] += (tool_turns(argv, dict(env, CODEX_HOME=tool_home), cwd, a.turns),)
    finally:
        for m in mocks:
            m.terminate()
    labels = ["spawn -> initialize (ms)", "turn/start -> turn/completed (ms)",
              f"RSS after {a.turns} turns (MiB)", f"RSS with {a.threads} threads (MiB)",
              "one-tool turn (ms)"]
    scale = [1000, 1000, 1 / 1024, 1 / 1024, 1000]
    for i, label in enumerate(labels):
        r = results["rein"][i] * scale[i]
        line = f"{label:40} rein {r:9.2f}"
        if "codex" in results:
            c = results["codex"][i] * scale[i]
            line += f"   codex {c:9.2f}   rein/codex {r / c:6.3f}"
        print(line)

if __name__ == "__main__":
    main()
