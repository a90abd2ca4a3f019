"""What a case needs from a target beyond the seeds, and whether the target has it (D-CNF-030).

``unsupported_reason`` is the one place the runner decides that a target cannot run a case;
what a target refuses only while a case runs (a value its transport cannot carry) it raises as
``TargetUnsupported``.  Either way the case is ``unsupported: needs …``, never ``failed``: the
implementation was not asked the question the case asks.  The needs are the MCP envelope,
Bridge options (a faithful CLI takes instances only, seed 000 #MCP 服务), two connections or
a close where every connection is one session (``Target.shared_session``, D-CNF-004,
D-CNF-063), and an instance's ``repairAttempts`` (D-CFG-001, D-LIM-005: the seeds name the
count, not where it is set).  A target *declares* what it takes (``capabilities``), which is
believed; a target that declares nothing is *probed* once: ``repairAttempts: 0`` must end a
job at the first broken candidate, ``repairAttempts: 2`` must offer two repairs first.
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from intentref.suite.cases.fixtures import Case
from intentref.suite.targets.base import REFERENCE_CAPABILITIES as REFERENCE_CAPABILITIES
from intentref.suite.targets.base import REPAIR_ATTEMPTS as REPAIR_ATTEMPTS
from intentref.suite.targets.base import ConfigRejected, Target, TargetUnsupported, needs_separate_connections

# REFERENCE_CAPABILITIES and REPAIR_ATTEMPTS live with the targets that declare them
# (``targets`` must not import this module); they are re-exported here by name.

# The probe's instances.  Their names are those of conformance/instances.json, so a target
# that serves a fixed configuration (an HTTP server) has them too.
PROBE_INSTANCES: Final[dict[str, dict[str, Any]]] = {
    "norepair": {"language": "zh-CN", "repairAttempts": 0},
    "tworepairs": {"language": "zh-CN", "repairAttempts": 2},
}
_PROBE_INPUT: Final = "查询订单 000123"
# Not JSON at all: a contract fault under every reading of the core candidate contract.
_PROBE_CANDIDATE: Final = "this is not a JSON candidate"


def unsupported_reason(case: Case, target: Target, suite_instances: Mapping[str, Any], *,
                       probe: bool) -> str | None:  # fmt: skip
    """Why ``target`` cannot run ``case``, or None: the one place the runner decides it.

    Asked twice.  When the plan is made (``probe=False``), before any run opens: all that is
    known without one, a declared capability included.  Just before the case runs
    (``probe=True``): what is left, a capability a target that declares none may lack, probed
    then, once per target (D-CNF-030).
    """
    declared = target.capabilities is not None
    if probe:
        return None if declared else CAPABILITIES.reason(case.data, target, suite_instances)
    if case.transport == "mcp" and target.transport != "mcp":
        return "checks the MCP envelope; the target is not MCP"
    options = case.bridge_options
    reason = target.unsupported(options)
    if reason is not None:  # D-CNF-030: say what the case needs before why the target lacks it
        return f"needs Bridge option(s) {', '.join(options)}: {reason}"
    reason = target.unsupported_case(case.data)
    if reason is None:
        reason = _one_session_reason(case, target)
    if reason is None and declared:
        reason = CAPABILITIES.reason(case.data, target, suite_instances)
    return reason


def _one_session_reason(case: Case, target: Target) -> str | None:
    """The case needs two Bridge sessions, and every connection to the target is one (D-CNF-004, D-CNF-063)."""
    if not needs_separate_connections(case.data):
        return None
    shared = target.shared_session()
    return None if shared is None else f"needs separate connections or a close; {shared}"


def needs(case: Mapping[str, Any], instances: Mapping[str, Any]) -> list[str]:
    """What ``case`` needs beyond the seeds, as capability names (empty: nothing)."""
    configs: list[Any] = []
    setup = case.get("setup")
    if isinstance(setup, dict) and isinstance(setup.get("instances"), dict):
        configs.extend(setup["instances"].values())
    else:
        named = set(case.get("instances") or [])
        for step in case.get("steps", []):
            args = step.get("args")
            if step.get("op") == "prepare" and isinstance(args, dict) and isinstance(args.get("instance"), str):
                named.add(args["instance"])
        configs.extend(instances[name] for name in sorted(named) if name in instances)
    if any(isinstance(config, dict) and "repairAttempts" in config for config in configs):
        return [REPAIR_ATTEMPTS]
    return []


@dataclass(frozen=True)
class Support:
    """Whether a target takes a capability, and how that was learnt."""

    supported: bool
    how: str  # "declared", or what the probe saw


_DESCRIBE: Final = {REPAIR_ATTEMPTS: "an instance's repairAttempts (D-CFG-001, D-LIM-005)"}


class Capabilities:
    """Declared or probed capabilities, one probe per target and capability (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._weak: weakref.WeakKeyDictionary[Any, dict[str, Support]] = weakref.WeakKeyDictionary()
        self._strong: dict[int, tuple[Any, dict[str, Support]]] = {}  # targets without weak references

    def _known(self, target: Any) -> dict[str, Support]:
        try:
            return self._weak.setdefault(target, {})
        except TypeError:
            return self._strong.setdefault(id(target), (target, {}))[1]

    def support(self, target: Target, capability: str) -> Support:
        declared = target.capabilities
        if declared is not None:
            return Support(capability in declared, "declared")
        with self._lock:  # one probe per target even when worker threads ask at once
            known = self._known(target)
            if capability not in known:
                known[capability] = _PROBES[capability](target)
            return known[capability]

    def probe_for(self, cases: Any, target: Target, instances: Mapping[str, Any]) -> dict[str, Support]:
        """What ``target`` supports of what ``cases`` need, probed now where it declares nothing."""
        if target.capabilities is not None:
            return {}
        wanted = {name for case in cases for name in needs(case.data, instances)}
        return {name: self.support(target, name) for name in sorted(wanted)}

    def remember(self, target: Target, probed: Mapping[str, Support]) -> None:
        """What another process probed of the same target: believed as if probed here."""
        if probed:
            with self._lock:
                self._known(target).update(probed)

    def reason(self, case: Mapping[str, Any], target: Target, instances: Mapping[str, Any]) -> str | None:
        """``needs …`` when the target lacks something ``case`` needs, else None."""
        for capability in needs(case, instances):
            support = self.support(target, capability)
            if not support.supported:
                how = "does not declare it" if support.how == "declared" else support.how
                return f"needs {_DESCRIBE[capability]}; the target {how}"
        return None


# --------------------------------------------------------------------------- the probes


def _kind(value: Any) -> str:
    return str(value.get("kind")) if isinstance(value, dict) else "no reply"


def _code(value: Any) -> str | None:
    error = value.get("error") if isinstance(value, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _broken_until_error(session: Any, instance: str, limit: int) -> list[str]:
    """Submit the broken candidate until an error (at most ``limit`` times): the kinds seen."""
    seen: list[str] = []
    task = session.prepare({"instance": instance, "input": _PROBE_INPUT}).value
    if _kind(task) != "task":
        return [f"prepare gave {_kind(task)} {_code(task) or ''}".strip()]
    for _ in range(limit):
        reply = session.accept({"jobId": task.get("jobId"), "stepToken": task.get("stepToken"),
                                "candidateText": _PROBE_CANDIDATE}).value  # fmt: skip
        seen.append(_kind(reply) if _kind(reply) != "error" else f"error {_code(reply)}")
        if _kind(reply) != "task":
            break
        task = reply
    if seen and seen[-1] == "task":  # still offering repairs: end the job, leave nothing active
        with contextlib.suppress(Exception):
            session.cancel({"jobId": task.get("jobId")})
    return seen


def _probe_repair_attempts(target: Target) -> Support:
    """``repairAttempts: 0`` ends the job at once; ``repairAttempts: 2`` repairs twice, then ends it."""
    try:
        run = target.open(json.loads(json.dumps(PROBE_INSTANCES)), {})
    except ConfigRejected as rejected:
        return Support(False, f"refused an instance configuration with repairAttempts ({rejected.error.get('code')})")
    except TargetUnsupported as exc:
        return Support(False, f"cannot run the repairAttempts probe: {exc.reason}")
    except Exception as exc:
        return Support(False, f"could not start the repairAttempts probe: {type(exc).__name__}: {exc}")
    try:
        session = run.connect()
        try:
            none = _broken_until_error(session, "norepair", 2)
            two = _broken_until_error(session, "tworepairs", 4)
        finally:
            with contextlib.suppress(Exception):
                session.release()
    except Exception as exc:
        return Support(False, f"broke during the repairAttempts probe: {type(exc).__name__}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            run.close()
    invalid = "error MODEL_OUTPUT_INVALID"
    if none == [invalid] and two == ["task", "task", invalid]:
        return Support(True, "honours repairAttempts 0 and 2 (probed)")
    return Support(False, "does not visibly honour it: a non-JSON core candidate got "
                          f"{' then '.join(none)} with repairAttempts 0 and {' then '.join(two)} "
                          "with repairAttempts 2 (probed)")  # fmt: skip


_PROBES: Final = {REPAIR_ATTEMPTS: _probe_repair_attempts}
CAPABILITIES: Final = Capabilities()  # the runner's: one probe per target for the whole process
