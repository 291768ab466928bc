// Drives `rein acp` with the official ACP TypeScript SDK (@agentclientprotocol/sdk) as a
// client that offers its files and terminals: the SDK checks every request rein makes of it
// against the protocol's schema. Usage:
//   node acp_client_fs.mjs <node_modules dir> <rein binary> <cwd>
// (REIN_HOME and the model's key come from the environment). Prints one JSON object: the
// requests rein made (method and params, in order), the turn's updates and stop reason.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, rein, cwd] = process.argv.slice(2);
const acp = await import(
  pathToFileURL(path.join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);

const out = { requests: [], updates: [] };
const asked = (method, answer) => ({ params }) => {
  out.requests.push({ method, params });
  return answer(params);
};

const child = spawn(rein, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "rein-acp-fs-ts-test" })
  .onRequest("fs/read_text_file", asked("fs/read_text_file", () => ({ content: "one\nTWO\n" })))
  .onRequest("fs/write_text_file", asked("fs/write_text_file", () => ({})))
  .onRequest("terminal/create", asked("terminal/create", () => ({ terminalId: "term-1" })))
  .onRequest("terminal/wait_for_exit", asked("terminal/wait_for_exit", () => ({ exitCode: 0 })))
  .onRequest(
    "terminal/output",
    asked("terminal/output", () => ({ output: "ran in the editor\n", truncated: false })),
  )
  .onRequest("terminal/release", asked("terminal/release", () => ({})))
  .onRequest("terminal/kill", asked("terminal/kill", () => ({})))
  .onRequest(
    "session/request_permission",
    asked("session/request_permission", () => ({ outcome: { outcome: "cancelled" } })),
  )
  .onNotification("session/update", () => {});

await app.connectWith(stream, async (agent) => {
  await agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    clientInfo: { name: "rein-acp-fs-ts-test", version: "1.0.0" },
  });
  await agent.buildSession(cwd).withSession(async (session) => {
    const answered = session.prompt("Read, patch and list.");
    for (;;) {
      const message = await session.nextUpdate();
      if (message.kind === "stop") break;
      out.updates.push(message.update);
    }
    out.stopReason = (await answered).stopReason;
  });
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify(out) + "\n");
