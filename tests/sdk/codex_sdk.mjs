// Drives `rein exec` through the official Codex TypeScript SDK, exactly as an application
// would drive `codex exec`: only the binary path differs. Prints one JSON object with what
// each SDK call returned, for the Rust test to assert on.
//
// usage: node codex_sdk.mjs <sdk-module-dir> <rein-binary> <base-url> <work-dir>
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, reinBin, baseUrl, workDir] = process.argv.slice(2);
const { Codex } = await import(pathToFileURL(path.join(sdkDir, "dist", "index.js")).href);

const codex = new Codex({ codexPathOverride: reinBin, baseUrl, apiKey: "sdk-key" });
const options = { workingDirectory: workDir, skipGitRepoCheck: true };
const report = {};

async function step(name, fn) {
  try {
    report[name] = await fn();
  } catch (e) {
    report[name] = { error: String(e && e.message ? e.message : e) };
  }
}

let first;
await step("run", async () => {
  first = codex.startThread(options);
  const turn = await first.run("Say hello.");
  return { threadId: first.id, finalResponse: turn.finalResponse, items: turn.items, usage: turn.usage };
});

await step("runStreamed", async () => {
  const thread = codex.startThread(options);
  const { events } = await thread.runStreamed("Say hello again.");
  const seen = [];
  for await (const event of events) seen.push(event);
  return { threadId: thread.id, events: seen };
});

await step("outputSchema", async () => {
  const thread = codex.startThread(options);
  const schema = {
    type: "object",
    properties: { status: { type: "string" } },
    required: ["status"],
    additionalProperties: false,
  };
  const turn = await thread.run("Give me a status.", { outputSchema: schema });
  return { finalResponse: turn.finalResponse };
});

await step("resume", async () => {
  const thread = codex.resumeThread(first.id, options);
  const turn = await thread.run("And now say goodbye.");
  return { threadId: thread.id, finalResponse: turn.finalResponse, items: turn.items };
});

process.stdout.write(JSON.stringify(report) + "\n");
