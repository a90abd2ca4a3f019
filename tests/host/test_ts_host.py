"""A host on the TypeScript SDK's Client passes the whole catalogue too (issue 26, point 4).

``tests/node/ts_host.mjs`` implements the same contract in JavaScript; ``intentref host``
judges it exactly as it judges the Python host, so the contract is shown to be met by a
second language and a second SDK, not only by code that shares the judge's.
"""

from __future__ import annotations

import json
import shlex

import pytest

from tests.host.host_support import CATALOGUE, NODE, NODE_DIR, run_judge
from tests.proven_sdks import check_row

pytestmark = pytest.mark.skipif(not NODE.exists(), reason="node and the TypeScript SDK are not installed")


def test_the_typescript_host_passes_every_scenario_at_reference_level(tmp_path):
    command = f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ts_host.mjs'))} --server {{server}} --model {{model}} --request {{request}}"
    report_file = tmp_path / "report.json"
    done = run_judge("--command", command, "--level", "reference", "--json", str(report_file))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    assert len(report["scenarios"]) == len(list(CATALOGUE.glob("*.json")))
    assert [v for s in report["scenarios"] for v in s["violations"]] == []
    assert all(s["status"] == "passed" for s in report["scenarios"])
    check_row("ts_host.mjs", "stdio", report["era"], (s["status"] for s in report["scenarios"]))


def test_over_stdio_the_two_sdks_speak_different_eras():
    """The Python SDK's Client negotiates the 2026-07-28 era, the TypeScript SDK's the handshake era."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    from intentref.suite.host.judge import check_command, judge_scenario, load_scenario
    from tests.host.host_support import PYTHON_HOST, python_command, scenario_path

    ts = f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ts_host.mjs'))} --server {{server}} --model {{model}} --request {{request}}"
    eras = {}
    for name, command in (("python", python_command(PYTHON_HOST)), ("typescript", ts)):
        verdict = judge_scenario(check_command(command), load_scenario(scenario_path("HST-001")))
        assert verdict.violations == []
        eras[name] = {call.protocol in MODERN_PROTOCOL_VERSIONS for run in verdict.runs for call in run.calls}
    assert eras == {"python": {True}, "typescript": {False}}
