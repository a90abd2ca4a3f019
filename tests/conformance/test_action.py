"""The GitHub Action (``action.yml``, issue 39): read as GitHub reads it, its steps run as a runner runs them.

A runner runs a composite action's ``run`` step as ``bash --noprofile --norc -eo pipefail``
on a file holding the step's text, after replacing its ``${{ … }}`` expressions, with the
step's ``env`` and the runner's variables (``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``,
``GITHUB_ACTION_PATH``, ``RUNNER_TEMP``).  ``run_action`` does the same here, with
``INTENTREF_PYTHON`` set to this interpreter: the script's documented speed-up that skips
installing the suite into a new venv (the code under test is still this checkout's, through
the inherited ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.ci_support import cases_by_id, parse, read
from tests.conftest import ROOT
from tests.host.host_support import PYTHON_HOST, python_command, scenario_path

ACTION = ROOT / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
COUNTS = ("passed", "failed", "errored", "unsupported")
PATHS = ("json", "junit", "html", "markdown")
BRG = "--only 'BRG-*'"


def action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text("utf-8"))
    return loaded


@dataclass
class ActionRun:
    status: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    step_summary: str


def _expand(text: str, context: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda m: context[m.group(1)], text)


def run_action(inputs: dict[str, str], workspace: Path) -> ActionRun:
    """The action's steps, in order, as a runner runs them; stops at the first that fails, as a runner does."""
    declared = action()
    context = {f"inputs.{name}": str(inputs.get(name, spec.get("default", ""))) for name, spec in declared["inputs"].items()}
    context["github.action_path"] = str(ROOT)
    step_summary = workspace / "step_summary.md"
    step_summary.write_text("", "utf-8")
    runner = {"GITHUB_STEP_SUMMARY": str(step_summary), "GITHUB_ACTION_PATH": str(ROOT),
              "RUNNER_TEMP": str(workspace), "INTENTREF_PYTHON": sys.executable}  # fmt: skip
    status, stdout, stderr = 0, "", ""
    for number, step in enumerate(declared["runs"]["steps"]):
        output_file = workspace / f"output-{number}"
        output_file.write_text("", "utf-8")
        script = workspace / f"step-{number}.sh"
        script.write_text(_expand(step["run"], context), "utf-8")
        env = {**os.environ, **runner, "GITHUB_OUTPUT": str(output_file)}
        env.update({key: _expand(str(value), context) for key, value in step.get("env", {}).items()})
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        status, stdout, stderr = done.returncode, stdout + done.stdout, stderr + done.stderr
        step_outputs = dict(line.split("=", 1) for line in read(output_file).splitlines() if "=" in line)
        context.update({f"steps.{step['id']}.outputs.{key}": value for key, value in step_outputs.items()})
        if status != 0:
            break
    resolved = {name: EXPRESSION.sub(lambda m: context.get(m.group(1), ""), spec["value"])
                for name, spec in declared["outputs"].items()}  # fmt: skip
    return ActionRun(status, stdout, stderr, resolved, read(step_summary))


# --------------------------------------------------------------------------- what action.yml declares


def test_the_action_declares_its_inputs_outputs_and_one_composite_step_per_job() -> None:
    declared = action()
    assert declared["runs"]["using"] == "composite"
    assert set(declared["inputs"]) >= {"mode", "target", "command", "level", "era", "expected-failures", "jobs",
                                       "args", "scenarios"}  # fmt: skip
    assert set(declared["outputs"]) >= {*COUNTS, "json", "junit", "html"}
    step_ids = {step.get("id") for step in declared["runs"]["steps"]}
    for name, spec in declared["outputs"].items():
        assert spec["description"]
        assert re.fullmatch(rf"\$\{{\{{ steps\.(\w+)\.outputs\.{re.escape(name)} \}}\}}", spec["value"]), name
        assert spec["value"].split(".")[1] in step_ids
    passed_on = {m.group(1) for step in declared["runs"]["steps"] for value in step.get("env", {}).values()
                 for m in re.finditer(r"inputs\.([\w-]+)", str(value))}  # fmt: skip
    assert passed_on == set(declared["inputs"])  # every input reaches the script, none is invented
    for step in declared["runs"]["steps"]:
        assert step["shell"] == "bash" and "github.action_path" in step["run"]


# --------------------------------------------------------------------------- its steps, run


def _check_reports(run: ActionRun) -> dict[str, Any]:
    for name in PATHS:
        assert Path(run.outputs[name]).is_file(), name
    report: dict[str, Any] = json.loads(read(Path(run.outputs["json"])))
    assert {name: int(run.outputs[name]) for name in COUNTS} == {name: report["summary"][name] for name in COUNTS}
    assert run.step_summary.strip() == read(Path(run.outputs["markdown"])).strip()
    return report


def test_a_passing_implementation_passes_with_its_counts_reports_and_summary(tmp_path: Path) -> None:
    run = run_action({"args": BRG}, tmp_path)
    assert run.status == 0, run.stdout[-3000:] + run.stderr
    report = _check_reports(run)
    assert run.outputs["failed"] == "0" and int(run.outputs["passed"]) > 0
    assert report["runInfo"]["target"].startswith("reference over stdio")  # the bundled one, its default (D-CNF-057)
    page = parse(run.step_summary)
    assert page.headings[0] == (2, f"intentref conformance: {run.outputs['passed']} passed, 0 failed")
    assert Path(run.outputs["json"]).parent == tmp_path / "intentref-reports"


def test_a_failing_implementation_fails_and_its_summary_lists_a_failed_case(tmp_path: Path) -> None:
    run = run_action({"args": f"--target faulty:ids_from_zero {BRG}", "report-dir": "out"}, tmp_path)
    assert run.status == 1, run.stdout[-3000:] + run.stderr
    report = _check_reports(run)
    assert int(run.outputs["failed"]) > 0
    failed = [case for case in report["cases"] if case["outcome"] == "failed"]
    items = parse(run.step_summary).items
    assert any(item.startswith(f"{failed[0]['id']} failed") and failed[0]["mismatches"][0] in item for item in items)
    assert Path(run.outputs["json"]).parent == tmp_path / "out"


def test_an_outside_server_over_stdio(tmp_path: Path) -> None:
    server = f"{shlex.quote(sys.executable)} {ROOT / 'tests' / 'outside' / 'plain_sdk_server.py'} --config {{config}}"
    run = run_action({"target": "stdio", "command": server, "args": BRG, "level": "normative"}, tmp_path)
    assert run.status == 0, run.stdout[-3000:] + run.stderr
    report = _check_reports(run)
    assert "plain_sdk_server.py" in report["runInfo"]["target"]
    assert {case["level"] for case in cases_by_id(report).values()} == {"normative"}


def test_the_host_judge_through_the_action(tmp_path: Path) -> None:
    run = run_action({"mode": "host", "command": python_command(PYTHON_HOST),
                      "scenarios": str(scenario_path("HST-002"))}, tmp_path)  # fmt: skip
    assert run.status == 0, run.stdout[-3000:] + run.stderr
    assert {name: run.outputs[name] for name in COUNTS} == {"passed": "1", "failed": "0", "errored": "0", "unsupported": "0"}
    assert parse(run.step_summary).headings[0] == (2, "intentref host: 1 of 1 scenarios pass at normative level")


@pytest.mark.parametrize(("inputs", "message"), [
    ({"target": "grpc"}, "target must be stdio, http or harness, not 'grpc'"),
    ({"mode": "host"}, "mode host needs command"),
    ({"args": "--only 'BRG-*"}, "args cannot be split"),
    ({"args": "--level sometimes"}, "--level: invalid choice"),
])  # fmt: skip
def test_a_mistaken_input_stops_the_step_with_status_2_before_anything_runs(inputs: dict[str, str], message: str, tmp_path: Path) -> None:
    run = run_action(inputs, tmp_path)
    assert run.status == 2, run.stdout + run.stderr
    assert message in run.stderr
    assert run.outputs["failed"] == "" and run.step_summary == ""  # nothing ran


# --------------------------------------------------------------------------- the documented workflows


def _yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", read(path), re.S)


def test_the_documented_workflow_is_under_15_lines_and_uses_only_declared_inputs() -> None:
    github, gitlab = _yaml_blocks(ROOT / "conformance" / "ci.md")
    assert len(github.strip().splitlines()) < 15
    inputs = set(action()["inputs"])
    steps = yaml.safe_load(github)["jobs"]["intentref"]["steps"]
    ours = [step for step in steps if "intentref@" in step.get("uses", "")]
    assert len(ours) == 1 and set(ours[0]["with"]) <= inputs
    job = yaml.safe_load(gitlab)["intentref"]
    passed_as = {name.removeprefix("INPUT_").lower().replace("_", "-") for name in job["variables"]}
    assert passed_as <= inputs
    assert any("conformance/action/run.sh" in line for line in job["script"])
    assert job["artifacts"]["reports"]["junit"].endswith("/report.junit.xml")
