"""Replies as an MCP tool returns them, and replies or tool results malformed in one named way."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from intentref.core.jsontext import dumps_compact
from intentref.suite.generators.draw import Draw


def tool_result(reply: dict[str, Any]) -> dict[str, Any]:
    """A BridgeReply as an MCP CallToolResult (spec: R-ENV-001, R-ENV-002, R-ENV-003)."""
    return {
        "content": [{"type": "text", "text": dumps_compact(reply)}],
        "structuredContent": reply,
        "isError": reply.get("kind") == "error",
    }


def _drop(value: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != name}


# name -> (kinds it applies to, requirement broken, how)
ReplyDefect = Callable[[dict[str, Any], Draw], Any]
REPLY_DEFECTS: dict[str, tuple[frozenset[str], str, ReplyDefect]] = {
    "reply.kind_missing": (frozenset({"task", "result", "error"}), "R-RPY-001", lambda r, d: _drop(r, "kind")),
    "reply.kind_unknown": (frozenset({"task", "result", "error"}), "R-RPY-001",
                           lambda r, d: {**r, "kind": d.choice(["Task", "done", "", None])}),
    "reply.not_an_object": (frozenset({"task", "result", "error"}), "R-RPY-001", lambda r, d: [r]),
    "reply.task_without_step_token": (frozenset({"task"}), "R-RPY-002", lambda r, d: _drop(r, "stepToken")),
    "reply.task_without_job_id": (frozenset({"task"}), "R-RPY-002", lambda r, d: _drop(r, "jobId")),
    "reply.payload_not_string": (frozenset({"task"}), "R-RPY-005", lambda r, d: {**r, "payload": json.loads(r["payload"])}),
    "reply.stage_unknown": (frozenset({"task"}), "R-RPY-002", lambda r, d: {**r, "stage": "repair"}),
    "reply.expires_at_null": (frozenset({"task"}), "R-RPY-008", lambda r, d: {**r, "expiresAt": None}),
    "reply.result_missing": (frozenset({"result"}), "R-RPY-003", lambda r, d: _drop(r, "result")),
    "reply.result_not_object": (frozenset({"result"}), "R-RPY-003", lambda r, d: {**r, "result": "done"}),
    "reply.error_missing": (frozenset({"error"}), "R-RPY-004", lambda r, d: _drop(r, "error")),
    "reply.error_without_code": (frozenset({"error"}), "R-ERR-010", lambda r, d: {**r, "error": _drop(r["error"], "code")}),
    "reply.error_issues_not_array": (frozenset({"error"}), "R-ERR-006",
                                     lambda r, d: {**r, "error": {**r["error"], "issues": {}}}),
    "reply.error_partial_result_null": (frozenset({"error"}), "R-ERR-011",
                                        lambda r, d: {**r, "error": {**r["error"], "partialResult": None}}),
}  # fmt: skip


def _mcp_text_mismatch(result: dict[str, Any], d: Draw) -> dict[str, Any]:
    reply = result["structuredContent"]
    other = {**reply, "kind": "result" if reply.get("kind") != "result" else "error"}
    return {**result, "content": [{"type": "text", "text": dumps_compact(other)}]}


MCP_DEFECTS: dict[str, tuple[str, Callable[[dict[str, Any], Draw], dict[str, Any]]]] = {
    "mcp.structured_content_missing": ("R-ENV-002", lambda r, d: _drop(r, "structuredContent")),
    "mcp.text_content_missing": ("R-ENV-001", lambda r, d: {**r, "content": []}),
    "mcp.text_not_json": ("R-ENV-001", lambda r, d: {**r, "content": [{"type": "text", "text": "{" + r["content"][0]["text"]}]}),
    "mcp.text_differs": ("R-ENV-002", _mcp_text_mismatch),
    "mcp.is_error_mismatch": ("R-ENV-003", lambda r, d: {**r, "isError": not r["isError"]}),
    "mcp.is_error_missing": ("R-ENV-003", lambda r, d: _drop(r, "isError")),
    "mcp.content_not_text": ("R-ENV-001", lambda r, d: {**r, "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
    "mcp.structured_kind_unknown": ("R-ENV-007", lambda r, d: {**r, "structuredContent": {**r["structuredContent"],
                                                                                        "kind": "unknown"}}),
}  # fmt: skip


def malformed_reply(d: Draw, reply: dict[str, Any]) -> tuple[str, str, Any]:
    """(defect, requirement, value): ``reply`` broken in one named way."""
    names = [n for n, (kinds, _, _) in REPLY_DEFECTS.items() if reply.get("kind") in kinds]
    name = d.choice(names)
    _, requirement, make = REPLY_DEFECTS[name]
    return name, requirement, make(copy.deepcopy(reply), d)


def malformed_tool_result(d: Draw, reply: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    name = d.choice(list(MCP_DEFECTS))
    requirement, make = MCP_DEFECTS[name]
    return name, requirement, make(tool_result(copy.deepcopy(reply)), d)
