// The TypeScript SDK v2's Client (@modelcontextprotocol/client 2.4.0) against intent-runtime-mcp,
// in the era asked for, over stdio or streamable HTTP (issue 37).
//
//   node ts_v2_client.mjs --era 2026|legacy --config FILE [--command CMD]   (stdio: spawns CMD --config FILE)
//   node ts_v2_client.mjs --era 2026|legacy --url URL                       (a server already listening)
//
// --era 2026 pins the 2026-07-28 revision (versionNegotiation { pin }); --era legacy is the
// SDK's default, the 2025 initialize handshake. Runs seed 000's order flow (seed_flow.mjs),
// checking every envelope on the JavaScript side. Prints one JSON summary on stdout (with the
// protocol version negotiated); exit status 0 when every check held, 1 otherwise (the summary
// then carries `failure` and, over stdio, the server's stderr).

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { reportSeedFlow } from "./seed_flow.mjs";

const MODES = { 2026: { pin: "2026-07-28" }, legacy: "legacy" };

const { values: opts } = parseArgs({
  options: { era: { type: "string" }, config: { type: "string" }, command: { type: "string" }, url: { type: "string" } },
});
if (!(opts.era in MODES) || !opts.config === !opts.url) {
  process.stderr.write("usage: node ts_v2_client.mjs --era 2026|legacy (--config FILE [--command CMD] | --url URL)\n");
  process.exit(2);
}

const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/client/package.json", import.meta.url), "utf8"),
).version;

let stderr = "";
let transport;
if (opts.url) {
  transport = new StreamableHTTPClientTransport(new URL(opts.url));
} else {
  const [command, ...args] = (opts.command ?? "intent-runtime-mcp").trim().split(/\s+/);
  transport = new StdioClientTransport({
    command,
    args: [...args, "--config", opts.config],
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk) => (stderr += chunk.toString("utf8")));
}

const client = new Client(
  { name: "intentref-ts-v2-client", version: "0.0.0" },
  { versionNegotiation: { mode: MODES[opts.era] } },
);
const summary = { ok: false, sdk: { name: "@modelcontextprotocol/client", version: sdkVersion }, era: opts.era };
await reportSeedFlow(client, async () => {
  await client.connect(transport);
  summary.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
  summary.server = client.getServerVersion();
}, summary, () => stderr);
