import { spawnSync } from "node:child_process"; import { readFileSync } from "node:fs"; // a host in ten lines (README "Test your host")
import { Client } from "@modelcontextprotocol/sdk/client/index.js"; import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [server, model, request] = process.argv.slice(2), client = new Client({ name: "ten-line-host", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: "/bin/sh", args: ["-c", `exec ${server}`] })); // {server} is a shell-quoted command line
const call = async (name, args) => { const reply = (await client.callTool({ name, arguments: args })).structuredContent; if (!["task", "result", "error"].includes(reply?.kind)) throw new Error("no BridgeReply"); return reply; };
let reply = await call("intent_prepare", JSON.parse(readFileSync(request, "utf8")));
while (reply.kind === "task") { // the model gets the actual task; exit 3 refusal, 4 incomplete, anything else a failure
  const run = spawnSync("/bin/sh", ["-c", model], { input: JSON.stringify(reply), encoding: "utf8", maxBuffer: 1 << 26 });
  if (run.status === 3 || run.status === 4) { reply = await call("intent_cancel", { jobId: reply.jobId, outcome: run.status === 3 ? "refusal" : "incomplete", detail: Buffer.from(run.stdout).subarray(0, 2048).toString().replace(/\uFFFD$/, "") }); break; }
  if (run.status !== 0) throw new Error(`the model failed (${run.status})`); reply = await call("intent_accept", { jobId: reply.jobId, stepToken: reply.stepToken, candidateText: run.stdout }); } console.log(JSON.stringify(reply)); await client.close();
