# ruff: noqa: E401, E701, I001, SIM115 -- a host in a dozen lines, written for reading (README "Test your host")
import asyncio, json, shlex, subprocess, sys
from mcp import Client, StdioServerParameters
async def host(server: str, model: str, request: str) -> dict:
    async with Client(StdioServerParameters(command=shlex.split(server)[0], args=shlex.split(server)[1:])) as client:
        async def call(tool: str, arguments: dict) -> dict:  # a JSON-RPC error raises; a result without a reply is refused
            reply = (await client.call_tool(tool, arguments)).structured_content
            if not isinstance(reply, dict) or reply.get("kind") not in ("task", "result", "error"): raise RuntimeError("no BridgeReply")
            return reply
        reply = await call("intent_prepare", json.load(open(request, encoding="utf-8")))
        while reply["kind"] == "task":  # the model gets the actual task; exit 3 refusal, 4 incomplete, else a failure
            run = subprocess.run(shlex.split(model), input=json.dumps(reply), capture_output=True, text=True, encoding="utf-8")
            if run.returncode in (3, 4): return await call("intent_cancel", {"jobId": reply["jobId"], "outcome": "refusal" if run.returncode == 3 else "incomplete", "detail": run.stdout.encode()[:2048].decode(errors="ignore")})
            if run.returncode != 0: raise RuntimeError(f"the model failed ({run.returncode})")  # leaving the Client releases the job
            reply = await call("intent_accept", {"jobId": reply["jobId"], "stepToken": reply["stepToken"], "candidateText": run.stdout})
        return reply
print(json.dumps(asyncio.run(host(*sys.argv[1:4])), ensure_ascii=False))
