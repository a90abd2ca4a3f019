"""A case needing what the seeds leave open is unsupported where the target lacks it (D-CNF-030).

The targets here are the real reference, in process and over real stdio, changed only in
how they take an instance's ``repairAttempts``: declared, honoured, ignored, refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from intentref.bridge import create_intent_bridge
from intentref.suite.cases.capabilities import REPAIR_ATTEMPTS, Capabilities, needs
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import FAILED, PASSED, UNSUPPORTED
from intentref.suite.execution.runner import execute
from intentref.suite.targets.base import ConfigRejected, InProcessTarget, Run, load_instances
from intentref.suite.targets.mcp_stdio import StdioTarget, reference_program

_NOT_JSON = "not a JSON candidate"
_JOB0 = {"jobId": {"$reply": 0, "pointer": "/jobId"}, "stepToken": {"$reply": 0, "pointer": "/stepToken"}}


def _case(case_id: str, instance: str, expect: Any, **extra: Any) -> Case:
    steps = [
        {"op": "prepare", "args": {"instance": instance, "input": "查询订单 000123"}, "expect": {"$task": {}}},
        {"op": "accept", "args": {**_JOB0, "candidateText": _NOT_JSON}, "expect": expect},
    ]
    data = {"id": case_id, "description": "d", "requirements": ["R-ERR-027"], "level": "reference",
            "decisions": ["D-CFG-001"], "steps": steps, **extra}  # fmt: skip
    return Case("TST", "test", data)


# spec: D-LIM-005 -- repairAttempts 0 ends the job at the first broken candidate.
NOREPAIR = _case("TST-0001", "norepair", {"$error": {"code": "MODEL_OUTPUT_INVALID"}})
# The seeds' own default (one repair per stage): no capability needed.
DEFAULT = _case("TST-0002", "default", {"$task": {"stage": "core"}})


class _Counting(InProcessTarget):
    """The reference with a wrapping factory (so undeclared), counting the runs it opens."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bridge_factory=create_intent_bridge, **kwargs)
        self.opened: list[dict[str, Any]] = []

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        self.opened.append(instances)
        return super().open(self.configure(instances), bridge_options)

    def configure(self, instances: dict[str, Any]) -> dict[str, Any]:
        return instances


class _IgnoresRepairAttempts(_Counting):
    """An implementation whose instances do not take the member: every instance repairs `default` times."""

    def __init__(self, default: int = 1) -> None:
        super().__init__()
        self.default = default

    def configure(self, instances: dict[str, Any]) -> dict[str, Any]:
        return {n: {**{k: v for k, v in c.items() if k != "repairAttempts"}, "repairAttempts": self.default}
                for n, c in instances.items()}  # fmt: skip


class _RefusesRepairAttempts(_Counting):
    def configure(self, instances: dict[str, Any]) -> dict[str, Any]:
        if any("repairAttempts" in c for c in instances.values()):
            raise ConfigRejected({"code": "CONFIG_INVALID", "stage": "config", "message": "unknown member", "issues": []})
        return instances


def _one(case: Case, target: Any) -> Any:
    [outcome] = execute([case], target)
    return outcome


def test_needs_reads_the_instances_a_case_uses() -> None:
    instances = load_instances()
    assert needs(NOREPAIR.data, instances) == [REPAIR_ATTEMPTS]
    assert needs(DEFAULT.data, instances) == []
    listed = {**DEFAULT.data, "instances": ["tworepairs"]}  # named by the case, not prepared on
    assert needs(listed, instances) == [REPAIR_ATTEMPTS]
    setup = {**DEFAULT.data, "setup": {"instances": {"default": {"language": "zh-CN", "repairAttempts": 0}}}}
    assert needs(setup, instances) == [REPAIR_ATTEMPTS]
    # A setup replaces instances.json: its own instances are what count.
    assert needs({**NOREPAIR.data, "setup": {"instances": {"norepair": {"language": "zh-CN"}}}}, instances) == []


def test_the_reference_declares_it_and_is_not_probed() -> None:
    target = InProcessTarget()
    assert REPAIR_ATTEMPTS in target.capabilities
    assert _one(NOREPAIR, target).outcome == PASSED


def test_a_declaration_without_it_makes_the_case_unsupported_not_failed() -> None:
    target = InProcessTarget(capabilities=frozenset())
    outcome = _one(NOREPAIR, target)
    assert outcome.outcome == UNSUPPORTED
    assert outcome.detail.startswith("needs an instance's repairAttempts"), outcome.detail
    assert "does not declare it" in outcome.detail
    assert _one(DEFAULT, target).outcome == PASSED  # what needs nothing still runs


def test_a_wrapped_reference_is_probed_once_and_still_runs_every_case() -> None:
    target = _Counting()
    assert target.capabilities is None  # declares nothing: probed
    twice = [NOREPAIR, Case("TST", "test", {**NOREPAIR.data, "id": "TST-0003"}), DEFAULT]
    outcomes = execute(twice, target)
    assert [o.outcome for o in outcomes] == [PASSED, PASSED, PASSED]
    probes = [i for i in target.opened if set(i) == {"norepair", "tworepairs"}]
    assert len(probes) == 1, target.opened  # one probe, however many cases need it


@pytest.mark.parametrize("default", [1, 0])
def test_an_implementation_ignoring_the_member_is_unsupported_not_failed(default: int) -> None:
    # default 0: the norepair half of the probe passes by accident; the tworepairs half must not.
    target = _IgnoresRepairAttempts(default)
    outcome = _one(NOREPAIR if default else _case("TST-0004", "tworepairs", {"$task": {"stage": "core"}}), target)
    assert outcome.outcome == UNSUPPORTED, outcome
    assert outcome.detail.startswith("needs an instance's repairAttempts"), outcome.detail
    assert "does not visibly honour it" in outcome.detail and "(probed)" in outcome.detail
    # Declared regardless, the same target fails the case: "unsupported" hid a real difference.
    told = _IgnoresRepairAttempts(default)
    told.capabilities = frozenset({REPAIR_ATTEMPTS})
    assert _one(NOREPAIR if default else _case("TST-0004", "tworepairs", {"$task": {"stage": "core"}}),
                told).outcome == FAILED  # fmt: skip
    if default == 1:  # the seeds' default: what needs no capability passes
        assert _one(DEFAULT, target).outcome == PASSED


def test_the_probe_quotes_what_came_back() -> None:
    support = Capabilities().support(_IgnoresRepairAttempts(1), REPAIR_ATTEMPTS)
    assert not support.supported
    assert "got task then error MODEL_OUTPUT_INVALID with repairAttempts 0" in support.how, support.how


def test_a_target_refusing_the_member_is_unsupported() -> None:
    outcome = _one(NOREPAIR, _RefusesRepairAttempts())
    assert outcome.outcome == UNSUPPORTED
    assert "refused an instance configuration with repairAttempts (CONFIG_INVALID)" in outcome.detail


def test_a_bridge_option_the_target_cannot_take_is_named() -> None:
    class NoOptions(InProcessTarget):
        def unsupported(self, bridge_options: Mapping[str, Any]) -> str | None:  # type: ignore[override]
            return "this target takes instances only" if bridge_options else None

    case = Case("TST", "test", {**DEFAULT.data, "id": "TST-0005", "bridge": {"maxReplayEntries": 1}})
    outcome = _one(case, NoOptions())
    assert outcome.outcome == UNSUPPORTED
    assert outcome.detail == "needs Bridge option(s) maxReplayEntries: this target takes instances only"


def test_over_real_stdio_a_server_without_a_declaration_is_probed() -> None:
    # The bundled CLI started as any other server would be: no declaration, so a probe.
    command = " ".join([*reference_program(), "--config", "{config}"])
    target = StdioTarget(command)
    try:
        assert target.capabilities is None  # declares nothing: probed
        assert [o.outcome for o in execute([NOREPAIR, DEFAULT], target)] == [PASSED, PASSED]
    finally:
        target.close()
    declared = StdioTarget.reference()
    try:
        assert REPAIR_ATTEMPTS in declared.capabilities
    finally:
        declared.close()
