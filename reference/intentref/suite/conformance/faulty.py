"""Deliberately broken Bridges: each breaks exactly one rule, to prove the suite is not lenient.

Every fault wraps the *real* reference Bridge in a session proxy that rewrites requests on
their way in or replies on their way out; none copies reference logic, so the only
difference a case can see is the one rule named.  ``faulty_target(name)`` gives a target
the runner can drive; ``tests/conformance/test_faulty_implementations.py`` runs the whole
fixture suite against each and demands at least one failed case per fault, and a failed
*normative* case for each fault whose ``seed_rule`` names seed text it contradicts
(D-CNF-033); ``intentref.suite.conformance.recall.recall()`` prints that table.  ``harness_command(name)`` runs a fault behind
the reference's JSON-lines harness, a real subprocess that takes Bridge options.

``is_error_wrong`` lives at the MCP level (the envelope's ``isError``), which an
in-process Bridge has no notion of.  ``McpModelTarget`` models an MCP server faithfully
enough for the envelope cases: the reference's own ``call_intent_tool`` and
``tool_result`` build each CallToolResult, which is then serialised and read back as a
client would read it off the wire.  The fault inverts ``isError`` and nothing else.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from intentref.bridge import create_intent_bridge, iso_timestamp
from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, utf8_length, well_formed
from intentref.suite.conformance.fixtures import Case
from intentref.suite.conformance.runner import execute
from intentref.suite.conformance.script import CaseOutcome
from intentref.suite.conformance.targets import CallSession, InProcessTarget, Reply, Run, Session, Target

Json = Any
Request = Any
BridgeFactory = Callable[[Mapping[str, Any]], Any]

# --------------------------------------------------------------------------- reply helpers


def _error(reply: Json) -> dict[str, Any] | None:
    if isinstance(reply, dict) and reply.get("kind") == "error":
        err = reply.get("error")
        if isinstance(err, dict):
            return err
    return None


def _error_code(reply: Json) -> str | None:
    err = _error(reply)
    return None if err is None else err.get("code")


def _results(reply: Json) -> Iterator[dict[str, Any]]:
    """Every IntentResult in a reply: a result's ``result`` and an error's ``partialResult``."""
    if not isinstance(reply, dict):
        return
    if reply.get("kind") == "result" and isinstance(reply.get("result"), dict):
        yield reply["result"]
    err = _error(reply)
    if err is not None and isinstance(err.get("partialResult"), dict):
        yield err["partialResult"]


def items_of(reply: Json) -> Iterator[dict[str, Any]]:
    for result in _results(reply):
        for item in result.get("intents", []) or []:
            if isinstance(item, dict):
                yield item


def _is_task(reply: Json) -> bool:
    return isinstance(reply, dict) and reply.get("kind") == "task"


def _replace_text(value: Json, old: str, new: str) -> Json:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace_text(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_text(v, old, new) for v in value]
    return value


# --------------------------------------------------------------------------- the faults


class Fault:
    """One broken rule.  One instance per Bridge, so its memory is that Bridge's.

    ``before`` sees each request before the reference does; ``after`` sees the reference's
    reply (objects of its own, free to edit) together with the caller's original request.
    """

    name: ClassVar[str]
    breaks: ClassVar[str]  # the rule broken, with the requirement it comes from
    catch_with: ClassVar[str]  # what a case must do to catch it (for the gap report)
    # The seed text the fault contradicts, or None when it only departs from a reference
    # decision or a MAY: such a fault must be caught, but only reference cases can (D-CNF-033).
    seed_rule: ClassVar[str | None]
    envelope_only: ClassVar[bool] = False  # True: the fault is in the MCP envelope
    # True: only a Bridge with small capacity options reaches the rule (D-CNF-032); a run on
    # the default options, such as the property campaign's, never shows the fault.
    needs_bridge_options: ClassVar[bool] = False

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config

    def before(self, op: str, request: Request) -> Request:
        return request

    def after(self, op: str, request: Request, reply: Json) -> Json:
        return reply

    def after_in(self, session: dict[str, Any], op: str, request: Request, reply: Json) -> Json:
        """``after`` for a fault that must know the session: ``session`` is that session's own memory."""
        return self.after(op, request, reply)


class ReasonOrder(Fault):
    name = "reason_order"
    breaks = "R-RES-039: an item's reasons joined clarification, confirmation, condition"
    seed_rule = "001 #动作字段与状态: reason 按澄清、确认、条件的顺序用换行连接"
    catch_with = "a result item with two or more blockers (e.g. needs clarification and confirmation), reason matched exactly"

    def after(self, op: str, request: Request, reply: Json) -> Json:
        for item in items_of(reply):
            reason = item.get("reason")
            if isinstance(reason, str) and "\n" in reason:
                # Condition first, clarification last: the seeds' order backwards.
                item["reason"] = "\n".join(reversed(reason.split("\n")))
        return reply


class ReplayNewToken(Fault):
    name = "replay_new_token"
    breaks = "R-IDM-001: a replayed submission gets the same reply byte for byte"
    seed_rule = None  # 000 #重复提交与冲突: the retained reply "可以复用" (MAY): reference only
    catch_with = (
        "accept the same jobId/stepToken/candidateText twice where the first answer is a task; expect $sameAs"
    )

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.answered: set[tuple[str, str, str]] = set()

    def after(self, op: str, request: Request, reply: Json) -> Json:
        if op != "accept" or not _is_task(reply) or not isinstance(request, dict):
            return reply
        key = (str(request.get("jobId")), str(request.get("stepToken")), str(request.get("candidateText")))
        if key in self.answered:
            reply["stepToken"] = secrets.token_urlsafe(16)  # as if the step had been judged anew
        self.answered.add(key)
        return reply


class BytesAsCharacters(Fault):
    name = "bytes_as_characters"
    breaks = "R-CAN-003/R-CAN-004: the cancel detail limit is 2048 UTF-8 bytes"
    seed_rule = "000 #工具与 session 方法: detail 最多 2048 UTF-8 字节；683 个“中”为 2049 字节，会被拒绝"
    catch_with = "cancel with a detail of at most 2048 characters but more than 2048 UTF-8 bytes (e.g. 683 × 中); expect INPUT_INVALID /detail"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.markers: dict[str, str] = {}

    def before(self, op: str, request: Request) -> Request:
        detail = request.get("detail") if op == "cancel" and isinstance(request, dict) else None
        if isinstance(detail, str) and len(detail) <= MAX_CANCEL_DETAIL_BYTES < utf8_length(detail):
            # Counted in characters it fits: let the reference take a stand-in that fits in
            # bytes, and put the real detail back into whatever the reply says.
            marker = f"faulty-detail-{secrets.token_hex(8)}"
            self.markers[marker] = well_formed(detail)
            return {**request, "detail": marker}
        return request

    def after(self, op: str, request: Request, reply: Json) -> Json:
        for marker, detail in self.markers.items():
            reply = _replace_text(reply, marker, detail)
        return reply


class PartialResultDropped(Fault):
    name = "partial_result_dropped"
    breaks = "R-ERR-011/R-ERR-036: an error after an accepted core carries partialResult"
    seed_rule = "000 #data 候选: 这会返回带 partialResult 的提取错误 (004 #partialResult 的含义)"
    catch_with = "an error reply after the core was accepted (cancel in the data stage, data failure); expect error.partialResult"

    def after(self, op: str, request: Request, reply: Json) -> Json:
        err = _error(reply)
        if err is not None:
            err.pop("partialResult", None)
        return reply


class ExpiresAtByDefault(Fault):
    name = "expires_at_by_default"
    breaks = "R-RPY-008/R-CAP-003: tasks carry expiresAt only with a jobTtlMs"
    seed_rule = "000 #回复类型: 默认没有 expiresAt；仅显式启用旧兼容 jobTtlMs 时返回"
    catch_with = (
        "a task reply of a Bridge without jobTtlMs, matched with expiresAt {$absent: true} or exactly"
    )
    DEFAULT_TTL_MS: ClassVar[int] = 15 * 60 * 1000

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.expires: dict[str, str] = {}

    def after(self, op: str, request: Request, reply: Json) -> Json:
        if not _is_task(reply) or self.config.get("jobTtlMs"):
            return reply
        # One deadline per job, fixed when it is first seen, as a real default TTL would be.
        job_id = str(reply.get("jobId"))
        stamp = self.expires.setdefault(job_id, iso_timestamp(time.time() * 1000 + self.DEFAULT_TTL_MS))
        reply["expiresAt"] = stamp
        return reply


class IdsFromZero(Fault):
    name = "ids_from_zero"
    breaks = "R-RES-026: item ids are i1, i2, … in order"
    seed_rule = "001 #动作字段与状态: id 按结果内顺序生成 i1、i2 等"
    catch_with = "any result with an intent item, ids matched exactly"

    def after(self, op: str, request: Request, reply: Json) -> Json:
        for item in items_of(reply):
            item_id = item.get("id")
            if isinstance(item_id, str) and item_id[:1] == "i" and item_id[1:].isdigit():
                item["id"] = f"i{int(item_id[1:]) - 1}"
        return reply


class InputTrimmed(Fault):
    name = "input_trimmed"
    breaks = "R-RES-015: result.input is the original input, untouched"
    seed_rule = "001 #根字段: input 原样保留模块收到的 input，包括空格和换行"
    catch_with = "a result for an input with leading or trailing whitespace, input matched exactly"

    def after(self, op: str, request: Request, reply: Json) -> Json:
        for result in _results(reply):
            if isinstance(result.get("input"), str):
                result["input"] = result["input"].strip()
        return reply


class NullForAbsent(Fault):
    name = "null_for_absent"
    breaks = "R-RES-032: a ready item carries no reason (absent, not null)"
    seed_rule = "001 #动作字段与状态: reason?: never 表示该字段应当省略；ready 中省略"
    catch_with = "a result with a ready item matched exactly (or reason {$absent: true})"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("reason", "clarification")

    def after(self, op: str, request: Request, reply: Json) -> Json:
        for item in items_of(reply):
            for member in self.OPTIONAL:
                item.setdefault(member, None)
        return reply


class ConflictAsReplay(Fault):
    name = "conflict_as_replay"
    breaks = "R-IDM-003: a used stepToken with a different candidateText is BRIDGE_STEP_CONFLICT"
    seed_rule = ("000 #重复提交与冲突: 相同 token 与完全相同候选可以复用保留的回复 -- reuse is granted to the "
                 "identical candidate (候选摘要包含提交字符串), never to a different one")
    catch_with = (
        "accept a step, then the same jobId/stepToken with another candidateText; expect BRIDGE_STEP_CONFLICT"
    )
    # Refusals that leave the step unused: no earlier answer exists to hand out for them.
    _NOT_ANSWERS: ClassVar[frozenset[str]] = frozenset(
        {"BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND", "INPUT_INVALID", "LIMIT_EXCEEDED"}
    )

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.answers: dict[tuple[str, str], Json] = {}

    def after(self, op: str, request: Request, reply: Json) -> Json:
        if op != "accept" or not isinstance(request, dict):
            return reply
        key = (str(request.get("jobId")), str(request.get("stepToken")))
        code = _error_code(reply)
        if code == "BRIDGE_STEP_CONFLICT" and key in self.answers:
            return json.loads(self.answers[key])
        if code not in self._NOT_ANSWERS:
            self.answers.setdefault(key, json.dumps(reply))  # as text: the caller may edit the reply
        return reply


class ReclaimedCancelConflict(Fault):
    name = "reclaimed_cancel_conflict"
    needs_bridge_options = True
    breaks = "R-CAN-009: cancelling a reclaimed job returns BRIDGE_JOB_NOT_FOUND"
    seed_rule = "000 #工具与 session 方法: 任务被回收后返回 BRIDGE_JOB_NOT_FOUND"
    catch_with = (
        "a Bridge with maxReplayEntries 1: end a job, start another (its record is reclaimed), "
        "cancel the first from the session that made it; expect BRIDGE_JOB_NOT_FOUND"
    )

    def after_in(self, session: dict[str, Any], op: str, request: Request, reply: Json) -> Json:
        issued: set[str] = session.setdefault("jobs", set())
        if _is_task(reply) and isinstance(reply.get("jobId"), str):
            issued.add(reply["jobId"])
        job = request.get("jobId") if op == "cancel" and isinstance(request, dict) else None
        # The session that made the job is still open and the reference no longer knows the
        # job: its record was reclaimed.  Foreign, closed-session and never-issued jobs are
        # left alone: the seeds fix no answer for them (R-IDM-005, D-BRG-003).
        if job in issued and _error_code(reply) == "BRIDGE_JOB_NOT_FOUND":
            reply = _replace_text(reply, "BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT")
        return reply


class IsErrorWrong(Fault):
    name = "is_error_wrong"
    breaks = "R-ENV-003: isError is true exactly when kind is error"
    seed_rule = "000 #MCP 外层返回: isError 在 kind 为 error 时为 true，其他两种回复为 false"
    catch_with = (
        "an MCP-transport case whose step checks envelope isError (for a task and for an error reply)"
    )
    envelope_only = True


_ALL: tuple[type[Fault], ...] = (
    ReasonOrder,
    ReplayNewToken,
    IsErrorWrong,
    BytesAsCharacters,
    PartialResultDropped,
    ExpiresAtByDefault,
    IdsFromZero,
    InputTrimmed,
    NullForAbsent,
    ConflictAsReplay,
    ReclaimedCancelConflict,
)
FAULTS: dict[str, type[Fault]] = {cls.name: cls for cls in _ALL}


# --------------------------------------------------------------------------- the proxy


class FaultySession(CallSession):
    """A reference session whose traffic passes through one fault."""

    def __init__(self, inner: Any, fault: Fault) -> None:
        self._inner = inner
        self._fault = fault
        self._memory: dict[str, Any] = {}  # what a session-aware fault keeps about this session

    def _call(self, op: str, request: Request) -> Json:
        # No copies needed: the reference neither edits a request nor hands out objects it
        # keeps (every reply is decoded afresh from its retained text), and a fault's
        # ``before`` builds a new request rather than editing the caller's.
        reply = getattr(self._inner, op)(self._fault.before(op, request))
        return self._fault.after_in(self._memory, op, request, reply)


    def close(self) -> None:
        self._inner.close()


class FaultyBridge:
    def __init__(self, inner: Any, fault: Fault) -> None:
        self._inner = inner
        self._fault = fault

    def connect(self) -> FaultySession:
        return FaultySession(self._inner.connect(), self._fault)

    def close(self) -> None:
        self._inner.close()


def bridge_factory(name: str) -> BridgeFactory:
    """A ``bridge_factory`` for ``InProcessTarget`` whose Bridges break the rule ``name``."""
    fault_cls = FAULTS[name]
    if fault_cls.envelope_only:  # a Bridge has no envelope: it would break nothing
        raise ValueError(f"{name} is an MCP envelope fault; use faulty_target({name!r})")
    return bridge_factory_for(fault_cls)


def bridge_factory_for(fault_cls: type[Fault]) -> BridgeFactory:
    """Bridges that break what ``fault_cls`` breaks (a fault of the caller's own, too)."""

    def factory(config: Mapping[str, Any]) -> FaultyBridge:
        return FaultyBridge(create_intent_bridge(config), fault_cls(config))

    return factory


# --------------------------------------------------------------------------- an MCP model

TOOLS: dict[str, str] = {"prepare": "intent_prepare", "accept": "intent_accept", "cancel": "intent_cancel"}


class _McpModelSession(CallSession):
    def __init__(self, session: Any, invert_is_error: bool) -> None:
        self._session = session
        self._invert = invert_is_error

    def _call(self, op: str, request: Request) -> Reply:
        from intentref.mcp.server import call_intent_tool, tool_result

        result = tool_result(call_intent_tool(self._session, TOOLS[op], request))
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


def _parses_to(text: str, value: Json) -> bool:
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

    Not a substitute for the real MCP targets (``mcp_targets``): it exists so the envelope
    cases can be run against a deliberately wrong envelope in-process, and so a test can
    show that the same model with a correct envelope passes them.
    """

    transport = "mcp"

    def __init__(self, bridge_factory: BridgeFactory | None = None, invert_is_error: bool = False) -> None:
        self._factory: BridgeFactory = bridge_factory or create_intent_bridge
        self._invert = invert_is_error
        self.name = "MCP model (in-process)" + (", isError inverted" if invert_is_error else "")

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return None  # every Bridge option reaches the reference Bridge

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        # The in-process target builds the Intents (and raises ConfigRejected for a bad
        # configuration); its factory is where the Bridge it built can be taken from.
        built: list[Any] = []

        def capture(config: Mapping[str, Any]) -> Any:
            built.append(self._factory(config))
            return built[-1]

        InProcessTarget(bridge_factory=capture).open(instances, bridge_options)
        return McpModelRun(built[0], self._invert)

    def close(self) -> None:
        pass


REFERENCE, MCP_MODEL = "reference", "mcp-model"


def target_named(name: str) -> InProcessTarget | McpModelTarget:
    """``reference``, ``mcp-model`` (the reference behind the MCP model) or a fault's name."""
    if name == REFERENCE:
        return InProcessTarget()
    if name == MCP_MODEL:
        return McpModelTarget()
    return faulty_target(name)


def run_named(name: str, cases: list[Case]) -> list[CaseOutcome]:
    """The cases against ``target_named(name)``: a picklable job for a process pool."""
    return execute(cases, target_named(name))


def faulty_target(name: str) -> InProcessTarget | McpModelTarget:
    """A target whose implementation breaks the rule ``name`` (see ``FAULTS``)."""
    fault_cls = FAULTS[name]
    if fault_cls.envelope_only:
        return McpModelTarget(invert_is_error=True)
    return target_for(fault_cls)


def target_for(fault_cls: type[Fault]) -> InProcessTarget:
    """The in-process reference with ``fault_cls`` around each of its Bridges."""
    target = InProcessTarget(bridge_factory=bridge_factory_for(fault_cls))
    target.name = f"reference with fault {fault_cls.name}"
    return target


# --------------------------------------------------------------------------- behind the harness


def harness_command(name: str) -> list[str]:
    """A command running the reference's JSON-lines harness with the fault ``name``.

    For ``--harness``: a real subprocess behind the real protocol, so a fault that needs
    Bridge options can be shown to a target other than the in-process one (D-CNF-032).
    """
    if name not in FAULTS or FAULTS[name].envelope_only:
        raise ValueError(f"{name!r} is not a Bridge fault; choose one of {sorted(n for n, c in FAULTS.items() if not c.envelope_only)}")
    return [sys.executable, "-m", "intentref.suite.conformance.faulty", "--harness", name]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = sorted(n for n, c in FAULTS.items() if not c.envelope_only)
    if len(args) != 2 or args[0] != "--harness" or args[1] not in names:
        print(f"usage: python -m intentref.suite.conformance.faulty --harness FAULT  (FAULT: {', '.join(names)})", file=sys.stderr)
        return 2
    from intentref.suite.conformance import harness_reference

    # The reference harness looks its Bridge factory up when a run is configured; this
    # program exists only to put the fault's factory there, in a process of its own.
    harness_reference.create_intent_bridge = bridge_factory(args[1])  # type: ignore[attr-defined,assignment]
    return harness_reference.main()


if __name__ == "__main__":  # pragma: no cover - run as a program
    raise SystemExit(main())
