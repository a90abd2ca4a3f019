// The three tools of seed 000 as a JavaScript implementer declares them for the TypeScript
// SDK's McpServer: zod input schemas written from the seeds, so the SDK itself refuses a
// malformed call before any Bridge sees it. Shared by ts_server.mjs (stdio) and
// ts_http_server.mjs (streamable HTTP).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { z } from "zod";

// Seed 000 "工具与 session 方法": PrepareRequest = IntentParseRequest + instance, AcceptRequest,
// CancelRequest. Unknown members are refused, as the reference's inputSchema
// (additionalProperties: false) says; limits (e.g. detail's 2048 UTF-8 bytes) stay the Bridge's.

const contextMessage = z.strictObject({
  role: z.enum(["user", "assistant", "tool"]),
  content: z.string(),
});

export const TOOLS = {
  intent_prepare: {
    description:
      "Start recognizing one user request with a configured instance. The reply (structuredContent, " +
      'same JSON in the text) is a BridgeReply: kind "task" (write its candidate, submit it with ' +
      'intent_accept), "result" or "error".',
    inputSchema: z.strictObject({
      instance: z.string().describe("Name of the configured intent-runtime instance."),
      input: z.string().describe("The user's current request text, verbatim."),
      context: z
        .union([z.string(), z.array(contextMessage)])
        .nullable()
        .optional()
        .describe("Earlier conversation: one background text, or messages in order."),
      fields: z
        .array(z.string())
        .nullable()
        .optional()
        .describe("Top-level schema fields to extract; [] recognizes intents only; omit for all."),
    }),
  },
  intent_accept: {
    description:
      "Submit the complete candidate (one JSON text) for the task you last received, with that " +
      "task's own jobId and stepToken. The reply is a new task, the result, or an error.",
    inputSchema: z.strictObject({
      jobId: z.string().describe("jobId of the task being answered."),
      stepToken: z.string().describe("stepToken of the same task."),
      candidateText: z.string().describe("The whole candidate as one JSON text."),
    }),
  },
  intent_cancel: {
    description:
      "Stop a job you will not finish. isError true does not mean the cancel failed; a job that " +
      "already finished answers with its original terminal reply.",
    inputSchema: z.strictObject({
      jobId: z.string().describe("jobId of the job to stop."),
      outcome: z.enum(["cancelled", "refusal", "incomplete"]).describe("Why; cancelled when omitted.").optional(),
      detail: z.string().describe("Optional note, at most 2048 UTF-8 bytes.").optional(),
    }),
  },
};

/** Register the three tools on `server`, each answered by the same tool of `upstream` (an SDK Client). */
export function registerProxiedTools(server, upstream) {
  for (const [name, { description, inputSchema }] of Object.entries(TOOLS)) {
    server.registerTool(name, { description, inputSchema }, (args, extra) =>
      upstream.callTool({ name, arguments: args }, undefined, { signal: extra.signal }),
    );
  }
}

/** The upstream reference's command line: `--upstream CMD`, else env INTENT_UPSTREAM, else `intent-runtime-mcp`; split on spaces. */
export function upstreamCommand(given) {
  return (given ?? process.env.INTENT_UPSTREAM ?? "intent-runtime-mcp").trim().split(/\s+/);
}

/**
 * Start the upstream reference over stdio with the instances file `config` and connect `name`'s
 * SDK Client to it. When it exits before the handshake (it refused the configuration), say why in
 * one stderr line of `prog`'s own and exit 1; once serving, its stderr is the operator's, on ours.
 */
export async function connectUpstream({ prog, name, config, upstream }) {
  const [command, ...upstreamArgs] = upstreamCommand(upstream);
  const transport = new StdioClientTransport({
    command,
    args: [...upstreamArgs, "--config", config],
    env: process.env, // the whole environment, not the SDK's safe subset: this is our own child
    stderr: "pipe",
  });
  const stderr = transport.stderr; // available before start
  let startupLog = "";
  const collect = (chunk) => (startupLog += chunk);
  stderr.setEncoding("utf8");
  stderr.on("data", collect);
  const client = new Client({ name, version: "0.1.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    await new Promise((resolve) => {
      if (stderr.readableEnded) resolve();
      stderr.once("end", resolve);
      setTimeout(resolve, 1000).unref();
    });
    const lines = startupLog.split("\n").map((line) => line.trim()).filter(Boolean);
    const why = lines.find((line) => line.includes("configuration fault")) ?? lines.at(-1) ?? String(error?.message ?? error);
    process.stderr.write(`${prog}: configuration refused: ${why}\n`);
    await client.close().catch(() => {});
    process.exit(1);
  }
  stderr.off("data", collect);
  process.stderr.write(startupLog);
  stderr.pipe(process.stderr);
  return client;
}
