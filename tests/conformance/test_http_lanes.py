"""Cases side by side over HTTP change no verdict (D-CNF-054, issue 27).

An HTTP target serves a worker's long-lived units on several lanes at once
(``Target.long_lived_lanes``): each lane a long-lived run of its own, with sessions of its own,
on a thread of its own.  Every case of the suite must come out the same as with one lane --
passed, failed, unsupported or errored, and a failure at the same step -- in both MCP eras,
the handshake era in one process (``--jobs 1``) and the 2026-07-28 era over worker processes.
"""

from __future__ import annotations

from typing import Any

import pytest

from intentref.suite.cases.fixtures import load_cases
from intentref.suite.execution import workers
from intentref.suite.targets import registry
from intentref.suite.targets.mcp_http import HttpTarget


def _verdicts(era: str, jobs: int) -> dict[str, tuple[str, int | None]]:
    outcomes, work = workers.execute(load_cases(), registry.parse("http-reference", era), jobs=jobs)
    return {case.id: (outcome.outcome, outcome.failed_step) for case, outcome in zip(work.cases, outcomes, strict=True)}


@pytest.mark.parametrize(("era", "jobs"), [("legacy", 1), ("2026", 2)])
def test_every_case_has_the_same_verdict_on_several_lanes_as_on_one(era: str, jobs: int, monkeypatch: Any) -> None:
    assert HttpTarget.long_lived_lanes > 1  # the default runs cases side by side
    side_by_side = _verdicts(era, jobs)
    monkeypatch.setattr(HttpTarget, "long_lived_lanes", 1)  # forked workers inherit it
    one_at_a_time = _verdicts(era, jobs)
    assert len(side_by_side) == len(load_cases())
    assert sum(1 for outcome, _ in side_by_side.values() if outcome == "passed") > 400  # the cases really ran
    differing = {case: (side_by_side[case], one_at_a_time[case]) for case in side_by_side
                 if side_by_side[case] != one_at_a_time[case]}  # fmt: skip
    assert not differing, differing


def test_a_target_with_lanes_gets_a_long_lived_run_on_each_and_every_case_once() -> None:
    # The lanes are real: with three, the long-lived units spread over three runs, none is lost.
    from intentref.suite.execution.runner import Executor, run_units
    from intentref.suite.targets.base import InProcessTarget

    class Laned(InProcessTarget):
        long_lived_lanes = 3

    cases = [case for case in load_cases() if not case.bridge_options and "setup" not in case.data][:200]
    executor = Executor(Laned())
    plan = executor.plan(cases)
    reported: list[int] = []
    run_units(executor, plan.units(jobs=1), lambda index, outcome: reported.append(index))
    lanes = {lane for _, lane in executor._runs}
    executor.close()
    assert lanes == {0, 1, 2}
    assert sorted(reported) == list(range(len(cases)))
