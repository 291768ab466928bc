#!/usr/bin/env python3
"""N concurrent one-tool turns through `rein app-server` over stdio (and, side by side,
`codex app-server`), persistence on, sandboxed commands.

Each of N threads (workspace-write, approvals never) gets one turn at the same moment;
the model (`rein mock-model`, each reply delayed 0.3 s) asks each turn to run `echo hi`
once, then answers "done". Timed: first `turn/start` sent -> last `turn/completed` read
(wall), and the CPU the server and every process below it used in that span (from
/proc/PID/stat: utime + stime + the reaped children's cutime + cstime), per turn. The
client parses only the lines it needs (a substring test before any JSON decoding), so
it stays far from being the bottleneck; its own CPU is printed too.

The mock answers a request that ends with a tool's output with the text and every other
with the tool call (`--after-tool-output`), whatever order the turns' requests arrive in;
the client checks that each turn ran exactly one command and that its output is `hi`
(Codex's `exec_command` may return before the output: counted and printed, not fatal).
"""
import argparse, json, os, subprocess, sys, tempfile, time

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid):
    """CPU seconds of `pid` and its reaped descendants."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime is field 14.
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def own_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Server:
    def __init__(self, argv, env, cwd):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.next_id = 1

    def send_all(self, msgs):
        self.p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
        self.p.stdin.flush()

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        return i, {"id": i, "method": method, "params": params}

    def lines(self):
        for line in self.p.stdout:
            yield line

    def call(self, method, params):
        i, msg = self.request(method, params)
        self.send_all([msg])
        for line in self.lines():
            m = json.loads(line)
            if m.get("id") == i and "method" not in m:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
        raise RuntimeError("server closed its stdout")

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()


INIT = {"clientInfo": {"name": "bench", "title": None, "version": "0.0.1"},
        "capabilities": {"experimentalApi": True}}


def run(argv, env, cwd, n, thread_params):
    s = Server(argv, env, cwd)
    s.call("initialize", INIT)
    s.send_all([{"method": "initialized"}])
    # One at a time: Codex answers a burst of thread/starts with "Server overloaded".
    tids = [s.call("thread/start", dict(thread_params, cwd=cwd))["thread"]["id"]
            for _ in range(n)]
    turns = {}
    for t in tids:
        i, msg = s.request("turn/start", {"threadId": t, "input": [{"type": "text", "text": "go"}]})
        turns[i] = msg
    cpu0, t0 = tree_cpu(s.p.pid), time.perf_counter()
    s.send_all(list(turns.values()))
    done, commands, failed, short, retried = 0, {}, [], [], 0
    for line in s.lines():
        if b'"item/completed"' in line and b'ommand' in line:
            m = json.loads(line)
            item = m["params"]["item"]
            if item.get("type") == "commandExecution":
                tid = m["params"]["threadId"]
                commands[tid] = commands.get(tid, 0) + 1
                # Codex runs `bash -lc`: a login profile may print before `hi`.
                if (item.get("aggregatedOutput") or "").strip().split("\n")[-1] != "hi":
                    short.append(item)
        elif b'"turn/completed"' in line:
            m = json.loads(line)
            if m["params"]["turn"]["status"] != "completed":
                failed.append(m)
            done += 1
            if done == n:
                break
        elif b'"error"' in line and b'"method"' not in line:
            m = json.loads(line)
            err = m.get("error")
            if not err:
                continue
            if m.get("id") in turns and err.get("code") == -32001:
                # Overloaded (Codex): send that turn/start again.
                retried += 1
                msg = turns.pop(m["id"])
                i, again = s.request("turn/start", msg["params"])
                turns[i] = again
                s.send_all([again])
            elif m.get("id") in turns:
                raise RuntimeError(f"turn/start: {err}")
    wall, cpu = time.perf_counter() - t0, tree_cpu(s.p.pid) - cpu0
    s.close()
    if failed:
        raise RuntimeError(f"{len(failed)} turns or commands failed, e.g. {failed[0]}")
    odd = [c for c in commands.values() if c != 1]
    if len(commands) != n or odd:
        raise RuntimeError(f"expected one command per turn: {len(commands)} turns ran one, "
                           f"others ran {odd[:5]}")
    return wall, cpu, retried, len(short)


def start_mock(rein, work, n, call):
    path = os.path.join(work, "script.json")
    tool = {"tool_calls": [call], "delay_ms": 150}        # 2 events: 0.3 s
    text = {"text": "done", "deltas": 1, "delay_ms": 150}  # 2 events: 0.3 s
    with open(path, "w") as f:
        json.dump({"replies": [tool], "when_exhausted": "repeat_last"}, f)
    # Every request that ends with the tool's output gets the text, the others the call.
    mock = subprocess.Popen([rein, "mock-model", "--script", path, "--listen", "127.0.0.1:0",
                             "--after-tool-output", json.dumps(text)],
                            stdout=subprocess.PIPE, text=True)
    return mock, mock.stdout.readline().strip()


def provider(url):
    return (f'[model_providers.mock]\nname = "mock"\nbase_url = "{url}"\n'
            f'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--codex")
    ap.add_argument("--turns", default="200,1000")
    ap.add_argument("--modes", default="trampoline,fork",
                    help="rein launch modes: trampoline (default), fork (REIN_SANDBOX_SPAWN=fork)")
    a = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, {os.cpu_count()} cores")
    for n in [int(x) for x in a.turns.split(",")]:
        runs = [("rein " + mode, mode) for mode in a.modes.split(",")]
        if a.codex:
            runs.append(("codex", None))
        for label, mode in runs:
            work = tempfile.mkdtemp(prefix="rein-bench-tools-")
            cwd = os.path.join(work, "cwd")
            home = os.path.join(work, "home")
            os.makedirs(cwd)
            os.makedirs(home)
            env = dict(os.environ, MOCK_API_KEY="bench", RUST_LOG="error")
            if mode is not None:
                mock, url = start_mock(a.rein, work, n,
                                       {"name": "shell", "arguments": {"command": ["echo", "hi"]}})
                with open(os.path.join(home, "config.toml"), "w") as f:
                    f.write('model = "mock"\nmodel_provider = "mock"\n\n' + provider(url))
                env["REIN_HOME"] = home
                if mode == "fork":
                    env["REIN_SANDBOX_SPAWN"] = "fork"
                argv = [a.rein, "app-server"]
                params = {"approvalPolicy": "never", "sandbox": "workspace-write"}
            else:
                mock, url = start_mock(a.rein, work, n, {"name": "exec_command", "arguments": {
                    "cmd": "echo hi", "yield_time_ms": 10000}})
                with open(os.path.join(home, "config.toml"), "w") as f:
                    f.write('model = "gpt-5.5"\nmodel_provider = "mock"\napproval_policy = "never"\n'
                            'sandbox_mode = "workspace-write"\n\n' + provider(url))
                env["CODEX_HOME"] = home
                argv = [a.codex, "app-server"]
                params = {"approvalPolicy": "never", "sandbox": "workspace-write"}
            client0 = os.times()
            try:
                wall, cpu, retried, short = run(argv, env, cwd, n, params)
                mock_cpu = own_cpu(mock.pid)
            finally:
                mock.terminate()
            client = (os.times().user - client0.user) + (os.times().system - client0.system)
            print(f"{n:5} turns  {label:16} wall {wall:7.2f} s   server-tree CPU {cpu:7.2f} s "
                  f"({cpu / n * 1000:6.2f} ms/turn)   mock CPU {mock_cpu:5.2f} s   "
                  f"client CPU {client:5.2f} s"
                  + (f"   ({retried} turn/start retried)" if retried else "")
                  + (f"   ({short} outputs without `hi`)" if short else ""), flush=True)


if __name__ == "__main__":
    main()
