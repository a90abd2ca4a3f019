"""``--era both``: every case in each era, side by side in every report (issue 37 item 3).

Real servers over real stdio: the bundled reference (both eras), the TypeScript SDK 1.x server
(``tests/node/ts_server.mjs``, the handshake era only) and the reference behind a pipe that
breaks it in the 2026-07-28 era (``modern_era_broken_server.py``).  D-CNF-070 (both eras, side
by side; a target without eras runs once), D-CNF-071 (an era not spoken is unsupported in one
line), D-CNF-072 (a failure in either era fails the run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema

from intentref.suite.cases.fixtures import load_cases, select
from intentref.suite.commands import matrix
from intentref.suite.reports.conformance import report_schema
from tests.host.host_support import (
    NODE,
    PYTHON_HOST,
    judge_here,
    python_command,
    scenario_path,
    warm_fork_server,  # noqa: F401  (the fixture fork_socket)
)

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = Path(sys.executable).parent / "intent-runtime-mcp"
TS_SERVER = f"{NODE} {ROOT / 'tests' / 'node' / 'ts_server.mjs'} --upstream {UPSTREAM} --config {{config}}"
BROKEN_IN_2026 = f"{sys.executable} {Path(__file__).parent / 'modern_era_broken_server.py'} --config {{config}}"
TS_HOST = f"{NODE} {ROOT / 'tests' / 'node' / 'ts_host.mjs'} --server {{server}} --model {{model}} --request {{request}}"


def _conformance(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", "--era", "both", "--jobs", "1", "--json", str(report),
         *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert report.exists(), f"no report (status {done.returncode}):\n{done.stderr[-2000:]}"
    document = json.loads(report.read_text("utf-8"))
    jsonschema.Draft202012Validator(report_schema()).validate(document)
    return done.returncode, document, done.stdout + done.stderr


def _by_era(document: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(case["id"], case.get("era"), case["outcome"]) for case in document["cases"]]


def test_the_bundled_server_is_judged_in_each_era_side_by_side_in_every_report(tmp_path: Path) -> None:
    junit, html, markdown = tmp_path / "r.xml", tmp_path / "r.html", tmp_path / "r.md"
    status, document, said = _conformance(tmp_path, "--only", "BRG-000[12]", "--junit", str(junit),
                                          "--html", str(html), "--markdown", str(markdown))  # fmt: skip
    assert status == 0, said
    assert _by_era(document) == [("BRG-0001", "2026", "passed"), ("BRG-0001", "legacy", "passed"),
                                 ("BRG-0002", "2026", "passed"), ("BRG-0002", "legacy", "passed")]  # fmt: skip
    assert document["runInfo"]["eraAsked"] == "both" and document["runInfo"]["era"] == "2026+legacy"
    assert set(document["runInfo"]["eras"]) == {"2026", "legacy"}
    assert document["summary"]["byEra"]["2026"]["passed"] == document["summary"]["byEra"]["legacy"]["passed"] == 2
    names = [case.get("name") for case in ET.parse(junit).iter("testcase")]
    assert names == ["BRG-0001 [2026]", "BRG-0001 [legacy]", "BRG-0002 [2026]", "BRG-0002 [legacy]"]
    page = html.read_text("utf-8")
    assert "BRG-0001 [2026]" in page and "BRG-0001 [legacy]" in page and "era legacy" in page
    summary = markdown.read_text("utf-8")
    assert "### By era" in summary and "| 2026 | 2 | 2 |" in summary and "| legacy | 2 | 2 |" in summary


def test_a_server_of_the_handshake_era_gets_the_2026_cases_unsupported_in_one_line(tmp_path: Path) -> None:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 under tests/node"
    status, document, said = _conformance(tmp_path, "--only", "BRG-0001", "--stdio", TS_SERVER)
    assert status == 0, said
    assert _by_era(document) == [("BRG-0001", "2026", "unsupported"), ("BRG-0001", "legacy", "passed")]
    reason = document["cases"][0]["detail"]
    assert "\n" not in reason and "2026-07-28" in reason and "initialize handshake" in reason and "--era" not in reason
    assert document["runInfo"]["era"] == "legacy" and document["runInfo"]["eras"]["2026"]["refused"] == reason


def test_a_failure_in_one_era_fails_the_run(tmp_path: Path) -> None:
    status, document, said = _conformance(tmp_path, "--only", "BRG-0001", "--stdio", BROKEN_IN_2026)
    assert status == 1, said
    assert _by_era(document) == [("BRG-0001", "2026", "failed"), ("BRG-0001", "legacy", "passed")]
    assert "BRG-0001 [2026]" in said


def test_a_target_without_eras_runs_once(tmp_path: Path) -> None:
    status, document, said = _conformance(tmp_path, "--only", "BRG-0001", "--in-process")
    assert status == 0, said
    assert _by_era(document) == [("BRG-0001", None, "passed")] and "byEra" not in document["summary"]


def test_properties_reports_each_era_and_an_era_not_spoken_as_unsupported(tmp_path: Path) -> None:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 under tests/node"
    report = tmp_path / "properties.json"
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "properties", "--era", "both", "--stdio", TS_SERVER, "--no-pytest",
         "--calls", "20", "--seed", "1", "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures = json.loads(report.read_text("utf-8"))
    assert figures["eraAsked"] == "both" and figures["passed"] is True
    assert "initialize handshake" in figures["eras"]["2026"]["unsupported"]
    assert figures["eras"]["legacy"]["campaignCalls"] == 20 and figures["eras"]["legacy"]["divergences"] == 0


def _host(tmp_path: Path, fork_socket: str | None, command: str) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "host.json"
    done = judge_here(fork_socket, "--command", command, "--era", "both", "--scenario", str(scenario_path("HST-001")),
                     "--json", str(report))  # fmt: skip
    assert report.exists(), done.stderr
    return done.returncode, json.loads(report.read_text("utf-8")), done.stdout + done.stderr


def test_host_judges_each_scenario_in_each_era(tmp_path: Path, fork_socket: str | None) -> None:
    status, report, said = _host(tmp_path, fork_socket, python_command(PYTHON_HOST))
    assert status == 0, said
    assert [(s["id"], s["era"], s["status"]) for s in report["scenarios"]] == [
        ("HST-001", "2026", "passed"), ("HST-001", "legacy", "passed")]  # fmt: skip
    assert report["eraAsked"] == "both" and report["era"] == "2026+legacy"
    assert report["summary"]["byEra"]["legacy"]["passed"] == 1
    assert "pass HST-001 [2026]" in said and "pass HST-001 [legacy]" in said


def test_a_host_of_the_handshake_era_has_its_2026_scenarios_unsupported(tmp_path: Path, fork_socket: str | None) -> None:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 under tests/node"
    status, report, said = _host(tmp_path, fork_socket, TS_HOST)
    assert status == 0, said
    assert [(s["era"], s["status"]) for s in report["scenarios"]] == [("2026", "unsupported"), ("legacy", "passed")]
    assert "no tool call in this era" in report["scenarios"][0]["detail"] and report["era"] == "legacy"


def test_matrix_makes_a_column_per_era_and_one_for_a_target_without_eras() -> None:
    cases = select(load_cases(), None, ["BRG-0001"], [])
    impls = matrix.columns_per_era([matrix.Implementation("ref", "reference", "user", era="both"),
                                    matrix.Implementation("direct", "in-process", "user", era="both")])  # fmt: skip
    wall = matrix.run_matrix(impls, cases, time_limit=300, timeout=10, jobs=1)
    document = matrix.document(impls, cases, wall, 300)
    jsonschema.Draft202012Validator(matrix.matrix_schema()).validate(document)
    columns = {i["name"]: (i["era"], i["eraNegotiated"]) for i in document["implementations"]}
    assert columns == {"ref [2026]": ("2026", "2026"), "ref [legacy]": ("legacy", "legacy"), "direct": ("auto", "-")}
    assert {result["outcome"] for result in document["cases"][0]["results"].values()} == {"passed"}
