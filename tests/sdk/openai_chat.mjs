// Drives `rein serve` with the official `openai` npm package's Chat Completions API, the
// same cases as openai_chat.py: a plain completion, the conversation continued on the same
// rein thread, a streamed one with usage, a history rein did not write, and the SDK's error
// classes. Prints what it saw as one JSON object, in the same shape as the Python script.
//
// Usage: node openai_chat.mjs NODE_MODULES BASE_URL   (the token in OPENAI_API_KEY)

import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, baseURL] = process.argv.slice(2);
const { default: OpenAI } = await import(
  pathToFileURL(path.join(modules, "openai/index.mjs")).href
);

const client = new OpenAI({ baseURL: baseURL + "/v1", maxRetries: 0, timeout: 30_000 });
const out = { misfits: [] };
const threadOf = (id) => id.slice("chatcmpl-".length).slice(0, 32);
const said = (completion) => {
  const choice = completion.choices[0];
  return {
    object: completion.object,
    model: completion.model,
    role: choice.message.role,
    content: choice.message.content,
    finish_reason: choice.finish_reason,
    counted: completion.usage != null && completion.usage.total_tokens >= 0,
  };
};

const conversation = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "hi" },
];
const plain = await client.chat.completions.create({ model: "mock", messages: conversation });
out.plain = said(plain);

conversation.push(
  { role: "assistant", content: plain.choices[0].message.content },
  { role: "user", content: "and you?" },
);
const continued = await client.chat.completions.create({ model: "mock", messages: conversation });
out.continued = { ...said(continued), same_thread: threadOf(continued.id) === threadOf(plain.id) };

const chunks = [];
const stream = await client.chat.completions.create({
  model: "mock",
  messages: [{ role: "user", content: "stream it" }],
  stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) chunks.push(chunk);
for (const chunk of chunks) {
  if (chunk.object !== "chat.completion.chunk") out.misfits.push(`chunk: ${chunk.object}`);
}
const withChoices = chunks.filter((c) => c.choices.length > 0);
const last = chunks[chunks.length - 1];
out.streamed = {
  first_role: withChoices[0].choices[0].delta.role,
  text: withChoices.map((c) => c.choices[0].delta.content ?? "").join(""),
  finish_reason: withChoices[withChoices.length - 1].choices[0].finish_reason,
  usage_last: last.choices.length === 0 && last.usage != null,
  one_id: new Set(chunks.map((c) => c.id)).size === 1,
};

const foreign = await client.chat.completions.create({
  model: "mock",
  messages: [
    { role: "user", content: "a" },
    { role: "assistant", content: "not rein's" },
    { role: "user", content: "c" },
  ],
});
out.foreign = { ...said(foreign), new_thread: threadOf(foreign.id) !== threadOf(plain.id) };

const errors = {};
const paramOf = (e) => e.param ?? null;
try {
  await client.chat.completions.create({ model: "mock", messages: conversation, temperature: 0.5 });
} catch (e) {
  if (e instanceof OpenAI.BadRequestError) errors.temperature = [e.status, paramOf(e)];
}
try {
  await client.chat.completions.create({
    model: "mock",
    messages: [
      { role: "user", content: "x" },
      { role: "tool", content: "y", tool_call_id: "c" },
    ],
  });
} catch (e) {
  if (e instanceof OpenAI.BadRequestError) errors.tool_message = [e.status, paramOf(e)];
}
try {
  await new OpenAI({ baseURL: baseURL + "/v1", apiKey: "wrong", maxRetries: 0 }).chat.completions.create({
    model: "mock",
    messages: conversation,
  });
} catch (e) {
  if (e instanceof OpenAI.AuthenticationError) errors.unauthorized = e.status;
}
out.errors = errors;

console.log(JSON.stringify(out));
