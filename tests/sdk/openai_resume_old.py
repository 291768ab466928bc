"""Resumes the stream of a stored (days-old) response with the official `openai` Python
SDK: the raw events after a sequence number, and the SDK's own accumulator from there.
Prints what it saw as one JSON object.

Usage: openai_resume_old.py BASE_URL RESPONSE_ID AFTER   (the token in OPENAI_API_KEY)
"""

import json
import sys

import openai
from openai.types.responses import Response, ResponseCreatedEvent

base_url, response_id, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = openai.OpenAI(base_url=base_url + "/v1", max_retries=0, timeout=30)

retrieved = client.responses.retrieve(response_id)
events = list(client.responses.retrieve(response_id, stream=True, starting_after=after))
with client.responses.stream(response_id=response_id, starting_after=after) as stream:
    for _ in stream:
        pass
    final = stream.get_final_response()

print(json.dumps({
    "retrieved": isinstance(retrieved, Response),
    "created_at": int(retrieved.created_at),
    "first_restates": isinstance(events[0], ResponseCreatedEvent),
    "all_after": all(e.sequence_number > after for e in events[1:]),
    "accumulated": final.output_text,
    "status": final.status,
}))
