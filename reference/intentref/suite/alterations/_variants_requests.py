"""Decision variants at the door: requests and instance configurations read another way.

A request is rewritten before the reference sees it, or answered in its place, and an
instance member taken away before it is built (D-CNF-040 says why these stay at the
boundary); every hook is deterministic.  ``_variants_boundary.VARIANTS`` lists them.
"""

from __future__ import annotations

import time
from typing import Any

from intentref.bridge import BridgeReply
from intentref.core.limits import well_formed
from intentref.suite.alterations.alteration import Alteration, Memory, error_of
from intentref.suite.cases.capabilities import REPAIR_ATTEMPTS
from intentref.suite.cases.values import map_strings


def _refusal(code: str, stage: str, path: str, message: str) -> BridgeReply:
    """An error reply with one issue of category input, under the error's own code."""
    issue = {"code": code, "category": "input", "path": path, "message": message}
    return {"kind": "error", "error": {"code": code, "stage": stage, "message": message, "issues": [issue]}}


# --------------------------------------------------------------------------- requests


_PARSE_MEMBERS = ("instance", "input", "context", "fields")
_MEMBERS = {"prepare": _PARSE_MEMBERS, "accept": ("jobId", "stepToken", "candidateText"),
            "cancel": ("jobId", "outcome", "detail")}  # fmt: skip


def _ignore_unknown_members(op: str, request: Any, memory: Memory) -> Any:
    if isinstance(request, dict) and op in _MEMBERS:
        return {k: v for k, v in request.items() if k in _MEMBERS[op]}
    return request


LENIENT_MEMBERS = Alteration(
    name="lenient-members",
    decisions=("D-REQ-001",),
    summary="unknown request members are ignored, not refused",
    before=_ignore_unknown_members,
)


def _fields_null_refused(op: str, request: Any, memory: Memory) -> Any:
    if op == "prepare" and isinstance(request, dict) and "fields" in request and request["fields"] is None:
        return _refusal("INPUT_INVALID", "input", "/fields", "fields must be an array of field names.")
    return request


FIELDS_NULL_REFUSED = Alteration(
    name="fields-null-refused",
    decisions=("D-REQ-005",),
    summary="fields: null is refused, not read as absent",
    before=_fields_null_refused,
)


def _strict_context(op: str, request: Any, memory: Memory) -> Any:
    if op != "prepare" or not isinstance(request, dict) or "context" not in request:
        return request
    context = request["context"]
    refused = "context must hold non-blank text."
    if context is None or (isinstance(context, str) and not context.strip()):
        return _refusal("INPUT_INVALID", "input", "/context", refused)
    if isinstance(context, list):
        kept = []
        for index, message in enumerate(context):
            if isinstance(message, dict):
                content = message.get("content")
                if isinstance(content, str) and not content.strip():
                    return _refusal("INPUT_INVALID", "input", f"/context/{index}/content", refused)
                message = {k: v for k, v in message.items() if k in ("role", "content")}
            kept.append(message)
        request["context"] = kept
    return request


STRICT_CONTEXT = Alteration(
    name="strict-context",
    decisions=("D-REQ-004",),
    summary="blank or null context refused; extra message members ignored",
    before=_strict_context,
)


def _surrogates_replaced(op: str, request: Any, memory: Memory) -> Any:
    if op == "prepare" and isinstance(request, dict):
        for member in ("input", "context"):
            if member in request:
                request[member] = map_strings(request[member], well_formed)
    return request


SURROGATES_REPLACED = Alteration(
    name="surrogates-replaced",
    decisions=("D-REQ-003",),
    summary="lone surrogates in request text become U+FFFD, as a JavaScript host's encoder writes them",
    before=_surrogates_replaced,
)


def _null_outcome_is_absent(op: str, request: Any, memory: Memory) -> Any:
    if op == "cancel" and isinstance(request, dict) and "outcome" in request and request["outcome"] is None:
        del request["outcome"]
    return request


NULL_OUTCOME = Alteration(
    name="null-outcome-default",
    decisions=("D-BRG-015",),
    summary="cancel outcome: null means the default, cancelled",
    before=_null_outcome_is_absent,
)


# --------------------------------------------------------------------------- configuration


def _without_repair_attempts(name: str, config: dict[str, Any]) -> dict[str, Any]:
    config.pop("repairAttempts", None)
    return config


REPAIRS_NOT_CONFIGURABLE = Alteration(
    name="repairs-not-configurable",
    decisions=("D-CFG-001", "D-LIM-005"),
    summary="an instance takes no repairAttempts member: one repair per stage, always",
    config=_without_repair_attempts,
    lacks={REPAIR_ATTEMPTS: "repairs are not configurable per instance in this variant"},
)


def _issued_jobs(memory: Memory) -> dict[Any, Any]:
    issued: dict[Any, Any] = memory["bridge"].setdefault("issued", {})
    return issued


def _record_issued(op: str, request: Any, reply: BridgeReply, memory: Memory) -> BridgeReply:
    if op == "prepare" and reply.get("kind") == "task":
        _issued_jobs(memory)[reply.get("jobId")] = memory["session"]
    err = error_of(reply)
    if err is None or err.get("code") != "BRIDGE_JOB_NOT_FOUND" or not isinstance(request, dict):
        return reply
    owner = _issued_jobs(memory).get(request.get("jobId"))
    if owner is not None and owner is not memory["session"]:  # another connection's (or a closed one's)
        return _refusal("INPUT_INVALID", "bridge", "/jobId", "This job belongs to another connection.")
    if op == "accept":  # one's own job, no longer held: seed 000 fixes only cancel's answer
        err["message"] = "This job is no longer held."
    return reply


def _never_issued_is_invalid(op: str, request: Any, memory: Memory) -> Any:
    if op in ("accept", "cancel") and isinstance(request, dict) and isinstance(request.get("jobId"), str) \
            and request["jobId"] not in _issued_jobs(memory):
        return _refusal("INPUT_INVALID", "bridge", "/jobId", "jobId was never issued by this Bridge.")
    return request


JOB_NOT_FOUND_BY_CAUSE = Alteration(
    name="unknown-jobs-by-cause",
    decisions=("D-BRG-003",),
    summary="a jobId never issued, or another connection's, is INPUT_INVALID; accept on a job no longer held words NOT_FOUND its own way",
    before=_never_issued_is_invalid,
    after=_record_issued,
)


def _repeated_field_refused(op: str, request: Any, memory: Memory) -> Any:
    if op == "prepare" and isinstance(request, dict) and isinstance(request.get("fields"), list):
        fields = request["fields"]
        for index, name in enumerate(fields):
            if name in fields[:index]:
                return _refusal("INPUT_INVALID", "input", f"/fields/{index}", "fields names a field twice.")
    return request


REPEATED_FIELD_REFUSED = Alteration(
    name="repeated-field-refused",
    decisions=("D-REQ-002",),
    summary="a field named twice in fields is refused",
    before=_repeated_field_refused,
)


def _replay_ttl_bounds_idle_jobs(op: str, request: Any, memory: Memory) -> Any:
    """With replayTtlMs set, a job untouched for that long is gone, active or not."""
    ttl = memory["bridge"]["options"].get("replayTtlMs") or 0
    touched = memory.setdefault("touched", {})
    job = request.get("jobId") if isinstance(request, dict) else None
    now = time.monotonic() * 1000
    if ttl > 0 and op in ("accept", "cancel") and job in touched and now - touched[job] >= ttl:
        return _refusal("BRIDGE_JOB_NOT_FOUND", "bridge", "/jobId", "No job with this jobId is held.")
    return request


def _touch(op: str, request: Any, reply: BridgeReply, memory: Memory) -> BridgeReply:
    job = reply.get("jobId") if reply.get("kind") == "task" else None
    if job is None and isinstance(request, dict) and op in ("accept", "cancel") and error_of(reply) is None:
        job = request.get("jobId")
    if isinstance(job, str):
        memory.setdefault("touched", {})[job] = time.monotonic() * 1000
    return reply


REPLAY_TTL_BOUNDS_IDLE_JOBS = Alteration(
    name="replay-ttl-bounds-idle-jobs",
    decisions=("D-BRG-016",),
    summary="replayTtlMs also drops an active job left untouched that long",
    before=_replay_ttl_bounds_idle_jobs,
    after=_touch,
)
