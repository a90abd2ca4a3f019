"""The seed's recognizeWithHost, as an MCP host: the README links this file as its Python host loop."""

from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client, StdioServerParameters


async def recognize_with_host(
    config_file: str,
    input_text: str,
    generate_candidate: Callable[[dict[str, Any]], Awaitable[str]],
    command: str = "intent-runtime-mcp",
) -> dict[str, Any]:
    """Run the prepare/accept loop until a result or an error; return that BridgeReply.

    generate_candidate(task) is the host's own model call: it must write the complete
    candidate JSON text from that task's instructions, payload and format.
    """
    server = StdioServerParameters(command=command, args=["--config", config_file])
    failure: Exception | None = None
    async with Client(server) as client:  # one MCP connection = one Bridge session

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            bridge_reply: dict[str, Any] = result.structured_content  # its text block is the same JSON
            return bridge_reply

        reply = await call("intent_prepare", {"instance": "default", "input": input_text, "fields": []})
        while reply["kind"] == "task":
            try:
                candidate_text = await generate_candidate(reply)
            except Exception as exc:
                await call("intent_cancel", {"jobId": reply["jobId"], "outcome": "cancelled"})
                failure = exc
                break
            reply = await call(
                "intent_accept",
                {"jobId": reply["jobId"], "stepToken": reply["stepToken"], "candidateText": candidate_text},
            )
    if failure is not None:
        raise failure  # raised out here: inside the Client, mcp 2.x wraps it in an ExceptionGroup
    return reply
