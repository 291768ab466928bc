"""Drives `rein serve` with the official `openai` Python SDK (Responses API), as a user
would: a plain response, a streamed one, a background one (with `metadata`, echoed)
polled to completion, a stream resumed with `starting_after`, a cancel mid-run, `previous_response_id`, input items and
the SDK's error classes. Every object and event is checked against the SDK's own types;
what it saw is printed as one JSON object for the Rust test to compare.

Usage: openai_responses.py BASE_URL   (the token in OPENAI_API_KEY)
"""

import json
import sys
import time

import openai
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseTextDeltaEvent,
)

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url + "/v1", max_retries=0, timeout=30)
out = {"misfits": []}


def fits(value, cls, what):
    if not isinstance(value, cls):
        out["misfits"].append(f"{what}: {type(value).__name__} is not {cls.__name__}")
    return value


def event_types(stream):
    seen = []
    for event in stream:
        seen.append(event)
    return seen


# A plain response.
plain = fits(client.responses.create(model="mock", input="hi"), Response, "plain")
out["plain"] = {"status": plain.status, "text": plain.output_text, "model": plain.model}

# A streamed one, through the SDK's event types.
events = event_types(client.responses.create(model="mock", input="stream it", stream=True))
fits(events[0], ResponseCreatedEvent, "first event")
fits(events[1], ResponseInProgressEvent, "second event")
fits(events[-1], ResponseCompletedEvent, "last event")
out["streamed"] = {
    "types": [e.type for e in events],
    "text": "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)),
    "final": events[-1].response.output_text,
    "numbers_increase": all(
        a.sequence_number < b.sequence_number for a, b in zip(events, events[1:])
    ),
}
streamed_id = events[-1].response.id

# The stream again from a sequence number: only what came after it.
after = events[3].sequence_number
resumed = event_types(
    client.responses.retrieve(streamed_id, stream=True, starting_after=after)
)
out["resumed"] = {
    "types": [e.type for e in resumed],
    # The first event restates the response as it stood (its created event).
    "restated": resumed[0].type == "response.created" and len(resumed[0].response.output) == 1,
    "all_after": all(e.sequence_number > after for e in resumed[1:]),
}
# The SDK's own accumulator, resumed from that number, builds the whole response.
with client.responses.stream(response_id=streamed_id, starting_after=after) as stream:
    for _ in stream:
        pass
    out["resumed"]["accumulated"] = stream.get_final_response().output_text

# A background response continuing the plain one, polled until it ends.
background = fits(
    client.responses.create(
        model="mock", input="in the background", background=True,
        previous_response_id=plain.id, metadata={"job": "nightly-42"},
    ),
    Response,
    "background",
)
polls = [background.status]
deadline = time.monotonic() + 30
while background.status in ("queued", "in_progress") and time.monotonic() < deadline:
    time.sleep(0.05)
    background = fits(client.responses.retrieve(background.id), Response, "polled")
    polls.append(background.status)
out["background"] = {
    "status": background.status,
    "text": background.output_text,
    "previous_is_plain": background.previous_response_id == plain.id,
    "polled_until_final": polls[-1] == "completed" and len(polls) >= 1,
    # Echoed by the SDK's own Response type, on the polled (final) object.
    "metadata": background.metadata,
    "background": background.background,
}

# A run cancelled mid-answer (the model hangs after its first words).
hanging = client.responses.create(model="mock", input="take your time", background=True)
for event in client.responses.retrieve(hanging.id, stream=True):
    if isinstance(event, ResponseOutputItemAddedEvent):
        break
cancelled = fits(client.responses.cancel(hanging.id), Response, "cancelled")
out["cancelled"] = {"status": cancelled.status, "again": client.responses.cancel(hanging.id).status}

# The cancelled thread goes on.
after_cancel = client.responses.create(
    model="mock", input="and now?", previous_response_id=cancelled.id
)
out["continued"] = {"status": after_cancel.status, "text": after_cancel.output_text}

# Its input, as the SDK lists it.
items = client.responses.input_items.list(after_cancel.id)
out["input_items"] = [
    {"role": item.role, "text": item.content[0].text} for item in items.data
]

# Errors arrive as the SDK's exception classes.
errors = {}
try:
    client.responses.retrieve("resp_" + "0" * 64)
except openai.NotFoundError as e:
    errors["not_found"] = e.status_code
try:
    client.responses.create(model="mock", input="x", temperature=0.5)
except openai.BadRequestError as e:
    errors["bad_request"] = [e.status_code, e.body.get("param") if isinstance(e.body, dict) else None]
try:
    openai.OpenAI(base_url=base_url + "/v1", api_key="wrong", max_retries=0).responses.create(
        model="mock", input="x"
    )
except openai.AuthenticationError as e:
    errors["unauthorized"] = e.status_code
out["errors"] = errors

print(json.dumps(out))
