"""What the runner drives: a target opens runs, a run opens sessions, a session makes calls.

A *run* is one configuration (the instances of ``instances.json`` plus Bridge options);
a target that cannot take an option says so through ``unsupported`` and the case is
reported as unsupported, never as failed.  Adapters for MCP over stdio and HTTP and for
the JSON-lines harness live beside this module; the in-process target is here because it
is the floor every other target is compared with.
"""

from __future__ import annotations

import abc
import json
import os
import shutil
from collections.abc import Callable
from typing import Any, Final

from intentref._paths import data_dir

# D-CNF-030: the capability names a target may declare (``capabilities``); what they mean
# and the probe for a target that declares nothing are in ``capabilities``.
REPAIR_ATTEMPTS: Final = "instance.repairAttempts"
# What the bundled reference takes, whatever its transport.
REFERENCE_CAPABILITIES: Final = frozenset({REPAIR_ATTEMPTS})
# Seconds a target waits for one answer unless told otherwise (--timeout).
DEFAULT_TIMEOUT: Final = 10.0
# Bytes of a server's (or harness's) stderr kept for the messages that quote its last lines.
STDERR_TAIL: Final = 64 * 1024


# Runs of their own a worker has open at once beside its long-lived run: most of such a
# case's time is its server starting or a TTL running out, not CPU (D-CNF-011). Here, below
# the runner, because the targets size their lanes and prefetched servers by it.
OWN_RUNS_AT_ONCE: Final = 4

class TargetUnsupported(Exception):
    """The target cannot do what the case needs (an option, a value its transport cannot carry).

    Raised by ``open`` or by a call; the case is reported ``unsupported`` with ``reason``,
    never ``failed``: the implementation was not asked the question.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TargetCannotStart(Exception):
    """The target cannot start at all, so no case can be blamed and the run stops (D-CNF-013).

    Raised when its command cannot be run (not found, not executable), when nothing answers
    at its address, or when its server exits before answering while started with the
    suite's own instances.  The message is one line, shown as it is.
    """


class EraRefused(TargetCannotStart):
    """The server answers, but not in the pinned era (D-CNF-052); ``--era both`` judges the other (D-CNF-071).

    ``answered`` is what the server said, the reason an era's cases are unsupported; the message
    adds the option that helps a run of one era.
    """

    def __init__(self, answered: str, hint: str = "") -> None:  # one argument: as unpickled
        super().__init__(f"{answered}; {hint}" if hint else answered)
        self.answered = answered


class ServerExited(RuntimeError):
    """A server process exited before it answered its first request.

    A case's own configuration may be the reason (a run with odd options); with the
    suite's own instances it cannot be, and the runner turns it into ``TargetCannotStart``.
    """


class ProtocolRefusal(Exception):
    """The protocol layer refused a call instead of the implementation answering it.

    Seed 000 (调用错误与任务状态) allows it: "SDK/协议参数校验或连接异常还可能直接抛出" -- SDK or
    protocol parameter validation may throw rather than produce a BridgeReply.  An MCP
    target raises this for a JSON-RPC error response to ``tools/call`` and for a tool
    result flagged ``isError`` whose content is not a BridgeReply (an SDK's own input-schema
    refusal); the connection stays usable.  ``detail`` says which, in one line; ``code`` is
    the JSON-RPC error code when there is one.
    """

    def __init__(self, detail: str, code: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code


class RequestDropped(RuntimeError):
    """The server is alive (it answered another request at once) but left this one unanswered.

    Some JSON-RPC layers drop a request they cannot decode, one holding a lone surrogate
    among them (D-CNF-053); the connection goes on.
    """


class ConfigRejected(Exception):
    """The target refused the run's configuration; ``error`` is a SerializedIntentError."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("code"))
        self.error = error


class Reply:
    """A BridgeReply as the target delivered it.

    ``value`` is the reply object (structuredContent over MCP); ``text`` the reply's own JSON
    text, where the transport carries one; ``envelope`` (MCP only) is
    ``{"isError": bool, "textIsReply": bool}``.  An MCP target may give the envelope as a
    function instead (``envelope_of``), called once on first read: deciding textIsReply costs a
    JSON encoding of the reply, and only the steps that check the envelope read it.
    """

    __slots__ = ("_envelope", "_envelope_of", "text", "value")

    def __init__(self, value: Any, text: str | None = None, envelope: dict[str, Any] | None = None, *,
                 envelope_of: Callable[[], dict[str, Any]] | None = None) -> None:  # fmt: skip
        self.value = value
        self.text = text
        self._envelope = envelope
        self._envelope_of = envelope_of

    @property
    def envelope(self) -> dict[str, Any] | None:
        if self._envelope is None and self._envelope_of is not None:
            self._envelope, self._envelope_of = self._envelope_of(), None
        return self._envelope

    def __repr__(self) -> str:
        return f"Reply(value={self.value!r}, text={self.text!r})"


class Session(abc.ABC):
    """One connection: the three Bridge calls, each returning a ``Reply``.

    ``release()`` is what the runner calls when a case is over.  By default it closes the
    session; a target whose connections are expensive (one server process each over stdio)
    overrides it to keep the connection for the next case.  The runner has already cancelled
    every job the case left active by then (D-CNF-002).
    """

    @abc.abstractmethod
    def prepare(self, request: Any) -> Reply: ...

    @abc.abstractmethod
    def accept(self, request: Any) -> Reply: ...

    @abc.abstractmethod
    def cancel(self, request: Any) -> Reply: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def release(self) -> None:
        self.close()

    def record_into(self, tap: Callable[[str, Any], None] | None) -> bool:
        """Record what this session's transport carries into ``tap`` (None: stop recording).

        False (the default) when it cannot: ``recording`` then records the calls and replies
        as the runner makes them (D-CNF-064).
        """
        return False


class CallSession(Session):
    """A session whose three calls are one method: ``_call(op, request)``.

    For the adapters (variants, faults, MCP and harness transports) that treat prepare,
    accept and cancel alike and differ only in how one call is made.
    """

    @abc.abstractmethod
    def _call(self, op: str, request: Any) -> Any: ...

    def prepare(self, request: Any) -> Any:
        return self._call("prepare", request)

    def accept(self, request: Any) -> Any:
        return self._call("accept", request)

    def cancel(self, request: Any) -> Any:
        return self._call("cancel", request)


class Run(abc.ABC):
    """One configuration (instances and Bridge options) of a target, open until ``close``."""

    @abc.abstractmethod
    def connect(self) -> Session: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def new_case(self) -> None:
        """A long-lived run is about to serve another case (connections it keeps may be reused)."""

    def left_behind(self) -> list[str]:
        """What the last case left that could not be ended (a job a cancel did not end), if anything.

        A run that keeps connections from case to case cancels each case's jobs when its
        sessions are released, and says here when that failed (D-CNF-002); the runner then
        replaces the run before the next case.
        """
        return []

    def begin_example(self, requirements: tuple[str, ...] = ()) -> None:
        """A property example is about to make its calls; ``requirements`` are the IDs it checks.

        Called by the properties (``Example``) and the campaign before each example on a run
        they share between examples.  Only a run that keeps a log per example (the
        differential run) does anything with it; the conformance runner never calls it.
        """


# A run the runner plans: (instances, Bridge options).
PlannedRun = tuple[dict[str, Any], dict[str, Any]]


class Target(abc.ABC):
    """What the runner drives: every member it calls is here, with its default.

    ``transport`` is ``"in-process"``, ``"mcp"`` or ``"harness"``; a case that checks the MCP
    envelope is unsupported on a target that is not MCP.  ``capabilities`` is the set of
    capability names the target declares (D-CNF-030); None means "probe me".

    ``long_lived_runs``: opening a run costs a process start, so the runner keeps runs open
    across cases and serves cases that need no Bridge of their own from them, their own
    instances merged into one configuration under names of their own (D-CNF-050).  A target
    whose runs are cheap leaves it False and every case with its own instances gets a run
    of exactly those.

    ``long_lived_lanes``: how many long-lived runs of one configuration may serve cases side
    by side, each on a thread of its own (D-CNF-054).  A run that spends a case waiting on
    request round trips (streamable HTTP) leaves its CPU idle; more than one lets the next
    case's requests go out meanwhile.  Every lane is a run of its own, with sessions of its
    own, so a case never sees another case's jobs.

    ``configured_elsewhere``: the server's instances are its own (a server already running),
    so the runner checks before the first case that it serves those the cases use
    (D-CNF-013), and a case with instances of its own is unsupported.

    ``separate_sessions``: each connection is a Bridge session of its own.  Not so over
    HTTP in the 2026-07-28 era, which has no session (D-MCP-003), nor over HTTP with a
    server that issued no session id (D-CNF-063): there every connection shares one, and
    the properties open no second one.  ``shared_session`` says why, for the cases that
    need two connections (``cases.capabilities``).

    ``negotiate`` and ``era_in_force``: the MCP era (D-CNF-052) of a target that has eras;
    a target without MCP says None to both.  ``findings``: what its user should hear of its
    server before the run (D-CNF-056).

    The runner calls nothing else on a target, and nothing else on its runs (``Run``) and
    sessions (``Session``); a user's object that is not a ``Target`` is adapted to this
    interface once, by ``registry.as_target``.
    """

    name: str = "target"
    transport: str = "in-process"
    capabilities: frozenset[str] | None = None
    long_lived_runs: bool = False
    long_lived_lanes: int = 1
    configured_elsewhere: bool = False

    @property
    def separate_sessions(self) -> bool:
        """Whether each connection is a Bridge session of its own (see the class's text)."""
        return self.shared_session() is None

    def shared_session(self) -> str | None:
        """Why every connection to this target is one Bridge session, or None (the default)."""
        return None

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        """Why a run with these Bridge options cannot be made here, or None."""
        return None

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        """Why this case (its sessions, its setup) cannot be run here, or None."""
        return None

    @abc.abstractmethod
    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        """A run of this configuration; raises ``ConfigRejected`` when the target refuses it."""

    def expect_runs(self, runs: list[PlannedRun]) -> None:
        """The runs of their own that ``open`` will be asked for next, in order (prefetch).

        By default nothing: a target whose runs are cheap has nothing to start ahead.
        """

    def negotiate(self) -> str | None:
        """The MCP era this target speaks, connecting now to learn it when ``--era auto`` left it open.

        Asked once before the run for a server configured elsewhere, so that the worker
        processes need not negotiate again; None (the default) for a target without eras.
        """
        return None

    def era_in_force(self) -> str | None:
        """The MCP era this target has spoken so far, for the report, without connecting.

        ``2026`` or ``legacy`` once known, ``auto`` while no connection has negotiated it;
        None (the default) for a target without eras.
        """
        return None

    def findings(self) -> list[str]:
        """What the runner learnt of this target's server that its user should hear, a line each.

        Asked once before the run, beside ``negotiate``, for a server configured elsewhere;
        nothing (the default) for most targets.  Over HTTP: that the runner had to open a
        connection per request (D-CNF-056).
        """
        return []

    def close(self) -> None:
        """Release everything the target started."""


def connections_of(case: dict[str, Any]) -> int:
    """How many connections the case opens: a session name opens one on first use and after ``close``."""
    open_names: set[str] = set()
    count = 0
    for step in case["steps"]:
        name = step.get("session", "main")
        if step["op"] == "close":
            open_names.discard(name)
        elif step["op"] != "sleep" and name not in open_names:
            open_names.add(name)
            count += 1
    return count


def needs_separate_connections(case: dict[str, Any]) -> bool:
    """Whether the case opens two connections, or closes one: it needs each to be a Bridge session of its own."""
    return connections_of(case) > 1 or any(step["op"] == "close" for step in case["steps"])


def program_problem(program: str) -> str | None:
    """Why the command ``program`` (a command line's first word) cannot be run, or None.

    Looked up as ``exec`` would: a name with a slash is a path, any other name is searched
    on PATH.  Asked before any fixture is read, so a mistyped command costs no start-up at
    all (D-CNF-013); a failure this cannot foresee (a bad interpreter line) is still caught
    when the process starts.
    """
    if os.sep not in program:
        return None if shutil.which(program) is not None else "not found on PATH"
    if not os.path.lexists(program):
        return "No such file or directory"
    if os.path.isdir(program):
        return "is a folder"
    if not os.access(program, os.X_OK):
        return "Permission denied"
    return None


def load_instances() -> dict[str, Any]:
    """The instance configurations of ``conformance/instances.json``, as JSON (not built Intents:
    a target builds them its own way; ``mcp.cli.build_instances`` is the MCP server's)."""
    document = json.loads((data_dir("conformance") / "instances.json").read_text("utf-8"))
    return dict(document["instances"])


# --- the bundled reference, in this process ------------------------------------------------


class InProcessSession(CallSession):
    """A session of any object with the Bridge session's three calls returning reply dicts."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def _call(self, op: str, request: Any) -> Reply:
        return Reply(getattr(self._session, op)(request))

    def close(self) -> None:
        self._session.close()


class InProcessRun(Run):
    """A run over any object with the Bridge's ``connect()`` / ``close()`` and dict replies."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge

    def connect(self) -> Session:
        return InProcessSession(self._bridge.connect())

    def close(self) -> None:
        self._bridge.close()


class InProcessTarget(Target):
    """The reference Bridge called directly: what mutation testing and differential checks use.

    ``bridge_factory`` lets a test wrap the reference (to prove the suite catches a
    deliberately broken implementation) without touching the runner.  The plain reference
    declares what it takes (``capabilities``, D-CNF-030); a wrapped one declares nothing
    unless told, and is probed: a wrapper may change what the reference honours.
    """

    name = "reference (in-process)"
    transport = "in-process"

    def __init__(self, bridge_factory: Any = None, capabilities: Any = None) -> None:
        if bridge_factory is None:
            from intentref.bridge import create_intent_bridge
            bridge_factory = create_intent_bridge
            capabilities = REFERENCE_CAPABILITIES if capabilities is None else capabilities
        if capabilities is not None:
            self.capabilities = capabilities
        self._factory = bridge_factory

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        from intentref.core.errors import IntentParseError
        from intentref.intent import Intent

        try:
            built = {name: Intent(config) for name, config in instances.items()}
            return InProcessRun(self._factory({"instances": built, **bridge_options}))
        except IntentParseError as exc:
            raise ConfigRejected(exc.to_json()) from None
