// Drives `rein acp` with the official ACP TypeScript SDK (@agentclientprotocol/sdk), which
// checks every message it receives against the protocol's schema. Usage:
//   node acp_client.mjs <node_modules dir> <rein binary> <cwd>
// (REIN_HOME and the model's key come from the environment). Prints one JSON object: what
// the agent answered and the updates of each turn, for the Rust test to compare.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, rein, cwd] = process.argv.slice(2);
const acp = await import(
  pathToFileURL(path.join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);

function connect(onUpdate, onPermission) {
  const child = spawn(rein, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client({ name: "rein-acp-ts-test" })
    .onRequest("session/request_permission", ({ params }) => onPermission(params))
    .onNotification("session/update", ({ params }) => onUpdate(params));
  return { child, app, stream };
}

async function turn(session, text) {
  const answered = session.prompt(text);
  const updates = [];
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") break;
    updates.push(message.update);
  }
  return { updates, stopReason: (await answered).stopReason };
}

const out = { permissions: [], turns: [], replayed: [] };

// A first connection: a plain turn, then one whose command asks for permission.
{
  const { child, app, stream } = connect(
    () => {},
    (params) => {
      out.permissions.push(params);
      const allow = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    },
  );
  await app.connectWith(stream, async (agent) => {
    out.initialize = await agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "rein-acp-ts-test", version: "1.0.0" },
    });
    await agent.buildSession(cwd).withSession(async (session) => {
      out.sessionId = session.sessionId;
      out.turns.push(await turn(session, "Say hello."));
      out.turns.push(await turn(session, "Touch the file."));
    });
    out.listed = await agent.request("session/list", { cwd });
  });
  child.stdin.end();
  await new Promise((resolve) => child.on("exit", resolve));
}

// A second connection loads the session: its history arrives before the answer.
{
  let answered = false;
  const { child, app, stream } = connect(
    (params) => out.replayed.push({ beforeAnswer: !answered, update: params.update }),
    () => ({ outcome: { outcome: "cancelled" } }),
  );
  await app.connectWith(stream, async (agent) => {
    await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    out.loaded = await agent.request("session/load", {
      sessionId: out.sessionId,
      cwd,
      mcpServers: [],
    });
    answered = true;
  });
  child.stdin.end();
  await new Promise((resolve) => child.on("exit", resolve));
}

process.stdout.write(JSON.stringify(out) + "\n");
