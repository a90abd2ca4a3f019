"""The suite reaches a server that requires a token, and never writes the token down (D-CNF-067, D-CNF-068).

The server is an outside one (``tests/outside/token_server.py``): the official MCP Python SDK's
low-level ``Server`` on streamable HTTP behind the SDK's own bearer middleware, a request without
its token answered 401.  Every run is the real command line in a child process.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.targets.options import request_headers
from intentref.suite.usage import HEADERS_VARIABLE, UsageError
from tests.conformance.ci_support import intentref, serving
from tests.conformance.test_plugin import counts, pytest_in

ROOT = Path(__file__).resolve().parents[2]
TOKEN_SERVER = ROOT / "tests" / "outside" / "token_server.py"
INSTANCES = ROOT / "conformance" / "instances.json"
# Normative cases a server on one shared Bridge session answers over HTTP: the seed flow and the tasks.
ONLY = ("--level", "normative", "--only", "BRG-0001", "--only", "TSK-000*")
TOKEN = secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def token_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving([sys.executable, str(TOKEN_SERVER), "--config", str(INSTANCES)],
                 tmp_path_factory.mktemp("token-server") / "stderr.txt", {"TOKEN_SERVER_TOKEN": TOKEN}) as url:  # fmt: skip
        yield url


def _intentref(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, given no headers unless ``env`` gives them."""
    return intentref(*argv, env={HEADERS_VARIABLE: "", **env})


def _secret_nowhere(done: subprocess.CompletedProcess[str], folder: Path) -> list[str]:
    """The files under ``folder`` and the streams of ``done`` that hold the token; none, to pass."""
    holding = [name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if TOKEN in text]
    return holding + [str(path) for path in folder.rglob("*") if path.is_file() and TOKEN in path.read_text("utf-8")]


def _reports(folder: Path) -> list[str]:
    return ["--json", str(folder / "r.json"), "--junit", str(folder / "r.xml"), "--html", str(folder / "r.html"),
            "--markdown", str(folder / "r.md"), "--trace"]  # fmt: skip


def test_with_its_token_the_normative_cases_pass_and_the_token_is_written_nowhere(token_url: str, tmp_path: Path) -> None:
    """spec: D-CNF-067 -- sent on every request; absent from the reports, the job summary and the console."""
    summary = tmp_path / "step-summary.md"
    done = _intentref("conformance", "--http", token_url, "--header", f"Authorization: Bearer {TOKEN}", *ONLY,
                      *_reports(tmp_path), GITHUB_STEP_SUMMARY=str(summary))  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    outcomes = [case["outcome"] for case in json.loads((tmp_path / "r.json").read_text("utf-8"))["cases"]]
    assert outcomes.count("passed") >= 5 and set(outcomes) <= {"passed", "unsupported"}, outcomes
    assert summary.is_file()
    assert _secret_nowhere(done, tmp_path) == []


def test_a_failed_case_traced_keeps_its_messages_not_the_token(token_url: str, tmp_path: Path) -> None:
    """spec: D-CNF-064, D-CNF-067 -- the trace of a failure is what the case exchanged, never the HTTP headers."""
    cases = tmp_path / "cases"
    cases.mkdir()
    document = json.loads((ROOT / "conformance" / "cases" / "brg-bridge-loop.json").read_text("utf-8"))
    flow: dict[str, Any] = next(case for case in document["cases"] if case["id"] == "BRG-0001")
    flow["steps"][0]["expect"]["$task"]["stage"] = "data"  # the reply says "core": the case fails
    (cases / "brg.json").write_text(json.dumps({**document, "cases": [flow]}), "utf-8")
    reports = tmp_path / "reports"
    reports.mkdir()
    done = _intentref("conformance", "--http", token_url, "--cases", str(cases), *_reports(reports),
                      **{HEADERS_VARIABLE: f"Authorization: Bearer {TOKEN}"})  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    (case,) = json.loads((reports / "r.json").read_text("utf-8"))["cases"]
    assert case["outcome"] == "failed" and case["trace"], case
    assert _secret_nowhere(done, reports) == []


@pytest.mark.parametrize("given", [(), ("--header", "Authorization: Bearer not-the-token")], ids=["none", "wrong"])
def test_without_its_token_the_run_stops_with_one_line_naming_the_option(token_url: str, tmp_path: Path,
                                                                         given: tuple[str, ...]) -> None:  # fmt: skip
    """spec: D-CNF-068 -- found by the probe before any case: status 3, one line, no report."""
    done = _intentref("conformance", "--http", token_url, *given, *ONLY, "--json", str(tmp_path / "r.json"))
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = done.stderr.splitlines()
    assert "401 Unauthorized" in line and '--header "Authorization: Bearer TOKEN"' in line, line
    assert ("refused the headers given" in line) == bool(given)
    assert "not-the-token" not in line and done.stdout == "" and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("command", [("properties", "--no-pytest", "--calls", "5"), ("fuzz", "--replay", "conformance")])
def test_properties_and_fuzz_replay_stop_at_the_start_too(token_url: str, command: tuple[str, ...]) -> None:
    """spec: D-CNF-068 -- their own status for a target that cannot be used (2), one line naming --header."""
    done = _intentref(*command, "--http", token_url)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = done.stderr.splitlines()
    assert "401 Unauthorized" in line and "--header" in line and HEADERS_VARIABLE in line, line


def test_properties_sends_the_environments_token_from_its_pytest_child(token_url: str, tmp_path: Path) -> None:
    """spec: D-CNF-067 -- the child reads it from its environment, never from a command line."""
    figures = tmp_path / "figures.json"
    done = _intentref("properties", "--http", token_url, "--no-differential", "--calls", "0", "--jobs", "1",
                      "-k", "test_an_unknown_job_named_by_a_lone_surrogate_is_not_found", "--json", str(figures),
                      **{HEADERS_VARIABLE: f"Authorization: Bearer {TOKEN}"})  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    counted = json.loads(figures.read_text("utf-8"))
    assert counted["pytest"] == "passed" and counted["propertyCalls"] >= 1 and counted["protocolRefusals"] == 0
    assert _secret_nowhere(done, tmp_path) == []


def test_the_pytest_plugin_reads_the_environments_token(token_url: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """spec: D-CNF-067 -- ``pytest --intentref-target http:URL`` in a job whose secret is in the environment."""
    monkeypatch.setenv(HEADERS_VARIABLE, f"Authorization: Bearer {TOKEN}")
    done = pytest_in(tmp_path, "--intentref-target", f"http:{token_url}", "-k", "BRG-0001")
    assert counts(done.stdout).get("passed") == 1 and "failed" not in counts(done.stdout), done.stdout[-2000:]
    assert TOKEN not in done.stdout + done.stderr


def test_matrix_sends_the_header_to_its_http_column(token_url: str, tmp_path: Path) -> None:
    """spec: D-CNF-067 -- the workers of every column build their targets with it."""
    done = _intentref("matrix", "--target", f"guarded=http:{token_url}", "--only", "BRG-0001", "--level", "normative",
                      "--out", str(tmp_path / "m"), "--header", f"Authorization: Bearer {TOKEN}")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (column,) = json.loads((tmp_path / "m" / "matrix.json").read_text("utf-8"))["implementations"]
    assert column["summary"]["error"] is None and column["summary"]["normative"]["passed"] == 1, column["summary"]
    assert _secret_nowhere(done, tmp_path) == []


@pytest.mark.parametrize(("argv", "env"), [
    (("--http", "http://127.0.0.1:9/mcp", "--header", "Bearer sk-pasted-alone"), {}),
    (("--http", "http://127.0.0.1:9/mcp", "--header", "Authorization: sk\x01ctl"), {}),
    (("--http", "http://127.0.0.1:9/mcp"), {HEADERS_VARIABLE: "Authorization Bearer sk-pasted-alone"}),
    (("--header", "Authorization: Bearer sk-pasted-alone"), {}),  # the default target: stdio, no HTTP
], ids=["no-colon", "control-character", "environment", "not-http"])  # fmt: skip
def test_a_malformed_or_misplaced_header_is_one_line_and_status_2(argv: tuple[str, ...], env: dict[str, str]) -> None:
    """spec: D-CNF-067 -- found before anything starts, and the value is never echoed (it may be a secret)."""
    done = _intentref("conformance", *argv, "--only", "BRG-0001", **env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = done.stderr.splitlines()
    assert "header" in line.lower() and "sk" not in line.replace("ask", ""), line


def test_the_command_line_replaces_the_environments_header_of_the_same_name() -> None:
    """spec: D-CNF-067 -- names compared without case; the last one given wins."""
    environ = {HEADERS_VARIABLE: "authorization: Bearer old\nX-Team: blue\n\n"}
    assert request_headers(["Authorization: Bearer new"], environ) == (("Authorization", "Bearer new"), ("X-Team", "blue"))
    with pytest.raises(UsageError, match=r"^--header: write NAME: VALUE"):
        request_headers([": no name"], {})
