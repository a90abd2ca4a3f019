"""Driving a conformance Target from properties: examples, shared runs, differential checks.

* ``Example`` -- one Hypothesis example's calls against a target: sessions it opens are
  closed at the end, every reply is checked to be a BridgeReply, every call is counted.
  Runs are shared between examples (one server process for a whole stdio run) unless an
  example needs Bridge options of its own.
* ``DifferentialTarget`` -- wraps any Target; each call goes to the target *and* to the
  in-process reference with the same inputs, and the replies must be equal once tokens
  are replaced by placeholders paired in order of appearance.  A difference raises
  ``Divergence``, whose message carries the example as a ready-to-add conformance case
  (conformance/README.md) with the reference's reply as the exact expectation.
* ``make_target`` -- a Target from a spec string, through the runner's registry.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import unittest
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from intentref.core.jsontext import dumps_compact
from intentref.core.limits import is_well_formed
from intentref.mcp.replies import is_bridge_reply as is_bridge_reply
from intentref.suite.generators.strategies_impl import fault_of
from intentref.suite.properties.projection import (
    NORMATIVE,
    REFERENCE,
    CallContext,
    classify,
    is_repair,
    project,
    seed_cancel,
)
from intentref.suite.targets.base import (
    CallSession,
    InProcessTarget,
    ProtocolRefusal,
    Reply,
    Run,
    Session,
    Target,
    TargetUnsupported,
    load_instances,
)
from intentref.suite.targets.registry import LARGE_CALL_TIMEOUT, parse

TOKEN_MEMBERS: Final = ("jobId", "stepToken")
# Counters a whole property run reports (written out by properties/conftest.py).
STATS: Counter[str] = Counter()


# --------------------------------------------------------------------------- targets from specs


def make_target(spec: str, era: str = "auto", timeout: float = LARGE_CALL_TIMEOUT) -> Target:
    """A Target from its spec, read by the one parser every command uses (``registry.parse``)."""
    return parse(spec, era, timeout).build()


# --------------------------------------------------------------------------- shared runs


_RUNS: dict[tuple[int, str, str], tuple[Target, Run]] = {}


def _key(target: Target, instances: dict[str, Any], options: dict[str, Any]) -> tuple[int, str, str]:
    return id(target), json.dumps(instances, sort_keys=True), json.dumps(options, sort_keys=True)


def shared_run(target: Target, instances: dict[str, Any], options: dict[str, Any]) -> Run:
    key = _key(target, instances, options)
    if key not in _RUNS:
        _RUNS[key] = (target, target.open(instances, options))
    return _RUNS[key][1]


def forget_run(target: Target, instances: dict[str, Any], options: dict[str, Any]) -> None:
    """Drop a shared run that broke (a crashed server), so the next example starts a new one."""
    entry = _RUNS.pop(_key(target, instances, options), None)
    if entry is not None:
        with contextlib.suppress(Exception):
            entry[1].close()


def close_runs() -> None:
    while _RUNS:
        _, (_, run) = _RUNS.popitem()
        with contextlib.suppress(Exception):
            run.close()


atexit.register(close_runs)


# --------------------------------------------------------------------------- examples


class UnsupportedByTarget(unittest.SkipTest):
    """The target cannot make the run an example needs (Bridge options it does not take).

    A SkipTest: pytest reports the property as skipped, and Hypothesis lets it through
    at once instead of shrinking it as a failure.
    """


# --------------------------------------------------------------------------- protocol-layer refusals

_TOOL_OF: Final = {"prepare": "intent_prepare", "accept": "intent_accept", "cancel": "intent_cancel"}


@functools.cache
def _input_validator(op: str) -> Any:
    import jsonschema

    from intentref.mcp.server import MCP_TOOLS

    schema = next(tool["inputSchema"] for tool in MCP_TOOLS if tool["name"] == _TOOL_OF[op])
    return jsonschema.Draft202012Validator(schema)


def refusal_allowed(op: str, request: Any) -> bool:
    """Whether the protocol layer may refuse this call instead of the Bridge (D-CNF-055).

    Seed 000 lets SDK/protocol parameter validation throw; what an SDK validates is the tool's
    published input schema, so exactly the requests that schema refuses may be refused so
    (the Bridge answers each of them INPUT_INVALID: tests/mcp/test_schema_agreement.py).
    """
    return not _input_validator(op).is_valid(request)


def _refused_reply(detail: str) -> Reply:
    """What a property sees of an allowed refusal: the error the Bridge would have given, by code."""
    error = {"code": "INPUT_INVALID", "stage": "bridge", "message": f"refused by the protocol layer: {detail}",
             "issues": []}  # fmt: skip
    return Reply({"kind": "error", "error": error})


def call_allowing_refusal(session: Session, op: str, request: Any) -> Reply:
    """``session.op(request)``, an allowed protocol-layer refusal (D-CNF-055) answered as an
    INPUT_INVALID error and counted, any other refusal raised."""
    try:
        reply: Reply = getattr(session, op)(request)
    except ProtocolRefusal as exc:
        if not refusal_allowed(op, request):
            raise
        STATS["protocol_refusals"] += 1
        return _refused_reply(exc.detail)
    return reply


class ExampleSession:
    """One connection of an example; each call returns the reply object, checked and counted."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.last: Reply | None = None
        self.closed = False

    def _call(self, op: str, request: Any) -> dict[str, Any]:
        STATS[f"calls.{op}"] += 1
        try:
            reply: Reply = call_allowing_refusal(self._session, op, request)
        except Divergence:
            raise
        except TargetUnsupported as exc:  # a value the transport cannot carry, say
            raise UnsupportedByTarget(str(exc)) from None
        except Exception:
            STATS["uncaught_exceptions"] += 1
            raise
        if not is_bridge_reply(reply.value):
            STATS["non_replies"] += 1
            raise AssertionError(f"{op} returned something that is not a BridgeReply: {reply.value!r:.300}")
        self.last = reply
        value: dict[str, Any] = reply.value
        return value

    def prepare(self, request: Any) -> dict[str, Any]:
        return self._call("prepare", request)

    def accept(self, request: Any) -> dict[str, Any]:
        return self._call("accept", request)

    def cancel(self, request: Any) -> dict[str, Any]:
        return self._call("cancel", request)

    @property
    def last_text(self) -> str | None:
        return None if self.last is None else self.last.text

    def close(self) -> None:
        """Really close the connection (its jobs go with it)."""
        if not self.closed:
            self.closed = True
            self._session.close()

    def release(self) -> None:
        """End this example's use of the session; a target may keep the connection for the next one."""
        if not self.closed:
            self.closed = True
            self._session.release()


class Example:
    """``with Example(target) as ex: s = ex.session(); s.prepare(...)``.

    ``instances`` default to the property catalog (instances.json plus generated schemas);
    ``options`` are Bridge options, and make the example use a run of its own (``fresh``),
    since capacity counts must start from zero.
    """

    def __init__(self, target: Target, instances: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
                 requirements: tuple[str, ...] | list[str] = (), fresh: bool | None = None) -> None:  # fmt: skip
        self.target = target
        self.instances = catalog_instances(target) if instances is None else instances
        self.options = dict(options or {})
        self.fresh = bool(self.options) if fresh is None else fresh
        self.requirements = tuple(requirements)
        self.sessions: list[ExampleSession] = []
        self._run: Run | None = None

    def __enter__(self) -> Example:
        reason = self.target.unsupported(self.options)
        if reason is not None:
            raise UnsupportedByTarget(reason)
        try:
            self._run = self.target.open(self.instances, self.options) if self.fresh else shared_run(
                self.target, self.instances, self.options)  # fmt: skip
        except TargetUnsupported as exc:
            raise UnsupportedByTarget(str(exc)) from None
        if not self.fresh:
            self._run.new_case()  # connections an earlier example handed back may be taken again
        self._run.begin_example(self.requirements)
        return self

    def session(self) -> ExampleSession:
        assert self._run is not None, "use Example as a context manager"
        if self.sessions and not separate_sessions(self.target):
            raise UnsupportedByTarget("needs a second session; this target's connections share one (D-MCP-003)")
        session = ExampleSession(self._run.connect())
        self.sessions.append(session)
        return session

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        try:
            for session in self.sessions:
                if exc is None:
                    session.release()
                else:  # the example's own failure is the one to report
                    with contextlib.suppress(Exception):
                        session.release()
        finally:
            if self.fresh and self._run is not None:
                with contextlib.suppress(Exception):
                    self._run.close()
            elif exc is not None and not isinstance(exc, AssertionError):
                # A transport failure leaves the shared run in an unknown state.
                forget_run(self.target, self.instances, self.options)


# --------------------------------------------------------------------------- the instance catalog

CATALOG_SEED: Final = 20_240_601
CATALOG_SIZE: Final = 12


def generated_instances(seed: int = CATALOG_SEED, count: int = CATALOG_SIZE) -> dict[str, Any]:
    """``gen-00`` .. : generated schemas (keys with ~, /, ~1 and ""), fixed by the seed.

    They join the instances of every shared run, so a stdio target serves all of them from
    one process while Hypothesis varies requests and candidates over them.
    """
    from intentref.suite.generators.strategies_impl import RandomDraw, schema

    draw = RandomDraw(seed)
    out: dict[str, Any] = {
        # The first one holds every escaping edge case at the top level and nested.
        "gen-00": {"language": "en", "repairAttempts": 0, "schema": {
            "type": "object",
            "properties": {
                "~": {"type": "string"}, "/": {"type": "string"}, "~1": {"type": "string"}, "": {"type": "string"},
                "~0/": {"type": "object", "properties": {"a/b": {"type": "string"}, "~": {"type": "integer"},
                                                          "": {"type": "array", "items": {"type": "string"}}},
                        "required": ["a/b"], "additionalProperties": False},
            },
            "required": ["~1"],
            "additionalProperties": False,
        }},
    }  # fmt: skip
    for index in range(1, count):
        out[f"gen-{index:02d}"] = {"language": draw.choice(["en", "zh-CN"]), "repairAttempts": draw.integer(0, 2),
                                   "schema": schema(draw)}  # fmt: skip
    return out


_CATALOG: dict[str, Any] | None = None


def catalog_instances(target: Any = None) -> dict[str, Any]:
    """The instances every shared run serves: instances.json plus ``generated_instances``.

    A target whose server is configured already (HTTP) serves instances.json alone.
    """
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = {**load_instances(), **generated_instances()}
    if target is not None and not takes_instances(target):
        return load_instances()
    return _CATALOG


def takes_instances(target: Target) -> bool:
    """False for a server configured before the run (HTTP): it serves instances.json only."""
    return not target.configured_elsewhere


def separate_sessions(target: Target) -> bool:
    """False where every connection shares one Bridge session (HTTP, 2026-07-28 era: D-MCP-003)."""
    return target.separate_sessions


def available(target: Any, names: list[str]) -> list[str]:
    """The ``names`` the target serves (generated ones only where it takes instances)."""
    served = catalog_instances(target)
    return [name for name in names if name in served]


# --------------------------------------------------------------------------- token placeholders


class TokenMap:
    """Pairs one side's tokens with the other's in order of appearance, under placeholders.

    A target's tokens are scoped by the connection that issued them: over stdio every
    connection is its own Bridge (D-CNF-001), and two Bridges may well issue equal tokens
    (``job-1`` in each; the token format is a decision, D-BRG-006).  A token named on
    another connection (a foreign job) is looked up in the connections that issued it,
    latest first.  The reference's tokens come from one Bridge and need no scope.
    """

    def __init__(self) -> None:
        self._placeholder: dict[tuple[str, Any, str], str] = {}  # (side, scope, token) -> placeholder
        self._scopes: dict[tuple[str, str], list[Any]] = {}  # (side, token) -> scopes that issued it
        self._token_of: dict[tuple[str, str], str] = {}  # (side, placeholder) -> token
        self._count: Counter[str] = Counter()

    @staticmethod
    def _scope(side: str, scope: Any) -> Any:
        return scope if side == "target" else None

    def learn(self, member: str, target_token: Any, reference_token: Any, scope: Any = None) -> None:
        if not isinstance(target_token, str) or not isinstance(reference_token, str):
            return
        if ("target", scope, target_token) in self._placeholder or ("reference", None, reference_token) in self._placeholder:
            return  # an old token on either side: the pairing is already made (or broken)
        self._count[member] += 1
        name = f"<{member}:{self._count[member]}>"
        for side, token in (("target", target_token), ("reference", reference_token)):
            where = self._scope(side, scope)
            self._placeholder[(side, where, token)] = name
            self._scopes.setdefault((side, token), []).append(where)
            self._token_of[(side, name)] = token

    def learn_replies(self, target_reply: Any, reference_reply: Any, scope: Any = None) -> None:
        if isinstance(target_reply, dict) and isinstance(reference_reply, dict):
            for member in TOKEN_MEMBERS:
                self.learn(member, target_reply.get(member), reference_reply.get(member), scope)

    def placeholder(self, side: str, token: Any, scope: Any = None) -> str | None:
        if not isinstance(token, str):
            return None
        own = self._placeholder.get((side, self._scope(side, scope), token))
        if own is not None:
            return own
        issued = self._scopes.get((side, token))  # issued on another connection: a foreign token
        return self._placeholder[(side, issued[-1], token)] if issued else None

    def translate(self, args: Any, source: str, dest: str, scope: Any = None) -> Any:
        """``args`` with the token members of ``source`` replaced by ``dest``'s paired tokens."""
        if not isinstance(args, dict):
            return args
        out = dict(args)
        for member in TOKEN_MEMBERS:
            name = self.placeholder(source, out.get(member), scope)
            if name is not None:
                out[member] = self._token_of[(dest, name)]
        return out

    def normalize(self, reply: Any, side: str, scope: Any = None) -> Any:
        if not isinstance(reply, dict):
            return reply
        out = dict(reply)
        for member in TOKEN_MEMBERS:
            if isinstance(out.get(member), str):
                out[member] = self.placeholder(side, out[member], scope) or "<unpaired>"
        return out


def well_formed_json(value: Any) -> Any:
    """``value`` with lone surrogates as U+FFFD, keys included: what any UTF-8 transport delivers (D-MCP-008)."""
    from intentref.core.limits import well_formed

    if isinstance(value, str):
        return value if is_well_formed(value) else well_formed(value)
    if isinstance(value, dict):
        return {well_formed_json(k): well_formed_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [well_formed_json(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """Type-strict JSON equality: true is not 1, 1 is not 1.0 (as a JavaScript host writes them)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=True)


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Each place ``actual`` differs from ``expected``, with its JSON Pointer (type-strict, like JSON)."""
    from intentref.core.jsonpointer import escape_token

    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in expected:
            sub = f"{path}/{escape_token(key)}"
            out += differences(expected[key], actual[key], sub) if key in actual else [f"{sub}: missing"]
        out += [f"{path}/{escape_token(k)}: unexpected member {_short(actual[k])}" for k in actual if k not in expected]
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [m for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for m in differences(e, a, f"{path}/{i}")]
    if type(expected) is type(actual) and expected == actual:  # true is not 1, 1 is not 1.0
        return []
    return [f"{path or '/'}: reference {_short(expected)}, target {_short(actual)}"]


def _short(value: Any) -> str:
    text = canonical(value)
    return text if len(text) <= 200 else text[:200] + "…"


# --------------------------------------------------------------------------- the differential target


@dataclass
class Call:
    session: str
    op: str  # prepare / accept / cancel / close
    args: Any = None  # as the reference received it
    reply: Any = None  # the reference's reply


class Divergence(AssertionError):
    """The target answered differently from the reference; the message holds a conformance case.

    Only the normative projection is compared (``intentref.suite.properties.projection``, D-CNF-020);
    ``level`` says whether the difference breaks a seed rule (``normative``) or rests on
    reference ``decisions`` (D-CNF-021).  The case is built when first asked for: a long
    campaign may meet thousands of these.
    """

    def __init__(self, op: str, where: list[str], run: DifferentialRun, level: str = NORMATIVE,
                 decisions: tuple[str, ...] = (), same_as: int | None = None) -> None:  # fmt: skip
        super().__init__(op)
        self.op, self.where, self.level, self.decisions = op, where, level, decisions
        self._calls, self._run, self._same_as = list(run.calls), run, same_as
        self._case: dict[str, Any] | None = None

    @property
    def case(self) -> dict[str, Any]:
        if self._case is None:
            run = self._run
            self._case = case_from_calls(self._calls, run.instances, run.options, run.requirements, level=self.level,
                                         decisions=self.decisions, same_as=self._same_as, projected=True)  # fmt: skip
        return self._case

    def __str__(self) -> str:
        seed = os.environ.get("INTENTREF_HYPOTHESIS_SEED")
        what = ("breaks a seed rule" if self.level == NORMATIVE
                else f"decided differently ({', '.join(self.decisions)})")  # fmt: skip
        lines = [f"the target's {self.op} reply differs from the reference's in the normative projection: "
                 f"{self.level} divergence, {what}:"]  # fmt: skip
        lines += [f"  {w}" for w in self.where[:20]]
        lines.append(f"hypothesis seed: {seed}" if seed else "hypothesis seed: not pinned (run with --hypothesis-seed N)")
        lines.append("conformance case (give it an id of its file's area):")
        lines.append(json.dumps(self.case, ensure_ascii=True, indent=1))
        return "\n".join(lines)


class DifferentialSession(CallSession):
    def __init__(self, run: DifferentialRun, name: str, target: Session, reference: Session, scope: int = 0) -> None:
        self._run, self.name, self._target, self._reference = run, name, target, reference
        self.scope = scope  # this connection's own token space (TokenMap)

    def _call(self, op: str, request: Any) -> Reply:
        run = self._run
        tokens = run.tokens
        scope = self.scope
        reference_args = tokens.translate(request, "target", "reference", scope)
        try:
            theirs: Reply = getattr(self._target, op)(request)
        except ProtocolRefusal:
            if not refusal_allowed(op, request):
                raise
            # D-CNF-055: refused as malformed, as the reference refuses it; the reference still
            # takes the call, so both sides stay in step, and its error stands in for the reply.
            stand_in: Reply = getattr(self._reference, op)(reference_args)
            run.calls.append(Call(self.name, op, reference_args, stand_in.value))
            STATS["protocol_refusals"] += 1
            return stand_in
        ours: Reply = getattr(self._reference, op)(reference_args)
        tokens.learn_replies(theirs.value, ours.value, scope)
        run.calls.append(Call(self.name, op, reference_args, ours.value))
        context = run.context_of(self.name, op, reference_args, ours.value)
        where = differences(project(tokens.normalize(ours.value, "reference")),
                            project(tokens.normalize(theirs.value, "target", scope)))  # fmt: skip
        if where:
            level, decisions = classify(context, ours.value, theirs.value)
            STATS["divergences"] += 1
            STATS[f"divergences.{level}"] += 1
            raise Divergence(op, where, run, level, decisions)
        first = run.first_answer(self.name, op, reference_args, theirs)
        if first is not None:  # a replay: the target's own first answer again, to the byte (D-BRG-007)
            index, earlier = first
            drift = _replay_drift(earlier, theirs)
            if drift:
                STATS["divergences"] += 1
                STATS[f"divergences.{REFERENCE}"] += 1
                raise Divergence(op, drift, run, REFERENCE, ("D-BRG-007",), same_as=index)
        return theirs

    def close(self) -> None:
        self._run.calls.append(Call(self.name, "close"))
        try:
            self._target.close()
        finally:
            self._reference.close()

    def release(self) -> None:
        try:
            self._target.release()
        finally:
            self._reference.close()


class DifferentialRun(Run):
    def __init__(self, target: Run, reference: Run, instances: dict[str, Any], options: dict[str, Any]) -> None:
        self._target, self._reference = target, reference
        self.instances, self.options = instances, options
        self.tokens = TokenMap()
        self.calls: list[Call] = []
        self.requirements: tuple[str, ...] = ()
        self._sessions = 0
        self._connections = 0
        self._instance_of: dict[str, str] = {}  # the reference's jobId -> its instance's name
        # (session, jobId, stepToken, text) of each accept -> (its step in ``calls``, the target's reply)
        self._answered: dict[tuple[str, str, str, str], tuple[int, Reply]] = {}

    def context_of(self, session: str, op: str, args: Any, reply: Any) -> CallContext:
        """What decides the level of a difference in this call (``_projection.classify``)."""
        if not isinstance(args, dict):
            return CallContext(op)
        if op == "prepare" and isinstance(reply, dict) and isinstance(reply.get("jobId"), str):
            self._instance_of[reply["jobId"]] = str(args.get("instance"))
        config = self.instances.get(self._instance_of.get(str(args.get("jobId")), ""), {})
        text = args.get("candidateText")
        return CallContext(op, seed_cancel=op == "cancel" and seed_cancel(args, reply),
                           replay=_accept_key(session, op, args) in self._answered,
                           fault=fault_of(text) if isinstance(text, str) else None,
                           repair_attempts=config.get("repairAttempts") if isinstance(config, dict) else None)  # fmt: skip

    def first_answer(self, session: str, op: str, args: Any, reply: Reply) -> tuple[int, Reply] | None:
        """The first answer to this accept when it is a replay; otherwise remember this one."""
        key = _accept_key(session, op, args)
        if key is None:
            return None
        if key in self._answered:
            return self._answered[key]
        if isinstance(reply.value, dict) and not _is_rejection(reply.value):
            # A copy: the caller owns the reply it was handed.
            self._answered[key] = (len(self.calls) - 1, Reply(json.loads(canonical(reply.value)), reply.text))
        return None

    def begin_example(self, requirements: tuple[str, ...] = ()) -> None:
        """Start a new log: a divergence reports only the calls of its own example."""
        self.calls = []
        self.requirements = requirements
        self._sessions = 0
        self._answered.clear()  # step numbers refer to ``calls``, which start again

    def connect(self) -> Session:
        self._sessions += 1
        name = "main" if self._sessions == 1 else f"s{self._sessions}"
        self._connections += 1  # never reset: a token scope per connection of the run's whole life
        return DifferentialSession(self, name, self._target.connect(), self._reference.connect(), self._connections)

    def new_case(self) -> None:
        self._target.new_case()
        self._reference.new_case()

    def left_behind(self) -> list[str]:
        return self._target.left_behind()

    def case(self) -> dict[str, Any]:
        """This example's calls as a normative case expecting the reference's projection (D-CNF-020)."""
        return case_from_calls(self.calls, self.instances, self.options, self.requirements, level=NORMATIVE,
                               decisions=(), projected=True)  # fmt: skip

    def close(self) -> None:
        try:
            self._target.close()
        finally:
            self._reference.close()


# Rejections are not used steps (D-BRG-009, D-BRG-008): their text may be sent again and judged.
_NOT_A_STEP: Final = ("LIMIT_EXCEEDED", "BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND", "INPUT_INVALID")


def _accept_key(session: str, op: str, args: Any) -> tuple[str, str, str, str] | None:
    if op != "accept" or not isinstance(args, dict):
        return None
    values = (args.get("jobId"), args.get("stepToken"), args.get("candidateText"))
    if not all(isinstance(v, str) for v in values):
        return None
    return (session, str(values[0]), str(values[1]), str(values[2]))


def _is_rejection(reply: dict[str, Any]) -> bool:
    error = reply.get("error") if reply.get("kind") == "error" else None
    return isinstance(error, dict) and error.get("code") in _NOT_A_STEP


def _replay_drift(first: Reply, again: Reply) -> list[str]:
    """How a replay differs from the first answer: value, then the text where both carry one."""
    where = [f"replay {w}" for w in differences(first.value, again.value)]
    if not where and first.text is not None and again.text is not None and first.text != again.text:
        where.append(f"replay: the same reply in other bytes: {_short(first.text)} then {_short(again.text)}")
    return where


class DifferentialTarget(Target):
    """``target`` checked call by call against the in-process reference."""

    def __init__(self, target: Target, reference: Target | None = None) -> None:
        self.target = target
        self.reference = reference or reference_for(target)
        self.name = f"{target.name} (differential)"
        self.transport = target.transport
        self.configured_elsewhere = target.configured_elsewhere

    @property
    def separate_sessions(self) -> bool:
        return self.target.separate_sessions

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return self.target.unsupported(bridge_options)

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        theirs = self.target.open(instances, bridge_options)
        try:
            ours = self.reference.open(instances, bridge_options)
        except Exception:
            theirs.close()
            raise
        return DifferentialRun(theirs, ours, instances, bridge_options)

    def close(self) -> None:
        self.target.close()


def reference_for(target: Target) -> Target:
    """The reference as ``target``'s transport presents it.

    An MCP target is compared with the reference Bridge behind the reference MCP tool layer
    (arguments checked against the inputSchema, D-MCP-006; replies made well-formed,
    D-MCP-008), everything else with the Bridge itself.
    """
    if target.transport == "mcp":
        from intentref.suite.targets.mcp_model import McpModelTarget

        return McpModelTarget()
    return InProcessTarget()


# --------------------------------------------------------------------------- conformance cases

# Strings longer than this, or holding lone surrogates, are written with generators.
_LONG: Final = 512
_RUN: Final = re.compile(r"(.)\1{63,}", re.DOTALL)


def text_spec(text: str) -> Any:
    """A fixture generator for ``text``: literal when short and well-formed, else $concat/$repeat/$utf16."""
    if len(text) <= _LONG and is_well_formed(text):
        return text
    parts: list[Any] = []
    last = 0
    for match in _RUN.finditer(text):
        parts += _plain_parts(text[last : match.start()])
        parts.append({"$repeat": match.group(1), "times": len(match.group(0))} if is_well_formed(match.group(1)) else
                     {"$utf16": [ord(match.group(1))] * len(match.group(0))})  # fmt: skip
        last = match.end()
    parts += _plain_parts(text[last:])
    return parts[0] if len(parts) == 1 else {"$concat": parts}


def _plain_parts(text: str) -> list[Any]:
    out: list[Any] = []
    buffer = ""
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            if buffer:
                out.append(buffer)
                buffer = ""
            out.append({"$utf16": [ord(char)]})
        else:
            buffer += char
    if buffer:
        out.append(buffer)
    return out


def candidate_spec(text: str) -> Any:
    """``{"$json": value}`` when the text is exactly JSON.stringify(value), else the text."""
    from intentref.suite.cases.values import stringify

    with contextlib.suppress(ValueError, RecursionError):
        decoded = json.loads(text)
        if stringify(decoded) == text and len(text) <= 64 * 1024:
            return {"$json": decoded}
    return text_spec(text)


def case_from_calls(calls: list[Call], instances: dict[str, Any], options: dict[str, Any],
                    requirements: tuple[str, ...] = (), level: str = REFERENCE, decisions: tuple[str, ...] = ("D-ERR-006",),
                    same_as: int | None = None, projected: bool = False) -> dict[str, Any]:  # fmt: skip
    """The calls as a conformance case of ``level``: $reply for tokens, the reference's replies as expectations.

    ``projected`` (what a divergence writes): every expectation is the normative projection
    of the reference's reply (D-CNF-020): a task's stage and repair flag, a result exactly,
    an error's code and stage.  Otherwise (fuzz session cases) the reference's replies are
    expected exactly, a reference case of the wording decisions.  ``same_as`` (a replay
    that drifted) makes the last step expect ``$sameAs`` that earlier step.
    """
    expectation = _expectation if projected else _exact_expectation
    first_seen: dict[str, tuple[int, str]] = {}
    steps: list[dict[str, Any]] = []
    used: list[str] = []
    judged = False  # did a step show a repair or a refused candidate (what repairAttempts decides)?
    for index, call in enumerate(calls):
        step: dict[str, Any] = {"op": call.op}
        if call.session != "main":
            step["session"] = call.session
        if call.op != "close":
            step["args"] = _args_spec(call.args, first_seen)
            last = index == len(calls) - 1
            step["expect"] = {"$sameAs": same_as} if last and same_as is not None else expectation(call.reply, first_seen)
            judged = judged or _judged(call.reply)
            name = call.args.get("instance") if isinstance(call.args, dict) else None
            if isinstance(name, str) and name in instances and name not in used:
                used.append(name)
        steps.append(step)
        if isinstance(call.reply, dict):  # registered after the expectation: there they are fresh
            for member in TOKEN_MEMBERS:
                if isinstance(call.reply.get(member), str):
                    first_seen.setdefault(call.reply[member], (index, "/" + member))
    normative = level == NORMATIVE
    case: dict[str, Any] = {
        "id": "NEW-0001",
        "description": ("Found by intentref properties: the target's reply broke a seed rule at the last step."
                        if normative else
                        "Found by intentref properties: the target decided differently from the reference "
                        "at the last step."),
        "requirements": list(requirements) or ["R-BRG-006"],
        "level": level,
        "instances": used,
        "steps": steps,
    }  # fmt: skip
    if not normative:
        case["decisions"] = list(decisions)
    if options:
        case["bridge"] = dict(options)
    standard = _standard_instances()
    setup = {name: _seed_configuration(instances[name], normative and not judged) for name in used}
    if any(name not in standard or standard[name] != setup[name] for name in used):
        case["setup"] = {"instances": setup}
    return case


def _judged(reply: Any) -> bool:
    if not isinstance(reply, dict):
        return False
    if reply.get("kind") == "task":
        return is_repair(reply)
    error = reply.get("error") if reply.get("kind") == "error" else None
    return isinstance(error, dict) and error.get("code") in ("MODEL_OUTPUT_INVALID", "DATA_EXTRACTION_FAILED")


def _seed_configuration(config: Any, drop_repairs: bool) -> Any:
    """``config``, without ``repairAttempts`` when no step depends on it: a normative case must
    not need a member only the reference decided to take (D-CFG-001)."""
    if drop_repairs and isinstance(config, dict) and "repairAttempts" in config:
        return {k: v for k, v in config.items() if k != "repairAttempts"}
    return config


@functools.cache
def _standard_instances() -> dict[str, Any]:
    return load_instances()


def _args_spec(args: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    if not isinstance(args, dict):
        return {"$literal": args}
    out: dict[str, Any] = {}
    for key, val in args.items():
        if key in TOKEN_MEMBERS and isinstance(val, str) and val in first_seen:
            step, pointer = first_seen[val]
            out[key] = {"$reply": step, "pointer": pointer}
        elif key in TOKEN_MEMBERS and isinstance(val, str) and _near_token(val, first_seen):
            # A real token with something appended (a near miss): keep the reference, not its value.
            known = _near_token(val, first_seen)
            step, pointer = first_seen[known]
            out[key] = {"$concat": [{"$reply": step, "pointer": pointer}, _value_spec(val[len(known):])]}
        elif key == "candidateText" and isinstance(val, str):
            out[key] = candidate_spec(val)
        else:
            out[key] = _value_spec(val)
    return out


def _near_token(value: str, first_seen: dict[str, tuple[int, str]]) -> str:
    return next((t for t in first_seen if t and value.startswith(t) and value != t), "")


def _value_spec(value: Any) -> Any:
    if isinstance(value, str):
        return text_spec(value)
    if isinstance(value, list):
        return [_value_spec(v) for v in value]
    if isinstance(value, dict):
        return {k: _value_spec(v) for k, v in value.items()}
    return value


def _exact_expectation(reply: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    """The reference's ``reply`` exactly, its tokens as ``$reply`` references or ``$fresh``."""
    if not isinstance(reply, dict):
        return reply
    out = dict(reply)
    for member in TOKEN_MEMBERS:
        token = out.get(member)
        if isinstance(token, str):
            if token in first_seen:
                step, pointer = first_seen[token]
                out[member] = {"$reply": step, "pointer": pointer}
            else:
                out[member] = {"$fresh": True}
    return out


def _expectation(reply: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    """A matcher for the normative projection of the reference's ``reply`` (D-CNF-020)."""
    if not isinstance(reply, dict):
        return reply
    kind = reply.get("kind")
    if kind == "task":
        task: dict[str, Any] = {"stage": reply.get("stage")}
        for member in TOKEN_MEMBERS:
            token = reply.get(member)
            if isinstance(token, str):
                step, pointer = first_seen.get(token, (-1, ""))
                task[member] = {"$reply": step, "pointer": pointer} if step >= 0 else {"$fresh": True}
        repair = {"$type": ["object", "array", "string", "number", "boolean"]} if is_repair(reply) else {"$absent": True}
        task["payload"] = {"$jsonText": {"$subset": {"repair": repair}}}
        task["expiresAt"] = {"$type": "string"} if "expiresAt" in reply else {"$absent": True}  # seed 000: none by default
        return {"$task": task}
    if kind == "error" and isinstance(reply.get("error"), dict):
        return {"$error": {"code": reply["error"].get("code"), "stage": reply["error"].get("stage")}}
    return {"kind": kind, "result": reply.get("result")} if kind == "result" else reply


@dataclass
class Tally:
    """What a long run reports at the end."""

    calls: Counter[str] = field(default_factory=Counter)
    uncaught_exceptions: int = 0
    non_replies: int = 0
    lost_active_jobs: int = 0
    replay_drifts: int = 0
    divergences: int = 0
    mispredictions: int = 0
    lone_surrogates_lost: int = 0  # calls with a lone surrogate the transport did not carry (reference level)
    notes: list[str] = field(default_factory=list)
    sent: Counter[str] = field(default_factory=Counter)  # what was thrown at the target, by fault or defect

    def edge_cases(self) -> dict[str, int]:
        """The issue's named edge cases, counted from ``sent``."""
        groups: dict[str, Callable[[str], bool]] = {
            "malformed JSON": lambda n: n.startswith("json.") and n != "json.deep_nesting.100k",
            "100k-deep nesting": lambda n: n == "json.deep_nesting.100k",
            "lone surrogates": lambda n: "surrogate" in n,
            "10 MB texts": lambda n: n.endswith("10mb"),
            "wrong types": lambda n: any(w in n for w in ("not_string", "not_an_object", "wrong_type", "not_list",
                                                          "wrong_member_type", "outcome_unknown")),
        }  # fmt: skip
        return {label: sum(c for n, c in self.sent.items() if test(n)) for label, test in groups.items()}

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    @property
    def clean(self) -> bool:
        return not (self.uncaught_exceptions or self.non_replies or self.lost_active_jobs or self.replay_drifts
                    or self.divergences or self.mispredictions or self.lone_surrogates_lost)  # fmt: skip

    def room(self) -> bool:
        return len(self.notes) < 50

    def note(self, text: str) -> None:
        if self.room():
            self.notes.append(text)


def compact(value: Any) -> str:
    return dumps_compact(value)


# --------------------------------------------------------------------------- small reading helpers


def step_of(task: dict[str, Any], candidate_text: str) -> dict[str, Any]:
    """The accept request answering ``task`` with ``candidate_text``."""
    return {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": candidate_text}


def issue_paths(reply: dict[str, Any]) -> list[Any]:
    """The issue paths a reply reports: an error's issues, or a repair task's."""
    if reply.get("kind") == "error":
        return [issue.get("path") for issue in reply["error"].get("issues", [])]
    if reply.get("kind") == "task":
        repair = json.loads(reply["payload"]).get("repair")
        if isinstance(repair, dict):
            return [issue.get("path") for issue in repair.get("issues", [])]
    return []


def error_code(reply: dict[str, Any]) -> str | None:
    return str(reply["error"]["code"]) if reply.get("kind") == "error" else None
