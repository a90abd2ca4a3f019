// intent-runtime-mcp as a JavaScript implementer would build it on the TypeScript MCP SDK.
//
//   node ts_server.mjs --config FILE [--upstream CMD]
//
// Why it exists: the conformance suite must be able to judge an MCP server that is not the
// Python reference, one whose protocol layer is another SDK's. This is that server: an
// McpServer serving seed 000's three tools (intent_prepare, intent_accept, intent_cancel) on
// stdio, with zod input schemas written from the seeds, so the TypeScript SDK itself
// validates every call and refuses a malformed one in its own way (an isError result whose
// text is the SDK's message, not a BridgeReply) before any Bridge sees it. It speaks only
// what SDK 1.x speaks: the initialize-handshake era.
//
// It does not reimplement the Bridge. It is a proxy: at start it spawns the reference
// (CMD, default `intent-runtime-mcp`, or env INTENT_UPSTREAM; split on spaces) with
// `--config FILE` as its upstream through the SDK's Client, forwards each validated call to
// the upstream tool of the same name, and returns the upstream's CallToolResult (content,
// structuredContent, isError) unchanged. One proxy process is one upstream process, so one
// MCP session here is one Bridge session there.
//
// Exit status: 0 when stdin ends (the client went away) or on SIGINT/SIGTERM; 1 when the
// upstream refuses the configuration (one stderr line "ts-server: configuration refused: "
// followed by the upstream's own line, which names the error code) or dies while serving.
// stdout carries MCP bytes only.

import process from "node:process";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { registerProxiedTools, connectUpstream } from "./tools.mjs";

const { values: opts } = parseArgs({
  options: { config: { type: "string" }, upstream: { type: "string" } },
});
if (!opts.config) {
  process.stderr.write("usage: node ts_server.mjs --config FILE [--upstream CMD]\n");
  process.exit(1);
}
const upstream = await connectUpstream({
  prog: "ts-server", name: "ts-server-proxy", config: opts.config, upstream: opts.upstream,
});

// --------------------------------------------------------------------------- the server

const server = new McpServer(
  { name: "intent-runtime", version: `ts-proxy+${upstream.getServerVersion()?.version ?? "unknown"}` },
  { instructions: upstream.getInstructions() },
);
registerProxiedTools(server, upstream);

let stopping = false;
async function stop(status) {
  if (stopping) return;
  stopping = true;
  await server.close().catch(() => {});
  await upstream.close().catch(() => {});
  process.stdout.write("", () => process.exit(status));
}

upstream.onclose = () => {
  if (stopping) return;
  process.stderr.write("ts-server: the upstream intent-runtime-mcp ended while serving\n");
  stop(1);
};

const transport = new StdioServerTransport();
await server.connect(transport);
server.server.onclose = () => stop(0); // the SDK gave up on the client (e.g. a line over its 10 MiB buffer)

// The SDK's stdio transport does not watch for end of input. When stdin ends, answer the
// requests already read (a client may write its last request and close at once), then stop.
const inFlight = new Set();
let inputEnded = false;
const stopWhenIdle = () => inputEnded && inFlight.size === 0 && stop(0);
const onmessage = transport.onmessage;
transport.onmessage = (message, extra) => {
  if ("method" in message && "id" in message) inFlight.add(message.id);
  onmessage?.(message, extra);
  // A cancelled request is never answered.
  if (message.method === "notifications/cancelled" && inFlight.delete(message.params?.requestId)) stopWhenIdle();
};
const send = transport.send.bind(transport);
transport.send = async (message, options) => {
  await send(message, options);
  if (!("method" in message) && "id" in message && inFlight.delete(message.id)) stopWhenIdle();
};
process.stdin.on("end", () => {
  inputEnded = true;
  stopWhenIdle();
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stop(0));
