#!/usr/bin/env python3
"""Whole-process benchmark of `rein acp` (ACP v1 on stdio) against `rein mock-model`.

Measures, each as the median of --runs fresh processes or turns: spawn -> `initialize`
answer; `initialize` sent -> the first `session/update` (initialize, session/new, and the
commands update that follows its answer); `session/prompt` -> its answer for a plain turn
(the answer follows the turn's last update); RSS after --turns turns.
"""
import argparse, json, os, statistics, subprocess, tempfile, time

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

class Agent:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next_id = 1
    def send(self, msg):
        msg["jsonrpc"] = "2.0"
        self.p.stdin.write(json.dumps(msg) + "\n"); self.p.stdin.flush()
    def request(self, method, params):
        i = self.next_id; self.next_id += 1
        self.send({"id": i, "method": method, "params": params}); return i
    def until(self, pred):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("rein acp closed its stdout")
            m = json.loads(line)
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
        try: self.p.wait(timeout=10)
        except subprocess.TimeoutExpired: self.p.kill()

INIT = {"protocolVersion": 1, "clientCapabilities": {}}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--turns", type=int, default=20)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rein-acp-bench-")
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"replies": [], "when_exhausted": "echo"}, f)
    mock = subprocess.Popen([a.rein, "mock-model", "--listen", "127.0.0.1:0", "--script", script],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = mock.stdout.readline().strip()
    home = os.path.join(work, "home"); os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'model = "mock"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
                f'base_url = "{url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "REIN_HOME": home,
           "MOCK_API_KEY": "bench", "HOME": home}
    cwd = os.path.join(work, "cwd"); os.makedirs(cwd)
    argv = [a.rein, "acp"]
    try:
        spawn, first_update = [], []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            s = Agent(argv, env)
            s.call("initialize", INIT)
            t1 = time.perf_counter()
            s.request("session/new", {"cwd": cwd, "mcpServers": []})
            s.until(lambda m: m.get("method") == "session/update")
            t2 = time.perf_counter()
            spawn.append(t1 - t0); first_update.append(t2 - t1)
            s.close()
        s = Agent(argv, env)
        s.call("initialize", INIT)
        sid = s.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        turns = []
        for i in range(a.turns):
            t0 = time.perf_counter()
            r = s.call("session/prompt", {"sessionId": sid,
                                          "prompt": [{"type": "text", "text": f"plain turn {i}"}]})
            turns.append(time.perf_counter() - t0)
            assert r["stopReason"] == "end_turn", r
        rss = rss_kib(s.p.pid)
        s.close()
        ms = lambda xs: statistics.median(xs) * 1000
        print(f"spawn -> initialize answer: {ms(spawn):.1f} ms")
        print(f"initialize answer -> first session/update (session/new): {ms(first_update):.1f} ms")
        print(f"session/prompt -> answer, plain turn: {ms(turns):.1f} ms")
        print(f"RSS after {a.turns} turns: {rss / 1024:.1f} MiB")
    finally:
        mock.kill()

if __name__ == "__main__":
    main()
