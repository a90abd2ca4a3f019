"""intentref: the reference implementation of the intent-runtime Bridge/MCP protocol."""

from intentref._version import __version__ as __version__
from intentref.core.errors import ERROR_CODES, IntentDataError, IntentParseError, Issue
from intentref.intent import (
    Intent,
    ModelAborted,
    ModelAuthFailed,
    ModelExecutorError,
    ModelOutputIncomplete,
    ModelRateLimited,
    ModelRefused,
    ModelRequestFailed,
)

__all__ = [
    "ERROR_CODES",
    "Intent",
    "IntentDataError",
    "IntentParseError",
    "Issue",
    "ModelAborted",
    "ModelAuthFailed",
    "ModelExecutorError",
    "ModelOutputIncomplete",
    "ModelRateLimited",
    "ModelRefused",
    "ModelRequestFailed",
    "create_intent_bridge",
    "serve_intent_mcp",
]


def __getattr__(name: str) -> object:
    # The Bridge and the MCP server load lazily: the core must import without the MCP SDK.
    if name == "create_intent_bridge":
        from intentref.bridge import create_intent_bridge

        return create_intent_bridge
    if name in ("serve_intent_mcp", "MCP_TOOLS"):
        from intentref.mcp import server as mcp_server

        return getattr(mcp_server, name)
    raise AttributeError(name)
