"""Driving a conformance Target from properties: examples, shared runs, protocol-layer refusals.

An ``Example`` is one Hypothesis example's calls against a target: the sessions it opens are
closed at the end, every reply is checked to be a BridgeReply, every call is counted, and runs
are shared between examples (one server process for a whole stdio run) unless an example needs
Bridge options of its own.  ``call_allowing_refusal`` lets a refusal by the target's protocol
layer stand where D-CNF-055 allows it; ``Tally`` is what a long campaign reports.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import unittest
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from intentref.core.wire import TOOL_OF_OP
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.cases.script import MALFORMED_CALL_CODE, refusal_allowed
from intentref.suite.generators.catalog import catalog_instances, separate_sessions
from intentref.suite.targets.base import (
    ProtocolRefusal,
    Reply,
    Run,
    Session,
    Target,
    TargetUnsupported,
)
from intentref.suite.targets.options import spec_in_child
from intentref.suite.targets.registry import LARGE_CALL_TIMEOUT

# Counters a whole property run reports (written out by properties/conftest.py).
STATS: Counter[str] = Counter()


# --------------------------------------------------------------------------- targets from specs


def make_target(spec: str, era: str = "auto", timeout: float = LARGE_CALL_TIMEOUT) -> Target:
    """A Target from its spec, read by the one parser every command uses (``registry.parse``)."""
    return spec_in_child(spec, era, timeout).build()


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


@functools.cache
def _input_validator(op: str) -> Any:
    import jsonschema

    from intentref.mcp.server import MCP_TOOLS

    schema = next(tool["inputSchema"] for tool in MCP_TOOLS if tool["name"] == TOOL_OF_OP[op])
    return jsonschema.Draft202012Validator(schema)


def published_expectation(op: str, request: Any) -> Any:
    """What can be expected of ``request`` with no reference at hand: an INPUT_INVALID error
    where the tool's published input schema refuses it (the Bridge answers every such request
    so, D-MCP-006: tests/mcp/test_schema_agreement.py), else nothing (None)."""
    return None if _input_validator(op).is_valid(request) else {"$error": {"code": MALFORMED_CALL_CODE}}


def _refused_reply(detail: str) -> Reply:
    """What a property sees of an allowed refusal: the error the Bridge would have given, by code."""
    error = {"code": MALFORMED_CALL_CODE, "stage": "bridge", "message": f"refused by the protocol layer: {detail}",
             "issues": []}  # fmt: skip
    return Reply({"kind": "error", "error": error})


def call_allowing_refusal(session: Session, op: str, request: Any) -> Reply:
    """``session.op(request)``, an allowed protocol-layer refusal (D-CNF-055) answered as an
    INPUT_INVALID error and counted, any other refusal raised."""
    try:
        reply: Reply = getattr(session, op)(request)
    except ProtocolRefusal as exc:
        if not refusal_allowed(published_expectation(op, request)):
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
        except AssertionError:  # a divergence: the property's failure, not the target breaking
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
