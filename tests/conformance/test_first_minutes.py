"""A new user's first minutes with ``intentref conformance``: mistakes end a run at once, with
one plain line and an exit status of their own, and the output says what happened.

spec: D-CNF-013 (exit statuses, stopping at once), D-ERR-003 (the unknown-instance message).
Every target here is real: commands that do not exist or exit at once are real commands
run over real stdio; the HTTP servers are the bundled one on 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from rich.console import Console

from intentref import Intent
from intentref.bridge import MAX_NAMED_INSTANCES, MAX_QUOTED_NAME, create_intent_bridge
from intentref.suite.cases.fixtures import load_cases, select
from intentref.suite.cases.script import UNSUPPORTED
from intentref.suite.commands import conformance as cli
from intentref.suite.execution.runner import execute
from intentref.suite.reports import conformance as reports
from intentref.suite.reports import model
from intentref.suite.targets.base import InProcessTarget, load_instances
from intentref.suite.targets.mcp_http import HttpReference
from intentref.suite.targets.mcp_stdio import PLACEHOLDERS
from intentref.suite.targets.transport import ProcessInfo

INTENTREF = str(Path(sys.executable).with_name("intentref"))
# A run whose target cannot start ends without waiting on the target: every run here is
# given an answer timeout of ANSWER_TIMEOUT_SECONDS, so a run that waited for one answer
# would take that long, and FAIL_FAST_SECONDS is half of it: more than ten times what ending
# at once needs even on a busy machine (under 3 s), so the bound tells "did not wait" from
# "waited" and never measures speed (issue 38; speed belongs to `intentref bench`).
ANSWER_TIMEOUT_SECONDS = 60
FAIL_FAST_SECONDS = ANSWER_TIMEOUT_SECONDS / 2


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str, float]:
    capsys.readouterr()
    if "--timeout" not in args:
        args = (*args, "--timeout", str(ANSWER_TIMEOUT_SECONDS))
    started = time.perf_counter()
    status = cli.main(list(args))
    seconds = time.perf_counter() - started
    captured = capsys.readouterr()
    return status, captured.out, captured.err, seconds


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("intentref conformance: ")
    return lines[0]


# --------------------------------------------------------------------------- item 1: a target that cannot start


def test_a_command_that_does_not_exist_ends_the_run_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["--in-process", "--only", "BRG-0001"])  # imports paid before the clock starts
    status, out, err, seconds = _main(capsys, "--stdio", "intentref-no-such-command --config {config}")
    assert status == cli.EXIT_TARGET_UNUSABLE == 3
    line = _one_line(err)
    assert "cannot run 'intentref-no-such-command': not found on PATH" in line
    assert "still running" not in line
    assert "errored" not in out and "BRG-" not in out  # no case was run, none reported
    assert seconds < FAIL_FAST_SECONDS, seconds


def test_a_command_that_is_not_executable_ends_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = tmp_path / "server.sh"
    server.write_text("#!/bin/sh\nexit 0\n", "utf-8")
    server.chmod(0o644)
    status, _, err, seconds = _main(capsys, "--stdio", f"{server} --config {{config}}")
    assert status == 3
    assert f"cannot run '{server}': Permission denied" in _one_line(err)
    assert seconds < FAIL_FAST_SECONDS, seconds


def test_a_command_whose_interpreter_is_missing_ends_the_run_when_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The program exists and is executable, so only starting it shows it cannot run: the
    # first start failure, not the look-up before the run, ends this one.
    server = tmp_path / "server"
    server.write_text("#!/intentref/no/such/interpreter\n", "utf-8")
    server.chmod(0o755)
    status, out, err, seconds = _main(capsys, "--stdio", f"{server} --config {{config}}")
    assert status == 3
    line = _one_line(err)
    assert f"cannot run '{server}': No such file or directory" in line
    assert "BRG-" not in out
    assert seconds < FAIL_FAST_SECONDS, seconds


def test_a_server_that_exits_before_answering_ends_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = tmp_path / "server.py"
    server.write_text("import sys\nprint('no licence key found', file=sys.stderr)\nsys.exit(5)\n", "utf-8")
    status, out, err, _ = _main(capsys, "--stdio", f"{sys.executable} {server} --config {{config}}")
    assert status == 3
    line = _one_line(err)
    assert "exited before answering (exit status 5; stderr: no licence key found)" in line
    assert "the suite's own instances" in line
    assert "BRG-" not in out


def test_a_harness_that_does_not_exist_ends_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err, seconds = _main(capsys, "--harness", "intentref-no-such-harness")
    assert status == 3
    assert "intentref-no-such-harness" in _one_line(err)
    assert seconds < FAIL_FAST_SECONDS


def test_a_url_where_nothing_listens_ends_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, on loopback only
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    status, out, err, seconds = _main(capsys, "--http", url)
    assert status == 3
    assert f"nothing answers at {url}" in _one_line(err)
    assert "BRG-" not in out
    assert seconds < FAIL_FAST_SECONDS


def test_a_server_that_refuses_the_handshake_over_http_ends_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    # A real HTTP server that answers every request with a JSON-RPC error and 415, as an SDK
    # does to a request it will not read: no case can run, so one line and status 3.
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unsupported Media Type"}}'
            self.send_response(415)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        status, out, err, seconds = _main(capsys, "--http", url)
    finally:
        server.shutdown()
        server.server_close()
    assert status == 3
    line = _one_line(err)
    assert line.startswith("intentref conformance: the target could not start:") and "Unsupported Media Type" in line
    assert "Traceback" not in err and "BRG-" not in out
    assert seconds < FAIL_FAST_SECONDS


def test_a_server_that_exits_with_a_cases_own_configuration_is_that_cases_outcome(tmp_path: Path) -> None:
    # Only the suite's own instances make a start failure fatal: a case's own configuration
    # may be why its server exits, so the other cases still run.  Refusing every other set of
    # instances also refuses the pooled configuration (D-CNF-050), so the runner falls back to
    # one run per case, and each refusal is that case's own outcome.
    server = tmp_path / "server.py"
    names = sorted(load_instances())
    server.write_text(textwrap.dedent(f"""\
        import json, subprocess, sys
        config = json.load(open(sys.argv[sys.argv.index("--config") + 1]))
        if sorted(config["instances"]) != {names!r}:
            sys.exit(7)  # refuses any configuration but the suite's
        sys.exit(subprocess.call([sys.argv[1], *sys.argv[2:]]))
    """), "utf-8")  # fmt: skip
    from intentref.suite.cases.capabilities import REFERENCE_CAPABILITIES
    from intentref.suite.targets.mcp_stdio import StdioTarget, reference_program

    target = StdioTarget(f"{sys.executable} {server} {reference_program()[0]} --config {{config}}")
    # The wrapped server is the reference: declared, so no probe (D-CNF-030) meets the refusal.
    target.capabilities = REFERENCE_CAPABILITIES
    try:
        every = load_cases()
        own = [c for c in every if "setup" in c.data and "expect" not in c.data["setup"]
               and "order" not in c.data["setup"]["instances"]][:2]  # fmt: skip
        assert len(own) == 2
        outcomes = execute([next(c for c in every if c.id == "BRG-0001"), *own], target)
    finally:
        target.close()
    assert [o.outcome for o in outcomes] == ["passed", "errored", "errored"]
    assert all("exited before answering (exit status 7)" in o.detail for o in outcomes[1:])


def test_the_hint_of_a_process_that_never_started_says_so() -> None:
    info = ProcessInfo(["intentref-no-such-command"])
    assert info.hint() == "the process never started"
    info.pid, info.stderr = 4242, bytearray(b"starting\n")
    assert info.hint() == "still running; stderr: starting"
    info.returncode = 1
    assert info.hint() == "exit status 1; stderr: starting"


# --------------------------------------------------------------------------- item 2: --http with the wrong instances


def test_a_server_missing_the_suites_instances_stops_the_run_naming_them(capsys: pytest.CaptureFixture[str]) -> None:
    instances = load_instances()
    served = {name: instances[name] for name in ("default",)}  # the README example has only its own
    server = HttpReference(served)
    try:
        status, out, err, seconds = _main(capsys, "--http", server.url, "--only", "BRG-00*")
    finally:
        server.close()
    assert status == 3
    line = _one_line(err)
    used = sorted({n for c in select(load_cases(), "all", ["BRG-00*"], []) for n in c.data.get("instances", [])
                   if n in instances and n != "default"})  # fmt: skip
    assert used, "the selection must use an instance the server lacks"
    assert f"does not serve the instance(s) {', '.join(used)} that the selected cases use" in line
    assert "intent-runtime-mcp --config conformance/instances.json --http 127.0.0.1:8765" in line
    assert "BRG-0001" not in out  # stopped before the first case
    assert seconds < FAIL_FAST_SECONDS


def test_a_server_with_the_suites_instances_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    server = HttpReference(load_instances())
    try:
        status, out, err, _ = _main(capsys, "--http", server.url, "--only", "BRG-000*", "--json", str(tmp_path / "r.json"))
    finally:
        server.close()
    assert status == 0, err
    assert f"JSON report written to {tmp_path / 'r.json'}" in out
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["summary"]["passed"] >= 1 and document["summary"]["failed"] == 0


# --------------------------------------------------------------------------- items 5 and 7: found before any case runs


@pytest.mark.parametrize(
    ("flag", "where", "problem"),
    [
        ("--html", "missing-dir/r.html", "folder '{tmp}/missing-dir' does not exist"),
        ("--json", "", "is a folder"),
        ("--junit", "file.txt/r.xml", "'{tmp}/file.txt' is not a folder"),
    ],
)
def test_a_report_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, where: str, problem: str
) -> None:
    (tmp_path / "file.txt").write_text("x", "utf-8")
    path = str(tmp_path / where) if where else str(tmp_path)
    status, out, err, seconds = _main(capsys, "--in-process", flag, path)
    assert status == cli.EXIT_USAGE == 2
    assert _one_line(err) == f"intentref conformance: {flag} {path}: {problem.format(tmp=tmp_path)}"
    assert out == ""  # nothing ran
    assert seconds < FAIL_FAST_SECONDS


def test_two_reports_on_one_path_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "r.out")
    status, out, err, _ = _main(capsys, "--in-process", "--json", path, "--html", path)
    assert status == 2 and out == ""
    assert _one_line(err) == f"intentref conformance: --json and --html both write {path}"


def test_a_selection_of_nothing_is_an_error_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err, seconds = _main(capsys, "--in-process", "--only", "XYZ-*")
    assert status == cli.EXIT_NOTHING_SELECTED == 4
    line = _one_line(err)
    assert "--only XYZ-* selects none of the" in line and "areas: BRG, CAN" in line
    assert out == ""
    assert seconds < FAIL_FAST_SECONDS  # the fixtures are read; no target is started
    # --skip can empty a selection too
    status, _, err, _ = _main(capsys, "--in-process", "--only", "BRG-0001", "--skip", "BRG-*")
    assert status == 4 and "--skip BRG-*" in _one_line(err)


def test_the_installed_command_uses_the_same_statuses() -> None:
    done = subprocess.run([INTENTREF, "conformance", "--stdio", "intentref-no-such-command {config}"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 3 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- item 9: what the run prints


def test_the_summary_names_areas_groups_unsupported_reasons_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no title wraps
    # ENV cases check the MCP envelope: in-process they are all unsupported, for one reason.
    json_path, html_path = tmp_path / "run.json", tmp_path / "run.html"
    status, out, _, _ = _main(capsys, "--in-process", "--only", "ENV-*", "--only", "BRG-000*",
                              "--json", str(json_path), "--html", str(html_path))  # fmt: skip
    assert status == 0
    cases = select(load_cases(), "all", ["ENV-*", "BRG-000*"], [])
    envelope = sum(1 for c in cases if c.transport == "mcp")
    assert envelope > 1
    assert re.search(rf"^\s+{envelope} × checks the MCP envelope; the target is not MCP$", out, re.M), out
    assert "The Bridge loop, sessions and job ownership" in out  # the area's title, not only BRG
    assert f"JSON report written to {json_path}" in out and f"HTML report written to {html_path}" in out
    assert "selection: level all, only ENV-*, BRG-000*, cases" in out
    assert "{'level'" not in out
    # Not a terminal: one progress line per area, none per case.
    area_lines = [line for line in out.splitlines() if re.match(r"^\[ *\d+/\d+\] [A-Z]{3}: ", line)]
    assert sorted(line.split("] ")[1][:3] for line in area_lines) == ["BRG", "ENV"]
    assert not re.search(r"^\[ *\d+/\d+\] [A-Z]{3}-\d{4} ", out, re.M)


def test_the_summary_table_keeps_its_headers_whole_on_a_narrow_console() -> None:
    cases = select(load_cases(), "all", ["BRG-000*", "CAN-000*"], [])
    outcomes = execute(cases, InProcessTarget())
    buffer = io.StringIO()
    reports.print_summary(Console(file=buffer, width=80, force_terminal=False, color_system=None),
                          {"target": "t"}, cases, outcomes, model.area_titles())  # fmt: skip
    out = buffer.getvalue()
    table = out.split("Conformance by area")[1]
    for header in ("Area", "Cases", "Passed", "Failed", "Unsupported", "Errored"):
        assert re.search(rf"┃ {header}\s*┃", table), header
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "BRG The Bridge loop," in table  # the area's title, wrapped in its own column
    # The level split, which has no room in 80 columns, is a line under the table.
    normative = sum(c.level == "normative" for c in cases)
    reference = len(cases) - normative
    assert normative and reference, "the selection should hold both levels"
    assert f"By level: normative {normative}/{normative} passed · reference {reference}/{reference} passed" in out


def test_unsupported_reasons_are_counted_most_first() -> None:
    cases = select(load_cases(), "all", ["ENV-*"], [])
    outcomes = execute(cases, InProcessTarget())
    rows = model.case_rows(cases, outcomes)
    reasons = model.unsupported_reasons(rows)
    assert sum(n for _, n in reasons) == sum(1 for o in outcomes if o.outcome == UNSUPPORTED)
    assert [n for _, n in reasons] == sorted((n for _, n in reasons), reverse=True)


# --------------------------------------------------------------------------- item 10: the smaller things


def test_intentref_version() -> None:
    from intentref import __version__

    done = subprocess.run([INTENTREF, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == f"intentref {__version__}"


@pytest.mark.parametrize("command", ["", "schemas", "bench", "properties", "fuzz", "check", "mutation", "conformance"])
def test_help_texts_show_no_rest_markup(command: str) -> None:
    done = subprocess.run([INTENTREF, *([command] if command else []), "--help"], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "COLUMNS": "120"})  # fmt: skip
    assert done.returncode == 0
    assert "``" not in done.stdout and ":class:" not in done.stdout


def test_conformance_help_lists_every_exit_status() -> None:
    done = subprocess.run([INTENTREF, "conformance", "--help"], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    for code, meaning in cli.EXIT_STATUSES:
        assert f"  {code}  {meaning}" in done.stdout
    assert [code for code, _ in cli.EXIT_STATUSES] == [0, 1, 2, 3, 4]


def test_the_unknown_instance_message_names_the_given_and_the_configured() -> None:
    bridge = create_intent_bridge({"instances": {"order": Intent({"language": "zh-CN"}),
                                                 "default": Intent({"language": "zh-CN"})}})  # fmt: skip
    reply = bridge.connect().prepare({"instance": "ordr", "input": "查询订单 000123"})
    message = 'instance "ordr" is not configured; the configured instances are "default", "order".'
    assert reply["error"]["code"] == "BRIDGE_INSTANCE_NOT_FOUND"
    assert reply["error"]["message"] == message == reply["error"]["issues"][0]["message"]


def test_the_unknown_instance_message_is_bounded() -> None:
    many = {f"i{n:02d}": Intent({"language": "zh-CN"}) for n in range(MAX_NAMED_INSTANCES + 3)}
    reply = create_intent_bridge({"instances": many}).connect().prepare({"instance": "x" * 10_000, "input": "a"})
    message = reply["error"]["message"]
    assert f'"{"x" * MAX_QUOTED_NAME}…"' in message and "x" * (MAX_QUOTED_NAME + 1) not in message
    assert '"i09"' in message and '"i10"' not in message and "and 3 more." in message


# --------------------------------------------------------------------------- the README


README = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")


def test_the_readmes_development_section_shows_the_readme_test_command() -> None:
    marker = README.index("<!-- test-command -->")
    test_command = README[marker:].split("\n")[2]
    development = README[README.index("## Development") :]
    assert any(line.split("#")[0].strip() == test_command for line in development.splitlines())


def test_the_readme_lists_every_placeholder() -> None:
    section = README[README.index("In `--stdio` commands") :][:800]
    for name in PLACEHOLDERS:
        assert f"`{{{name}}}`" in section, name
    assert "…" not in section.split("[ … ]")[0]  # no elided list before the groups


def test_the_readme_explains_the_seeds_before_using_the_word() -> None:
    first_use = README.index("seed")
    explanation = README.index("called *seeds*")
    assert explanation <= README.index("*seeds*") and explanation - first_use < 200
    for seed in ("000", "001", "003", "004"):
        assert f"{seed} (" in README[explanation : explanation + 400]


def test_the_readme_documents_every_exit_status() -> None:
    for code, _ in cli.EXIT_STATUSES:
        assert re.search(rf"^\| {code} \| ", README, re.M), code


def test_the_readme_shows_the_two_http_commands() -> None:
    assert "intent-runtime-mcp --config conformance/instances.json --http 127.0.0.1:8765\n" \
           "intentref conformance --http http://127.0.0.1:8765/mcp\n" in README  # fmt: skip
