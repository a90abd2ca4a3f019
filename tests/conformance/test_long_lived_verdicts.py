"""Long-lived runs change no verdict (D-CNF-050): every case, both ways, on every kind of target.

By default the runner keeps runs open from case to case (over stdio, one merged configuration
with each case's own instances renamed); ``--isolate`` gives every case a new Bridge, as the
suite did before.  For each target below every case must come out the same both ways --
passed, failed, unsupported or errored, and a failure at the same step: the reference over
stdio and over HTTP, every decision variant (and their combination) and every faulty
implementation, all planned into one pool of worker processes as ``intentref matrix`` does.

The whole comparison (every one of the 68 decision variants too) takes about five minutes on
two CPUs; CI runs it with the variants of the Bridge layer, whose state is what a long-lived
run carries from case to case, and their combination.  ``INTENTREF_LONG=1`` runs every variant.
"""

from __future__ import annotations

import os
from typing import Any

from intentref.suite.alterations import _variants_bridge, faulty, variants
from intentref.suite.cases.fixtures import load_cases
from intentref.suite.execution import workers
from intentref.suite.targets import registry


def _variant_names() -> list[str]:
    if os.environ.get("INTENTREF_LONG") == "1":
        return [*variants.catalogue(), "all"]
    return [*(variant.name for variant in _variants_bridge.VARIANTS), "all"]


def _specs() -> list[str]:
    return ["reference", "http-reference", *(f"variant:{name}" for name in _variant_names()),
            *(f"faulty:{name}" for name in faulty.FAULTS)]  # fmt: skip


def _verdicts(work: workers.Work) -> dict[str, tuple[str, int | None]]:
    return {work.cases[index].id: (outcome.outcome, outcome.failed_step) for index, outcome in work.outcomes.items()}


def test_every_case_has_the_same_verdict_with_and_without_isolation() -> None:
    cases = load_cases()
    works = [workers.Work(f"{spec}|{isolate}", registry.parse(spec), cases, isolate=isolate)
             for spec in _specs() for isolate in (False, True)]  # fmt: skip
    workers.plan_work(works)
    with workers.shared_resources(works):
        workers.run_works(works, workers.default_jobs())
    by_key = {work.key: work for work in works}
    differences: list[str] = []
    checked: dict[str, Any] = {}
    for spec in _specs():
        shared, isolated = by_key[f"{spec}|False"], by_key[f"{spec}|True"]
        assert shared.error is None and isolated.error is None, (spec, shared.error, isolated.error)
        ours, theirs = _verdicts(shared), _verdicts(isolated)
        assert len(ours) == len(theirs) == len(cases), spec
        differences += [f"{spec} {case_id}: {ours[case_id]} long-lived, {theirs[case_id]} isolated"
                        for case_id in ours if ours[case_id] != theirs[case_id]]  # fmt: skip
        checked[spec] = sum(v[0] == "failed" for v in ours.values())
    assert not differences, "\n".join(differences[:30])
    # The comparison saw failures too, not only passes: every faulty implementation fails some case.
    assert all(checked[f"faulty:{name}"] > 0 for name in faulty.FAULTS), checked
