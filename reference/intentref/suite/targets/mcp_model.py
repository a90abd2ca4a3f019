"""The reference behind the reference's MCP tool layer, in-process: the MCP envelope without a process.

``McpModelTarget`` models an MCP server faithfully enough for the envelope cases: the
reference's own ``call_intent_tool`` and ``tool_result`` build each CallToolResult, which is
then serialised and read back as a client would read it off the wire.  It is no substitute
for the real MCP targets (``mcp_stdio``, ``mcp_http``); it lets the envelope cases run against a
deliberately wrong envelope (``invert_is_error``, the fault ``is_error_wrong``) in-process,
and shows that the same model with a correct envelope passes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from intentref.bridge import create_intent_bridge
from intentref.core.wire import TOOL_OF_OP
from intentref.suite.targets.base import CallSession, InProcessTarget, Reply, Run, Session, Target

BridgeFactory = Callable[[Mapping[str, Any]], Any]


class _McpModelSession(CallSession):
    def __init__(self, session: Any, invert_is_error: bool) -> None:
        self._session = session
        self._invert = invert_is_error

    def _call(self, op: str, request: Any) -> Reply:
        # Imported on first call: the MCP server module brings the SDK's server with it, which
        # the fault and variant catalogues that import this module do not otherwise need.
        from intentref.mcp.server import call_intent_tool, tool_result

        result = tool_result(call_intent_tool(self._session, TOOL_OF_OP[op], request))
        # The JSON the server would write on the wire, read back as a client reads it.
        wire = json.loads(
            json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False)
        )
        is_error = bool(wire.get("isError", False))
        if self._invert:
            is_error = not is_error
        value = wire.get("structuredContent")
        texts = [c.get("text") for c in wire.get("content", []) if c.get("type") == "text"]
        text = texts[0] if len(texts) == 1 else None
        text_is_reply = text is not None and _parses_to(text, value)
        return Reply(value, text, {"isError": is_error, "textIsReply": text_is_reply})

    def close(self) -> None:
        self._session.close()


def _parses_to(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


class McpModelRun(Run):
    def __init__(self, bridge: Any, invert_is_error: bool) -> None:
        self._bridge = bridge
        self._invert = invert_is_error

    def connect(self) -> Session:
        return _McpModelSession(self._bridge.connect(), self._invert)

    def close(self) -> None:
        self._bridge.close()


class McpModelTarget(Target):
    """The reference behind the reference MCP tool layer, without a process or a socket.

    Not a substitute for the real MCP targets (``mcp_stdio``, ``mcp_http``): it exists so the envelope
    cases can be run against a deliberately wrong envelope in-process, and so a test can
    show that the same model with a correct envelope passes them.
    """

    transport = "mcp"

    def __init__(self, bridge_factory: BridgeFactory | None = None, invert_is_error: bool = False) -> None:
        self._factory: BridgeFactory = bridge_factory or create_intent_bridge
        self._invert = invert_is_error
        self.name = "MCP model (in-process)" + (", isError inverted" if invert_is_error else "")

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        # The in-process target builds the Intents (and raises ConfigRejected for a bad
        # configuration); its factory is where the Bridge it built can be taken from.
        built: list[Any] = []

        def capture(config: Mapping[str, Any]) -> Any:
            built.append(self._factory(config))
            return built[-1]

        InProcessTarget(bridge_factory=capture).open(instances, bridge_options)
        return McpModelRun(built[0], self._invert)
