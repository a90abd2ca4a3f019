"""``intentref host --http``: the same judge over streamable HTTP, in both protocol eras.

The judge starts its server itself and gives the host ``{url}``.  The Python SDK's Client
negotiates the 2026-07-28 era over HTTP (no session: one shared Bridge session, D-MCP-003);
the TypeScript SDK's speaks the handshake era (one Bridge session per MCP session,
D-MCP-002) — so the two good hosts cover both eras, and the connection names the server
logged show which one each used.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from intentref.suite.host.judge import check_command, judge_scenario, load_scenario
from tests.host.host_support import BROKEN, CATALOGUE, NODE, NODE_DIR, PYTHON_HOST, run_judge, scenario_path
from tests.proven_sdks import check_row

PYTHON_URL_HOST = f"{shlex.quote(sys.executable)} {shlex.quote(str(PYTHON_HOST))} --url {{url}} --model {{model}} --request {{request}}"
TS_URL_HOST = f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ts_host.mjs'))} --url {{url}} --model {{model}} --request {{request}}"


@pytest.mark.parametrize(("language", "command", "connection"), [
    ("python", PYTHON_URL_HOST, "http-stateless"),
    ("typescript", TS_URL_HOST, "http-1"),
])  # fmt: skip
def test_a_good_host_passes_every_scenario_over_http(language, command, connection, tmp_path):
    if language == "typescript" and not NODE.exists():
        pytest.skip("node and the TypeScript SDK are not installed")
    report_file = tmp_path / "report.json"
    done = run_judge("--http", "--command", command, "--level", "reference", "--json", str(report_file))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    assert len(report["scenarios"]) == len(list(CATALOGUE.glob("*.json")))
    assert [v for s in report["scenarios"] for v in s["violations"]] == []
    host = "ts_host.mjs" if language == "typescript" else PYTHON_HOST.name
    check_row(host, "HTTP", report["era"], (s["status"] for s in report["scenarios"]))
    # Which era: the connection the server logged for the host's calls.
    verdict = judge_scenario(check_command(command, http=True), load_scenario(scenario_path("HST-001")), http=True)
    assert verdict.violations == []
    assert {call.connection for run in verdict.runs for call in run.calls} == {connection}
    assert all(c.closed for run in verdict.runs for c in run.connections.values())


def test_a_broken_host_fails_on_its_rule_over_http(tmp_path):
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(BROKEN / 'stale_token.py'))} --url {{url}} --model {{model}} --request {{request}}"
    report_file = tmp_path / "report.json"
    done = run_judge("--http", "--command", command, "--scenario", str(scenario_path("HST-004")), "--json", str(report_file))
    assert done.returncode == 1, done.stdout + done.stderr
    rules = {v["rule"] for s in json.loads(report_file.read_text("utf-8"))["scenarios"] for v in s["violations"]
             if v["level"] == "normative"}  # fmt: skip
    assert rules == {"R-HST-007"}


def test_over_http_the_command_takes_url_not_server():
    done = run_judge("--http", "--command", f"{shlex.quote(sys.executable)} x.py --server {{server}} {{model}} {{request}}", timeout=60)
    assert done.returncode == 2 and "unknown placeholder {server}; the placeholders with --http are {url}" in done.stderr
