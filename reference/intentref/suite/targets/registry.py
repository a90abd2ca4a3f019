"""Target kinds and specs: every kind of target declares itself here, once.

A spec is a short text naming a kind and its argument (``stdio:my-server --config {config}``,
``variant:no-replay``, …).  ``parse`` reads it against ``TARGET_KINDS`` once and finds every
mistake before any target starts (D-CNF-013); ``TargetSpec.build()`` then makes the target in
each worker process, so a spec is plain (picklable) data.  Adding a kind is its module and one
``@target_kind`` entry here; every command's flags (``options``) follow from it.
"""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from intentref.suite.targets.base import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT  # the commands read it here
from intentref.suite.targets.base import CallSession, Reply, Run, Session, Target
from intentref.suite.targets.base import program_problem as _program_problem
from intentref.suite.usage import UsageError

ERAS: Final = ("auto", "2026", "legacy")
# The longest wait for one answer in the property suite and in fuzz replay, whose calls may
# carry 10 MB texts (the long profile, --heavy).
LARGE_CALL_TIMEOUT: Final = 30.0


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target spec: its kind, its argument and the options every kind may take.

    ``era``: the MCP era (D-CNF-052); ``cold_start``: start the bundled server from its console
    script instead of forking it (D-CNF-006); ``resources``: what a parent process started for
    the workers to share (the zygote's socket), never anything a user writes.
    """

    kind: str
    argument: str = ""
    era: str = "auto"
    timeout: float = DEFAULT_TIMEOUT
    cold_start: bool = False
    resources: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # spec: D-CNF-067 -- what an HTTP server requires on every request (a token): never in a repr or report.
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def text(self) -> str:
        return f"{self.kind}:{self.argument}" if self.argument else self.kind

    @property
    def declared(self) -> TargetKind:
        """What this spec's kind declares of itself."""
        return TARGET_KINDS[self.kind]

    @property
    def forks_reference(self) -> bool:
        """Whether its servers are forked from the reference zygote the workers share (D-CNF-006)."""
        return self.declared.forks_reference and not self.cold_start

    def with_resources(self, **resources: str) -> TargetSpec:
        return replace(self, resources=tuple(sorted({**dict(self.resources), **resources}.items())))

    def resource(self, name: str) -> str | None:
        return dict(self.resources).get(name)

    def build(self) -> Target:
        """A new target of this spec (a process of its own is started only when a run opens)."""
        return self.declared.build(self)

    def __str__(self) -> str:
        return self.text


Builder = Callable[[TargetSpec], Target]


@dataclass(frozen=True)
class TargetKind:
    """One kind of target, as it declares itself."""

    name: str
    argument: str  # what follows the colon ("" when the kind takes none)
    summary: str  # one line, the help of its flag
    build: Builder
    check: Callable[[str], None] | None = None  # finds a mistake in the argument (UsageError)
    flag: str | None = None  # a flag of its own beside --target (--stdio COMMAND)
    command: bool = False  # the argument is a program started per run, checked before any run (D-CNF-013)
    forks_reference: bool = False  # its servers fork from the reference zygote, unless cold (D-CNF-006)
    # Its server serves a configuration of its own, asked before a run (D-CNF-013): a case's own
    # instances and Bridge options cannot reach it.
    configured_elsewhere: bool = False

    @property
    def spelled(self) -> str:
        return f"{self.name}:{self.argument}" if self.argument else self.name


TARGET_KINDS: dict[str, TargetKind] = {}
# Names that were once written otherwise, read as the kind they mean.
_ALIASES: Final = {"inprocess": "in-process", "reference-in-process": "in-process"}


def target_kind(name: str, argument: str, summary: str, **declared: Any) -> Callable[[Builder], Builder]:
    """Register the builder of one kind of target with what the kind declares (``TargetKind``)."""

    def register(build: Builder) -> Builder:
        TARGET_KINDS[name] = TargetKind(name, argument, summary, build, **declared)
        return build

    return register


def parse(text: str, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, cold_start: bool = False) -> TargetSpec:
    """The spec ``text`` names, with every mistake in it raised as a one-line ``UsageError``."""
    if era not in ERAS:
        raise UsageError(f"--era must be one of {', '.join(ERAS)}, not {era!r}")
    if not timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout!r}")
    name, colon, argument = text.strip().partition(":")
    name = _ALIASES.get(name, name)
    if name == "stdio" and argument.strip() == "reference":
        name, argument = "reference", ""
    if name not in TARGET_KINDS:
        raise UsageError(f"unknown target {text!r}; use one of: {described()}")
    entry = TARGET_KINDS[name]
    argument = argument.strip()
    if entry.argument and not argument:
        raise UsageError(f"target {name} needs {entry.argument} after the colon: {entry.spelled}")
    if not entry.argument and colon and argument:
        raise UsageError(f"target {name} takes nothing after a colon, got {argument!r}")
    if name == "stdio" and "{config}" not in argument:
        # The seeds' CLI takes its instances file as --config FILE (seed 000 #MCP 服务).
        argument = f"{argument} --config {{config}}"
    if entry.check is not None:
        entry.check(argument)
    return TargetSpec(name, argument, era, timeout, cold_start)


def program_problem(spec: TargetSpec) -> str | None:
    """Why the program a command kind (``stdio:``, ``harness:``) starts cannot be run, or None (D-CNF-013)."""
    if not spec.declared.command:
        return None
    try:
        words = shlex.split(spec.argument)
    except ValueError:
        return None  # an unbalanced quote: building the target says so as a usage error
    if not words or words[0].startswith(("[", "{")):
        return None
    problem = _program_problem(words[0])
    return None if problem is None else f"cannot run {words[0]!r}: {problem}"


def described() -> str:
    """Every kind as the help texts list them: ``in-process, stdio:COMMAND, …``."""
    return ", ".join(entry.spelled for entry in TARGET_KINDS.values())


# --------------------------------------------------------------------------- the kinds
# The target modules are imported when a target is built, not here: a command's --help
# (which lists these kinds) starts without the MCP client, the variants or the faults.


@target_kind("in-process", "", "the reference Bridge called directly", flag="--in-process")
def _in_process(spec: TargetSpec) -> Target:
    from intentref.suite.targets.base import InProcessTarget

    return InProcessTarget()


def _check_template(argument: str) -> None:
    from intentref.suite.targets.mcp_stdio import CommandTemplate

    try:
        CommandTemplate.parse(argument)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@target_kind("reference", "",
             "the bundled intent-runtime-mcp over stdio (forked from a pre-imported process)",
             forks_reference=True)  # fmt: skip
def _reference(spec: TargetSpec) -> Target:
    from intentref.suite.targets import mcp_stdio as mcp_targets

    return mcp_targets.StdioTarget.reference(spec.era, spec.timeout, fork=not spec.cold_start,
                                             zygote_socket=spec.resource("zygote"))  # fmt: skip


@target_kind("stdio", "COMMAND",
             "an MCP server started per run with COMMAND; {config} is the instances file; {maxJobs}, "
             "{maxReplayEntries}, {maxReplayBytes}, {jobTtlMs} and {replayTtlMs} are the Bridge options; "
             "[ ... ] groups are dropped when their option is unset",
             check=_check_template, flag="--stdio", command=True)  # fmt: skip
def _stdio(spec: TargetSpec) -> Target:
    from intentref.suite.targets import mcp_stdio as mcp_targets

    return mcp_targets.StdioTarget(spec.argument, spec.era, spec.timeout)


@target_kind("http", "URL",
             "an MCP server already serving streamable HTTP at URL, with the suite's instances "
             "(intent-runtime-mcp --config conformance/instances.json --http ...)",
             flag="--http", configured_elsewhere=True)  # fmt: skip
def _http(spec: TargetSpec) -> Target:
    from intentref.suite.targets import mcp_http as mcp_targets

    return mcp_targets.HttpTarget(spec.argument, spec.era, spec.timeout, headers=dict(spec.headers))


@target_kind("http-reference", "", "the bundled reference over streamable HTTP on 127.0.0.1, one per worker",
             flag="--http-reference", forks_reference=True)  # fmt: skip
def _http_reference(spec: TargetSpec) -> Target:
    from intentref.suite.targets import mcp_http as mcp_targets

    return mcp_targets.HttpReferenceTarget(spec.era, spec.timeout, zygote_socket=spec.resource("zygote"))


@target_kind("harness", "COMMAND", "your Bridge API over JSON lines (conformance/harness.schema.json)",
             flag="--harness", command=True)  # fmt: skip
def _harness(spec: TargetSpec) -> Target:
    from intentref.suite.targets.harness import HarnessTarget

    return HarnessTarget(spec.argument, spec.timeout)


def _check_variant(name: str) -> None:
    from intentref.suite.alterations import variants

    if name != "all" and name not in variants.catalogue():
        raise UsageError(f"no decision variant {name!r}; known: all, {', '.join(variants.catalogue())}")


@target_kind("variant", "NAME", "the reference with other decisions (intentref levels --list)",
             check=_check_variant)  # fmt: skip
def _variant(spec: TargetSpec) -> Target:
    from intentref.suite.alterations import variants

    return variants.target(spec.argument)


@target_kind("variant-envelope", "NAME", "a decision variant behind the reference's own MCP tool layer "
             "(the envelope cases)", check=_check_variant)  # fmt: skip
def _variant_envelope(spec: TargetSpec) -> Target:
    from intentref.suite.alterations import variants

    return variants.target(spec.argument, envelope=True)


def _check_fault(name: str) -> None:
    from intentref.suite.alterations import faulty

    if name not in faulty.FAULTS:
        raise UsageError(f"no faulty implementation {name!r}; known: {', '.join(faulty.FAULTS)}")


@target_kind("faulty", "NAME", "a deliberately broken reference (intentref recall)", check=_check_fault)
def _faulty(spec: TargetSpec) -> Target:
    from intentref.suite.alterations import faulty

    return faulty.faulty_target(spec.argument)


def _check_python(argument: str) -> None:
    module, colon, attr = argument.rpartition(":")
    if not colon or not module or not attr:
        raise UsageError(f"python:{argument}: write python:MODULE:ATTR (a Target, or a callable that makes one)")


@target_kind("python", "MODULE:ATTR", "a Target (or a callable making one) importable from Python",
             check=_check_python, flag="--python", configured_elsewhere=True)  # fmt: skip
def _python(spec: TargetSpec) -> Target:
    module, _, attr = spec.argument.rpartition(":")
    try:
        made: Any = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"python:{spec.argument}: {exc}") from None
    target = made() if callable(made) and not hasattr(made, "open") else made
    return as_target(target)


def as_target(obj: Any) -> Target:
    """A user's target (``python:MODULE:ATTR``, the pytest plugin's ``intentref_target``) as a ``Target``:
    any object with ``open`` and ``close``, whose optional members are looked up here only."""
    return obj if isinstance(obj, _DuckTarget) else _DuckTarget(obj)


def _ask(inner: Any, member: str, *args: Any, default: Any = None) -> Any:
    """``inner.member(*args)``, or ``default`` when a duck-typed object leaves that member out."""
    method = getattr(inner, member, None)
    return default if method is None else method(*args)


class _DuckTarget(Target):
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.transport = str(getattr(inner, "transport", "in-process"))
        declared = getattr(inner, "capabilities", None)
        self.capabilities = frozenset(declared) if declared is not None else None
        self.long_lived_runs = bool(getattr(inner, "long_lived_runs", False))
        self.configured_elsewhere = bool(getattr(inner, "configured_elsewhere", False))

    @property
    def separate_sessions(self) -> bool:
        return bool(getattr(self._inner, "separate_sessions", True))

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return _ask(self._inner, "unsupported", bridge_options)  # type: ignore[no-any-return]

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        return _ask(self._inner, "unsupported_case", case)  # type: ignore[no-any-return]

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        run = self._inner.open(instances, bridge_options)
        return run if isinstance(run, Run) else _DuckRun(run)

    def expect_runs(self, runs: Any) -> None:
        _ask(self._inner, "expect_runs", runs)

    def close(self) -> None:
        _ask(self._inner, "close")


class _DuckRun(Run):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect(self) -> Session:
        session = self._inner.connect()
        return session if isinstance(session, Session) else _DuckSession(session)

    def new_case(self) -> None:
        _ask(self._inner, "new_case")

    def left_behind(self) -> list[str]:
        return list(_ask(self._inner, "left_behind", default=()))

    def close(self) -> None:
        self._inner.close()


class _DuckSession(CallSession):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _call(self, op: str, request: Any) -> Reply:
        return getattr(self._inner, op)(request)  # type: ignore[no-any-return]

    def close(self) -> None:
        self._inner.close()

    def release(self) -> None:
        (getattr(self._inner, "release", None) or self._inner.close)()
