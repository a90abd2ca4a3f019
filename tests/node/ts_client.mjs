// A second MCP SDK against intent-runtime-mcp: the TypeScript SDK's Client over stdio.
//
//   node ts_client.mjs CONFIG_FILE [COMMAND]
//
// Spawns COMMAND (default: intent-runtime-mcp on PATH) with `--config CONFIG_FILE`, runs
// tools/list and seed 000's order flow (prepare -> core task -> core candidate -> data task
// -> data candidate -> result), plus one call that must come back as an error result, and
// checks the envelope of every reply (seed 000 "MCP 外层返回"): structuredContent is the
// BridgeReply, the one text block is JSON.stringify of it, isError is true exactly for kind
// "error". Prints one JSON summary on stdout; exit status 0 when every check held, 1 otherwise
// (the summary then carries `failure` and the server's stderr). tests/mcp/test_second_sdk.py
// runs it and asserts the summary.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { reportSeedFlow } from "./seed_flow.mjs";

async function main() {
  const [configFile, command = "intent-runtime-mcp"] = process.argv.slice(2);
  if (!configFile) throw new Error("usage: node ts_client.mjs CONFIG_FILE [COMMAND]");
  const sdkVersion = JSON.parse(
    readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
  ).version;

  const transport = new StdioClientTransport({
    command,
    args: ["--config", configFile],
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk.toString("utf8");
  });
  let protocolVersion = null;
  transport.setProtocolVersion = (version) => {
    protocolVersion = version;
  };
  const client = new Client({ name: "intentref-ts-client", version: "0.0.0" });
  const summary = { ok: false, sdk: { name: "@modelcontextprotocol/sdk", version: sdkVersion } };
  await reportSeedFlow(client, async () => {
    await client.connect(transport);
    summary.protocolVersion = protocolVersion;
    summary.server = client.getServerVersion();
    summary.capabilities = client.getServerCapabilities();
    summary.hasInstructions = typeof client.getInstructions() === "string" && client.getInstructions().length > 0;
  }, summary, () => stderr);
}

await main();
