"""The judge's own edges: command-line mistakes, hosts that break the contract, bad input.

A mistake in how the judge is called is one plain line on stderr and exit status 2, found
before any scenario runs (so: fast, and nothing on stdout).  A host that breaks the contract
(D-HST-001) — prints something that is not a reply, never exits — is judged, not a crash.
These hosts are one-line shell commands: they start no server, so every run here is short.
"""

from __future__ import annotations

import json
import shlex
import sys
import time

import pytest

from tests.host.host_support import (
    NODE,
    PYTHON_HOST,
    python_command,
    reaching_host,
    run_judge,
    scenario_path,
    shell_host,
)

GOOD = python_command(PYTHON_HOST)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--command", "my-host --model {model} --request {request}"], "lacks the placeholder {server}"),
        (["--command", f"{sys.executable} x.py --server {{server}} --request {{request}}"], "lacks the placeholder {model}"),
        (["--command", f"{sys.executable} x.py {{server}} {{model}} {{request}} {{url}}"], "unknown placeholder {url}"),
        (["--command", "no-such-host-program {server} {model} {request}"], "'no-such-host-program' is not found"),
        (["--command", "'unbalanced {server} {model} {request}"], "cannot be split"),
        (["--command", "{server} {model} {request}"], "must start with the host's program"),
        (["--command", GOOD, "--scenario", "no/such/scenario.json"], "no such scenario file"),
        (["--command", GOOD, "--json", "/no/such/folder/report.json"], "--json /no/such/folder/report.json"),
        (["--command", GOOD, "--timeout", "0"], "must be positive"),
    ],
)
def test_a_command_line_mistake_is_one_line_and_status_2(args, expected):
    started = time.monotonic()
    done = run_judge(*args, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # no scenario ran
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("intentref host: ") and expected in lines[0], done.stderr
    assert time.monotonic() - started < 30


def test_a_scenario_file_that_breaks_the_schema_is_a_command_line_mistake(tmp_path):
    scenario = json.loads(scenario_path("HST-001").read_text("utf-8"))
    scenario["model"] = [{"refuse": "x", "fail": 3}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(scenario), "utf-8")
    not_json = tmp_path / "not.json"
    not_json.write_text("{", "utf-8")
    for path, expected in ((bad, "not a host scenario at /model/0"), (not_json, "not JSON")):
        done = run_judge("--command", GOOD, "--scenario", str(path), timeout=60)
        assert done.returncode == 2 and expected in done.stderr and done.stdout == "", done.stderr


def test_a_host_that_prints_no_reply_breaks_the_contract(tmp_path):
    report_file, html_file = tmp_path / "r.json", tmp_path / "r.html"
    done = run_judge("--command", reaching_host("echo not json"), "--scenario", str(scenario_path("HST-002")),
                     "--json", str(report_file), "--html", str(html_file), timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    violations = json.loads(report_file.read_text("utf-8"))["scenarios"][0]["violations"]
    assert {(v["rule"], v["level"]) for v in violations} >= {("D-HST-001", "contract")}
    line = "D-HST-001 (contract) HST-002 outcome: exited 0 without printing a result or error BridgeReply"
    assert line in done.stdout
    page = html_file.read_text("utf-8")
    assert "0 of 1 scenarios pass at normative level" in page and line in page
    assert '<div class="case failed" id="case-HST-002">' in page and '<span class="badge bg-failed">failed</span>' in page


def test_a_host_that_prints_an_invented_reply_is_caught(tmp_path):
    invented = json.dumps({"kind": "error", "error": "not an object"})
    report_file = tmp_path / "r.json"
    done = run_judge("--command", reaching_host(f"echo {shlex.quote(invented)}"), "--scenario",
                     str(scenario_path("HST-002")), "--json", str(report_file), timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    rules = {v["rule"] for v in json.loads(report_file.read_text("utf-8"))["scenarios"][0]["violations"]}
    assert "R-HST-009" in rules  # an error reply the service never returned


def test_a_host_that_never_exits_is_stopped_and_reported(tmp_path):
    report_file = tmp_path / "r.json"
    started = time.monotonic()
    done = run_judge("--command", reaching_host("sleep 60"), "--scenario", str(scenario_path("HST-002")),
                     "--timeout", "2", "--json", str(report_file), timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert time.monotonic() - started < 40
    violations = json.loads(report_file.read_text("utf-8"))["scenarios"][0]["violations"]
    assert ("D-HST-001", "the host did not exit within the time limit") in {(v["rule"], v["message"]) for v in violations}


@pytest.mark.parametrize(
    ("host", "said"),
    [(shell_host("exit 1"), "exit status 1; no stderr"),
     (f"{NODE} no-such-host.mjs {{server}} {{model}} {{request}}", "Cannot find module"),
     (f"{sys.executable} no_such_host.py {{server}} {{model}} {{request}}", "No such file or directory")],
)  # fmt: skip
def test_a_host_that_never_reaches_the_server_cannot_run_status_3(tmp_path, host, said):
    # Issue 38: such a host "passed" every scenario; it is a target that could not start.
    report_file = tmp_path / "r.json"
    done = run_judge("--command", host, "--json", str(report_file), timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("intentref host: the host never reached the server"), done.stderr
    assert said in lines[0]
    assert "pass" not in done.stdout and not report_file.exists()


def test_a_fuzz_run_of_a_host_that_never_reaches_the_server_is_status_3(tmp_path):
    done = run_judge("--command", shell_host("exit 1"), "--fuzz", "--count", "2", "--out", str(tmp_path), timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "never reached the server" in done.stderr and "pass" not in done.stdout


def test_a_host_that_reaches_the_server_and_stops_is_judged_by_the_loop_rule(tmp_path):
    report_file = tmp_path / "r.json"
    done = run_judge("--command", reaching_host("exit 1"), "--scenario", str(scenario_path("HST-002")),
                     "--json", str(report_file), timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    violations = json.loads(report_file.read_text("utf-8"))["scenarios"][0]["violations"]
    assert ("R-HST-016", "normative") in {(v["rule"], v["level"]) for v in violations}
    assert "prepared no job and exited with status 1" in done.stdout


def test_help_names_no_internal_reference():
    done = run_judge("--help", timeout=60)
    assert done.returncode == 0 and "issue" not in done.stdout.lower() and "--command" in done.stdout


def _unreached_run():
    from intentref.suite.host.trace import Run

    return Run("HST-002", "reference", [], {}, 1, "", "x\nError: Cannot find module '/tmp/hots.mjs'\n    at Module._x (y:1)\n", 0.1)


def test_the_one_line_quotes_the_stderr_line_that_names_the_error():
    from intentref.suite.host.judge import ScenarioVerdict, never_ran, verdict_of

    verdict = verdict_of({"id": "HST-002", "server": {"wordings": "reference"}}, [("reference", _unreached_run())])
    line = never_ran([verdict])
    assert line == "the host never reached the server in any scenario: exit status 1; stderr: Error: Cannot find module '/tmp/hots.mjs'"
    assert never_ran([verdict, ScenarioVerdict({"id": "HST-001", "server": {"wordings": "reference"}})]) is None


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_without_its_fork_server_the_launcher_starts_the_server_the_slow_way(tmp_path, http):
    # Over HTTP the judge starts its server through the same launcher (D-HST-011).
    from intentref.suite.host.judge import check_command, judge_scenario, load_scenario

    missing_socket = str(tmp_path / "no-fork-server.sock")
    command = GOOD.replace("--server {server}", "--url {url}") if http else GOOD
    verdict = judge_scenario(check_command(command, http), load_scenario(scenario_path("HST-001")),
                             fork_socket=missing_socket, http=http)  # fmt: skip
    assert verdict.violations == []
    assert [len(run.calls) for run in verdict.runs] == [3]  # prepare, the core and the data accept, all served
