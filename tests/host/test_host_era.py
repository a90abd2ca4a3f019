"""``intentref host --era``: the judge's server speaks the era the user pins, and the report says
which era the host spoke (issue 37 item 4, D-CNF-066).

The Python host's Client negotiates (``auto``): against a server pinned to one era it must end
up in that era, over stdio (the SDK's one-era loop refuses the other era's opening on the same
connection) and over HTTP.  The TypeScript SDK 1.x host speaks only the handshake: a server
pinned to 2026-07-28 refuses it, so it makes no call at all, where the same host passes with
``--era legacy``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.host.inprocess import judge_in_process, scenario_by_id
from intentref.suite.host.judge import with_era
from tests.host.host_support import NODE, NODE_DIR, PYTHON_HOST, judge_here, run_judge, scenario_path
from tests.host.test_in_process import in_process_host

PYTHON = shlex.quote(sys.executable)
STDIO_HOST = f"{PYTHON} {shlex.quote(str(PYTHON_HOST))} --server {{server}} --model {{model}} --request {{request}}"
URL_HOST = f"{PYTHON} {shlex.quote(str(PYTHON_HOST))} --url {{url}} --model {{model}} --request {{request}}"
TS_HOST = f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ts_host.mjs'))} --server {{server}} --model {{model}} --request {{request}}"


def _judged(tmp_path: Path, fork_socket: str | None, *args: str) -> tuple[int, dict[str, Any], str]:
    report_file = tmp_path / "report.json"
    done = judge_here(fork_socket, *args, "--scenario", str(scenario_path("HST-001")), "--json", str(report_file))
    assert report_file.exists(), done.stderr
    return done.returncode, json.loads(report_file.read_text("utf-8")), done.stdout + done.stderr


@pytest.mark.parametrize("era", ["2026", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_negotiating_host_speaks_the_era_the_judge_pins(era: str, transport: str, tmp_path: Path, fork_socket: str | None) -> None:
    http = ["--http", "--command", URL_HOST] if transport == "http" else ["--command", STDIO_HOST]
    status, report, said = _judged(tmp_path, fork_socket, *http, "--era", era)
    assert status == 0, said
    assert report["eraAsked"] == era and report["era"] == era


def test_without_era_the_report_says_which_era_the_host_chose(tmp_path: Path, fork_socket: str | None) -> None:
    status, report, said = _judged(tmp_path, fork_socket, "--command", STDIO_HOST)
    assert status == 0, said
    # The Python SDK's Client prefers 2026-07-28 when the server speaks both.
    assert report["eraAsked"] == "auto" and report["era"] == "2026"


def test_a_handshake_only_host_fails_against_a_server_pinned_to_2026_and_passes_in_legacy(tmp_path: Path, fork_socket: str | None) -> None:
    if not NODE.exists():
        pytest.skip("node and the TypeScript SDK are not installed")
    status, report, said = _judged(tmp_path, fork_socket, "--command", TS_HOST, "--era", "legacy")
    assert status == 0 and report["era"] == "legacy", said
    # It made no tool call: the server refused its handshake, and it ended with no reply (a
    # reference-level fault: the seeds let a host give up).
    status, report, said = _judged(tmp_path, fork_socket, "--command", TS_HOST, "--era", "2026", "--level", "reference")
    assert status == 1 and report["summary"]["failed"] == 1 and report["era"] == "-", said


def test_the_in_process_judge_connects_in_the_pinned_era() -> None:
    for era in ("2026", "legacy"):
        verdict = judge_in_process(in_process_host, with_era(scenario_by_id("HST-001"), era))
        assert verdict.violations == [] and verdict.eras == {era}


def test_era_with_fuzz_is_one_line_and_status_2() -> None:
    done = run_judge("--command", STDIO_HOST, "--fuzz", "--era", "legacy")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--era" in lines[0], lines
