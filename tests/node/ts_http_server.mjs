// intent-runtime-mcp over streamable HTTP as a JavaScript implementer would build it on the
// TypeScript MCP SDK.
//
//   node ts_http_server.mjs --config FILE [--port N] [--upstream CMD]
//
// Why it exists: the conformance suite must judge, and be fast against, an HTTP server that is
// not the Python reference: another language, another SDK's streamable-HTTP transport, Node's
// own HTTP server. This is one: node:http, the SDK's StreamableHTTPServerTransport with a
// session of its own per client (stateful mode, as the SDK's documentation shows it), and per
// session an McpServer serving seed 000's three tools with zod input schemas (tools.mjs), so
// the SDK refuses a malformed call in its own way. It speaks what SDK 1.x speaks: the
// initialize-handshake era.
//
// It does not reimplement the Bridge. At start it runs the reference (CMD, default
// `intent-runtime-mcp`, or env INTENT_UPSTREAM; split on spaces) with `--config FILE --http
// 127.0.0.1:0`, and every session here opens a session of its own there through the SDK's
// Client and StreamableHTTPClientTransport: one MCP session here is one Bridge session there.
// Each validated call is forwarded to the upstream tool of the same name and its
// CallToolResult returned unchanged.
//
// Prints `url http://127.0.0.1:PORT/mcp` on stdout once it listens (port 0, the default: any
// free one). Exit status: 0 on SIGINT/SIGTERM; 1 when the upstream refuses the configuration
// (one stderr line "ts-http-server: configuration refused: " and the upstream's own line) or
// ends while serving.

import http from "node:http";
import process from "node:process";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { registerProxiedTools, upstreamCommand } from "./tools.mjs";

const MAX_BODY_BYTES = 16 * 1024 * 1024; // the reference's own default request-body limit

const { values: opts } = parseArgs({
  options: { config: { type: "string" }, port: { type: "string", default: "0" }, upstream: { type: "string" } },
});
if (!opts.config) {
  process.stderr.write("usage: node ts_http_server.mjs --config FILE [--port N] [--upstream CMD]\n");
  process.exit(1);
}
const [command, ...upstreamArgs] = upstreamCommand(opts.upstream);

// --------------------------------------------------------------------------- the upstream

const child = spawn(command, [...upstreamArgs, "--config", opts.config, "--http", "127.0.0.1:0"], {
  stdio: ["ignore", "ignore", "pipe"],
});
const upstreamUrl = await new Promise((resolve) => {
  let log = "";
  const onData = (chunk) => {
    log += chunk;
    const found = log.match(/serving streamable HTTP at (http:\/\/\S+)/);
    if (found) {
      child.stderr.off("data", onData);
      child.off("exit", onExit);
      child.stderr.pipe(process.stderr); // serving: what it logs from now on is the operator's
      resolve(found[1]);
    }
  };
  const onExit = () => {
    const lines = log.split("\n").map((line) => line.trim()).filter(Boolean);
    const why = lines.find((line) => line.includes("configuration fault")) ?? lines.at(-1) ?? "it exited";
    process.stderr.write(`ts-http-server: configuration refused: ${why}\n`);
    process.exit(1);
  };
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", onData);
  child.on("exit", onExit);
});

// --------------------------------------------------------------------------- sessions

const sessions = new Map(); // session id -> { transport, server, upstream }

async function openSession() {
  const upstream = new Client({ name: "ts-http-proxy", version: "0.1.0" });
  await upstream.connect(new StreamableHTTPClientTransport(new URL(upstreamUrl)));
  const server = new McpServer(
    { name: "intent-runtime", version: `ts-http-proxy+${upstream.getServerVersion()?.version ?? "unknown"}` },
    { instructions: upstream.getInstructions() },
  );
  registerProxiedTools(server, upstream);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, { transport, server, upstream }),
  });
  // A session that ends (DELETE, or the transport closing) ends its upstream session, whose
  // Bridge session releases its jobs.
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
    upstream.close().catch(() => {});
  };
  await server.connect(transport);
  return { transport, upstream };
}

// --------------------------------------------------------------------------- HTTP

function reply(res, status, message, code = -32000) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }));
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function handle(req, res) {
  if (new URL(req.url ?? "/", "http://127.0.0.1").pathname !== "/mcp") return reply(res, 404, "Not found");
  let body;
  if (req.method === "POST") {
    const text = await readBody(req);
    if (text === null) return reply(res, 413, "Request body too large");
    try {
      body = JSON.parse(text);
    } catch {
      return reply(res, 400, "Parse error", -32700);
    }
  }
  const id = req.headers["mcp-session-id"];
  const known = typeof id === "string" ? sessions.get(id) : undefined;
  if (known) return known.transport.handleRequest(req, res, body);
  if (id !== undefined) return reply(res, 404, "Session not found", -32001);
  if (req.method !== "POST" || !isInitializeRequest(body)) {
    return reply(res, 400, "Bad Request: No valid session ID provided");
  }
  const opened = await openSession();
  await opened.transport.handleRequest(req, res, body);
  if (!opened.transport.sessionId) await opened.upstream.close().catch(() => {}); // the initialize failed
}

const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((error) => {
    if (!res.headersSent) reply(res, 500, `Internal error: ${error?.message ?? error}`, -32603);
    else res.end();
  });
});

let stopping = false;
async function stop(status) {
  if (stopping) return;
  stopping = true;
  httpServer.close();
  httpServer.closeAllConnections();
  await Promise.all([...sessions.values()].map(({ transport }) => transport.close().catch(() => {})));
  child.kill("SIGTERM");
  process.exit(status);
}

child.on("exit", () => {
  if (stopping) return;
  process.stderr.write("ts-http-server: the upstream intent-runtime-mcp ended while serving\n");
  stop(1);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stop(0));

httpServer.listen(Number(opts.port), "127.0.0.1", () => {
  process.stdout.write(`url http://127.0.0.1:${httpServer.address().port}/mcp\n`);
});
