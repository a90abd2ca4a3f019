"""A target's own time in the worker pool (``workers.Work.seconds``): a worker's seconds with any
of its units running, summed over the workers -- never one second counted once per thread."""

from __future__ import annotations

import time

from intentref.suite.cases.fixtures import load_cases
from intentref.suite.execution import workers
from intentref.suite.targets import registry


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_units_side_by_side_count_their_stretch_once_and_other_targets_in_full() -> None:
    clock = _Clock()
    busy = workers.Busy(clock)
    busy.begin("a")
    clock.now = 1.0
    busy.begin("a")  # a second unit of a beside the first
    busy.begin("b")  # and one of another target
    clock.now = 2.0
    assert busy.running("a") == 2.0
    assert busy.end("a") == 0.0  # a's stretch goes on: its other unit still runs
    clock.now = 5.0
    assert busy.end("a") == 5.0  # 0 s to 5 s, once
    assert busy.running("a") == 0.0
    assert busy.end("b") == 4.0  # b ran beside a from 1 s: all of it is b's too
    busy.begin("a")
    clock.now = 6.5
    assert busy.end("a") == 1.5  # a new stretch starts from its own first unit


def test_a_targets_own_time_in_one_worker_never_exceeds_the_runs_wall_time() -> None:
    # Runs of their own (Bridge options, TTL cases that sleep) go to OWN_RUNS_AT_ONCE threads
    # beside the long-lived one; one worker (a deadline forces the pool at jobs=1) runs them
    # side by side.  Summed unit by unit, their time came to several times the run's.
    every = [case for case in load_cases() if case.bridge_options]
    sleeping = [case for case in every if any(step["op"] == "sleep" for step in case.data["steps"])]
    cases = sleeping + [case for case in every if case not in sleeping][:32]
    assert sum(1 for case in cases if any(step["op"] == "sleep" for step in case.data["steps"])) >= 2
    work = workers.Work("in-process", registry.parse("in-process"), cases)
    workers.plan_work([work])
    started = time.perf_counter()
    workers.run_works([work], 1, deadline=time.monotonic() + 300)
    wall = time.perf_counter() - started
    assert len(work.outcomes) == len(cases) and work.error is None
    assert all(outcome.outcome != "errored" for outcome in work.outcomes.values())
    longest_sleep = max(sum(step.get("ms", 0) for step in case.data["steps"] if step["op"] == "sleep") for case in cases)
    assert longest_sleep / 1000 <= work.seconds <= wall
