"""Deliberately broken Bridges: each breaks exactly one rule, to prove the suite is not lenient.

Every fault is an ``Alteration`` of the *real* reference Bridge, mostly hooks on requests and
replies, so the only difference a case can see is the one rule named.
``tests/conformance/test_faulty_implementations.py`` demands a failed case per fault, and a
failed *normative* case for each fault whose ``seed_rule`` names seed text (D-CNF-033).
``harness_command(name)`` runs a fault behind the reference's JSON-lines harness, a real
subprocess that takes Bridge options.  ``is_error_wrong`` lives in the MCP envelope, which an
in-process Bridge lacks: ``mcp_model.McpModelTarget`` inverts ``isError`` and nothing else.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from typing import Any, Final

from intentref.bridge import iso_timestamp
from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, utf8_length, well_formed
from intentref.suite.alterations.alteration import (
    Alteration,
    AlteredTarget,
    Memory,
    altered_bridge_factory,
    error_of,
)
from intentref.suite.cases.values import map_strings
from intentref.suite.targets.base import InProcessTarget
from intentref.suite.targets.mcp_model import BridgeFactory, McpModelTarget

Json = Any
Request = Any

# --------------------------------------------------------------------------- reply helpers


def _error_code(reply: Json) -> str | None:
    err = error_of(reply)
    return None if err is None else err.get("code")


def _results(reply: Json) -> Iterator[dict[str, Any]]:
    """Every IntentResult in a reply: a result's ``result`` and an error's ``partialResult``."""
    if not isinstance(reply, dict):
        return
    if reply.get("kind") == "result" and isinstance(reply.get("result"), dict):
        yield reply["result"]
    err = error_of(reply)
    if err is not None and isinstance(err.get("partialResult"), dict):
        yield err["partialResult"]


def items_of(reply: Json) -> Iterator[dict[str, Any]]:
    for result in _results(reply):
        for item in result.get("intents", []) or []:
            if isinstance(item, dict):
                yield item


def _is_task(reply: Json) -> bool:
    return isinstance(reply, dict) and reply.get("kind") == "task"


# --------------------------------------------------------------------------- the faults


def _reversed_reasons(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    for item in items_of(reply):
        reason = item.get("reason")
        if isinstance(reason, str) and "\n" in reason:
            # Condition first, clarification last: the seeds' order backwards.
            item["reason"] = "\n".join(reversed(reason.split("\n")))
    return reply


def _new_token_on_replay(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    if op != "accept" or not _is_task(reply) or not isinstance(request, dict):
        return reply
    answered: set[tuple[str, str, str]] = memory["bridge"].setdefault("answered", set())
    key = (str(request.get("jobId")), str(request.get("stepToken")), str(request.get("candidateText")))
    if key in answered:
        reply["stepToken"] = secrets.token_urlsafe(16)  # as if the step had been judged anew
    answered.add(key)
    return reply


def _detail_counted_in_characters(op: str, request: Request, memory: Memory) -> Request:
    detail = request.get("detail") if op == "cancel" and isinstance(request, dict) else None
    if isinstance(detail, str) and len(detail) <= MAX_CANCEL_DETAIL_BYTES < utf8_length(detail):
        # Counted in characters it fits: let the reference take a stand-in that fits in
        # bytes, and put the real detail back into whatever the reply says.
        marker = f"faulty-detail-{secrets.token_hex(8)}"
        memory["bridge"].setdefault("markers", {})[marker] = well_formed(detail)
        return {**request, "detail": marker}
    return request


def _detail_put_back(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    def put_back(text: str) -> str:
        for marker, detail in memory["bridge"].get("markers", {}).items():
            text = text.replace(marker, detail)
        return text

    return map_strings(reply, put_back)


def _partial_result_dropped(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    err = error_of(reply)
    if err is not None:
        err.pop("partialResult", None)
    return reply


DEFAULT_TTL_MS: Final = 15 * 60 * 1000  # the made-up default TTL of expires_at_by_default


def _expires_at_by_default(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    if not _is_task(reply) or memory["bridge"]["options"].get("jobTtlMs"):
        return reply
    # One deadline per job, fixed when it is first seen, as a real default TTL would be.
    expires: dict[str, str] = memory["bridge"].setdefault("expires", {})
    stamp = expires.setdefault(str(reply.get("jobId")), iso_timestamp(time.time() * 1000 + DEFAULT_TTL_MS))
    reply["expiresAt"] = stamp
    return reply


def _ids_from_zero(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    for item in items_of(reply):
        item_id = item.get("id")
        if isinstance(item_id, str) and item_id[:1] == "i" and item_id[1:].isdigit():
            item["id"] = f"i{int(item_id[1:]) - 1}"
    return reply


def _input_trimmed(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    for result in _results(reply):
        if isinstance(result.get("input"), str):
            result["input"] = result["input"].strip()
    return reply


OPTIONAL_ITEM_MEMBERS: Final = ("reason", "clarification")


def _null_for_absent(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    for item in items_of(reply):
        for member in OPTIONAL_ITEM_MEMBERS:
            item.setdefault(member, None)
    return reply


# Refusals that leave the step unused: no earlier answer exists to hand out for them.
_NOT_ANSWERS: Final = frozenset({"BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND", "INPUT_INVALID", "LIMIT_EXCEEDED"})


def _conflict_as_replay(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    if op != "accept" or not isinstance(request, dict):
        return reply
    answers: dict[tuple[str, str], str] = memory["bridge"].setdefault("answers", {})
    key = (str(request.get("jobId")), str(request.get("stepToken")))
    code = _error_code(reply)
    if code == "BRIDGE_STEP_CONFLICT" and key in answers:
        return json.loads(answers[key])
    if code not in _NOT_ANSWERS:
        answers.setdefault(key, json.dumps(reply))  # as text: the caller may edit the reply
    return reply


def _reclaimed_cancel_conflict(op: str, request: Request, reply: Json, memory: Memory) -> Json:
    issued: set[str] = memory.setdefault("jobs", set())  # this session's own
    if _is_task(reply) and isinstance(reply.get("jobId"), str):
        issued.add(reply["jobId"])
    job = request.get("jobId") if op == "cancel" and isinstance(request, dict) else None
    # The session that made the job is still open and the reference no longer knows the
    # job: its record was reclaimed.  Foreign, closed-session and never-issued jobs are
    # left alone: the seeds fix no answer for them (R-IDM-005, D-BRG-003).
    if job in issued and _error_code(reply) == "BRIDGE_JOB_NOT_FOUND":
        reply = map_strings(reply, lambda text: text.replace("BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT"))
    return reply


FAULTS: Final[dict[str, Alteration]] = {fault.name: fault for fault in (
    Alteration(
        name="reason_order",
        summary="an item's reasons joined condition, confirmation, clarification",
        breaks="R-RES-039: an item's reasons joined clarification, confirmation, condition",
        seed_rule="001 #动作字段与状态: reason 按澄清、确认、条件的顺序用换行连接",
        catch_with="a result item with two or more blockers (e.g. needs clarification and confirmation), reason matched exactly",
        after=_reversed_reasons,
    ),
    Alteration(
        name="replay_new_token",
        summary="a replayed submission that gets a task is given a new stepToken",
        breaks="R-IDM-001: a replayed submission gets the same reply byte for byte",
        seed_rule=None,  # 000 #重复提交与冲突: the retained reply "可以复用" (MAY): reference only
        catch_with="accept the same jobId/stepToken/candidateText twice where the first answer is a task; expect $sameAs",
        after=_new_token_on_replay,
    ),
    Alteration(
        name="is_error_wrong",
        summary="the MCP envelope's isError inverted",
        breaks="R-ENV-003: isError is true exactly when kind is error",
        seed_rule="000 #MCP 外层返回: isError 在 kind 为 error 时为 true，其他两种回复为 false",
        catch_with="an MCP-transport case whose step checks envelope isError (for a task and for an error reply)",
        envelope_only=True,
    ),
    Alteration(
        name="bytes_as_characters",
        summary="the cancel detail limit counted in characters",
        breaks="R-CAN-003/R-CAN-004: the cancel detail limit is 2048 UTF-8 bytes",
        seed_rule="000 #工具与 session 方法: detail 最多 2048 UTF-8 字节；683 个“中”为 2049 字节，会被拒绝",
        catch_with="cancel with a detail of at most 2048 characters but more than 2048 UTF-8 bytes (e.g. 683 × 中); expect INPUT_INVALID /detail",
        before=_detail_counted_in_characters,
        after=_detail_put_back,
    ),
    Alteration(
        name="partial_result_dropped",
        summary="errors never carry partialResult",
        breaks="R-ERR-011/R-ERR-036: an error after an accepted core carries partialResult",
        seed_rule="000 #data 候选: 这会返回带 partialResult 的提取错误 (004 #partialResult 的含义)",
        catch_with="an error reply after the core was accepted (cancel in the data stage, data failure); expect error.partialResult",
        after=_partial_result_dropped,
    ),
    Alteration(
        name="expires_at_by_default",
        summary="tasks carry expiresAt without a jobTtlMs",
        breaks="R-RPY-008/R-CAP-003: tasks carry expiresAt only with a jobTtlMs",
        seed_rule="000 #回复类型: 默认没有 expiresAt；仅显式启用旧兼容 jobTtlMs 时返回",
        catch_with="a task reply of a Bridge without jobTtlMs, matched with expiresAt {$absent: true} or exactly",
        after=_expires_at_by_default,
    ),
    Alteration(
        name="ids_from_zero",
        summary="item ids start at i0",
        breaks="R-RES-026: item ids are i1, i2, … in order",
        seed_rule="001 #动作字段与状态: id 按结果内顺序生成 i1、i2 等",
        catch_with="any result with an intent item, ids matched exactly",
        after=_ids_from_zero,
    ),
    Alteration(
        name="input_trimmed",
        summary="result.input trimmed",
        breaks="R-RES-015: result.input is the original input, untouched",
        seed_rule="001 #根字段: input 原样保留模块收到的 input，包括空格和换行",
        catch_with="a result for an input with leading or trailing whitespace, input matched exactly",
        after=_input_trimmed,
    ),
    Alteration(
        name="null_for_absent",
        summary="absent optional item members written as null",
        breaks="R-RES-032: a ready item carries no reason (absent, not null)",
        seed_rule="001 #动作字段与状态: reason?: never 表示该字段应当省略；ready 中省略",
        catch_with="a result with a ready item matched exactly (or reason {$absent: true})",
        after=_null_for_absent,
    ),
    Alteration(
        name="conflict_as_replay",
        summary="a used step with another candidate answered with the earlier reply",
        breaks="R-IDM-003: a used stepToken with a different candidateText is BRIDGE_STEP_CONFLICT",
        seed_rule=("000 #重复提交与冲突: 相同 token 与完全相同候选可以复用保留的回复 -- reuse is granted to the "
                   "identical candidate (候选摘要包含提交字符串), never to a different one"),
        catch_with="accept a step, then the same jobId/stepToken with another candidateText; expect BRIDGE_STEP_CONFLICT",
        after=_conflict_as_replay,
    ),
    Alteration(
        name="reclaimed_cancel_conflict",
        summary="cancelling a reclaimed job answers BRIDGE_STEP_CONFLICT",
        breaks="R-CAN-009: cancelling a reclaimed job returns BRIDGE_JOB_NOT_FOUND",
        seed_rule="000 #工具与 session 方法: 任务被回收后返回 BRIDGE_JOB_NOT_FOUND",
        catch_with=("a Bridge with maxReplayEntries 1: end a job, start another (its record is reclaimed), "
                    "cancel the first from the session that made it; expect BRIDGE_JOB_NOT_FOUND"),
        after=_reclaimed_cancel_conflict,
        needs_bridge_options=True,
    ),
)}


def bridge_factory(name: str) -> BridgeFactory:
    """A ``bridge_factory`` for ``InProcessTarget`` whose Bridges break the rule ``name``."""
    fault = FAULTS[name]
    if fault.envelope_only:  # a Bridge has no envelope: it would break nothing
        raise ValueError(f"{name} is an MCP envelope fault; use faulty_target({name!r})")
    return altered_bridge_factory([fault])


# --------------------------------------------------------------------------- targets

REFERENCE, MCP_MODEL = "reference", "mcp-model"


def target_named(name: str) -> InProcessTarget | AlteredTarget | McpModelTarget:
    """``reference``, ``mcp-model`` (the reference behind the MCP model) or a fault's name."""
    if name == REFERENCE:
        return InProcessTarget()
    if name == MCP_MODEL:
        return McpModelTarget()
    return faulty_target(name)


def faulty_target(name: str) -> AlteredTarget | McpModelTarget:
    """A target whose implementation breaks the rule ``name`` (see ``FAULTS``)."""
    fault = FAULTS[name]
    if fault.envelope_only:
        return McpModelTarget(invert_is_error=True)
    return target_for(fault)


def target_for(fault: Alteration) -> AlteredTarget:
    """The in-process reference with ``fault`` (one of ``FAULTS``, or the caller's own) applied."""
    return AlteredTarget([fault], name=f"reference with fault {fault.name}")


# --------------------------------------------------------------------------- behind the harness


def harness_command(name: str) -> list[str]:
    """A command running the reference's JSON-lines harness with the fault ``name``.

    For ``--harness``: a real subprocess behind the real protocol, so a fault that needs
    Bridge options can be shown to a target other than the in-process one (D-CNF-032).
    """
    if name not in FAULTS or FAULTS[name].envelope_only:
        raise ValueError(f"{name!r} is not a Bridge fault; choose one of {sorted(n for n, c in FAULTS.items() if not c.envelope_only)}")
    return [sys.executable, "-m", "intentref.suite.alterations.faulty", "--harness", name]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = sorted(n for n, c in FAULTS.items() if not c.envelope_only)
    if len(args) != 2 or args[0] != "--harness" or args[1] not in names:
        print(f"usage: python -m intentref.suite.alterations.faulty --harness FAULT  (FAULT: {', '.join(names)})", file=sys.stderr)
        return 2
    from intentref.suite.targets import harness_reference

    # The reference harness looks its Bridge factory up when a run is configured; this
    # program exists only to put the fault's factory there, in a process of its own.
    harness_reference.create_intent_bridge = bridge_factory(args[1])  # type: ignore[attr-defined,assignment]
    return harness_reference.main()


if __name__ == "__main__":  # pragma: no cover - run as a program
    raise SystemExit(main())
