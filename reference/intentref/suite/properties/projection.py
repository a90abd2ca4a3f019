"""The normative projection of a BridgeReply, and the level of a difference in it.

Comparing whole replies would fail every other implementation at its first call (instruction
text, message wording, the core schema's spelling and token formats are reference decisions),
so a reply is first reduced to what the seeds fix (D-CNF-020): its kind; a task's stage,
whether it is a repair and its tokens as placeholders; a result's whole ``IntentResult``,
numbers compared by value (D-JSON-003); an error's code and stage (issue lists, messages and
``partialResult`` are decided: D-ERR-006, D-ERR-007, D-ERR-008, D-ERR-009).

``classify`` says whether a difference breaks a rule the seeds state (``normative``) or rests
on the reference's choices (``reference``, with the decisions' IDs): a replay (D-BRG-007), a
conflict (D-BRG-008), a limit (D-LIM-*), a request fault's code (D-BRG-001, D-REQ-*), a
configured ``repairAttempts`` (D-CFG-001, D-LIM-005), a candidate broken in a way only a
decision judges (``FAULT_DECISIONS``).  See D-CNF-021.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from intentref.core.wire import CANCEL_ENDING_CODES
from intentref.suite.alterations.alteration import error_of
from intentref.suite.generators.faults import CANDIDATE_FAULTS

NORMATIVE: Final = "normative"
REFERENCE: Final = "reference"

# spec: D-BRG-007, D-BRG-008 -- the seeds let a replay reuse the retained reply (可以复用) and
# let a used or foreign token conflict (可能返回): neither answer is required.
REPLAY_DECISIONS: Final = ("D-BRG-007", "D-BRG-008")
# Error codes whose choice, in the situations the properties reach, is the reference's.
DECIDED_CODES: Final[dict[str, tuple[str, ...]]] = {
    "BRIDGE_STEP_CONFLICT": ("D-BRG-008",),
    "BRIDGE_JOB_NOT_FOUND": ("D-BRG-003", "D-BRG-005"),
    "LIMIT_EXCEEDED": ("D-LIM-002", "D-LIM-003", "D-LIM-004", "D-BRG-009", "D-BRG-010", "D-BRG-011"),
    "BRIDGE_INSTANCE_NOT_FOUND": ("D-ERR-003",),
    "INPUT_INVALID": ("D-BRG-001", "D-BRG-002", "D-BRG-015", "D-REQ-001", "D-REQ-003", "D-REQ-005", "D-REQ-006"),
    "CONFIG_INVALID": ("D-ERR-002",),
    "BRIDGE_JOB_EXPIRED": ("D-ERR-005",),
    "INTERNAL_ERROR": ("D-MCP-007",),
}
# Candidate faults whose verdict is a reference decision: another implementation may judge
# such a text differently and still follow the seeds.  Each fault names its decisions where
# it is registered (``intentref.suite.generators.faults``); this is that list, read from the registry.
FAULT_DECISIONS: Final[dict[str, tuple[str, ...]]] = {
    name: fault.decisions for name, fault in CANDIDATE_FAULTS.items() if fault.decisions
}
# The seeds' default: one repair per stage (seed 003/004).  An instance configured otherwise
# rests on D-CFG-001 (the member exists) and D-LIM-005 (its range).
SEED_REPAIRS: Final = 1
REPAIR_DECISIONS: Final = ("D-CFG-001", "D-LIM-005")
JUDGEMENT_CODES: Final = ("MODEL_OUTPUT_INVALID", "DATA_EXTRACTION_FAILED")


def project(reply: Any) -> Any:
    """What the seeds fix of ``reply`` (anything that is not a BridgeReply is kept whole)."""
    if not isinstance(reply, dict):
        return reply
    kind = reply.get("kind")
    if kind == "task":
        # seed 000 #回复类型: no expiresAt unless the deprecated jobTtlMs is set.
        return {"kind": "task", "jobId": reply.get("jobId"), "stepToken": reply.get("stepToken"),
                "stage": reply.get("stage"), "repair": is_repair(reply), "expiresAt": "expiresAt" in reply}  # fmt: skip
    if kind == "result":
        return {"kind": "result", "result": by_value(reply.get("result"))}
    if kind == "error":
        error = reply.get("error")
        if not isinstance(error, dict):
            return {"kind": "error", "error": error}
        projected = {"code": error.get("code"), "stage": error.get("stage")}
        if "partialResult" in error:  # optional (seed 004); when given, the checked default with data {}
            projected["partialResult"] = by_value(error["partialResult"])
        return {"kind": "error", "error": projected}
    return reply


def is_repair(task: dict[str, Any]) -> bool:
    """A task whose payload carries repair material (seed 000: payload.repair)."""
    try:
        payload = json.loads(task.get("payload", ""))
    except (TypeError, ValueError):
        return False
    return isinstance(payload, dict) and payload.get("repair") is not None


def by_value(value: Any) -> Any:
    """``value`` with integral floats as ints: 1 and 1.0 are one number (D-JSON-003 decides the spelling)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: by_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [by_value(v) for v in value]
    return value


@dataclass(frozen=True)
class CallContext:
    """What the differential session knows about a call when its projections differ."""

    op: str
    replay: bool = False  # an accept of a (job, token, text) this run answered before
    fault: str | None = None  # the named candidate fault the text was generated with
    repair_attempts: Any = None  # the job's instance's configured repairAttempts (None: not set)
    seed_cancel: bool = False  # a cancel whose only possible fault is the seeds' 2048-byte detail limit


def classify(context: CallContext, reference: Any, target: Any) -> tuple[str, tuple[str, ...]]:
    """(level, decisions) of a projection difference between the two replies.

    ``normative`` unless one of the reference's choices explains it; the decisions are
    those choices, so a generated case can cite them (D-CNF-021).
    """
    decisions: list[str] = []
    if context.seed_cancel and _cancel_verdict(reference) != _cancel_verdict(target):
        return NORMATIVE, ()  # seed 000: an active job's cancel ends it; a detail over 2048 bytes is refused
    if context.replay:  # what a replay returns is the only question asked (seed 000: 可以复用)
        return REFERENCE, REPLAY_DECISIONS
    for reply in (reference, target):
        error = error_of(reply)
        if error is not None:
            decisions += DECIDED_CODES.get(str(error.get("code")), ())
    if context.fault is not None:
        decisions += FAULT_DECISIONS.get(context.fault, ())
    ours, theirs = error_of(reference) or {}, error_of(target) or {}
    if ours.get("code") == theirs.get("code") in CANCEL_ENDING_CODES and ours.get("stage") != theirs.get("stage"):
        decisions.append("D-BRG-015")  # the stage a cancel reports is the reference's (the job's current one)
    if _has_partial(reference) != _has_partial(target):
        decisions.append("D-ERR-009")  # seed 004: partialResult is optional
    if context.repair_attempts is not None and context.repair_attempts != SEED_REPAIRS and (
        is_judgement(reference) or is_judgement(target)
    ):
        decisions += REPAIR_DECISIONS
    unique = tuple(dict.fromkeys(decisions))
    return (REFERENCE, unique) if unique else (NORMATIVE, ())


def is_judgement(reply: Any) -> bool:
    """A repair task or a refused candidate: what the number of repairs decides between."""
    if isinstance(reply, dict) and reply.get("kind") == "task":
        return is_repair(reply)
    error = error_of(reply)
    return error is not None and error.get("code") in JUDGEMENT_CODES


def _cancel_verdict(reply: Any) -> str:
    """``ended`` (a cancel outcome code), ``refused`` (any other error) or the reply's kind."""
    error = error_of(reply)
    if error is None:
        return str(reply.get("kind")) if isinstance(reply, dict) else "?"
    return "ended" if error.get("code") in CANCEL_ENDING_CODES else "refused"


def _has_partial(reply: Any) -> bool:
    error = error_of(reply)
    return error is not None and "partialResult" in error


def seed_cancel(request: Any, reference_reply: Any) -> bool:
    """A cancel of an active job that is well-formed but for, at most, the detail's size.

    The seeds fix both answers (000 #工具与 session 方法): the outcome's code, or a refusal for
    a detail over 2048 UTF-8 bytes.  Anything else about the request (unknown members, types,
    lone surrogates, D-BRG-015, D-LIM-006) leaves the answer to a decision.
    """
    from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, is_well_formed

    if not isinstance(request, dict) or not set(request) <= {"jobId", "outcome", "detail"}:
        return False
    if not isinstance(request.get("jobId"), str) or request.get("outcome", "cancelled") not in (
        "cancelled", "refusal", "incomplete"
    ):
        return False
    detail = request.get("detail", "")
    if not isinstance(detail, str) or not is_well_formed(detail):
        return False
    verdict = _cancel_verdict(reference_reply)
    # The reference ended the job, or refused only the detail (so the job was active).
    over = len(detail.encode("utf-8")) > MAX_CANCEL_DETAIL_BYTES
    return verdict == "ended" or (verdict == "refused" and over)


# --------------------------------------------------------------------------- assertions on decisions


class DecidedAssertion(AssertionError):
    """A property's assertion about something the reference decided (a limit, a message, a token rule).

    Raised by ``decided``; a failure of this kind is reported at ``reference`` level with the
    decisions, so another implementation that decided otherwise is not counted as breaking
    the seeds (D-CNF-021).
    """

    def __init__(self, message: str, decisions: tuple[str, ...]) -> None:
        super().__init__(f"{message} [decided: {', '.join(decisions)}]")
        self.decisions = decisions


class decided:
    """``with decided("D-LIM-002"): assert …`` -- a failure inside is a DecidedAssertion.

    A KeyError or TypeError inside counts too (reading a reply the decision shaped), and so
    does a protocol-layer refusal of a call inside (``ProtocolRefusal``, D-CNF-055): whether
    it is accepted at all is what was decided.  With no decisions it changes nothing.
    """

    def __init__(self, *decisions: str) -> None:
        self.decisions = decisions

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if not self.decisions or isinstance(exc, DecidedAssertion) or getattr(exc, "level", None) is not None:
            return  # nothing decided here, or already placed (a Divergence carries its own level)
        from intentref.suite.targets.base import ProtocolRefusal

        if isinstance(exc, AssertionError | KeyError | TypeError | ProtocolRefusal):
            raise DecidedAssertion(f"{type(exc).__name__}: {exc}", self.decisions).with_traceback(tb) from None


def failure_level(exc: BaseException) -> tuple[str, tuple[str, ...]]:
    """(level, decisions) of a property's failure: normative unless every cause rests on decisions."""
    if isinstance(exc, BaseExceptionGroup):
        levels = [failure_level(inner) for inner in exc.exceptions]
        if all(level == REFERENCE for level, _ in levels):
            return REFERENCE, tuple(dict.fromkeys(d for _, ds in levels for d in ds))
        return NORMATIVE, ()
    level = getattr(exc, "level", None)
    decisions = tuple(getattr(exc, "decisions", ()) or ())
    if isinstance(exc, DecidedAssertion) or level == REFERENCE:
        return REFERENCE, decisions
    return NORMATIVE, ()
