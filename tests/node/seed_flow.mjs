// Seed 000's order flow as a client runs it, shared by ts_client.mjs (SDK 1.x) and
// ts_v2_client.mjs (SDK v2): tools/list, prepare -> core task -> core candidate -> data task
// -> data candidate -> result, and one call that must come back as an error result, every
// reply's envelope checked (seed 000 "MCP 外层返回"): structuredContent is the BridgeReply,
// the one text block is JSON.stringify of it, isError is true exactly for kind "error".

const ORDER_INPUT = "查询订单 000123";
const ORDER_CORE = {
  normalizedInput: "查询订单 000123。",
  primaryIntent: "查询订单 000123",
  requirements: [],
  prohibitions: [],
  intents: [
    {
      action: "query",
      target: "订单 000123",
      requirements: [],
      blockers: { clarificationReason: null, questions: [], confirmationReason: null, conditionReason: null },
    },
  ],
};
const ORDER_DATA = {
  data: { orderId: "000123" },
  evidence: [{ path: "/data/orderId", mode: "exact", sources: [{ sourceId: "input", quote: "000123" }] }],
  descriptionChecks: [
    {
      path: "/data/orderId",
      verdict: "satisfied",
      explanation: "输入明确提供精确订单编号。",
      sources: [{ sourceId: "input", quote: "000123" }],
    },
  ],
  fieldResults: [{ path: "/data/orderId", status: "extracted", explanation: "输入明确提供编号。" }],
  issues: [],
};
const EXPECTED_TOOLS = {
  intent_prepare: ["instance", "input"],
  intent_accept: ["jobId", "stepToken", "candidateText"],
  intent_cancel: ["jobId"],
};

export class CheckFailed extends Error {}

function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// The BridgeReply of one tool result, after every envelope rule.
function replyOf(result, what) {
  check(Array.isArray(result.content) && result.content.length === 1, `${what}: expected one content block`);
  const [block] = result.content;
  check(block.type === "text", `${what}: the content block is ${block.type}, not text`);
  const reply = result.structuredContent;
  check(reply !== null && typeof reply === "object" && !Array.isArray(reply), `${what}: no structuredContent object`);
  check(["task", "result", "error"].includes(reply.kind), `${what}: unknown kind ${JSON.stringify(reply.kind)}`);
  check(block.text === JSON.stringify(reply), `${what}: the text is not JSON.stringify(structuredContent)`);
  check(result.isError === (reply.kind === "error"), `${what}: isError ${result.isError} for kind ${reply.kind}`);
  return reply;
}

async function call(client, name, args, what) {
  return replyOf(await client.callTool({ name, arguments: args }), what);
}

function acceptArgs(task, candidate) {
  return { jobId: task.jobId, stepToken: task.stepToken, candidateText: JSON.stringify(candidate) };
}

/** Run the flow on a connected `client` (either SDK's Client), filling `summary`; throws CheckFailed on the first broken check. */
export async function runSeedFlow(client, summary) {
  // tools/list: the three tools, each with an object inputSchema requiring what the seed types require.
  const { tools } = await client.listTools();
  summary.tools = tools.map((tool) => tool.name);
  summary.inputSchemas = {};
  for (const tool of tools) {
    const schema = tool.inputSchema;
    check(schema.type === "object", `${tool.name}: inputSchema type is ${schema.type}`);
    check(schema.additionalProperties === false, `${tool.name}: inputSchema admits extra arguments`);
    check(typeof tool.description === "string" && tool.description.length > 0, `${tool.name}: no description`);
    check(tool.outputSchema?.type === "object", `${tool.name}: no object outputSchema`);
    summary.inputSchemas[tool.name] = {
      required: schema.required ?? [],
      properties: Object.keys(schema.properties ?? {}),
    };
  }
  for (const [name, required] of Object.entries(EXPECTED_TOOLS)) {
    check(name in summary.inputSchemas, `tools/list lacks ${name}`);
    check(sameJson(summary.inputSchemas[name].required, required), `${name}: required is not ${required}`);
  }

  // Seed 000's order flow.
  const stages = [];
  const coreTask = await call(client, "intent_prepare", { instance: "orders", input: ORDER_INPUT }, "prepare");
  check(coreTask.kind === "task" && coreTask.stage === "core", `prepare: expected a core task, got ${JSON.stringify(coreTask)}`);
  stages.push(coreTask.stage);
  const dataTask = await call(client, "intent_accept", acceptArgs(coreTask, ORDER_CORE), "core accept");
  check(dataTask.kind === "task" && dataTask.stage === "data", `core accept: expected a data task, got ${JSON.stringify(dataTask)}`);
  check(dataTask.format?.kind === "json_object", "data task: format is not json_object");
  check(dataTask.stepToken !== coreTask.stepToken || dataTask.jobId !== coreTask.jobId, "data task reuses the core task's tokens");
  const payload = JSON.parse(dataTask.payload);
  check(payload.currentInput === ORDER_INPUT, "data task: payload.currentInput is not the input");
  stages.push(dataTask.stage);
  const final = await call(client, "intent_accept", acceptArgs(dataTask, ORDER_DATA), "data accept");
  check(final.kind === "result", `data accept: expected the result, got ${JSON.stringify(final)}`);
  summary.flow = { stages, kind: final.kind, data: final.result.data, input: final.result.input };

  // One call that must be an error result (a job this connection never saw), not a JSON-RPC error.
  const unknown = await call(
    client,
    "intent_accept",
    { jobId: "no-such-job", stepToken: "no-such-token", candidateText: "{}" },
    "unknown job",
  );
  check(unknown.kind === "error", `unknown job: expected an error, got ${JSON.stringify(unknown)}`);
  summary.error = { kind: unknown.kind, isError: true, code: unknown.error.code };
}

/**
 * Connect `client` (`connect` fills in what this SDK says of the server), run the seed flow,
 * and print the summary as one JSON line: `ok`, or `failure` with the end of the server's
 * stderr (`stderrOf()`). The exit status is 0 only when the flow ran to its result.
 */
export async function reportSeedFlow(client, connect, summary, stderrOf) {
  try {
    await connect();
    await runSeedFlow(client, summary);
    summary.ok = true;
  } catch (error) {
    summary.failure = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    summary.stderr = stderrOf().slice(-4000);
  } finally {
    await client.close().catch(() => {});
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
  process.exitCode = summary.ok ? 0 : 1;
}
