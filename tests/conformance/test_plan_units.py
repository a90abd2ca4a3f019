"""How a plan cuts the cases into units of work (D-CNF-054).

A case that sleeps waits in real time (the legacy TTL cases: about 1.3 s each).  Runs of
their own go to several threads of a worker, so a sleeper must be a unit of its own: four
of them in one unit waited one after another, and that one unit set the length of the whole
bundled run (5.3 s of its 6.8 s on two workers).
"""

from __future__ import annotations

from intentref.suite.cases.fixtures import load_cases
from intentref.suite.execution.plan import OWN_UNIT_CASES, make_plan
from intentref.suite.targets.base import InProcessTarget, load_instances


def _plan_units() -> tuple[list, list]:
    plan = make_plan(load_cases(), InProcessTarget(), load_instances())
    return plan.cases, plan.units(jobs=2)


def test_every_case_that_sleeps_is_a_unit_of_its_own_and_comes_first():
    planned, units = _plan_units()
    # Sleepers on the long-lived run wait there in turn whatever the units; runs of their own do not.
    sleepers = {p.index for p in planned if p.sleeps_ms and p.unsupported is None and p.config is None}
    assert len(sleepers) >= 2  # the bundled suite has sleeping cases of their own, so this can fail
    own = [u for u in units if u.config is None]
    with_sleepers = [u for u in own if sleepers & set(u.indices)]
    assert all(len(u.indices) == 1 for u in with_sleepers)
    assert own[: len(with_sleepers)] == with_sleepers  # longest waits are handed out first
    ms = {p.index: p.sleeps_ms for p in planned}
    assert [ms[u.indices[0]] for u in with_sleepers] == sorted((ms[i] for i in sleepers), reverse=True)


def test_every_runnable_case_is_in_exactly_one_unit_and_the_rest_keep_their_size():
    planned, units = _plan_units()
    runnable = sorted(p.index for p in planned if p.unsupported is None)
    assert sorted(i for u in units for i in u.indices) == runnable
    awake = [u for u in units if u.config is None and not any(planned[i].sleeps_ms for i in u.indices)]
    assert awake and all(len(u.indices) <= OWN_UNIT_CASES for u in awake)
    assert sum(len(u.indices) == OWN_UNIT_CASES for u in awake) >= len(awake) - 1
