"""``--trace`` and ``--repeat N`` (issue 39 item 4; D-CNF-064, D-CNF-065).

A failure an implementer can debug from the CI log alone: a failed case of a real faulty
implementation carries the messages it exchanged (in process: calls and replies; over stdio,
against the bundled server and an outside SDK server: the JSON-RPC messages), and a server
that answers one case wrongly on every other run is reported flaky by ``--repeat 3``.
Every run is the real command line in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.execution.runner import merge_repetitions
from intentref.suite.reports import conformance as reports
from intentref.suite.targets import recording

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ROOT / "tests" / "outside"
CASE_TIMEOUT = 300


def _conformance(tmp_path: Path, *args: str,
                 env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:  # fmt: skip
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", *args, "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=CASE_TIMEOUT, check=False,
        env=None if env is None else {**os.environ, **env},
    )  # fmt: skip
    assert report.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    document = json.loads(report.read_text("utf-8"))
    jsonschema.Draft202012Validator(reports.report_schema()).validate(document)
    return done, document


def _case(document: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(c for c in document["cases"] if c["id"] == case_id)


def _wrong_fixture(folder: Path) -> Path:
    """BRG-0001 with its first expectation wrong: a core task said to be a data task."""
    document = json.loads((ROOT / "conformance" / "cases" / "brg-bridge-loop.json").read_text("utf-8"))
    case = next(c for c in document["cases"] if c["id"] == "BRG-0001")
    case["steps"][0]["expect"]["$task"]["stage"] = "data"
    folder.mkdir()
    (folder / "brg-wrong.json").write_text(json.dumps({**document, "cases": [case]}, ensure_ascii=False), "utf-8")
    return folder


# --------------------------------------------------------------------------- --trace


def test_a_faulty_implementations_failed_case_carries_its_calls_and_replies(tmp_path: Path) -> None:
    done, document = _conformance(tmp_path, "--target", "faulty:ids_from_zero", "--only", "BRG-0001", "--trace",
                                  "--jobs", "1")  # fmt: skip
    assert done.returncode == 1
    case = _case(document, "BRG-0001")
    assert case["outcome"] == FAILED and case["failedStep"] == 2
    trace = case["trace"]
    assert trace["transport"] == "in-process" and trace["omitted"] == 0
    messages = trace["messages"]
    # Three calls, each with its reply: prepare, accept, accept (where intents/0/id is i0).
    assert [m["direction"] for m in messages] == ["sent", "received"] * 3
    assert [m["message"]["call"] for m in messages[::2]] == ["prepare", "accept", "accept"]
    assert messages[0]["message"]["request"] == {"instance": "order", "input": "查询订单 000123"}
    assert messages[-1]["message"]["reply"]["result"]["intents"][0]["id"] == "i0"
    assert [m["ms"] for m in messages] == sorted(m["ms"] for m in messages)
    # The second step's request quotes the first reply's tokens: a reader can follow them.
    assert messages[2]["message"]["request"]["stepToken"] == messages[1]["message"]["reply"]["stepToken"]


def test_a_failed_case_over_stdio_carries_the_json_rpc_messages_in_json_and_html(tmp_path: Path) -> None:
    # The bundled server over real stdio, on two worker processes, with a fixture that is wrong.
    cases = _wrong_fixture(tmp_path / "cases")
    html = tmp_path / "report.html"
    done, document = _conformance(tmp_path, "--cases", str(cases), "--trace", "--jobs", "2", "--html", str(html))
    assert done.returncode == 1
    case = _case(document, "BRG-0001")
    assert case["outcome"] == FAILED and case["failedStep"] == 0
    messages = case["trace"]["messages"]
    assert case["trace"]["transport"] == "mcp"
    sent, received = messages[0]["message"], messages[1]["message"]
    assert sent["jsonrpc"] == "2.0" and sent["method"] == "tools/call"
    assert sent["params"]["name"] == "intent_prepare"
    assert sent["params"]["arguments"] == {"instance": "order", "input": "查询订单 000123"}
    assert received["id"] == sent["id"] and received["result"]["structuredContent"]["stage"] == "core"
    # The task's instructions are longer than a string is kept (D-CNF-064): shortened, and said so.
    assert "more bytes)" in received["result"]["structuredContent"]["instructions"]
    assert "truncated" in messages[1]
    page = html.read_text("utf-8")
    assert "Messages exchanged (" in page and "tools/call" in page and "intent_prepare" in page


HARNESS = f"{sys.executable} -m intentref.suite.targets.harness_reference"


@pytest.mark.parametrize(("flags", "transport"), [(("--http-reference",), "mcp"), (("--harness", HARNESS), "harness")])
def test_a_failed_case_over_http_or_a_harness_carries_what_went_over_the_wire(
        tmp_path: Path, flags: tuple[str, ...], transport: str) -> None:  # fmt: skip
    cases = _wrong_fixture(tmp_path / "cases")
    done, document = _conformance(tmp_path, *flags, "--cases", str(cases), "--trace", "--jobs", "1")
    assert done.returncode == 1
    trace = _case(document, "BRG-0001")["trace"]
    assert trace["transport"] == transport
    first, answer = trace["messages"][0]["message"], trace["messages"][1]["message"]
    if transport == "mcp":  # streamable HTTP on 127.0.0.1: the JSON-RPC bodies
        assert first["method"] == "tools/call" and answer["result"]["structuredContent"]["stage"] == "core"
    else:  # the harness's JSON lines, as written and read
        assert first["op"] == "prepare" and answer["id"] == first["id"] and answer["reply"]["stage"] == "core"


def test_an_outside_sdk_servers_failed_case_carries_its_json_rpc_messages(tmp_path: Path) -> None:
    # typed_mcpserver.py decodes a text context "[]" as a list (D-CNF-059): TSK-0049 fails on it.
    server = f"{sys.executable} {OUTSIDE / 'typed_mcpserver.py'} --config {{config}}"
    done, document = _conformance(tmp_path, "--stdio", server, "--only", "TSK-0049", "--trace", "--jobs", "1")
    assert done.returncode == 1
    case = _case(document, "TSK-0049")
    assert case["outcome"] == FAILED
    calls = [m["message"] for m in case["trace"]["messages"] if m["direction"] == "sent"]
    assert calls and all(c["method"] == "tools/call" for c in calls)
    assert any(c["params"]["arguments"].get("context") == "[]" for c in calls)
    answered = {m["message"]["id"] for m in case["trace"]["messages"] if m["direction"] == "received"}
    assert {c["id"] for c in calls} <= answered


def test_without_trace_or_for_a_passing_case_nothing_is_recorded(tmp_path: Path) -> None:
    _, untraced = _conformance(tmp_path, "--target", "faulty:ids_from_zero", "--only", "BRG-0001", "--jobs", "1")
    assert _case(untraced, "BRG-0001")["outcome"] == FAILED and "trace" not in _case(untraced, "BRG-0001")
    done, passing = _conformance(tmp_path, "--in-process", "--only", "BRG-0001", "--only", "BRG-0028", "--trace",
                                 "--jobs", "1")  # fmt: skip
    assert done.returncode == 0
    assert [c["outcome"] for c in passing["cases"]] == [PASSED, PASSED]
    assert all("trace" not in c for c in passing["cases"])


def test_a_trace_is_bounded_and_keeps_no_credentials() -> None:
    recorder = recording.Recorder("mcp")
    long_text = "x" * (recording.MAX_STRING_BYTES + 10)
    recorder.record(recording.SENT, {"text": long_text, "headers": {"Authorization": "Bearer s3cret"},
                                     "Authorization": "Bearer s3cret", "stepToken": "kept"})  # fmt: skip
    entry = recorder.messages[0]
    assert entry["message"]["text"].startswith("x" * recording.MAX_STRING_BYTES)
    assert entry["message"]["text"].endswith("… (10 more bytes)") and "1 string(s)" in entry["truncated"]
    assert "s3cret" not in json.dumps(recorder.document())
    assert entry["message"]["stepToken"] == "kept"  # a protocol value, not a credential
    many_members = {f"m{i}": "y" * 1000 for i in range(20)}  # 20 KB of JSON in strings kept whole
    recorder.record(recording.RECEIVED, many_members)
    cut = recorder.messages[1]
    assert isinstance(cut["message"], str) and len(cut["message"].encode("utf-8")) <= recording.MAX_MESSAGE_BYTES
    assert "bytes of JSON" in cut["truncated"]
    for number in range(recording.MAX_MESSAGES + 5):
        recorder.record(recording.SENT, {"n": number})
    document = recorder.document()
    assert len(document["messages"]) == recording.MAX_MESSAGES
    assert document["omitted"] == 7  # the two above and 5 more than the limit


# --------------------------------------------------------------------------- --repeat


def test_repeat_reports_a_case_answered_wrongly_every_other_run_as_flaky(tmp_path: Path) -> None:
    junit, html = tmp_path / "report.xml", tmp_path / "report.html"
    counter = tmp_path / "counter"
    done, document = _conformance(
        tmp_path, "--target", "python:tests.conformance.alternating_target:alternating", "--only", "BRG-0001",
        "--only", "BRG-0028", "--repeat", "3", "--jobs", "2", "--trace", "--junit", str(junit), "--html", str(html),
        env={"ALTERNATING_COUNTER": str(counter)},
    )  # fmt: skip
    assert counter.read_text("utf-8") == "3"  # the flipped prepare was asked once per run
    assert done.returncode == 1  # D-CNF-065: one of its runs failed
    flaky = _case(document, "BRG-0001")
    assert flaky["flaky"] == [PASSED, FAILED, PASSED]
    assert flaky["outcome"] == FAILED and flaky["failedStep"] == 0  # the failing run stands, with its diff
    assert flaky["trace"]["messages"][1]["message"]["reply"]["stage"] == "data"
    steady = _case(document, "BRG-0028")
    assert steady["outcome"] == PASSED and "flaky" not in steady
    assert document["runInfo"]["repeat"] == 3 and document["summary"]["total"] == 2
    assert "Flaky (1)" in done.stdout and "BRG-0001: passed, failed, passed" in done.stdout
    assert 'class="flaky">flaky: passed, failed, passed<' in html.read_text("utf-8")
    testcase = next(t for t in ET.parse(junit).iter("testcase") if t.get("name") == "BRG-0001")
    assert testcase.find("failure") is not None
    assert [(p.get("name"), p.get("value")) for p in testcase.iter("property")] == [("flaky", "passed, failed, passed")]


def test_a_case_that_fails_every_run_is_failed_not_flaky(tmp_path: Path) -> None:
    done, document = _conformance(tmp_path, "--target", "faulty:ids_from_zero", "--only", "BRG-0001",
                                  "--repeat", "2", "--jobs", "1")  # fmt: skip
    assert done.returncode == 1
    case = _case(document, "BRG-0001")
    assert case["outcome"] == FAILED and "flaky" not in case
    assert "Flaky" not in done.stdout


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_repeat_that_is_not_a_positive_whole_number_is_a_usage_error(value: str) -> None:
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "conformance", "--repeat", value],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "--repeat" in done.stderr and done.stdout == ""


def _outcome(case_id: str, outcome: str) -> CaseOutcome:
    return CaseOutcome(case_id, outcome)


def test_merging_runs_keeps_the_worst_run_of_a_flaky_case() -> None:
    runs = [
        [_outcome("A", PASSED), _outcome("B", PASSED), _outcome("C", UNSUPPORTED), _outcome("D", FAILED)],
        [_outcome("A", ERRORED), _outcome("B", PASSED), _outcome("C", PASSED), _outcome("D", FAILED)],
        [_outcome("A", FAILED), _outcome("B", PASSED), _outcome("C", UNSUPPORTED), _outcome("D", FAILED)],
    ]
    merged = {o.case_id: o for o in merge_repetitions(runs)}
    assert list(merged) == ["A", "B", "C", "D"]
    assert (merged["A"].outcome, merged["A"].flaky) == (ERRORED, [PASSED, ERRORED, FAILED])
    assert (merged["B"].outcome, merged["B"].flaky) == (PASSED, [])
    # Only passed and unsupported: flaky, and it passes (a timing precondition, D-CNF-058).
    assert (merged["C"].outcome, merged["C"].flaky) == (PASSED, [UNSUPPORTED, PASSED, UNSUPPORTED])
    assert (merged["D"].outcome, merged["D"].flaky) == (FAILED, [])
