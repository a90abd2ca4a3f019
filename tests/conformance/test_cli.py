"""``intentref conformance``: targets, selection, expected failures, reports, exit statuses, --smoke.

Every run here is a real one: the bundled server over real stdio or HTTP, the reference
harness, and harness programs that break the protocol in one way each.  The installed
``intentref`` command runs in a subprocess where the command itself is the point (its
default target, its exit statuses); elsewhere ``cli.main`` runs in this process, the same
code without an interpreter start-up per run.  Selections are kept small (``--only``, or a
small ``--cases`` folder), since ``test_targets.py`` runs the whole suite through every
target.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from intentref import cli as intentref_cli
from intentref._paths import data_dir
from intentref.suite.cases.fixtures import load_cases, select
from intentref.suite.commands import conformance as cli
from intentref.suite.commands.conformance import instances_mjs
from intentref.suite.targets.base import InProcessTarget
from intentref.suite.targets.options import target_from
from intentref.suite.targets.registry import TARGET_KINDS, TargetKind, TargetSpec, parse

INTENTREF = str(Path(sys.executable).with_name("intentref"))
HARNESS = f"{sys.executable} -m intentref.suite.targets.harness_reference"


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    assert Path(INTENTREF).exists(), "install the project into this interpreter's environment"
    return subprocess.run([INTENTREF, "conformance", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "200"})  # fmt: skip


def main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(args))
    return code, capsys.readouterr().out


def report(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return document


def ids(document: dict[str, Any]) -> list[str]:
    return [case["id"] for case in document["cases"]]


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), "utf-8")
    return f"{sys.executable} {path}"


# --------------------------------------------------------------------------- targets


def test_default_target_is_the_bundled_server_over_stdio(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run("--only", "BRG-000*", "--only", "ENV-0001", "--json", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    document = report(out)
    assert document["runInfo"]["transport"] == "mcp" and document["runInfo"]["era"] == "2026"
    assert "stdio" in document["runInfo"]["target"]
    assert document["summary"]["passed"] == len(ids(document)) == 10  # ENV-0001 runs: the envelope is there
    assert "cases/s after start-up" in result.stdout


@pytest.fixture(scope="module")
def mixed_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A --cases folder: BRG-0001..9 (shared-run cases), two cases with maxJobs alone, one with jobTtlMs."""
    cases = load_cases()
    chosen = select(cases, None, ["BRG-000*"], [])
    with_max_jobs = [c for c in cases if set(c.bridge_options) == {"maxJobs"} and "setup" not in c.data
                     and all(s.get("session", "main") == "main" and s["op"] != "close" for s in c.data["steps"])]  # fmt: skip
    with_ttl = [c for c in cases if "jobTtlMs" in c.bridge_options and "setup" not in c.data]
    folder = tmp_path_factory.mktemp("mixed")
    picked = [*chosen, *with_max_jobs[:2], *with_ttl[:1]]
    assert len(picked) == 12
    for area in sorted({c.area for c in picked}):
        document = {"area": area, "title": "a mixed selection", "cases": [c.data for c in picked if c.area == area]}
        (folder / f"{area.lower()}.json").write_text(json.dumps(document, ensure_ascii=False), "utf-8")
    return folder


def test_stdio_template_with_the_console_script_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             mixed_cases: Path) -> None:  # fmt: skip
    # The real console script, cold, with one optional flag: a case with maxJobs runs, a
    # case with an option the template cannot pass is unsupported, not failed.
    script_path = Path(sys.executable).with_name("intent-runtime-mcp")
    out = tmp_path / "r.json"
    code, text = main(capsys, "--stdio", f"{script_path} --config {{config}} [--max-jobs {{maxJobs}}]", "--era", "legacy",
                      "--cases", str(mixed_cases), "--skip", "BRG-000[2-9]", "--json", str(out))  # fmt: skip
    assert code == 0, text
    outcomes = {case["id"]: case for case in report(out)["cases"]}
    assert outcomes["BRG-0001"]["outcome"] == "passed"
    for case in load_cases(mixed_cases):
        if not case.bridge_options:
            continue
        if "jobTtlMs" in case.bridge_options:
            assert outcomes[case.id]["outcome"] == "unsupported"
            assert "jobTtlMs" in outcomes[case.id]["detail"]
        else:
            assert outcomes[case.id]["outcome"] == "passed", outcomes[case.id]


def test_http_reference_and_harness_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str], mixed_cases: Path) -> None:
    for flags in (["--http-reference", "--era", "legacy"], ["--http-reference"], ["--harness", HARNESS]):
        out = tmp_path / "r.json"
        code, text = main(capsys, *flags, "--cases", str(mixed_cases), "--json", str(out))
        assert code == 0, (flags, text)
        summary = report(out)["summary"]
        assert summary["passed"] >= 8 and summary["failed"] == summary["errored"] == 0, (flags, summary)
        if "--harness" in flags:
            assert summary["unsupported"] == 0  # the harness configures runs of its own
        else:
            assert summary["unsupported"] >= 3  # the cases with options: not over HTTP


# --------------------------------------------------------------------------- one flag set

# Every command that runs a target, with what it needs besides (the folder fuzz replays).
TARGET_COMMANDS = {"conformance": [], "properties": [], "fuzz": ["--replay", "cases"]}
# Every spelling users rely on, with the spec it names.
TARGET_FLAGS = [(["--in-process"], "in-process"),
                (["--stdio", "srv --config {config}"], "stdio:srv --config {config}"),
                (["--http", "http://127.0.0.1:1/mcp"], "http:http://127.0.0.1:1/mcp"),
                (["--http-reference"], "http-reference"),
                (["--harness", "h"], "harness:h"),
                (["--python", "m:a"], "python:m:a"),
                (["--target", "faulty:ids_from_zero"], "faulty:ids_from_zero")]  # fmt: skip


def _spec_of(command: str, *flags: str) -> TargetSpec:
    return target_from(intentref_cli.build_parser().parse_args([command, *TARGET_COMMANDS[command], *flags]))


@pytest.mark.parametrize("command", TARGET_COMMANDS)
def test_every_command_reads_the_target_flags_alike(command: str) -> None:
    assert _spec_of(command) == parse("reference")  # spec: D-CNF-057 -- one default target
    for flags, spec in TARGET_FLAGS:
        assert _spec_of(command, *flags, "--era", "legacy") == parse(spec, era="legacy"), flags


def test_the_flags_are_the_ones_the_kinds_declare() -> None:
    declared = {kind.flag for kind in TARGET_KINDS.values() if kind.flag is not None}
    assert declared == {flags[0] for flags, _ in TARGET_FLAGS if flags[0] != "--target"}


def test_a_kind_registered_once_is_a_flag_of_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # Adding a kind of target is its module and one registry entry: no command lists it again.
    made_here = TargetKind("echo", "WORDS", "a kind made here", lambda spec: InProcessTarget(), flag="--echo")
    monkeypatch.setitem(TARGET_KINDS, "echo", made_here)
    for command in TARGET_COMMANDS:
        assert _spec_of(command, "--echo", "hi") == TargetSpec("echo", "hi"), command
        assert _spec_of(command, "--target", "echo:hi") == TargetSpec("echo", "hi"), command


@pytest.mark.parametrize("command", TARGET_COMMANDS)
def test_a_mistaken_target_is_one_line_and_status_2(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # spec: D-CNF-013 -- found before anything starts, in the same words whatever the command.
    for flags, said in ((["--target", "nope"], "unknown target 'nope'; use one of: in-process, reference"),
                        (["--target", "faulty"], "target faulty needs NAME after the colon"),
                        (["--target", "faulty:no_such_fault"], "no faulty implementation 'no_such_fault'"),
                        (["--stdio", "srv [--max-jobs {maxJobs}"], "srv")):  # fmt: skip
        capsys.readouterr()
        code = intentref_cli.main([command, *TARGET_COMMANDS[command], *flags])
        captured = capsys.readouterr()
        assert code == 2, (flags, captured)
        assert captured.err.startswith(f"intentref {command}: ") and said in captured.err, captured.err
        assert len(captured.err.strip().splitlines()) == 1 and captured.out == "", captured


def test_in_process_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str], small_cases: Path) -> None:
    paths = {name: tmp_path / f"r.{name}" for name in ("json", "xml", "html")}
    code, out = main(capsys, "--in-process", "--cases", str(small_cases), "--json", str(paths["json"]),
                     "--junit", str(paths["xml"]), "--html", str(paths["html"]))  # fmt: skip
    assert code == 0, out
    document = report(paths["json"])
    assert document["runInfo"]["transport"] == "in-process"
    assert set(document["runInfo"]["selection"]) >= {"level", "only", "skip"}
    assert paths["xml"].read_text("utf-8").startswith("<?xml")
    assert "<html" in paths["html"].read_text("utf-8").lower()


# --------------------------------------------------------------------------- selection


@pytest.fixture(scope="module")
def small_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CAN and RPY fixture files (both levels), as a --cases folder of their own."""
    folder = tmp_path_factory.mktemp("cases")
    for path in sorted((data_dir("conformance") / "cases").glob("*.json")):
        if path.name.startswith(("can-", "rpy-")):
            shutil.copy(path, folder / path.name)
    return folder


def test_level_only_and_skip_select_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str], small_cases: Path) -> None:
    cases = load_cases(small_cases)
    normative = select(cases, "normative", [], [])
    assert 0 < len(normative) < len(cases)
    out = tmp_path / "n.json"
    assert main(capsys, "--in-process", "--cases", str(small_cases), "--level", "normative", "--json", str(out))[0] == 0
    document = report(out)
    assert ids(document) == [c.id for c in normative]
    assert {case["level"] for case in document["cases"]} == {"normative"}
    out = tmp_path / "s.json"
    code, _ = main(capsys, "--in-process", "--cases", str(small_cases), "--only", "CAN-00*", "--skip", "CAN-000*",
                   "--skip", "CAN-0011", "--json", str(out))  # fmt: skip
    assert code == 0
    chosen = ids(report(out))
    assert chosen == [c.id for c in cases if c.id.startswith("CAN-00") and not c.id.startswith("CAN-000") and c.id != "CAN-0011"]


def _failing_fixture(tmp_path: Path) -> tuple[Path, str, str]:
    """A fixture folder with one case the reference passes and one it cannot."""
    case = next(c for c in load_cases() if c.id == "BRG-0001")
    broken = json.loads(json.dumps(case.data))
    broken["id"] = "BRG-9999"
    broken["steps"][0]["expect"] = {"$task": {"stage": "data"}}  # the first task is a core task
    folder = tmp_path / "cases"
    folder.mkdir()
    document = {"area": "BRG", "title": "one passing, one failing", "cases": [case.data, broken]}
    (folder / "brg.json").write_text(json.dumps(document, ensure_ascii=False), "utf-8")
    return folder, "BRG-0001", "BRG-9999"


def test_expected_failures_allow_listed_failures_and_fail_stale_entries(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    folder, passing, failing = _failing_fixture(tmp_path)
    code, out = main(capsys, "--in-process", "--cases", str(folder))
    assert code == 1 and "BRG-9999" in out
    listed = tmp_path / "expected.txt"
    listed.write_text(f"{failing}  # decided differently\n", "utf-8")
    code, out = main(capsys, "--in-process", "--cases", str(folder), "--expected-failures", str(listed))
    assert code == 0, out
    assert "1 still failing, 0 stale" in out
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps([failing, passing]), "utf-8")
    code, out = main(capsys, "--in-process", "--cases", str(folder), "--expected-failures", str(stale))
    assert code == 1
    assert f"stale: {passing} passes now" in out


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("not-a-case-id\n", "utf-8")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.json").write_text('{"area": "BRG", "title": "no cases"}', "utf-8")
    for args in (["--smoke"], ["--in-process", "--expected-failures", str(bad)],
                 ["--stdio", "server --config {config} [--max-jobs {maxJobs}"], ["--in-process", "--http", "http://x"],
                 ["--check"], ["--in-process", "--cases", str(tmp_path / "missing")],
                 ["--in-process", "--cases", str(broken)], ["--era", "1999"]):  # fmt: skip
        assert main(capsys, *args)[0] == 2, args
    result = run("--nope")  # and the installed command says so with its exit status
    assert result.returncode == 2 and "usage:" in result.stderr


def test_instances_mjs_is_generated_from_instances_json() -> None:
    path = data_dir("conformance") / "instances.mjs"
    assert path.read_text("utf-8") == instances_mjs(), "run `intentref conformance --write-mjs`"
    assert run("--write-mjs", "--check").returncode == 0
    node = shutil.which("node")
    if node is not None:  # the JavaScript side really reads it
        code = "import(process.argv[1]).then(m => console.log(JSON.stringify(m.default)))"
        shown = subprocess.run([node, "-e", code, str(path)], capture_output=True, text=True, timeout=60, check=True)
        document = json.loads((data_dir("conformance") / "instances.json").read_text("utf-8"))
        assert json.loads(shown.stdout) == {"instances": document["instances"]}


# --------------------------------------------------------------------------- --smoke


def test_smoke_passes_the_reference_harness(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = main(capsys, "--harness", HARNESS, "--smoke")
    assert code == 0, out
    assert "verdict: HARNESS OK" in out


BROKEN_HARNESSES = {
    "garbage": ("json", """
        import sys
        for line in sys.stdin:
            print("hello, this is not JSON", flush=True)
    """),
    "exits": ("exit", """
        import sys
        sys.exit(0)
    """),
    "wrong-id": ("id", """
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            print(json.dumps({"id": request["id"] + 1, "ok": True}), flush=True)
    """),
    "silent": ("timeout", """
        import sys, time
        for line in sys.stdin:
            time.sleep(60)
    """),
}


@pytest.mark.parametrize("name", sorted(BROKEN_HARNESSES))
def test_smoke_calls_a_broken_harness_broken(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    kind, body = BROKEN_HARNESSES[name]
    code, out = main(capsys, "--harness", script(tmp_path, f"{name}.py", body), "--smoke", "--timeout", "2")
    assert code == 1, out
    assert f"verdict: BROKEN HARNESS ({kind})" in out


def test_smoke_tells_a_wrong_implementation_from_a_broken_harness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Valid protocol, wrong replies: prepare answers an error where a task is due.
    body = """
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            answer = {"configure": {"ok": True}, "connect": {"session": "only"}, "close": {"ok": True},
                      "shutdown": {"ok": True}}.get(request["op"])
            if answer is None:
                answer = {"reply": {"kind": "error", "error": {"code": "INTERNAL_ERROR", "stage": "bridge",
                                                                 "message": "wrong on purpose"}}}
            print(json.dumps({"id": request["id"], **answer}), flush=True)
            if request["op"] == "shutdown":
                break
    """
    command = script(tmp_path, "wrong.py", body)
    code, out = main(capsys, "--harness", command, "--smoke")
    assert code == 0, out
    assert "verdict: HARNESS OK" in out and "not a task" in out
    # ...and the suite then reports the implementation's failures as failures, not errors.
    folder, _, _ = _failing_fixture(tmp_path)
    result = tmp_path / "r.json"
    assert main(capsys, "--harness", command, "--cases", str(folder), "--only", "BRG-0001", "--json", str(result))[0] == 1
    assert report(result)["summary"]["failed"] == 1
