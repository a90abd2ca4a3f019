"""An outside implementation on the MCP Python SDK's high-level ``MCPServer``, with typed tools.

    python tests/outside/typed_mcpserver.py --config FILE

This is how most Python implementers write a server: one decorated function per tool, its
parameters typed, the SDK deriving the input schema and validating the arguments with
pydantic. It is correct in every respect the seeds make observable but one, an SDK pitfall it
keeps on purpose: for a parameter whose annotation is not plain ``str`` (``context: str |
list[ContextMessage] | None``, ``detail: str | None``, ``fields: list[str] | None``) the SDK
first tries to read a text argument as JSON (``FuncMetadata.pre_parse_json``). So a text
context ``"[]"`` or ``"null"`` becomes no context, a text context that spells a JSON array of
messages becomes those messages, a cancel ``detail`` that spells a JSON object is refused, and
``fields`` given as the text ``'["orderId"]'`` is taken as a list. Seed 000 says a text context
is the source ``context:0`` with role ``background`` (payload 内容), a detail is any text of at
most 2048 bytes, and ``fields`` is a list. The normative cases of D-CNF-059 must catch it;
``tests/conformance/test_sdk_pitfalls.py`` checks that they do, and that a server on the
low-level ``Server`` (``plain_sdk_server.py``) passes them.

Not part of the ``intentref`` package; nothing comes from ``intentref.mcp``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict

from intentref import Intent, IntentParseError, create_intent_bridge

PROG = "typed-mcpserver"


class ContextMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant", "tool"]
    content: str


def reply_result(reply: dict[str, Any]) -> CallToolResult:
    """seed 000 (MCP 外层返回): the BridgeReply as JSON text and structured content, isError for an error."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(reply, ensure_ascii=False))],
        structured_content=reply,
        is_error=reply["kind"] == "error",
    )


def build_server(session: Any) -> MCPServer:
    server = MCPServer(PROG)

    @server.tool(name="intent_prepare", description="Start recognizing one user request; returns a BridgeReply.")
    def intent_prepare(
        instance: str,
        input: str,
        context: str | list[ContextMessage] | None = None,
        fields: list[str] | None = None,
    ) -> CallToolResult:
        request: dict[str, Any] = {"instance": instance, "input": input}
        if context is not None:
            request["context"] = context if isinstance(context, str) else [m.model_dump() for m in context]
        if fields is not None:
            request["fields"] = fields
        return reply_result(session.prepare(request))

    @server.tool(name="intent_accept", description="Submit the complete candidate JSON text; returns a BridgeReply.")
    def intent_accept(jobId: str, stepToken: str, candidateText: str) -> CallToolResult:
        return reply_result(session.accept({"jobId": jobId, "stepToken": stepToken, "candidateText": candidateText}))

    @server.tool(name="intent_cancel", description="Stop a job that will not be finished; returns a BridgeReply.")
    def intent_cancel(
        jobId: str,
        outcome: Literal["cancelled", "refusal", "incomplete"] | None = None,
        detail: str | None = None,
    ) -> CallToolResult:
        request: dict[str, Any] = {"jobId": jobId}
        if outcome is not None:
            request["outcome"] = outcome
        if detail is not None:
            request["detail"] = detail
        return reply_result(session.cancel(request))

    return server


def main() -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="intent-runtime MCP tools on stdio (MCPServer, typed).")
    parser.add_argument("--config", required=True, metavar="FILE", help='JSON file: {"instances": {NAME: IntentConfig}}')
    args = parser.parse_args()
    try:
        with open(args.config, encoding="utf-8") as file:
            configs = json.load(file).get("instances")
        instances = {name: Intent(config) for name, config in configs.items()}
        bridge = create_intent_bridge({"instances": instances})
    except (OSError, ValueError, AttributeError) as exc:
        print(f"{PROG}: cannot read {args.config}: {exc}", file=sys.stderr)
        return 1
    except IntentParseError as exc:
        print(f"{PROG}: configuration refused: {exc.code}", file=sys.stderr)
        return 1
    session = bridge.connect()
    try:
        build_server(session).run("stdio")
    finally:
        session.close()
        bridge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
