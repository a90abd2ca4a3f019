"""intentref: the reference implementation of the intent-runtime Bridge/MCP protocol."""

from .errors import ERROR_CODES, IntentDataError, IntentParseError, Issue
from .intent import (
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

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The Bridge and the MCP server load lazily: the core must import without the MCP SDK.
    if name == "create_intent_bridge":
        from .bridge import create_intent_bridge

        return create_intent_bridge
    if name in ("serve_intent_mcp", "MCP_TOOLS"):
        from . import mcp_server

        return getattr(mcp_server, name)
    raise AttributeError(name)
