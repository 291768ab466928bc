# Drives `rein acp` with the PyPI ACP SDK (`agent-client-protocol`, import name `acp`),
# through its client side. Usage:
#   python acp_client.py <rein binary> <cwd>
# (REIN_HOME and the model's key come from the environment). The SDK parses what it
# routes into its pydantic models; on top of that every message the agent sends is
# checked here against the model of its method (or, for an answer, of the request it
# answers), strictly: a field the schema does not know, which pydantic would drop, is an
# error too. Prints one JSON object: what the agent answered, the updates of each turn,
# the permission requests and any message that did not fit, for the Rust test to compare.
import asyncio
import json
import os
import sys

import acp
from acp import schema

REIN, CWD = sys.argv[1], sys.argv[2]

# The model of each message the agent may send, by method; and of each answer, by the
# method of the request it answers.
REQUESTS = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
}
ANSWERS = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/prompt": schema.PromptResponse,
}


def unknown_fields(model, raw):
    """What `raw` says that the parsed `model` lost (fields the schema does not know)."""
    dumped = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return [] if dumped == raw else [{"sent": raw, "as_parsed": dumped}]


class Checker:
    """A stream observer: checks every incoming message against its schema model."""

    def __init__(self):
        self.methods = {}
        self.misfits = []
        self.seen = 0

    def __call__(self, event):
        message = event.message
        if event.direction == "outgoing":
            if "id" in message and "method" in message:
                self.methods[message["id"]] = message["method"]
            return
        self.seen += 1
        if message.get("jsonrpc") != "2.0":
            self.misfits.append({"not_jsonrpc_2": message})
        if "method" in message:
            model = REQUESTS.get(message["method"])
            payload = message.get("params")
        elif "error" in message:
            self.misfits.append({"error": message})
            return
        else:
            model = ANSWERS.get(self.methods.get(message.get("id")))
            payload = message.get("result")
        if model is None:
            self.misfits.append({"unexpected": message})
            return
        try:
            parsed = model.model_validate(payload)
        except Exception as e:  # pydantic's ValidationError, reported whole
            self.misfits.append({"invalid": message, "why": str(e)})
            return
        for lost in unknown_fields(parsed, payload):
            self.misfits.append({"unknown_fields": lost})


class Client:
    """The client side: collects updates, answers permissions with "allow once"."""

    def __init__(self):
        self.updates = []
        self.permissions = []

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_unset=True))

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {
                "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_unset=True),
                "options": [o.model_dump(mode="json", by_alias=True, exclude_unset=True) for o in options],
            }
        )
        allow = next(o for o in options if o.kind == "allow_once")
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )


async def main():
    client = Client()
    checker = Checker()
    out = {"turns": []}
    async with acp.spawn_agent_process(
        client, REIN, "acp", env=dict(os.environ), observers=[checker]
    ) as (conn, _process):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=schema.ClientCapabilities(),
            client_info=schema.Implementation(name="rein-acp-py-test", version="1.0.0"),
        )
        out["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_unset=True)
        session = await conn.new_session(cwd=CWD, mcp_servers=[])
        out["sessionId"] = session.session_id
        for text in ["Say hello.", "Touch the file."]:
            client.updates = []
            answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
            out["turns"].append({"stopReason": answer.stop_reason, "updates": client.updates})
    out["permissions"] = client.permissions
    out["misfits"] = checker.misfits
    out["checked"] = checker.seen
    print(json.dumps(out))


asyncio.run(main())
