"""``intentref host --fuzz``: reproducible random scenarios, and a failure shrunk to a replayable file."""

from __future__ import annotations

import json
import re

import jsonschema

from intentref.suite.host import fuzz
from intentref.suite.host.judge import scenario_schema
from tests.host.host_support import BROKEN, PYTHON_HOST, python_command, run_judge


def test_the_same_seed_draws_the_same_scenarios_and_every_one_is_valid():
    first, again, other = fuzz.draw_plans(7, 60), fuzz.draw_plans(7, 60), fuzz.draw_plans(8, 60)
    assert first == again and len(first) == 60
    assert first != other
    validator = jsonschema.Draft202012Validator(scenario_schema())
    scenarios = [fuzz.scenario_of(plan, f"FUZZ-7-{i}") for i, plan in enumerate(first)]
    for scenario in scenarios:
        validator.validate(scenario)
    # The draw covers what the issue asks for: faults, refusals, over-budget texts, repairs, wordings.
    assert any(s["server"]["faults"] for s in scenarios)
    assert any("refuse" in step for s in scenarios for step in s["model"])
    assert any("padTo" in step for s in scenarios for step in s["model"])
    assert {s["server"]["wordings"] for s in scenarios} == {"reference", "alternate", "both"}
    assert {s["expect"]["outcome"] for s in scenarios} == {"result", "error", "no reply"}


def test_the_python_host_passes_drawn_scenarios_at_reference_level(tmp_path):
    done = run_judge("--command", python_command(PYTHON_HOST), "--fuzz", "--seed", "5", "--count", "6",
                     "--level", "reference", "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 of 6 drawn scenarios pass at reference level (seed 5)" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_broken_host_is_caught_and_its_failure_shrunk_to_a_replayable_file(tmp_path):
    command = python_command(BROKEN / "stale_token.py")
    out = tmp_path / "not" / "there" / "yet"  # --out is made when it does not exist (issue 38)
    done = run_judge("--command", command, "--fuzz", "--seed", "1", "--count", "4", "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "R-HST-007 (normative) FUZZ-1-" in done.stdout
    written = out / "host-fuzz-seed1.json"
    scenario = json.loads(written.read_text("utf-8"))
    jsonschema.Draft202012Validator(scenario_schema()).validate(scenario)
    # The file says what it is: the id the tool printed, where it was shrunk from, and the
    # rule it catches as its requirement (issue 38).
    shrunk = re.search(r"shrunk (FUZZ-1-\d+) to (FUZZ-1-\d+-shrunk) in ", done.stdout)
    assert shrunk and scenario["id"] == shrunk.group(2) == f"{shrunk.group(1)}-shrunk", done.stdout
    assert scenario["title"].endswith(f"(shrunk from {shrunk.group(1)})")
    assert scenario["requirements"] == ["R-HST-007"]
    # Shrunk: no fault, one wording, no context, no over-budget text — none of it is needed to
    # show a stale token — and at most the three model runs a stale token needs (two tasks).
    assert scenario["server"] == {"wordings": "reference", "faults": []}
    assert "context" not in scenario["request"]
    assert all("padTo" not in step for step in scenario["model"])
    assert 2 <= len(scenario["model"]) <= 3
    replay = run_judge("--command", command, "--scenario", str(written))
    assert replay.returncode == 1
    assert f"R-HST-007 (normative) {scenario['id']} call 3 intent_accept" in replay.stdout
