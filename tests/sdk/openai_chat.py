"""Drives `rein serve` with the official `openai` Python SDK's Chat Completions API, as a
chat client would: a plain completion, the same conversation continued (on the same rein
thread), a streamed one with usage, a history rein did not write (a new thread), and the
SDK's error classes. Every object is checked against the SDK's own types; what it saw is
printed as one JSON object for the Rust test to compare (the same shape as
openai_chat.mjs's).

Usage: openai_chat.py BASE_URL   (the token in OPENAI_API_KEY)
"""

import json
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url + "/v1", max_retries=0, timeout=30)
out = {"misfits": []}


def fits(value, cls, what):
    if not isinstance(value, cls):
        out["misfits"].append(f"{what}: {type(value).__name__} is not {cls.__name__}")
    return value


def thread_of(completion_id):
    # chatcmpl- + the thread's 32 hex digits + the turn's.
    return completion_id[len("chatcmpl-"):][:32]


def said(completion):
    choice = completion.choices[0]
    return {
        "object": completion.object,
        "model": completion.model,
        "role": choice.message.role,
        "content": choice.message.content,
        "finish_reason": choice.finish_reason,
        "counted": completion.usage is not None and completion.usage.total_tokens >= 0,
    }


conversation = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "hi"},
]
plain = fits(client.chat.completions.create(model="mock", messages=conversation), ChatCompletion, "plain")
out["plain"] = said(plain)

# The client sends the whole conversation again: rein continues the thread that answered it.
conversation += [
    {"role": "assistant", "content": plain.choices[0].message.content},
    {"role": "user", "content": "and you?"},
]
continued = fits(client.chat.completions.create(model="mock", messages=conversation), ChatCompletion, "continued")
out["continued"] = said(continued)
out["continued"]["same_thread"] = thread_of(continued.id) == thread_of(plain.id)

# Streamed, with the usage chunk last.
chunks = list(
    client.chat.completions.create(
        model="mock",
        messages=[{"role": "user", "content": "stream it"}],
        stream=True,
        stream_options={"include_usage": True},
    )
)
for chunk in chunks:
    fits(chunk, ChatCompletionChunk, "chunk")
with_choices = [c for c in chunks if c.choices]
out["streamed"] = {
    "first_role": with_choices[0].choices[0].delta.role,
    "text": "".join(c.choices[0].delta.content or "" for c in with_choices),
    "finish_reason": with_choices[-1].choices[0].finish_reason,
    "usage_last": chunks[-1].choices == [] and chunks[-1].usage is not None,
    "one_id": len({c.id for c in chunks}) == 1,
}

# A history rein did not write: a new thread, told the earlier messages.
foreign = fits(
    client.chat.completions.create(
        model="mock",
        messages=[
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "not rein's"},
            {"role": "user", "content": "c"},
        ],
    ),
    ChatCompletion,
    "foreign",
)
out["foreign"] = said(foreign)
out["foreign"]["new_thread"] = thread_of(foreign.id) != thread_of(plain.id)

errors = {}
try:
    client.chat.completions.create(model="mock", messages=conversation, temperature=0.5)
except openai.BadRequestError as e:
    errors["temperature"] = [e.status_code, e.body.get("param") if isinstance(e.body, dict) else None]
try:
    client.chat.completions.create(
        model="mock",
        messages=[{"role": "user", "content": "x"}, {"role": "tool", "content": "y", "tool_call_id": "c"}],
    )
except openai.BadRequestError as e:
    errors["tool_message"] = [e.status_code, e.body.get("param") if isinstance(e.body, dict) else None]
try:
    openai.OpenAI(base_url=base_url + "/v1", api_key="wrong", max_retries=0).chat.completions.create(
        model="mock", messages=conversation
    )
except openai.AuthenticationError as e:
    errors["unauthorized"] = e.status_code
out["errors"] = errors

print(json.dumps(out))
