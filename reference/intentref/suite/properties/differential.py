"""Checking a target call by call against the in-process reference.

``DifferentialTarget`` wraps any Target; each call goes to the target *and* to the
in-process reference with the same inputs, and the replies' normative projections must be
equal once tokens are replaced by placeholders paired in order of appearance (``TokenMap``).
A difference raises ``Divergence``, whose message carries the example as a ready-to-add
conformance case (conformance/README.md) with the reference's reply as the expectation.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

from intentref.core.jsonpointer import escape_token
from intentref.core.wire import NOT_A_STEP_CODES
from intentref.suite.alterations.alteration import error_of
from intentref.suite.cases.script import refusal_allowed
from intentref.suite.cases.values import well_formed_json as well_formed_json
from intentref.suite.generators.faults import fault_of
from intentref.suite.properties.case_writer import TOKEN_MEMBERS, Call, case_from_calls
from intentref.suite.properties.projection import (
    NORMATIVE,
    REFERENCE,
    CallContext,
    classify,
    project,
    seed_cancel,
)
from intentref.suite.properties.targets import STATS
from intentref.suite.targets.base import (
    CallSession,
    InProcessTarget,
    ProtocolRefusal,
    Reply,
    Run,
    Session,
    Target,
)


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


def canonical(value: Any) -> str:
    """Type-strict JSON equality: true is not 1, 1 is not 1.0 (as a JavaScript host writes them)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=True)


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Each place ``actual`` differs from ``expected``, with its JSON Pointer (type-strict, like JSON)."""
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
            # D-CNF-055: the reference's reply to the same call is what is expected; the reference
            # takes the call either way, so both sides stay in step, and its error stands in for the reply.
            stand_in: Reply = getattr(self._reference, op)(reference_args)
            run.calls.append(Call(self.name, op, reference_args, stand_in.value))
            if not refusal_allowed(stand_in.value):
                raise
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
        """What decides the level of a difference in this call (``projection.classify``)."""
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


def _accept_key(session: str, op: str, args: Any) -> tuple[str, str, str, str] | None:
    if op != "accept" or not isinstance(args, dict):
        return None
    values = (args.get("jobId"), args.get("stepToken"), args.get("candidateText"))
    if not all(isinstance(v, str) for v in values):
        return None
    return (session, str(values[0]), str(values[1]), str(values[2]))


def _is_rejection(reply: dict[str, Any]) -> bool:
    """A refusal that is not a used step (D-BRG-009, D-BRG-008): its text may be sent again and judged."""
    error = error_of(reply)
    return error is not None and error.get("code") in NOT_A_STEP_CODES


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
