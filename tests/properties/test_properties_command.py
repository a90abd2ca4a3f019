"""``intentref properties``: the suite passes against the reference and catches a different target."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from intentref import properties_cli
from intentref import strategies as ist
from intentref.conformance import faulty
from intentref.conformance.fixtures import fixture_schema
from intentref.conformance.script import FAILED, PASSED, run_case
from intentref.conformance.targets import InProcessTarget

FAULT_NAMES = [name for name, fault in faulty.FAULTS.items() if not fault.envelope_only]


@pytest.fixture(scope="module")
def broken_module(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A module of Targets, each the reference with one rule broken (intentref.conformance.faulty)."""
    folder = tmp_path_factory.mktemp("broken")
    lines = ["from intentref.conformance.faulty import faulty_target\n"]
    lines += [f"def {name}():\n    return faulty_target({name!r})\n" for name in FAULT_NAMES]
    (folder / "broken_targets.py").write_text("".join(lines), "utf-8")
    return folder


def _properties(*args: str, pythonpath: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "intentref.cli", "properties", *args], capture_output=True,
                          text=True, env=env, check=False, timeout=170)  # fmt: skip


def _clean(figures: dict[str, Any]) -> None:
    for key in ("uncaughtExceptions", "nonReplies", "lostActiveJobs", "replayDrifts", "divergences", "mispredictions"):
        assert figures[key] == 0, (key, figures)
    assert figures["pytest"] == "passed"


def test_the_properties_pass_in_process(tmp_path: pathlib.Path) -> None:
    done = _properties("--in-process", "--seed", "1", "--calls", "300", "--json", str(tmp_path / "f.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout.split("passed")[0][-30:]
    figures = json.loads((tmp_path / "f.json").read_text("utf-8"))
    _clean(figures)
    assert figures["propertyCalls"] > 1_000 and figures["campaignCalls"] == 300


def test_the_properties_pass_over_stdio(tmp_path: pathlib.Path) -> None:
    done = _properties("--stdio", "reference", "--profile", "smoke", "--seed", "2", "--calls", "100",
                       "--json", str(tmp_path / "f.json"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads((tmp_path / "f.json").read_text("utf-8"))
    _clean(figures)
    assert figures["target"] == "stdio:reference"


def test_a_different_reason_order_is_caught_and_written_as_a_case(broken_module: pathlib.Path,
                                                                  tmp_path: pathlib.Path) -> None:  # fmt: skip
    cases_file = tmp_path / "cases.json"
    done = _properties("--python", "broken_targets:reason_order", "-k", "status_reason", "--seed", "3", "--calls", "0",
                       "--cases-out", str(cases_file), pythonpath=broken_module)  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "hypothesis seed: 3" in done.stdout and "/reason" in done.stdout
    document = json.loads(cases_file.read_text("utf-8"))
    jsonschema.Draft202012Validator(fixture_schema()).validate(document)  # a fixture file as it stands
    case = document["cases"][0]
    reference = InProcessTarget().open(ist.catalog_instances(), {})
    broken = faulty.faulty_target("reason_order").open(ist.catalog_instances(), {})
    try:
        assert run_case(case, reference, "in-process").outcome == PASSED  # the reference's reply, exactly
        assert run_case(case, broken, "in-process").outcome == FAILED
    finally:
        reference.close()
        broken.close()


@pytest.mark.parametrize("fault", FAULT_NAMES)
def test_the_campaign_catches_each_faulty_bridge(fault: str, broken_module: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.syspath_prepend(str(broken_module))
    tally = properties_cli.campaign(f"python:broken_targets:{fault}", seed=1, calls=600, heavy=False, differential=True)
    assert tally.divergences > 0, f"{fault} went unnoticed"
    assert tally.uncaught_exceptions == tally.non_replies == 0
    case = properties_cli._case_of(next(n for n in tally.notes if n.startswith("divergence:")))
    jsonschema.Draft202012Validator(fixture_schema()).validate({"area": "NEW", "title": "t", "cases": [case]})


def test_the_campaign_is_clean_against_the_reference() -> None:
    tally = properties_cli.campaign("in-process", seed=5, calls=1_500, heavy=False, differential=False)
    assert tally.clean and tally.total == 1_500, tally.notes
    assert min(tally.calls[op] for op in ("prepare", "accept", "cancel")) > 50


def test_a_differential_log_becomes_a_passing_case() -> None:
    target = ist.DifferentialTarget(InProcessTarget())
    with ist.Example(target, requirements=("R-BRG-006",)) as ex:
        session = ex.session()
        task = session.prepare({"instance": "order", "input": "查询订单 000123"})
        session.accept(ist.step_of(task, "{"))
        session.accept(ist.step_of(task, "{"))  # a replay
        run = ex._run
    case = {**run.case(), "id": "BRG-9999"}
    jsonschema.Draft202012Validator(fixture_schema()).validate({"area": "BRG", "title": "t", "cases": [case]})
    assert case["steps"][1]["args"]["stepToken"] == {"$reply": 0, "pointer": "/stepToken"}
    assert case["steps"][2]["expect"]["stepToken"] == {"$reply": 1, "pointer": "/stepToken"}
    opened = InProcessTarget().open(ist.catalog_instances(), {})
    try:
        assert run_case(case, opened, "in-process").outcome == PASSED
    finally:
        opened.close()
    ist.close_runs()
