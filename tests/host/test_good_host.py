"""The host that follows every rule passes the whole catalogue, run as a host developer runs it.

``tests/hosts/python_host.py`` is the README's host loop carried through to every host rule;
``intentref host`` runs it on every scenario of ``conformance/hosts/`` (both wordings where a
scenario asks for them) and must find nothing, not even at reference level: the scenarios'
expected outcomes (D-HST-009) are this host's.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.host.host_support import CATALOGUE, PYTHON_HOST, python_command, run_judge
from tests.proven_sdks import check_row


def test_the_python_host_passes_every_scenario_at_reference_level(tmp_path):
    report_file, junit_file = tmp_path / "report.json", tmp_path / "report.xml"
    done = run_judge("--command", python_command(PYTHON_HOST), "--level", "reference",
                     "--json", str(report_file), "--junit", str(junit_file))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    scenario_ids = sorted(s["id"] for s in report["scenarios"])
    assert scenario_ids == sorted(json.loads(p.read_text("utf-8"))["id"] for p in CATALOGUE.glob("*.json"))
    assert len(scenario_ids) >= 16
    assert [v for s in report["scenarios"] for v in s["violations"]] == []
    assert report["summary"] == {"scenarios": len(scenario_ids), "failed": 0}
    assert f"{len(scenario_ids)} of {len(scenario_ids)} scenarios pass at reference level" in done.stdout
    check_row(PYTHON_HOST.name, "stdio", report["era"], (s["status"] for s in report["scenarios"]))
    suite = ET.parse(junit_file).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == str(len(scenario_ids)) and suite.get("failures") == "0"


def test_the_bench_figures_measure_the_judge_beside_the_hosts_own_start_up():
    from intentref.devtools.bench_host import figures

    per_run, catalogue, http, fuzzed = figures(smoke=True)
    assert per_run.name == "host judge per run" and per_run.floor > 0 and per_run.ours > 0
    assert catalogue.floor == 60.0 and 0 < catalogue.ours < 60.0
    # D-HST-011: the HTTP run is weighed against the stdio run of the same scenarios
    assert http.floor == catalogue.ours and http.ours > 0 and http.target == 1.5
    assert fuzzed.name == "host fuzz 4" and fuzzed.floor == 120.0 and fuzzed.ours > 0
    for figure in (per_run, http, fuzzed):
        assert "FAILED" not in figure.what  # the good host passed what the bench ran
