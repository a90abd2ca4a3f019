// A host of the intent-runtime protocol on the TypeScript SDK's Client, following every host rule.
//
//   node ts_host.mjs --server "SERVER COMMAND" --model "MODEL COMMAND" --request FILE
//   node ts_host.mjs --url URL --model "MODEL COMMAND" --request FILE      (streamable HTTP)
//
// The contract of `intentref host` (conformance/host-contract.schema.json, D-HST-001): start the
// server over stdio, prepare with the request file's PrepareRequest, run the model once per
// candidate (the task as JSON on stdin; exit 0 = candidate on stdout, 3 = refusal, 4 =
// incomplete, anything else = failure), print the final BridgeReply and exit 0, or exit 1 when
// it stopped without one. The same decisions as tests/hosts/python_host.py (R-HST-001 … 015,
// D-HST-003 … 006); tests/host/test_ts_host.py runs `intentref host` on it. ts_v2_host.mjs runs
// the same host on the SDK v2's Client through runHost.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const DETAIL_LIMIT = 2048; // UTF-8 bytes (seed 000 "工具与 session 方法")
const SIZE_RETRIES = 3; // D-HST-004

class ProtocolFailure extends Error {}
class ModelFailed extends Error {}

// A command line split as a POSIX shell splits words: 'single', "double" (with \ escapes) and \x.
export function splitCommand(line) {
  const words = [];
  let word = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error("unbalanced ' in command");
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      word = word ?? "";
      for (i++; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) i++;
        word += line[i];
      }
      if (i >= line.length) throw new Error('unbalanced " in command');
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

// The longest prefix within `limit` UTF-8 bytes, never half a character (R-HST-006, D-HST-006).
function utf8Prefix(text, limit = DETAIL_LIMIT) {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= limit) return text;
  let end = limit;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // back to the start of a character
  return bytes.subarray(0, end).toString("utf8");
}

function runModel(argv, task) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    const chunks = [];
    child.stdout.on("data", (chunk) => chunks.push(chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status: status ?? 1, text: Buffer.concat(chunks).toString("utf8") }));
    child.stdin.end(JSON.stringify(task)); // R-HST-001: the task exactly as received
  });
}

function isSizeRejection(reply) {
  // By code and issue path, never by message (R-HST-011): no path inside the candidate.
  if (reply.kind !== "error") return false;
  return (
    reply.error.code === "LIMIT_EXCEEDED" &&
    (reply.error.issues ?? []).some((issue) => issue.path === null || issue.path === "/candidateText")
  );
}

async function host(sdk, serverLine, url, modelLine, request) {
  const model = splitCommand(modelLine);
  const client = new sdk.Client({ name: sdk.name, version: "0.0.0" }, sdk.options);
  const tasks = [];

  async function call(name, argumentsObject) {
    let result;
    try {
      result = await client.callTool({ name, arguments: argumentsObject });
    } catch (error) {
      throw new ProtocolFailure(`${name} threw: ${error?.message ?? error}`); // R-HST-012
    }
    const reply = result.structuredContent;
    if (!reply || !["task", "result", "error"].includes(reply.kind)) {
      throw new ProtocolFailure(`${name}: the tool result carries no BridgeReply`);
    }
    return reply;
  }

  async function answer(task) {
    const { status, text } = await runModel(model, task);
    if (status === 3 || status === 4) {
      // R-HST-002, R-HST-003, R-HST-004: cancel, never submit.
      const cancel = { jobId: task.jobId, outcome: status === 3 ? "refusal" : "incomplete" };
      if (text) cancel.detail = utf8Prefix(text);
      return call("intent_cancel", cancel);
    }
    if (status !== 0) throw new ModelFailed(`the model exited ${status}`);
    // R-HST-007, R-HST-014: this task's own tokens, the whole candidate.
    return call("intent_accept", { jobId: task.jobId, stepToken: task.stepToken, candidateText: text });
  }

  let transport;
  if (url) {
    transport = new sdk.StreamableHTTPClientTransport(new URL(url));
  } else {
    const [command, ...args] = splitCommand(serverLine);
    transport = new sdk.StdioClientTransport({ command, args, stderr: "inherit" });
  }
  await client.connect(transport);
  try {
    let reply = await call("intent_prepare", request);
    while (reply.kind === "task") {
      const task = reply;
      tasks.push(task);
      reply = await answer(task);
      for (let retry = 0; retry < SIZE_RETRIES && isSizeRejection(reply); retry++) {
        reply = await answer(task); // R-HST-010: the same task, so the same tokens
      }
    }
    return reply; // R-HST-008, R-HST-009: stop at a result or error, report it as received
  } catch (error) {
    if (!(error instanceof ProtocolFailure || error instanceof ModelFailed)) throw error;
    if (tasks.length > 0) {
      // D-HST-003, D-HST-005: release the job in hand; the cancel's own failure does not matter.
      await call("intent_cancel", { jobId: tasks.at(-1).jobId, outcome: "cancelled" }).catch(() => {});
    }
    process.stderr.write(`host: stopped without a reply: ${error.message}\n`);
    return null;
  } finally {
    // R-HST-013: ending the session (HTTP) or the connection releases whatever is still active.
    if (url) await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

function option(name, required = true) {
  const index = process.argv.indexOf(name);
  if (index >= 0 && index + 1 < process.argv.length) return process.argv[index + 1];
  if (required) throw new Error(`usage: node ${process.argv[1]} (--server S | --url U) --model M --request FILE (missing ${name})`);
  return null;
}

/** The host on one SDK: `sdk` names its Client and client transports, and the Client's options. */
export async function runHost(sdk) {
  const request = JSON.parse(readFileSync(option("--request"), "utf8"));
  const url = option("--url", false);
  const reply = await host(sdk, url ? null : option("--server"), url, option("--model"), request);
  if (reply === null) {
    process.exitCode = 1;
  } else {
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await runHost({ name: "intentref-ts-host", Client, StdioClientTransport, StreamableHTTPClientTransport });
}
