// Drives `rein serve` with the official `openai` npm package (Responses API), the same
// cases as openai_responses.py: a plain response, a streamed one, a stream resumed with
// `starting_after`, a background one polled to completion, a cancel mid-run,
// `previous_response_id`, input items and the SDK's error classes. Prints what it saw as
// one JSON object, in the same shape as the Python script, for the Rust test to compare.
//
// Usage: node openai_responses.mjs NODE_MODULES BASE_URL   (the token in OPENAI_API_KEY)

import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, baseURL] = process.argv.slice(2);
const { default: OpenAI } = await import(
  pathToFileURL(path.join(modules, "openai/index.mjs")).href
);

const client = new OpenAI({ baseURL: baseURL + "/v1", maxRetries: 0, timeout: 30_000 });
const out = { misfits: [] };
const textOf = (response) =>
  response.output_text ??
  response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content.map((part) => part.text))
    .join("");
const all = async (stream) => {
  const seen = [];
  for await (const event of stream) seen.push(event);
  return seen;
};

const plain = await client.responses.create({ model: "mock", input: "hi" });
out.plain = { status: plain.status, text: plain.output_text, model: plain.model };

const events = await all(
  await client.responses.create({ model: "mock", input: "stream it", stream: true })
);
out.streamed = {
  types: events.map((e) => e.type),
  text: events
    .filter((e) => e.type === "response.output_text.delta")
    .map((e) => e.delta)
    .join(""),
  final: textOf(events.at(-1).response),
  numbers_increase: events.every(
    (e, i) => i === 0 || events[i - 1].sequence_number < e.sequence_number
  ),
};
const streamedId = events.at(-1).response.id;

const after = events[3].sequence_number;
const resumed = await all(
  await client.responses.retrieve(streamedId, { stream: true, starting_after: after })
);
out.resumed = {
  types: resumed.map((e) => e.type),
  // The first event restates the response as it stood (its created event).
  restated: resumed[0].type === "response.created" && resumed[0].response.output.length === 1,
  all_after: resumed.slice(1).every((e) => e.sequence_number > after),
};
// The SDK's own accumulator, resumed from that number, builds the whole response.
const accumulating = client.responses.stream({ response_id: streamedId, starting_after: after });
for await (const _ of accumulating) {
}
out.resumed.accumulated = textOf(await accumulating.finalResponse());

let background = await client.responses.create({
  model: "mock",
  input: "in the background",
  background: true,
  previous_response_id: plain.id,
  metadata: { job: "nightly-42" },
});
const polls = [background.status];
const deadline = Date.now() + 30_000;
while (["queued", "in_progress"].includes(background.status) && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  background = await client.responses.retrieve(background.id);
  polls.push(background.status);
}
out.background = {
  status: background.status,
  text: background.output_text,
  previous_is_plain: background.previous_response_id === plain.id,
  polled_until_final: polls.at(-1) === "completed",
  metadata: background.metadata,
  background: background.background,
};

const hanging = await client.responses.create({
  model: "mock",
  input: "take your time",
  background: true,
});
for await (const event of await client.responses.retrieve(hanging.id, { stream: true })) {
  if (event.type === "response.output_item.added") break;
}
const cancelled = await client.responses.cancel(hanging.id);
out.cancelled = {
  status: cancelled.status,
  again: (await client.responses.cancel(hanging.id)).status,
};

const afterCancel = await client.responses.create({
  model: "mock",
  input: "and now?",
  previous_response_id: cancelled.id,
});
out.continued = { status: afterCancel.status, text: afterCancel.output_text };

const items = await client.responses.inputItems.list(afterCancel.id);
out.input_items = items.data.map((item) => ({ role: item.role, text: item.content[0].text }));

const errors = {};
try {
  await client.responses.retrieve("resp_" + "0".repeat(64));
} catch (e) {
  if (e instanceof OpenAI.NotFoundError) errors.not_found = e.status;
}
try {
  await client.responses.create({ model: "mock", input: "x", temperature: 0.5 });
} catch (e) {
  if (e instanceof OpenAI.BadRequestError) errors.bad_request = [e.status, e.param ?? null];
}
try {
  await new OpenAI({ baseURL: baseURL + "/v1", apiKey: "wrong", maxRetries: 0 }).responses.create({
    model: "mock",
    input: "x",
  });
} catch (e) {
  if (e instanceof OpenAI.AuthenticationError) errors.unauthorized = e.status;
}
out.errors = errors;

console.log(JSON.stringify(out));
