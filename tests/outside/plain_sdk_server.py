"""An outside implementation of ``intent-runtime-mcp``, built the way most implementers build one.

    python tests/outside/plain_sdk_server.py --config FILE

The reference Bridge (``intentref.create_intent_bridge``) behind the official MCP Python SDK's
plain low-level ``Server`` and its stdio transport, written from seed 000 ("MCP 外层返回",
"MCP 服务") and the SDK's documentation only: nothing comes from ``intentref.mcp`` and none of
its workarounds are repeated.  The project's tests run it as an outside command, to check that
the conformance suite judges a correct server it did not write.  It is not part of the package.

Input validation: mcp 2.x removed the v1 ``@server.call_tool(validate_input=True)`` check and
has no switch to turn it back on (its migration guide: "validate inputs yourself in your
handler").  So the handler does what the v1 SDK did: ``jsonschema.validate`` against the
declared inputSchema, and an isError result "Input validation error: ..." on a mismatch.
Anything the Bridge or the SDK raises is left to the SDK (a JSON-RPC error in mcp 2.x).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from intentref import Intent, IntentParseError, create_intent_bridge

PROG = "plain-sdk-server"


# The tools' input schemas are the ones the project publishes for implementers
# (spec/schemas/*-request.schema.json), read as any implementer would read them.
SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"
DESCRIPTIONS = {
    "intent_prepare": "Start recognizing one user request with a configured instance; returns a BridgeReply.",
    "intent_accept": "Submit the complete candidate JSON text for the last task; returns a BridgeReply.",
    "intent_cancel": "Stop a job that will not be finished; returns its terminal BridgeReply.",
}


def _tool(name: str) -> Tool:
    schema = json.loads((SCHEMAS / f"{name.removeprefix('intent_')}-request.schema.json").read_text("utf-8"))
    return Tool(name=name, description=DESCRIPTIONS[name], input_schema=schema)


TOOLS = [_tool(name) for name in DESCRIPTIONS]
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def build_server(session: Any) -> Server:
    """A low-level server whose three tools call one Bridge session."""
    methods = {
        "intent_prepare": session.prepare,
        "intent_accept": session.accept,
        "intent_cancel": session.cancel,
    }

    async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in methods:
            raise ValueError(f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        try:
            jsonschema.validate(instance=arguments, schema=TOOLS_BY_NAME[params.name].input_schema)
        except jsonschema.ValidationError as exc:
            text = f"Input validation error: {exc.message}"  # the v1 SDK's wording
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        reply = methods[params.name](arguments)
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(reply, ensure_ascii=False))],
            structured_content=reply,
            is_error=reply["kind"] == "error",
        )

    return Server(PROG, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(bridge: Any) -> None:
    """Serve stdio until stdin ends: one process, one connection, one Bridge session."""
    session = bridge.connect()
    server = build_server(session)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        session.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="intent-runtime MCP tools on stdio (plain SDK).")
    parser.add_argument(
        "--config", required=True, metavar="FILE", help='JSON file: {"instances": {NAME: IntentConfig}}'
    )
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=f"{PROG}: %(levelname)s %(message)s")
    try:
        with open(args.config, encoding="utf-8") as file:
            document = json.load(file)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: cannot read {args.config}: {exc}", file=sys.stderr)
        return 1
    configs = document.get("instances") if isinstance(document, dict) else None
    try:
        if isinstance(configs, dict):
            instances = {name: Intent(config) for name, config in configs.items()}
        else:
            instances = configs  # let the Bridge say what is wrong with it
        bridge = create_intent_bridge({"instances": instances})
    except IntentParseError as exc:
        print(f"{PROG}: configuration refused: {exc.code}: {' '.join(exc.message.split())}", file=sys.stderr)
        return 1
    try:
        anyio.run(serve, bridge)
    except KeyboardInterrupt:
        pass
    finally:
        bridge.close()
        for intent in instances.values():
            intent.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
