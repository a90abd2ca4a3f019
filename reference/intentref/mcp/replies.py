"""What a BridgeReply is to the adapter, and the error replies the adapter writes itself.

Every tool result carries a BridgeReply (seed 000 "MCP 外层返回"): an object whose ``kind``
is one of ``REPLY_KINDS``.  The adapter answers a few calls without the Bridge deciding
(an unknown tool, D-MCP-005; an internal failure, D-MCP-007; a capacity refusal,
D-MCP-025); those replies are built here, in the shared error family, stage ``bridge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from intentref.core.errors import Issue, error, self_issue

# spec: R-RPY-001 -- the three kinds of BridgeReply.
REPLY_KINDS: Final = ("task", "result", "error")


def is_bridge_reply(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in REPLY_KINDS


def adapter_error_reply(code: str, message: str, issues: Sequence[Issue] = ()) -> dict[str, Any]:
    """An error reply the adapter answers itself; the shared family keeps its code in the table (D-ERR-001)."""
    return {"kind": "error", "error": error(code, "bridge", message, list(issues)).to_json()}


def self_error_reply(code: str, message: str) -> dict[str, Any]:
    """``adapter_error_reply`` with the one issue that repeats the error itself, path null."""
    return adapter_error_reply(code, message, [self_issue(code, None, message)])
