"""Drives `rein serve`'s Agent Protocol with the official `langgraph-sdk` client, as a user
would: assistants, a thread, a plain (waited) run, a streamed run, a background run
joined, a run's stream joined again with `Last-Event-ID` after the connection was dropped,
a second run under each `multitask_strategy`, a cancel, listing, state, search and the
SDK's error classes. What it saw is printed as one JSON object for the Rust test.

Usage: langgraph_runs.py URL TOKEN main
       langgraph_runs.py URL TOKEN crash-before           (prints the thread and run ids)
       langgraph_runs.py URL TOKEN crash-after THREAD RUN (after a kill -9 and a restart)
"""

import json
import socket
import sys
import threading

from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
)

url, token, phase = sys.argv[1:4]
# The token as the SDK's API key (its `x-api-key` header).
client = get_sync_client(url=url, api_key=token, timeout=30)
out = {}


def ask(text):
    return {"messages": [{"role": "user", "content": text}]}


def said(values):
    return [[m["type"], m["content"]] for m in values["messages"]]


def until_answering(thread, run):
    """Join the run's stream until the model has begun its answer; the last event id."""
    stream = client.runs.join_stream(thread, run, stream_mode="messages-tuple")
    last = None
    for part in stream:
        last = part.id
        if part.event == "messages":
            break
    stream.close()  # the connection is dropped here; the run goes on
    return last


def main():
    out["assistants"] = [a["assistant_id"] for a in client.assistants.search()]
    thread = client.threads.create()["thread_id"]

    # A plain run, waited for: the thread's values.
    out["plain"] = said(client.runs.wait(thread, "rein", input=ask("one")))

    # A streamed run.
    parts = list(
        client.runs.stream(thread, "rein", input=ask("two"), stream_mode=["values", "updates"])
    )
    ids = [int(p.id) for p in parts]
    out["streamed"] = {
        "events": [p.event for p in parts],
        "last_values": said([p for p in parts if p.event == "values"][-1].data)[-2:],
        "ids_increase": all(a < b for a, b in zip(ids, ids[1:])),
    }

    # A background run, joined.
    run = client.runs.create(thread, "rein", input=ask("three"))
    joined = client.runs.join(thread, run["run_id"])
    out["background"] = {
        "joined": said(joined)[-1],
        "status": client.runs.get(thread, run["run_id"])["status"],
    }

    # A run mid-answer; its stream's connection dropped, the run goes on.
    four = client.runs.create(thread, "rein", input=ask("four"))["run_id"]
    last_id = until_answering(thread, four)
    out["dropped"] = {"status": client.runs.get(thread, four)["status"]}

    # A second run on the busy thread, under each strategy.
    try:
        client.runs.create(thread, "rein", input=ask("no"), multitask_strategy="reject")
        out["reject"] = "accepted"
    except ConflictError as e:
        out["reject"] = e.status_code
    five = client.runs.create(thread, "rein", input=ask("five"), multitask_strategy="interrupt")
    five = five["run_id"]
    # The dropped stream, joined again after the last event it saw: the rest, to the end.
    rest = list(client.runs.join_stream(thread, four, last_event_id=last_id))
    out["rejoined"] = {
        "events": [p.event for p in rest],
        "all_after": all(int(p.id) > int(last_id) for p in rest),
        "status": client.runs.get(thread, four)["status"],
    }
    until_answering(thread, five)
    six = client.runs.create(thread, "rein", input=ask("six"), multitask_strategy="rollback")
    six = six["run_id"]
    try:
        client.runs.get(thread, five)
        out["rolled_back"] = "still there"
    except NotFoundError as e:
        out["rolled_back"] = e.status_code
    until_answering(thread, six)
    seven = client.runs.create(thread, "rein", input=ask("seven"), multitask_strategy="enqueue")
    out["enqueued"] = seven["status"]
    seven = seven["run_id"]

    # Cancel the running one: the queued one starts.
    client.runs.cancel(thread, six, wait=True)
    out["cancelled"] = client.runs.get(thread, six)["status"]
    out["queued_joined"] = said(client.runs.join(thread, seven))[-1]
    out["runs"] = [
        [r["status"], r["multitask_strategy"]] for r in client.runs.list(thread, limit=20)
    ]
    state = client.threads.get_state(thread)
    out["humans"] = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
    out["next"] = state["next"]
    history = client.threads.get_history(thread, limit=3)
    out["history"] = [h["checkpoint"]["checkpoint_id"] == r["run_id"] for h, r in zip(
        history, client.runs.list(thread, limit=3)
    )]
    out["found"] = any(t["thread_id"] == thread for t in client.threads.search(limit=50))
    out["thread_status"] = client.threads.get(thread)["status"]

    errors = {}
    try:
        client.runs.get(thread, "00000000-0000-0000-0000-000000000000")
    except NotFoundError as e:
        errors["not_found"] = e.status_code
    try:
        client.runs.create(thread, "rein", input=ask("x"), webhook="http://127.0.0.1:1/hook")
    except BadRequestError as e:
        errors["bad_request"] = [e.status_code, e.body["error"]["param"]]
    try:
        get_sync_client(url=url, api_key="wrong").threads.create()
    except AuthenticationError as e:
        errors["unauthorized"] = e.status_code
    out["errors"] = errors

    # A streamed run whose connection is cut after its first event: the SDK reconnects
    # to the stream's Location with Last-Event-ID, and misses nothing.
    out["reconnected"] = reconnected(thread)


class CuttingProxy:
    """A TCP proxy to the server that cuts the first event stream through it after its
    first event (a dropped connection, mid-run), so the SDK's own reconnect is what
    resumes it. It names the server in `Host`, as the server's admission requires."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cuts = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self.up, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self.down, args=(upstream, client), daemon=True).start()

    def up(self, client, upstream):
        ours = f"127.0.0.1:{self.port}".encode()
        theirs = f"{self.target[0]}:{self.target[1]}".encode()
        while data := client.recv(65536):
            upstream.sendall(data.replace(ours, theirs))

    def down(self, upstream, client):
        seen = b""
        while data := upstream.recv(65536):
            seen += data
            end = seen.find(b"\n\n\r\n", seen.find(b"event: metadata"))
            if self.cuts == 0 and b"text/event-stream" in seen and end > 0:
                self.cuts += 1
                client.sendall(data[: len(data) - (len(seen) - end - 4)])
                client.shutdown(socket.SHUT_RDWR)
                client.close()
                upstream.close()
                return
            client.sendall(data)
        client.close()


def reconnected(thread):
    host, port = url.removeprefix("http://").split(":")
    proxy = CuttingProxy((host, int(port)))
    through = get_sync_client(url=f"http://127.0.0.1:{proxy.port}", api_key=token, timeout=30)
    parts = list(
        through.runs.stream(
            thread, "rein", input=ask("eight"), stream_mode=["values", "updates"]
        )
    )
    run = parts[0].data["run_id"]
    replay = list(client.runs.join_stream(thread, run, stream_mode=["values", "updates"]))
    return {
        "cut": proxy.cuts,
        "events": [p.event for p in parts],
        "same_as_replay": [(p.id, p.event, p.data) for p in parts]
        == [(p.id, p.event, p.data) for p in replay],
        "answer": said([p for p in parts if p.event == "values"][-1].data)[-1:],
    }


def crash_before():
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "rein", input=ask("crash"))["run_id"]
    until_answering(thread, run)
    out["thread"], out["run"] = thread, run


def crash_after(thread, run):
    out["status"] = client.runs.get(thread, run)["status"]
    out["values"] = said(client.threads.get_state(thread)["values"])
    out["replayed"] = [p.event for p in client.runs.join_stream(thread, run)]
    out["next"] = said(client.runs.wait(thread, "rein", input=ask("after")))[-1]


if phase == "main":
    main()
elif phase == "crash-before":
    crash_before()
else:
    crash_after(sys.argv[4], sys.argv[5])
print(json.dumps(out))
