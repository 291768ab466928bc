#!/usr/bin/env python3
"""spawn -> `initialize` answer of `rein app-server` (release binary, over stdio), with the
sandbox verdict cached in REIN_HOME and without (a fresh home each run: the probe
confines a process first), and of `codex app-server` side by side. Median of --runs,
each from the process spawn to the answer line read.
"""
import argparse, json, os, statistics, subprocess, tempfile, time

INIT = {"id": 1, "method": "initialize", "params": {
    "clientInfo": {"name": "bench", "title": None, "version": "0.0.1"},
    "capabilities": {"experimentalApi": True}}}


def once(argv, env):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    p.stdin.write(json.dumps(INIT).encode() + b"\n")
    p.stdin.flush()
    line = p.stdout.readline()
    elapsed = time.perf_counter() - t0
    assert b'"result"' in line, line
    p.stdin.close()
    p.wait(timeout=30)
    return elapsed


def median_ms(argv, env_for_run, runs):
    return statistics.median(once(argv, env_for_run()) for _ in range(runs)) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--codex")
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, {os.cpu_count()} cores, "
          f"median of {a.runs}")
    work = tempfile.mkdtemp(prefix="rein-bench-startup-")
    cached = os.path.join(work, "cached")
    os.makedirs(cached)
    env = dict(os.environ, RUST_LOG="error")
    once([a.rein, "app-server"], dict(env, REIN_HOME=cached))  # fills the cache
    assert os.path.exists(os.path.join(cached, "cache", "sandbox-verdict.json"))
    rein_cached = median_ms([a.rein, "app-server"], lambda: dict(env, REIN_HOME=cached), a.runs)
    rein_fresh = median_ms([a.rein, "app-server"],
                           lambda: dict(env, REIN_HOME=tempfile.mkdtemp(dir=work)), a.runs)
    print(f"rein, verdict cached        {rein_cached:7.2f} ms")
    print(f"rein, fresh home (probe)    {rein_fresh:7.2f} ms")
    if a.codex:
        home = os.path.join(work, "codex")
        os.makedirs(home)
        codex = median_ms([a.codex, "app-server"], lambda: dict(env, CODEX_HOME=home), a.runs)
        print(f"codex                       {codex:7.2f} ms   rein/codex cached "
              f"{rein_cached / codex:.3f}, fresh {rein_fresh / codex:.3f}")


if __name__ == "__main__":
    main()
