// intent-runtime-mcp as a JavaScript implementer builds it on the TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0), with the SDK's documented serving entries and their defaults.
//
//   node ts_v2_server.mjs --config FILE [--http] [--port N] [--upstream CMD]
//
// Why it exists: the SDK v2 implements the 2026-07-28 revision and falls back to the 2025
// handshake on its own (issue 37). The suite must judge such a server in both eras, as an
// implementer who follows the SDK's documentation ships it:
//
// * stdio: `serveStdio(factory)` from `@modelcontextprotocol/server/stdio`, legacy 'serve'
//   (the default): the opening exchange picks the era, one instance is pinned per connection.
// * HTTP (--http): `createMcpHandler(factory)`, legacy 'stateless' (the default): each request
//   is served by a fresh instance and the 2025-era fallback issues no Mcp-Session-Id; mounted
//   on node:http with `toNodeHandler` from `@modelcontextprotocol/node`, as the SDK says to.
//
// The factory serves seed 000's three tools with the zod input schemas of tools.mjs, so the
// SDK refuses a malformed call in its own way before any Bridge sees it.
//
// It does not reimplement the Bridge. At start it spawns the reference (CMD, default
// `intent-runtime-mcp`, or env INTENT_UPSTREAM; split on spaces) with `--config FILE` over
// stdio through the SDK 1.x Client, and every instance the factory makes forwards each
// validated call to that one upstream: one upstream connection, one Bridge session, as the
// sessionless serving of either era means (D-MCP-003).
//
// Over HTTP it prints `url http://127.0.0.1:PORT/mcp` on stdout once it listens (port 0, the
// default: any free one). Exit status: 0 when stdin ends (stdio) or on SIGINT/SIGTERM; 1 when
// the upstream refuses the configuration (one stderr line "ts-v2-server: configuration
// refused: " and the upstream's own line) or ends while serving.

import http from "node:http";
import process from "node:process";
import { parseArgs } from "node:util";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { TOOLS, connectUpstream } from "./tools.mjs";

const { values: opts } = parseArgs({
  options: {
    config: { type: "string" },
    http: { type: "boolean", default: false },
    port: { type: "string", default: "0" },
    upstream: { type: "string" },
  },
});
if (!opts.config) {
  process.stderr.write("usage: node ts_v2_server.mjs --config FILE [--http] [--port N] [--upstream CMD]\n");
  process.exit(1);
}
const upstream = await connectUpstream({
  prog: "ts-v2-server", name: "ts-v2-server-proxy", config: opts.config, upstream: opts.upstream,
});

// --------------------------------------------------------------------------- the factory

const serverInfo = { name: "intent-runtime", version: `ts-v2-proxy+${upstream.getServerVersion()?.version ?? "unknown"}` };
const instructions = upstream.getInstructions();

/** One McpServer for whichever era the SDK's entry asks it for: the same tools in both. */
function factory() {
  const server = new McpServer(serverInfo, { instructions });
  for (const [name, { description, inputSchema }] of Object.entries(TOOLS)) {
    server.registerTool(name, { description, inputSchema }, (args, ctx) =>
      upstream.callTool({ name, arguments: args }, undefined, { signal: ctx?.mcpReq?.signal }),
    );
  }
  return server;
}

// --------------------------------------------------------------------------- serving

let stopping = false;
let stopServing = async () => {};
async function stop(status) {
  if (stopping) return;
  stopping = true;
  await stopServing().catch(() => {});
  await upstream.close().catch(() => {});
  process.stdout.write("", () => process.exit(status));
}

upstream.onclose = () => {
  if (stopping) return;
  process.stderr.write("ts-v2-server: the upstream intent-runtime-mcp ended while serving\n");
  stop(1);
};
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stop(0));

if (opts.http) {
  const handler = createMcpHandler(factory);
  const httpServer = http.createServer(toNodeHandler(handler));
  stopServing = async () => {
    httpServer.close();
    httpServer.closeAllConnections();
    await handler.close();
  };
  httpServer.listen(Number(opts.port), "127.0.0.1", () => {
    process.stdout.write(`url http://127.0.0.1:${httpServer.address().port}/mcp\n`);
  });
} else {
  const handle = serveStdio(factory);
  stopServing = () => handle.close();
  // The client went away: nothing more will be asked.
  process.stdin.on("end", () => stop(0));
}
