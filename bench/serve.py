#!/usr/bin/env python3
"""Whole-process benchmark of `rein serve`: N streamed responses at once, each on a new
thread, against `rein mock-model` answering every request after about `--latency` seconds
(the delay is spread over the reply's streamed events). Raw HTTP/1.1 over asyncio, one
connection per response, so the figures are the server's and not a client library's.

Prints: wall time for all N, per-response time (POST sent -> response.completed) p50/p99,
the server's peak RSS (VmHWM) and RSS per open stream over the idle server's. Then the
overhead per request over the app-server's turn: `--baseline` sequential turns through
`rein app-server` over stdio against the same mock (a new thread each, `thread/start` sent
-> `turn/completed`, as each response of serve is a new thread), the same number of
sequential streamed responses through serve, and the difference of their medians; and the
concurrent p50 over that same app-server median. The machine's load average is printed
before and after, as the figures depend on it.
"""
import argparse, asyncio, json, os, statistics, subprocess, sys, tempfile, time

from app_server import INIT, Server


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


async def one(port, token, body):
    start = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    data = json.dumps(body).encode()
    writer.write(
        (f"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
         f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
         f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data)
    await writer.drain()
    status = (await reader.readline()).split()[1]
    if status != b"200":
        raise RuntimeError(f"status {status}: {await reader.read()}")
    seen = b""
    while b"event: response.completed" not in seen:
        chunk = await reader.read(65536)
        if not chunk:
            raise RuntimeError("the stream ended early")
        seen = seen[-256:] + chunk
    writer.close()
    return time.monotonic() - start


async def run(port, token, n, server_pid):
    body = {"input": "hello", "stream": True}
    idle = status_kib(server_pid, "VmRSS")
    start = time.monotonic()
    tasks = [asyncio.create_task(one(port, token, body)) for _ in range(n)]
    peak_open = idle
    while not all(t.done() for t in tasks):
        peak_open = max(peak_open, status_kib(server_pid, "VmRSS"))
        await asyncio.sleep(0.05)
    times = [t.result() for t in tasks]
    wall = time.monotonic() - start
    return wall, times, idle, peak_open


def app_server_turns(rein, env, cwd, n):
    """Median of `thread/start` sent -> `turn/completed`, a new thread each, over stdio."""
    s = Server([rein, "app-server"], env)
    s.call("initialize", INIT)
    s.send({"method": "initialized"})
    times = []
    for i in range(n):
        t0 = time.monotonic()
        tid = s.call("thread/start", {"cwd": cwd})["thread"]["id"]
        s.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": f"hello {i}"}]})
        m = s.until(lambda m: m.get("method") == "turn/completed")
        times.append(time.monotonic() - t0)
        assert m["params"]["turn"]["status"] == "completed", m
    s.close()
    return statistics.median(times)


async def sequential(port, token, n):
    body = {"input": "hello", "stream": True}
    return statistics.median([await one(port, token, body) for _ in range(n)])


def load():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--baseline", type=int, default=20)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rein-bench-serve-")
    # The mock waits `delay_ms` before each scripted event: the text's deltas and the
    # completion, so `deltas + 1` of them make up the latency.
    events = 5
    script = {"replies": [{"text": "Hello from the mock.", "deltas": events - 1,
                           "delay_ms": int(args.latency * 1000 / events)}]}
    with open(os.path.join(work, "script.json"), "w") as f:
        json.dump(script, f)
    mock = subprocess.Popen([args.rein, "mock-model", "--listen", "127.0.0.1:0", "--script",
                             os.path.join(work, "script.json")], stdout=subprocess.PIPE, text=True)
    mock_url = mock.stdout.readline().strip()
    home = os.path.join(work, "home")
    os.makedirs(home)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'model = "mock"\nmodel_provider = "mock"\n[model_providers.mock]\n'
                f'base_url = "{mock_url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')
    env = dict(os.environ, REIN_HOME=home, MOCK_API_KEY="k")
    server = subprocess.Popen([args.rein, "serve", "--listen", "127.0.0.1:0", "--cd", work,
                               "--max-runs", str(args.streams)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        url = server.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1])
        token = open(os.path.join(home, "serve-token")).read().strip()
        print(f"load average before: {load()} ({os.cpu_count()} cores)")
        wall, times, idle, peak = asyncio.run(run(port, token, args.streams, server.pid))
        times.sort()
        print(f"load average after: {load()}")
        print(f"streams: {args.streams} at once, model latency {args.latency:.2f} s")
        print(f"wall time for all: {wall:.2f} s")
        print(f"per response p50: {statistics.median(times):.3f} s, "
              f"p99: {times[int(len(times) * 0.99) - 1]:.3f} s")
        print(f"server RSS idle: {idle / 1024:.1f} MiB, peak while streaming: {peak / 1024:.1f} MiB, "
              f"VmHWM: {status_kib(server.pid, 'VmHWM') / 1024:.1f} MiB")
        print(f"RSS per open stream: {(peak - idle) / max(args.streams, 1):.1f} KiB")
        if args.baseline > 0:
            served = asyncio.run(sequential(port, token, args.baseline))
            turned = app_server_turns(args.rein, env, work, args.baseline)
            print(f"sequential, medians of {args.baseline}: serve POST -> response.completed "
                  f"{served * 1000:.1f} ms, app-server thread/start -> turn/completed "
                  f"{turned * 1000:.1f} ms")
            print(f"overhead per request over the app-server's turn: alone "
                  f"{(served - turned) * 1000:.1f} ms, at {args.streams} at once (p50) "
                  f"{(statistics.median(times) - turned) * 1000:.1f} ms")
            print(f"load average at the end: {load()}")
    finally:
        server.terminate(); server.wait(timeout=60)
        mock.terminate(); mock.wait()


if __name__ == "__main__":
    sys.exit(main())
