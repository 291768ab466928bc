#!/usr/bin/env python3
"""Cost of an MCP tool call over stdio, and the memory of threads sharing one server.

The server is bench/mcp_server.py, an MCP server over stdio without an SDK: its `timed`
tool busy-waits `--work-ms` and reports the server's own time of the call (its request
line read to its answer about to be written). Three views of the same call, each a median
over `--calls` calls after 5 of warm-up:

- the server's own time, as it reports it;
- a bare client: this script speaking JSON-RPC to the server over its stdin/stdout, from
  the request line written to the answer line read (the floor of pipes and Python);
- rein: `rein app-server` (persistence on: rollouts written under REIN_HOME) driven by
  `rein mock-model`, whose every turn calls `mcp__scripted__timed` once; timed from the
  `item/started` to the `item/completed` notification of the `mcpToolCall` item as the
  app-server's client reads them. That span holds the call's start (its ToolCallBegin
  written to the rollout first), the argument check, the MCP round trip, the result
  recorded and both notifications;
- next to it, the same span for a built-in `read_file` of a one-line file: what any call
  costs the kernel without MCP.

Then, for each N of `--threads`, a fresh app-server whose N threads (one working
directory) each run one turn that calls the server: rein's RSS and the number of
processes under rein (the shared server is one).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def descendants(pid):
    """The pids of every process under `pid`."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


class Peer:
    """A JSON-RPC peer over a child's stdin/stdout, one JSON message a line."""

    def __init__(self, argv, env, cwd=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True,
                                  bufsize=1)
        self.next_id = 1

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the peer closed its stdout")
        return json.loads(line)

    def until(self, pred):
        while True:
            m = self.read()
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
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def handled_us(content):
    """The server's own time of a call, from the tool's answer."""
    return json.loads(content[0]["text"])["handled_us"]


def bare(python, script, work_ms, calls):
    """(round trip, inside the tool) medians in µs of a bare stdio client."""
    s = Peer([python, script], dict(os.environ))
    s.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "0"}})
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    trips, inside = [], []
    for i in range(calls + 5):
        t0 = time.perf_counter()
        r = s.call("tools/call", {"name": "timed", "arguments": {"ms": work_ms}})
        trip = (time.perf_counter() - t0) * 1e6
        if i >= 5:  # warm-up
            trips.append(trip)
            inside.append(handled_us(r["content"]))
    s.close()
    return statistics.median(trips), statistics.median(inside)


INIT = {"clientInfo": {"name": "bench", "title": None, "version": "0.0.1"},
        "capabilities": {"experimentalApi": True}}


def start_mock(rein, work, turns, work_ms, call=None):
    call = call or {"name": "mcp__scripted__timed", "arguments": {"ms": work_ms}}
    path = os.path.join(work, f"script-{turns}-{call['name']}.json")
    with open(path, "w") as f:
        json.dump({"replies": [r for _ in range(turns)
                               for r in ({"tool_calls": [call]}, {"text": "done"})]}, f)
    mock = subprocess.Popen([rein, "mock-model", "--script", path, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    return mock, mock.stdout.readline().strip()


def home(work, name, url, python, script):
    path = os.path.join(work, name)
    os.makedirs(path)
    with open(os.path.join(path, "config.toml"), "w") as f:
        f.write('model = "mock"\nmodel_provider = "mock"\n\n'
                f'[model_providers.mock]\nname = "mock"\nbase_url = "{url}"\n'
                'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\n\n'
                f'[mcp_servers.scripted]\ncommand = {json.dumps(python)}\n'
                f'args = [{json.dumps(script)}]\nrequired = true\n')
    return path


def mcp_turn(s, tid, i, kind="mcpToolCall"):
    """Run one turn that calls the tool: (started -> completed µs, the server's own µs)."""
    s.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": f"call {i}"}]})
    started = None
    while True:
        m = s.read()
        method = m.get("method")
        item = m.get("params", {}).get("item", {})
        if method == "item/started" and item.get("type") == kind:
            started = time.perf_counter()
        elif method == "item/completed" and item.get("type") == kind:
            span = (time.perf_counter() - started) * 1e6
            assert item["status"] == "completed", item
            inside = handled_us(item["result"]["content"]) if kind == "mcpToolCall" else 0
        elif method == "turn/completed":
            assert m["params"]["turn"]["status"] == "completed", m
            return span, inside


def thread_start(s, cwd):
    return s.call("thread/start", {"cwd": cwd, "approvalPolicy": "never",
                                   "sandbox": "read-only"})["thread"]["id"]


def through_rein(rein, env, work, cwd, python, script, work_ms, calls):
    mock, url = start_mock(rein, work, calls + 5, work_ms)
    try:
        h = home(work, "home-calls", url, python, script)
        s = Peer([rein, "app-server"], dict(env, REIN_HOME=h))
        s.call("initialize", INIT)
        s.send({"method": "initialized"})
        tid = thread_start(s, cwd)
        spans, inside = [], []
        for i in range(calls + 5):
            span, ins = mcp_turn(s, tid, i)
            if i >= 5:  # warm-up
                spans.append(span)
                inside.append(ins)
        s.close()
        return statistics.median(spans), statistics.median(inside)
    finally:
        mock.terminate()


def builtin(rein, env, work, cwd, python, script, calls):
    """The same span for a built-in `read_file` of a small file: the kernel's own cost of a
    call (events recorded and projected), without MCP."""
    with open(os.path.join(cwd, "small.txt"), "w") as f:
        f.write("one line\n")
    call = {"name": "read_file", "arguments": {"path": "small.txt"}}
    mock, url = start_mock(rein, work, calls + 5, 0, call)
    try:
        h = home(work, "home-builtin", url, python, script)
        s = Peer([rein, "app-server"], dict(env, REIN_HOME=h))
        s.call("initialize", INIT)
        s.send({"method": "initialized"})
        tid = thread_start(s, cwd)
        spans = [mcp_turn(s, tid, i, "commandExecution")[0] for i in range(calls + 5)][5:]
        s.close()
        return statistics.median(spans)
    finally:
        mock.terminate()


def threads_sharing(rein, env, work, cwd, python, script, n):
    """(rein's RSS KiB, processes under rein, their RSS KiB) with n threads after a call each."""
    mock, url = start_mock(rein, work, n, 0)
    try:
        h = home(work, f"home-{n}", url, python, script)
        s = Peer([rein, "app-server"], dict(env, REIN_HOME=h))
        s.call("initialize", INIT)
        s.send({"method": "initialized"})
        tids = [thread_start(s, cwd) for _ in range(n)]
        for i, tid in enumerate(tids):
            mcp_turn(s, tid, i)
        under = descendants(s.p.pid)
        result = (rss_kib(s.p.pid), len(under), sum(rss_kib(p) for p in under))
        s.close()
        return result
    finally:
        mock.terminate()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--work-ms", type=float, default=0.0)
    ap.add_argument("--threads", default="1,10,50")
    a = ap.parse_args()
    script = os.path.abspath(os.path.join(os.path.dirname(__file__), "mcp_server.py"))
    python = sys.executable
    work = tempfile.mkdtemp(prefix="rein-bench-mcp-")
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd)
    env = dict(os.environ, MOCK_API_KEY="bench", RUST_LOG="error")

    trip, bare_inside = bare(python, script, a.work_ms, a.calls)
    span, rein_inside = through_rein(a.rein, env, work, cwd, python, script, a.work_ms,
                                     a.calls)
    read = builtin(a.rein, env, work, cwd, python, script, a.calls)
    print(f"MCP call over stdio, tool busy {a.work_ms:g} ms, medians of {a.calls} calls:")
    print(f"  the server's own time                    {bare_inside:9.1f} µs")
    print(f"  bare stdio client round trip             {trip:9.1f} µs")
    print(f"  rein app-server item/started->completed  {span:9.1f} µs"
          f"  (server's own {rein_inside:.1f} µs)")
    print(f"  rein's overhead over the server's own time {span - rein_inside:9.1f} µs,"
          f" over the bare client {span - trip:9.1f} µs")
    print(f"  built-in read_file, same span             {read:9.1f} µs (the kernel's per-call cost)")
    for n in [int(x) for x in a.threads.split(",")]:
        rss, procs, server_rss = threads_sharing(a.rein, env, work, cwd, python, script, n)
        print(f"  {n:3} threads sharing the server: rein RSS {rss / 1024:6.1f} MiB,"
              f" {procs} process(es) under rein ({server_rss / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
