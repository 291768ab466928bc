#!/usr/bin/env python3
"""Session-store benchmarks through the release `rein` binary, persistence on, over stdio.

What users run, timed from the request line written to the answer line read:

- `thread/list` (first page, 50 threads, newest first) with 600, 6,000 and 50,000 threads on
  disk: the first call of a freshly spawned `rein app-server` (it waits for the startup
  reconciliation of the index with the files) and the median of later calls; the same with
  a `cwd` filter, and a page deep in the listing (through its cursor);
- `thread/resume` of a thread that is not loaded, in each of those homes;
- in a fresh home: `turn/start` -> `turn/completed` of a durable turn (its end fsynced
  before it is published) next to an ephemeral one (no file at all), and `thread/start` of a
  persisted thread next to an ephemeral one, and `thread/resume` of a 20-turn thread.

The homes are filled fast by cloning one real rollout (written by `rein app-server` against
`rein mock-model` at the start) under new UUIDv7 ids, creation times (500 threads a day,
newest today), working directories (20 projects), titles and modification times, then
indexed with `rein sessions reindex` (timed too). Every home is checked to list exactly the
threads written (paging through the whole listing) before it is timed.
"""
import argparse, glob, json, os, random, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from app_server import INIT, Server  # noqa: E402

PER_DAY = 500
PROJECTS = 20
PROMPT = "Find why the parser test is flaky"


def uuid7(ms):
    """A UUIDv7 string for the time `ms` (what `ThreadId::new` makes)."""
    r = random.getrandbits(74)
    hi = (ms << 16) | 0x7000 | (r >> 62)
    lo = (0b10 << 62) | (r & ((1 << 62) - 1))
    h = f"{hi:016x}{lo:016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def rfc3339(ms):
    t = time.gmtime(ms // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ms % 1000:03d}Z"


def session_path(home, thread, ms):
    t = time.gmtime(ms // 1000)
    day = time.strftime("%Y/%m/%d", t)
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", t)
    return os.path.join(home, "sessions", day, f"rollout-{stamp}-{thread}.jsonl")


def write_config(home, url):
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('model = "mock"\nmodel_provider = "mock"\n\n[model_providers.mock]\nname = "mock"\n'
                f'base_url = "{url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')


def open_server(rein, env):
    s = Server([rein, "app-server"], env)
    s.call("initialize", INIT)
    s.send({"method": "initialized"})
    return s


def timed(s, method, params):
    t0 = time.perf_counter()
    r = s.call(method, params)
    return time.perf_counter() - t0, r


def turn(s, tid, text):
    t0 = time.perf_counter()
    s.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": text}]})
    m = s.until(lambda m: m.get("method") == "turn/completed")
    assert m["params"]["turn"]["status"] == "completed", m
    return time.perf_counter() - t0


def rollout_of(home, tid):
    found = glob.glob(os.path.join(home, "sessions", "*", "*", "*", f"rollout-*-{tid}.jsonl"))
    assert len(found) == 1, found
    return found[0]


def make_template(rein, env, work):
    """One real rollout: a thread with one completed turn, written by `rein app-server`."""
    home = os.path.join(work, "template_home")
    shutil.copytree(env["REIN_HOME"], home)
    cwd = os.path.join(work, "projects", "template")
    os.makedirs(cwd)
    s = open_server(rein, dict(env, REIN_HOME=home))
    tid = s.call("thread/start", {"cwd": cwd})["thread"]["id"]
    turn(s, tid, PROMPT)
    s.close()
    with open(rollout_of(home, tid)) as f:
        return {"text": f.read(), "thread": tid, "cwd": cwd}


def fill(home, template, n):
    """Writes `n` rollouts cloned from `template`; returns their ids, newest first."""
    now = int(time.time() * 1000)
    step = 86_400_000 // PER_DAY
    meta_line, rest = template["text"].split("\n", 1)
    meta = json.loads(meta_line)
    projects = [os.path.join(os.path.dirname(template["cwd"]), f"p{k:02}") for k in range(PROJECTS)]
    for p in projects:
        os.makedirs(p, exist_ok=True)
    made_dirs = set()
    ids = []
    for i in range(n):
        created = now - (i + 1) * step
        thread = uuid7(created)
        cwd = projects[i % PROJECTS]
        meta["timestamp"] = rfc3339(created)
        meta["payload"].update(thread_id=thread, session_id=thread, cwd=cwd, created_at=rfc3339(created))
        body = (rest.replace(template["thread"], thread)
                    .replace(json.dumps(template["cwd"]), json.dumps(cwd))
                    .replace(PROMPT, f"{PROMPT} #{i}"))
        path = session_path(home, thread, created)
        d = os.path.dirname(path)
        if d not in made_dirs:
            os.makedirs(d, exist_ok=True)
            made_dirs.add(d)
        with open(path, "w") as f:
            f.write(json.dumps(meta, separators=(",", ":")) + "\n" + body)
        updated = (created + 60_000) * 1_000_000
        os.utime(path, ns=(updated, updated))
        ids.append(thread)
    return ids, projects


def list_all(s):
    """Every listed thread id, paging with the largest page."""
    seen, cursor = [], None
    while True:
        params = {"limit": 500}
        if cursor:
            params["cursor"] = cursor
        r = s.call("thread/list", params)
        seen.extend(t["id"] for t in r["data"])
        cursor = r.get("nextCursor")
        if not cursor:
            return seen


def median_ms(f, runs):
    return statistics.median(f() for _ in range(runs)) * 1000


def bench_listing(rein, env, template, n, runs, work):
    home = os.path.join(work, f"home_{n}")
    shutil.copytree(env["REIN_HOME"], home)
    env = dict(env, REIN_HOME=home)
    t0 = time.perf_counter()
    ids, projects = fill(home, template, n)
    fill_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([rein, "sessions", "reindex"], env=env, check=True, stdout=subprocess.DEVNULL)
    reindex_s = time.perf_counter() - t0
    s = open_server(rein, env)
    listed = list_all(s)
    assert sorted(listed) == sorted(ids), f"{n} written, {len(listed)} listed"
    assert listed[:50] == ids[:50], "the first page is not the newest threads"
    s.close()

    res = {"threads": n, "fill_s": fill_s, "reindex_s": reindex_s}
    # What an IDE does when it opens: spawn, initialize, list.
    cold = []
    for _ in range(max(3, runs // 10)):
        s = open_server(rein, env)
        dt, r = timed(s, "thread/list", {})
        assert len(r["data"]) == 50, r
        cold.append(dt)
        s.close()
    res["first_list_ms"] = statistics.median(cold) * 1000
    s = open_server(rein, env)
    res["list_ms"] = median_ms(lambda: timed(s, "thread/list", {})[0], runs)
    res["list_cwd_ms"] = median_ms(lambda: timed(s, "thread/list", {"cwd": projects[3]})[0], runs)
    # A page deep in the listing: the cursor of the page holding the middle thread.
    deep = s.call("thread/list", {"limit": n // 2})["nextCursor"]
    res["list_deep_ms"] = median_ms(lambda: timed(s, "thread/list", {"cursor": deep})[0], runs)
    picks = random.sample(ids, min(runs, len(ids)))
    times = []
    for tid in picks:
        dt, r = timed(s, "thread/resume", {"threadId": tid})
        assert r["thread"]["id"] == tid and len(r["thread"]["turns"]) == 1, r
        times.append(dt)
    res["resume_ms"] = statistics.median(times) * 1000
    s.close()
    return res


def bench_turns(rein, env, runs, work):
    home = os.path.join(work, "home_turns")
    shutil.copytree(env["REIN_HOME"], home)
    env = dict(env, REIN_HOME=home)
    cwd = os.path.join(work, "projects", "turns")
    os.makedirs(cwd)
    res = {}
    s = open_server(rein, env)
    for kind, extra in (("persisted", {}), ("ephemeral", {"ephemeral": True})):
        starts = []
        tids = []
        for _ in range(runs):
            dt, r = timed(s, "thread/start", dict(extra, cwd=cwd))
            starts.append(dt)
            tids.append(r["thread"]["id"])
            s.until(lambda m: m.get("method") == "thread/started")
        res[f"start_{kind}_ms"] = statistics.median(starts) * 1000
        tid = tids[0]
        res[f"turn_{kind}_ms"] = median_ms(lambda: turn(s, tid, "one more turn"), runs)
    s.close()
    # A 20-turn thread, resumed by a fresh server (not loaded there).
    s = open_server(rein, env)
    long_tid = s.call("thread/start", {"cwd": cwd})["thread"]["id"]
    for i in range(20):
        turn(s, long_tid, f"turn {i}")
    s.close()
    times = []
    for _ in range(max(3, runs // 4)):
        s = open_server(rein, env)
        dt, r = timed(s, "thread/resume", {"threadId": long_tid})
        assert len(r["thread"]["turns"]) == 20, r
        times.append(dt)
        s.close()
    res["resume_20_turns_ms"] = statistics.median(times) * 1000
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rein", required=True)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", default="600,6000,50000",
                    help="comma-separated numbers of threads on disk")
    ap.add_argument("--keep", action="store_true", help="keep the homes (printed)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rein-bench-store-", dir=os.environ.get("BENCH_DIR"))
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"replies": [], "when_exhausted": "echo"}, f)
    mock = subprocess.Popen([a.rein, "mock-model", "--script", script, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = mock.stdout.readline().strip()
        base = os.path.join(work, "base_home")
        write_config(base, url)
        env = dict(os.environ, MOCK_API_KEY="bench", RUST_LOG="error", REIN_HOME=base)
        template = make_template(a.rein, env, work)
        for n in (int(x) for x in a.threads.split(",")):
            r = bench_listing(a.rein, env, template, n, a.runs, work)
            print(f"{n:>6} threads on disk: written in {r['fill_s']:.1f} s, "
                  f"`rein sessions reindex` {r['reindex_s']:.2f} s")
            for key, label in (("first_list_ms", "thread/list, first call after spawn"),
                               ("list_ms", "thread/list, first page"),
                               ("list_cwd_ms", "thread/list, first page of one cwd"),
                               ("list_deep_ms", "thread/list, a page in the middle"),
                               ("resume_ms", "thread/resume, 1-turn thread")):
                print(f"{n:>6}   {label:40} {r[key]:8.2f} ms")
            sys.stdout.flush()
        r = bench_turns(a.rein, env, a.runs, work)
        for key, label in (("start_persisted_ms", "thread/start, persisted"),
                           ("start_ephemeral_ms", "thread/start, ephemeral"),
                           ("turn_persisted_ms", "turn/start -> turn/completed, durable"),
                           ("turn_ephemeral_ms", "turn/start -> turn/completed, ephemeral"),
                           ("resume_20_turns_ms", "thread/resume, 20-turn thread, new process")):
            print(f"         {label:42} {r[key]:8.2f} ms")
    finally:
        mock.terminate()
        if a.keep:
            print(f"homes kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
