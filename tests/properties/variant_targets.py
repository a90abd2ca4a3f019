"""Targets for proving the differential projection fair (test_projection_fairness.py).

Each is the real reference Bridge behind a ``conformance.faulty.Fault`` proxy:

* ``reworded`` -- differs from the reference only where the reference *decided*: tokens in
  another format (``job-1``, ``step-1``; D-BRG-006), other instruction text (D-INS-001),
  other error and issue messages and issue order (D-ERR-006, D-ERR-007), the intent_core
  format schema re-spelled (members in another order, a ``$comment``; D-COR-001) and the
  payload written with its members reversed and non-ASCII escaped (D-PAY-003).  Every
  reply means what the reference's means; the differential properties must see no
  divergence.
* ``status_priority`` -- breaks a seed rule: an item with both a confirmation and a
  condition reason is ``conditional`` instead of ``awaiting_confirmation`` (seed 001's
  priority, R-RES-038).  Must be caught as a *normative* divergence.
* ``replay_conflicts`` -- a replay (same jobId, stepToken and text) answers
  BRIDGE_STEP_CONFLICT instead of the retained reply.  Seed 000 lets a replay reuse the
  reply ("可以复用") without requiring it, so this is caught at *reference* level (D-BRG-007).

Run one with ``intentref properties --python variant_targets:NAME`` and this folder on
PYTHONPATH.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from intentref.bridge import create_intent_bridge
from intentref.suite.conformance.faulty import Fault as Proxy
from intentref.suite.conformance.faulty import FaultyBridge
from intentref.suite.conformance.targets import InProcessTarget

TOKEN_MEMBERS = ("jobId", "stepToken")


def _respelled(value: Any) -> Any:
    """The same JSON value written differently: members in reverse order (objects are unordered)."""
    if isinstance(value, dict):
        return {key: _respelled(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_respelled(item) for item in value]
    return value


class DecidedDifferently(Proxy):
    """Every decided spelling changed, nothing the seeds fix touched."""

    name = "reworded"
    breaks = "nothing the seeds state: only decided spellings"
    catch_with = "nothing normative may catch it"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.ours: dict[tuple[str, str], str] = {}  # (member, reference token) -> our token
        self.theirs: dict[str, str] = {}  # our token -> the reference's

    def _token(self, member: str, token: str) -> str:
        key = (member, token)
        if key not in self.ours:
            mine = f"{'job' if member == 'jobId' else 'step'}-{len(self.ours) + 1}"
            self.ours[key] = mine
            self.theirs[mine] = token
        return self.ours[key]

    def before(self, op: str, request: Any) -> Any:
        if not isinstance(request, dict):
            return request
        out = dict(request)
        for member in TOKEN_MEMBERS:
            value = out.get(member)
            if isinstance(value, str) and value in self.theirs:
                out[member] = self.theirs[value]
        return out

    def after(self, op: str, request: Any, reply: Any) -> Any:
        if not isinstance(reply, dict):
            return reply
        kind = reply.get("kind")
        if kind == "task":
            for member in TOKEN_MEMBERS:
                if isinstance(reply.get(member), str):
                    reply[member] = self._token(member, reply[member])
            reply["instructions"] = f"Reply with one JSON value for the {reply.get('stage')} stage, as the payload asks."
            payload = json.loads(reply["payload"])
            reply["payload"] = json.dumps(_respelled(payload), ensure_ascii=True, separators=(", ", ": "))
            fmt = reply.get("format")
            if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
                reply["format"] = {**fmt, "schema": {"$comment": "spelled differently", **_respelled(fmt["schema"])}}
        if kind == "error" and isinstance(reply.get("error"), dict):
            error = reply["error"]
            error["message"] = f"The call failed ({error.get('code')})."
            issues = error.get("issues")
            if isinstance(issues, list):
                error["issues"] = [{**issue, "message": "reworded"} for issue in reversed(issues)
                                   if isinstance(issue, dict)]  # fmt: skip
        return reply


class StatusPriority(Proxy):
    name = "status_priority"
    breaks = "R-RES-038: awaiting_confirmation outranks conditional"
    catch_with = "an item with a confirmation and a condition reason"

    def after(self, op: str, request: Any, reply: Any) -> Any:
        result = reply.get("result") if isinstance(reply, dict) and reply.get("kind") == "result" else None
        for item in (result or {}).get("intents", []):
            reasons = str(item.get("reason", "")).split("\n")
            if item.get("status") == "awaiting_confirmation" and len(reasons) >= 2:
                item["status"] = "conditional"  # the condition ranked above the confirmation
        return reply


class ReplayConflicts(Proxy):
    name = "replay_conflicts"
    breaks = "D-BRG-007: a replay answers the retained reply"
    catch_with = "the same jobId, stepToken and candidateText twice"
    REFUSALS = ("BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND", "INPUT_INVALID", "LIMIT_EXCEEDED")

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.seen: set[tuple[str, str, str]] = set()

    def after(self, op: str, request: Any, reply: Any) -> Any:
        if op != "accept" or not isinstance(request, dict):
            return reply
        key = (str(request.get("jobId")), str(request.get("stepToken")), str(request.get("candidateText")))
        if key in self.seen:
            message = "stepToken was already used."
            return {"kind": "error", "error": {"code": "BRIDGE_STEP_CONFLICT", "stage": "bridge", "message": message,
                                               "issues": [{"code": "BRIDGE_STEP_CONFLICT", "category": "input",
                                                           "path": "/stepToken", "message": message}]}}  # fmt: skip
        code = reply.get("error", {}).get("code") if reply.get("kind") == "error" else None
        if code not in self.REFUSALS:
            self.seen.add(key)
        return reply


def _target(proxy: type[Proxy]) -> InProcessTarget:
    def factory(config: Mapping[str, Any]) -> FaultyBridge:
        return FaultyBridge(create_intent_bridge(config), proxy(config))

    target = InProcessTarget(bridge_factory=factory)
    target.name = f"variant {proxy.name}"
    return target


def reworded() -> InProcessTarget:
    return _target(DecidedDifferently)


def status_priority() -> InProcessTarget:
    return _target(StatusPriority)


def replay_conflicts() -> InProcessTarget:
    return _target(ReplayConflicts)
