"""``intentref properties``: the suite passes against the reference and catches a different target."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jsonschema
import pytest

from intentref import properties as ip
from intentref.suite.alterations import faulty
from intentref.suite.cases.fixtures import fixture_schema
from intentref.suite.cases.script import FAILED, PASSED, run_case
from intentref.suite.commands import properties as properties_cli
from intentref.suite.properties.targets import close_runs
from intentref.suite.targets.base import InProcessTarget
from intentref.suite.targets.registry import parse

# The campaign drives one Bridge on its default options: a fault only reclamation under small
# capacity options reveals (D-CNF-032) is out of its reach, and the conformance cases catch it.
FAULT_NAMES = [name for name, fault in faulty.FAULTS.items() if not fault.envelope_only and not fault.needs_bridge_options]


def test_the_campaign_leaves_out_only_faults_it_cannot_reach() -> None:
    left_out = {name for name, fault in faulty.FAULTS.items() if name not in FAULT_NAMES and not fault.envelope_only}
    assert left_out == {"reclaimed_cancel_conflict"}


def _clean(figures: dict[str, Any]) -> None:
    for key in ("uncaughtExceptions", "nonReplies", "lostActiveJobs", "replayDrifts", "divergences", "mispredictions"):
        assert figures[key] == 0, (key, figures)
    assert figures["pytest"] == "passed"


def test_the_properties_pass_in_process(runs: Any) -> None:
    started, folder = runs
    status, out, err = started["in-process"].result()
    assert status == 0, out[-3000:] + err[-3000:]
    figures = json.loads((folder / "in.json").read_text("utf-8"))
    _clean(figures)
    assert figures["propertyCalls"] > 1_000 and figures["campaignCalls"] == 300


def test_the_properties_pass_over_stdio(runs: Any) -> None:
    started, folder = runs
    status, out, err = started["stdio"].result()
    assert status == 0, out[-3000:] + err[-3000:]
    figures = json.loads((folder / "stdio.json").read_text("utf-8"))
    _clean(figures)
    assert figures["target"] == "reference"  # stdio:reference is the bundled server's kind, named once
    # stdout is a pipe here: one line per property as it ends, and campaign lines (D-CNF-023).
    assert out.count("::test_") >= 40 and "campaign: 100/100 calls" in out


def test_a_different_reason_order_is_caught_and_written_as_a_case(runs: Any) -> None:
    started, folder = runs
    status, out, _ = started["reason_order"].result()
    assert status == 1, out[-3000:]
    assert "hypothesis seed: 3" in out and "/reason" in out
    document = json.loads((folder / "cases.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(fixture_schema()).validate(document)  # a fixture file as it stands
    case = document["cases"][0]
    reference = InProcessTarget().open(ip.catalog_instances(), {})
    broken = faulty.faulty_target("reason_order").open(ip.catalog_instances(), {})
    try:
        assert run_case(case, reference, "in-process").outcome == PASSED  # the reference's projection
        assert case["level"] == "normative"  # spec: D-CNF-021 -- R-RES-039's order is the seeds'

        assert run_case(case, broken, "in-process").outcome == FAILED
    finally:
        reference.close()
        broken.close()


@pytest.mark.parametrize("fault", FAULT_NAMES)
def test_the_campaign_catches_each_faulty_bridge(fault: str, broken_module: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.syspath_prepend(str(broken_module))
    tally = properties_cli.campaign(parse(f"python:broken_targets:{fault}"), seed=1, calls=600, heavy=False,
                                    differential=True)  # fmt: skip
    assert tally.divergences > 0, f"{fault} went unnoticed"
    assert tally.uncaught_exceptions == tally.non_replies == 0
    case = properties_cli._case_of(next(n for n in tally.notes if n.startswith("divergence:")))
    jsonschema.Draft202012Validator(fixture_schema()).validate({"area": "NEW", "title": "t", "cases": [case]})


def test_the_era_reaches_the_pytest_children_on_their_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # spec: D-CNF-057 -- on the command line, never through the environment.
    started: list[tuple[list[str], dict[str, str]]] = []

    class Child:
        def __init__(self, command: list[str], env: dict[str, str]) -> None:
            started.append((command, env))

        def wait(self) -> int:
            return 0

    monkeypatch.setattr(properties_cli.subprocess, "Popen", Child)
    state = properties_cli.RunState()
    properties_cli.run_pytest(parse("reference", era="legacy"), "smoke", 1, None, True, state, jobs=2)
    assert len(started) == 2
    for command, env in started:
        assert command[command.index("--intentref-properties-target") + 1] == "reference"
        assert command[command.index("--intentref-properties-era") + 1] == "legacy"
        assert not [name for name in env if name.startswith("INTENTREF") and name.endswith("ERA")]


def test_the_campaign_is_clean_against_the_reference() -> None:
    tally = properties_cli.campaign(parse("in-process"), seed=5, calls=1_500, heavy=False, differential=False)
    assert tally.clean and tally.total == 1_500, tally.notes
    assert min(tally.calls[op] for op in ("prepare", "accept", "cancel")) > 50


def test_a_differential_log_becomes_a_passing_case() -> None:
    target = ip.DifferentialTarget(InProcessTarget())
    with ip.Example(target, requirements=("R-BRG-006",)) as ex:
        session = ex.session()
        task = session.prepare({"instance": "order", "input": "查询订单 000123"})
        session.accept(ip.step_of(task, "{"))
        session.accept(ip.step_of(task, "{"))  # a replay
        run = ex._run
    case = {**run.case(), "id": "BRG-9999"}
    jsonschema.Draft202012Validator(fixture_schema()).validate({"area": "BRG", "title": "t", "cases": [case]})
    assert case["steps"][1]["args"]["stepToken"] == {"$reply": 0, "pointer": "/stepToken"}
    # spec: D-CNF-020 -- expectations are the projection: the repair task's stage, flag and tokens.
    assert case["steps"][2]["expect"]["$task"]["stepToken"] == {"$reply": 1, "pointer": "/stepToken"}
    assert case["steps"][2]["expect"]["$task"]["stage"] == "core"
    assert "instructions" not in case["steps"][2]["expect"]["$task"]
    assert case["steps"][2]["expect"]["$task"]["expiresAt"] == {"$absent": True}  # seed 000: none by default
    opened = InProcessTarget().open(ip.catalog_instances(), {})
    try:
        assert run_case(case, opened, "in-process").outcome == PASSED
    finally:
        opened.close()
    close_runs()
