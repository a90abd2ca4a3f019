// The host of ts_host.mjs on the TypeScript SDK v2's Client (@modelcontextprotocol/client), which
// speaks both eras (issue 37): the same arguments, the same contract and the same decisions.
//
//   node ts_v2_host.mjs (--server "SERVER COMMAND" | --url URL) --model "MODEL COMMAND" --request FILE
//
// The Client negotiates (`auto`: it asks `server/discover` and falls back to the initialize
// handshake), so one command passes `intentref host --era 2026` and `--era legacy` alike;
// tests/host/test_v2_host.py runs both. Over stdio the SDK probes on a second, short-lived
// server process started from {server}: the judge sees one more connection, making no call.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { runHost } from "./ts_host.mjs";

await runHost({
  name: "intentref-ts-v2-host",
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
  options: { versionNegotiation: { mode: "auto" } },
});
