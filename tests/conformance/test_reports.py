"""The conformance reports: console summary, live progress, JSON, JUnit XML and HTML.

The outcomes are real: the fixture cases run in-process against the reference (passed,
and unsupported for the MCP-envelope cases), against a deliberately faulty Bridge
(failed) and against a Bridge whose sessions raise (errored).  The HTML page is opened
in a real headless Chromium, checked through the DevTools protocol for console errors,
exceptions and outside requests, and photographed.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import queue
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from intentref.suite.alterations.faulty import faulty_target
from intentref.suite.cases.fixtures import Case, load_cases
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.cases.values import History, Mismatch, match
from intentref.suite.execution.runner import execute
from intentref.suite.reports import conformance as reports
from intentref.suite.reports import console as terminal
from intentref.suite.reports import html, model
from intentref.suite.targets.base import InProcessTarget

RUN_INFO: dict[str, Any] = {
    "target": "reference (in-process) + faults",
    "transport": "in-process",
    "level": "all",
    "started": "2026-01-01T00:00:00Z",
}
# What a broken target says: markup, an XML terminator, controls and a lone surrogate.
HOSTILE = 'boom <script>alert("x")</script> & ]]> \x01\x0b\x1f \ud800 end'


# --------------------------------------------------------------------------- the run


class _RaisingSession:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def prepare(self, request: Any) -> Any:
        return self._inner.prepare(request)

    def accept(self, request: Any) -> Any:
        raise RuntimeError(HOSTILE)  # the target broke mid-case

    def cancel(self, request: Any) -> Any:
        raise RuntimeError(HOSTILE)

    def close(self) -> None:
        self._inner.close()


class _RaisingBridge:
    def __init__(self, config: Any) -> None:
        from intentref.bridge import create_intent_bridge

        self._inner = create_intent_bridge(config)

    def connect(self) -> _RaisingSession:
        return _RaisingSession(self._inner.connect())

    def close(self) -> None:
        self._inner.close()


@dataclass
class Run:
    cases: list[Case]
    outcomes: list[CaseOutcome]

    def of(self, kind: str) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.outcome == kind]

    def tally(self, area: str | None = None) -> dict[str, int]:
        chosen = [o for o, c in zip(self.outcomes, self.cases, strict=True) if area in (None, c.area)]
        counted = Counter(o.outcome for o in chosen)
        return {name: counted.get(name, 0) for name in (PASSED, FAILED, UNSUPPORTED, ERRORED)}


def _quick(case: Case) -> bool:
    return not any(step["op"] == "sleep" for step in case.data["steps"])


def _with_an_mcp_case(cases: list[Case]) -> list[Case]:
    # The fixtures carry MCP-envelope cases; should a selection lack one, a copy of a case
    # marked mcp still shows the unsupported path.
    if any(c.transport == "mcp" for c in cases):
        return cases
    data = {**cases[0].data, "id": "ZZZ-9001", "transport": "mcp"}
    return [*cases, Case("ZZZ", "synthetic.json", data)]


def _build_run() -> Run:
    cases = _with_an_mcp_case([c for c in load_cases() if _quick(c)])
    outcomes = {o.case_id: o for o in execute(cases, InProcessTarget())}
    passed = [c for c in cases if outcomes[c.id].outcome == PASSED]
    # ids_from_zero fails every case that checks a result item's id.
    for o in execute(passed[:40], faulty_target("ids_from_zero")):
        if o.outcome == FAILED:
            outcomes[o.case_id] = o
    still = [c for c in passed[40:] if outcomes[c.id].outcome == PASSED]
    crashing = [c for c in still if any(s["op"] in ("accept", "cancel") for s in c.data["steps"])][:3]
    for o in execute(crashing, InProcessTarget(bridge_factory=_RaisingBridge)):
        outcomes[o.case_id] = o
    return Run(cases, [outcomes[c.id] for c in cases])


@pytest.fixture(scope="module")
def run() -> Run:
    built = _build_run()
    for kind in (PASSED, FAILED, UNSUPPORTED, ERRORED):
        assert built.of(kind), f"the report run has no {kind} case"
    return built


@pytest.fixture(scope="module")
def written(run: Run, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    paths = {"json": folder / "report.json", "junit": folder / "junit.xml", "html": folder / "report.html"}
    reports.write_json(paths["json"], RUN_INFO, run.cases, run.outcomes)
    reports.write_junit(paths["junit"], RUN_INFO, run.cases, run.outcomes)
    reports.write_html(paths["html"], RUN_INFO, run.cases, run.outcomes)
    return paths


# --------------------------------------------------------------------------- mismatches


_JOB = History(replies=[{"kind": "task"}])


@pytest.mark.parametrize(
    ("expected", "actual", "path", "where", "text", "fields"),
    [
        (
            "i1",
            "i0",
            "/result/intents/0/id",
            "step 2 (accept)",
            'step 2 (accept) /result/intents/0/id: expected "i1", got "i0"',
            ("/result/intents/0/id", '"i1"', '"i0"', None),
        ),
        (
            {"$subset": {"expiresAt": {"$absent": True}}},
            {"expiresAt": "2026"},
            "",
            "step 0 (prepare)",
            'step 0 (prepare) /expiresAt: expected no such member, got "2026"',
            ("/expiresAt", "no such member", '"2026"', None),
        ),
        (
            {"$subset": {"partialResult": 1}},
            {},
            "/error",
            "step 1 (cancel)",
            "step 1 (cancel) /error/partialResult: missing",
            ("/error/partialResult", "a member here", "nothing", "missing"),
        ),
        (
            {},
            {"x": None},
            "",
            "step 3 (accept)",
            "step 3 (accept) /x: unexpected member null",
            ("/x", "no such member", "null", "unexpected member null"),
        ),
        (
            True,
            False,
            "/isError",
            "step 4 envelope",
            "step 4 envelope /isError: expected true, got false",
            ("/isError", "true", "false", None),
        ),
        (
            {"$task": {}},
            {"kind": "error"},
            "",
            "step 1 (accept)",
            'step 1 (accept) /: expected a task reply, got {"kind":"error"}',
            ("/", "a task reply", '{"kind":"error"}', None),
        ),
        (
            {"$subset": {"code": "SCHEMA_UNSUPPORTED"}},
            {"code": "OK"},
            "",
            "setup",
            'setup /code: expected "SCHEMA_UNSUPPORTED", got "OK"',
            ("/code", '"SCHEMA_UNSUPPORTED"', '"OK"', None),
        ),
        (
            {"$reply": 0, "pointer": "/jobId"},
            "j",
            "/jobId",
            "step 1 (accept)",
            "step 1 (accept): step 0 reply has nothing at /jobId",
            (None, None, None, "step 0 reply has nothing at /jobId"),
        ),
        # Both sides hold ", got ": a line of text could not be split back, the record needs no split.
        (
            "a, got b",
            "c, got d",
            "/s",
            "step 2 (accept)",
            'step 2 (accept) /s: expected "a, got b", got "c, got d"',
            ("/s", '"a, got b"', '"c, got d"', None),
        ),
        (
            1,
            2,
            "/data/order id",
            "step 1 (accept)",
            "step 1 (accept) /data/order id: expected 1, got 2",
            ("/data/order id", "1", "2", None),
        ),
        (
            {"$not": 1},
            1,
            "/n",
            "",
            "/n: expected anything but 1",
            ("/n", None, None, "expected anything but 1"),
        ),
    ],
)
def test_a_mismatch_is_a_record_of_where_path_expected_and_actual(
    expected: Any, actual: Any, path: str, where: str, text: str, fields: tuple[str | None, ...]
) -> None:
    [found] = match(expected, actual, path, _JOB)
    mismatch = found.at(where) if where else found
    assert (mismatch.path, mismatch.expected, mismatch.actual, mismatch.reason) == fields
    assert mismatch.where == where and str(mismatch) == text
    assert mismatch.is_pair == (fields[1] is not None and fields[2] is not None)
    assert mismatch.to_json() == dict(
        zip(("where", "path", "expected", "actual", "reason"), (where, *fields), strict=True)
    )


def test_the_console_and_html_render_the_fields_not_a_line_of_text() -> None:
    pair = Mismatch("/s", '"a, got b"', '"c, got d"', where="step 2 (accept)")
    console, buffer = _plain_console()
    console.print(terminal.mismatch_line(pair))
    assert buffer.getvalue().split() == ["step", "2", "(accept)", "/s", "expected", '"a,', "got", 'b"', "got", '"c,',
                                         "got", 'd"']  # fmt: skip
    table = html._diff_table(
        [pair, Mismatch(None, reason="step 0 reply has nothing at /jobId", where="step 1")]
    )
    assert '<td class="exp">&quot;a, got b&quot;</td><td class="got">&quot;c, got d&quot;</td>' in table
    assert (
        '<td>step 1</td><td class="ptr">/</td><td colspan="2">step 0 reply has nothing at /jobId</td>'
        in table
    )


# --------------------------------------------------------------------------- console


def _plain_console(width: int = 120) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=width, force_terminal=False, color_system=None), buffer


_CLOSING = re.compile(
    r"^(\d+) passed, (\d+) failed, (\d+) unsupported, (\d+) errored in ([\d.]+) s \(([\d.]+) cases/s\)$", re.M
)


def test_the_summary_shows_areas_failures_errors_and_a_closing_line(run: Run) -> None:
    console, buffer = _plain_console()
    reports.print_summary(console, {**RUN_INFO, "seconds": 2.0}, run.cases, run.outcomes)
    out = buffer.getvalue()
    assert "\x1b" not in out, "no control codes on a console that is not a terminal"
    for area in {c.area for c in run.cases}:
        assert re.search(rf"│ {area}\s+│", out), f"area {area} has no row"
    for outcome in run.of(FAILED):
        assert outcome.case_id in out
        for mismatch in outcome.mismatches:
            assert (mismatch.path or "/") in out
    for outcome in run.of(ERRORED):
        assert outcome.case_id in out
    assert "RuntimeError: boom <script>" in out  # shown as text, markup and all
    closing = _CLOSING.findall(out)
    tally = run.tally()
    assert len(closing) == 1
    assert [int(n) for n in closing[0][:4]] == [
        tally[PASSED],
        tally[FAILED],
        tally[UNSUPPORTED],
        tally[ERRORED],
    ]
    assert float(closing[0][4]) == 2.0  # run_info's wall seconds win over the case sum
    assert float(closing[0][5]) == pytest.approx(len(run.outcomes) / 2.0, abs=0.1)
    assert out.rstrip().endswith(")")  # the closing line is the last line


def test_the_summary_table_splits_normative_and_reference(run: Run) -> None:
    table = terminal.summary_table(model.case_rows(run.cases, run.outcomes))
    headers = [str(c.header) for c in table.columns]
    assert headers == [
        "Area",
        "Cases",
        "Passed",
        "Failed",
        "Unsupported",
        "Errored",
        "Normative",
        "Reference",
    ]


def test_live_progress_is_plain_text_off_a_terminal(run: Run) -> None:
    console, buffer = _plain_console()
    picked = list(zip(run.cases, run.outcomes, strict=True))[:25] + [
        (c, o) for c, o in zip(run.cases, run.outcomes, strict=True) if o.outcome in (FAILED, ERRORED)
    ]
    with terminal.LiveProgress(console, len(picked)) as progress:
        assert not progress.live
        for case, outcome in picked:
            progress.advance(case, outcome)
    out = buffer.getvalue()
    assert "\x1b" not in out and "\r" not in out
    lines = out.splitlines()
    assert len(lines) == len(picked)
    width = len(str(len(picked)))
    assert lines[0].startswith(f"[{1:>{width}}/{len(picked)}] {picked[0][0].id} ")
    assert all(line.startswith("[") for line in lines)
    assert any(re.search(r"^\[ *\d+/\d+\] \S+ failed \([\d.]+ s\): step \d+", line) for line in lines)


def test_live_progress_draws_a_bar_on_a_terminal(run: Run) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=True, color_system="standard")
    with terminal.LiveProgress(console, len(run.outcomes)) as progress:
        assert progress.live
        for case, outcome in zip(run.cases, run.outcomes, strict=True):
            progress.advance(case, outcome)
    out = buffer.getvalue()
    assert "\x1b[" in out  # the live path was taken
    # One live bar and nothing else: no case is printed above it (the summary lists them),
    # and its tally counts the failures as they come.
    assert not any(outcome.case_id in out for outcome in run.of(FAILED) + run.of(ERRORED))
    assert f"{len(run.of(FAILED))} failed" in out
    assert progress.tally[FAILED] == len(run.of(FAILED))


# --------------------------------------------------------------------------- JSON


def test_the_json_report_satisfies_its_schema_and_counts(run: Run, written: dict[str, Path]) -> None:
    document = json.loads(written["json"].read_text("utf-8"))
    jsonschema.Draft202012Validator(reports.report_schema()).validate(document)
    tally = run.tally()
    summary = document["summary"]
    assert {k: summary[k] for k in tally} == tally
    assert summary["total"] == len(run.outcomes) == len(document["cases"])
    for area, counts in summary["byArea"].items():
        assert counts == run.tally(area)
    assert sum(summary["byLevel"][level][PASSED] for level in ("normative", "reference")) == tally[PASSED]
    assert document["runInfo"] == RUN_INFO
    by_id = {entry["id"]: entry for entry in document["cases"]}
    for case, outcome in zip(run.cases, run.outcomes, strict=True):
        entry = by_id[case.id]
        assert (entry["outcome"], entry["area"], entry["file"], entry["level"]) == (
            outcome.outcome,
            case.area,
            case.file,
            case.level,
        )
        assert entry["requirements"] == case.data["requirements"]
        assert entry["decisions"] == case.data.get("decisions", [])
        assert entry["failedStep"] == outcome.failed_step
        assert entry["mismatches"] == [str(m) for m in outcome.mismatches]
        assert entry["mismatchDetails"] == [m.to_json() for m in outcome.mismatches]
    errored = by_id[run.of(ERRORED)[0].case_id]
    assert errored["detail"].startswith("RuntimeError: boom") and "\ufffd" in errored["detail"]


def test_the_report_schema_refuses_a_broken_report(run: Run) -> None:
    document = reports.report_document(model.conformance(RUN_INFO, run.cases, run.outcomes))
    validator = jsonschema.Draft202012Validator(reports.report_schema())
    failed = next(e for e in document["cases"] if e["outcome"] == FAILED)
    failed["mismatches"] = []  # a failure must say why
    assert not validator.is_valid(document)


def test_a_report_written_before_mismatch_details_still_validates(run: Run) -> None:
    document = reports.report_document(model.conformance(RUN_INFO, run.cases, run.outcomes))
    validator = jsonschema.Draft202012Validator(reports.report_schema())
    assert any(entry["mismatchDetails"] for entry in document["cases"])
    for entry in document["cases"]:
        del entry["mismatchDetails"]
    validator.validate(document)
    failed = next(
        e
        for e in reports.report_document(model.conformance(RUN_INFO, run.cases, run.outcomes))["cases"]
        if e["outcome"] == FAILED
    )
    failed["mismatchDetails"][0]["pointer"] = "/"  # a member the record does not have
    assert not validator.is_valid({**document, "cases": [failed]})


# --------------------------------------------------------------------------- JUnit


def test_the_junit_report_counts_match(run: Run, written: dict[str, Path]) -> None:
    root = ET.parse(written["junit"]).getroot()
    tally = run.tally()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        str(len(run.outcomes)),
        str(tally[FAILED]),
        str(tally[ERRORED]),
        str(tally[UNSUPPORTED]),
    )
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == list(dict.fromkeys(c.area for c in run.cases))
    outcome_of = {o.case_id: o for o in run.outcomes}
    for suite in suites:
        area_tally = run.tally(suite.get("name"))
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases)) == str(sum(area_tally.values()))
        assert suite.get("failures") == str(area_tally[FAILED]) == str(len(suite.findall("testcase/failure")))
        assert suite.get("errors") == str(area_tally[ERRORED]) == str(len(suite.findall("testcase/error")))
        assert (
            suite.get("skipped")
            == str(area_tally[UNSUPPORTED])
            == str(len(suite.findall("testcase/skipped")))
        )
        assert {p.get("name") for p in suite.findall("properties/property")} == set(RUN_INFO)
        for element in cases:
            outcome = outcome_of[element.get("name", "")]
            children = [c.tag for c in element if c.tag != "system-out"]
            expected = {PASSED: [], FAILED: ["failure"], ERRORED: ["error"], UNSUPPORTED: ["skipped"]}
            assert children == expected[outcome.outcome], element.get("name")
            if outcome.outcome == FAILED:
                assert element.findtext("failure") == "\n".join(str(m) for m in outcome.mismatches)
            if outcome.outcome == UNSUPPORTED:
                assert element.find("skipped").get("message", "").startswith("unsupported: ")  # type: ignore[union-attr]


def _hostile_run() -> tuple[list[Case], list[CaseOutcome]]:
    data = {
        "id": "XSS-0001",
        "description": HOSTILE,
        "requirements": ["R-BRG-001"],
        "level": "reference",
        "decisions": ["D-BRG-001"],
        "steps": [],
    }
    cases = [Case("XSS", "hostile.json", data), Case("XSS", "hostile.json", {**data, "id": "XSS-0002"})]
    outcomes = [
        CaseOutcome("XSS-0001", FAILED, [Mismatch("/a<b>", HOSTILE, HOSTILE, where="step 0 (accept)")], 0),
        CaseOutcome("XSS-0002", ERRORED, detail=HOSTILE),
        CaseOutcome("XSS-0003", UNSUPPORTED, detail=HOSTILE),  # no case given: a stub stands in
    ]
    return cases, outcomes


def test_hostile_text_is_escaped_and_made_legal(tmp_path: Path) -> None:
    cases, outcomes = _hostile_run()
    info = {"note": HOSTILE}
    reports.write_junit(tmp_path / "j.xml", info, cases, outcomes)
    reports.write_json(tmp_path / "r.json", info, cases, outcomes)
    reports.write_html(tmp_path / "r.html", info, cases, outcomes)
    raw = (tmp_path / "j.xml").read_bytes()
    root = ET.fromstring(raw)  # parses: every illegal character is gone
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]", raw)
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and "<script>" in (failure.text or "") and "\ufffd" in (failure.text or "")
    assert root.find("testsuite/testcase/error") is not None
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["cases"][2]["area"] == "XSS"
    page = (tmp_path / "r.html").read_text("utf-8")
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]", page)
    _check_html(page)


# --------------------------------------------------------------------------- HTML, statically

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Structure(HTMLParser):
    """Tag balance, ids, links and outside references of a page (HTML5's optional end tags unused)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.ids: Counter[str] = Counter()
        self.links: list[str] = []
        self.tags: Counter[str] = Counter()
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        values = dict(attrs)
        if "id" in values:
            self.ids[values["id"] or ""] += 1
        if "src" in values or tag in ("script", "iframe", "object", "embed") or (tag == "link"):
            self.problems.append(f"<{tag}> loads or runs something: {attrs}")
        if "href" in values:
            self.links.append(values["href"] or "")
        if any(name.startswith("on") for name, _ in attrs):
            self.problems.append(f"<{tag}> has an inline event handler")
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _check_html(page: str) -> _Structure:
    parsed = _Structure()
    parsed.feed(page)
    parsed.close()
    assert parsed.doctype == "DOCTYPE html"
    assert not parsed.problems, parsed.problems[:5]
    assert not parsed.stack, f"unclosed: {parsed.stack}"
    assert parsed.tags["html"] == parsed.tags["head"] == parsed.tags["body"] == parsed.tags["title"] == 1
    assert re.search(r'<html lang="en">\n<head>\n<meta charset="utf-8">', page)
    duplicated = [i for i, n in parsed.ids.items() if n > 1]
    assert not duplicated, duplicated
    for href in parsed.links:
        assert href.startswith("#"), f"outside link {href}"
        assert href[1:] in parsed.ids, f"link to a missing anchor {href}"
    return parsed


def test_the_html_page_is_well_formed_and_self_contained(run: Run, written: dict[str, Path]) -> None:
    page = written["html"].read_text("utf-8")
    parsed = _check_html(page)
    assert parsed.tags["style"] == 1 and parsed.tags["script"] == 0
    assert page.count('<div class="case failed"') == len(run.of(FAILED))
    assert page.count('<div class="case errored"') == len(run.of(ERRORED))
    cited = {r for c in run.cases for r in c.data["requirements"]}
    assert {i.removeprefix("req-") for i in parsed.ids if i.startswith("req-")} == cited
    for outcome in run.of(FAILED):
        assert f'id="case-{outcome.case_id}"' in page


# --------------------------------------------------------------------------- HTML in Chromium


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is not None:
        return found
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail("chromium is missing in CI; .ci/setup installs it (apt-get install -y chromium)")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
)
WIDTH, HEIGHT = 1280, 1600


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# Console lines of Chromium's stderr log: "INFO:CONSOLE:12] ..." (older: "CONSOLE(12)").
_CONSOLE_LINE = re.compile(r"CONSOLE[(:]\d+|Uncaught")


@pytest.mark.parametrize(
    ("line", "is_console"),
    [
        ('[1:1:1202/152838.050230:INFO:CONSOLE:1] "bad", source: file:///tmp/bad.html (1)', True),
        (
            '[1:1:1202/152838.052392:INFO:CONSOLE:1] "Uncaught ReferenceError: f is not defined", source: x (1)',
            True,
        ),
        ('[1:1:0101/000000.000000:INFO:CONSOLE(7)] "old style", source: file:///x.html (7)', True),
        ("[1:2:1202/152828.751232:ERROR:dbus/bus.cc:405] Failed to connect to the bus", False),
        ("/usr/bin/chromium: 9: [: 25275990016: unexpected operator", False),
    ],
)
def test_the_stderr_check_knows_chromium_console_lines(line: str, is_console: bool) -> None:
    # Lines as Chromium 120+ (and older builds) write them with --enable-logging=stderr.
    assert bool(_CONSOLE_LINE.search(line)) is is_console


def test_chromium_renders_the_page(run: Run, written: dict[str, Path], tmp_path: Path) -> None:
    chromium = _chromium()
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            chromium,
            *_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            f"--window-size={WIDTH},{HEIGHT}",
            f"--screenshot={shot}",
            "--dump-dom",
            written["html"].as_uri(),
        ],
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr[-2000:]
    console = [line for line in stderr.splitlines() if _CONSOLE_LINE.search(line)]
    assert not console, console
    dom = done.stdout.decode("utf-8")
    # What the browser built is the page: the same failures, the same matrix rows.
    assert dom.count('class="case failed"') == len(run.of(FAILED))
    assert dom.count(
        "<tr", dom.index('class="matrix"'), dom.index("</table>", dom.index('class="matrix"'))
    ) == (len({c.area for c in run.cases}) + 2)
    assert f"<title>intentref conformance: {len(run.of(PASSED))} passed" in dom
    data = shot.read_bytes()
    assert _png_size(data) == (WIDTH, HEIGHT)
    assert len(data) > 20_000, "a blank screenshot compresses to almost nothing"


# --- the DevTools protocol over a pipe, with the standard library only ------------------------

# Chromium reads commands from fd 3 and writes to fd 4; the trampoline puts the pipes there.
_TRAMPOLINE = (
    "import fcntl, os, sys\n"
    "a = fcntl.fcntl(int(sys.argv[1]), fcntl.F_DUPFD, 10)\n"
    "b = fcntl.fcntl(int(sys.argv[2]), fcntl.F_DUPFD, 10)\n"
    "os.dup2(a, 3)\nos.dup2(b, 4)\nos.close(a)\nos.close(b)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


class DevTools:
    """A minimal CDP client over ``--remote-debugging-pipe`` (NUL-separated JSON messages)."""

    def __init__(self, chromium: str, profile: Path, log: Path) -> None:
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        with log.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _TRAMPOLINE,
                    str(to_chrome_r),
                    str(from_chrome_w),
                    chromium,
                    *_FLAGS,
                    f"--user-data-dir={profile}",
                    "--remote-debugging-pipe",
                    "about:blank",
                ],
                pass_fds=(to_chrome_r, from_chrome_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(from_chrome_r,), daemon=True)
        self._reader.start()
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, fd: int) -> None:
        buffer = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                buffer += chunk
                while b"\0" in buffer:
                    message, buffer = buffer.split(b"\0", 1)
                    self._inbox.put(json.loads(message))
        self._inbox.put(None)

    def _receive(self, deadline: float) -> dict[str, Any]:
        try:
            message = self._inbox.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError("Chromium did not answer in time") from None
        if message is None:
            raise RuntimeError("Chromium closed the DevTools pipe")
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str, session: str, since: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(
            e.get("method") == method and e.get("sessionId") == session for e in self.events[since:]
        ):
            self.events.append(self._receive(deadline))

    def settle(self, seconds: float) -> None:
        """Collect whatever arrives for a moment (late console messages, late requests)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                message = self._inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return
            if message is None:
                return
            self.events.append(message)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):  # it may close the pipe first
            self.call("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


@dataclass
class Visit:
    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    png: bytes = b""


# Read in the page after it loaded (the page itself runs no script).
_FACTS = """(() => {
  const ids = new Set([...document.querySelectorAll('[id]')].map(e => e.id));
  const style = sel => { const e = document.querySelector(sel);
    return e ? [getComputedStyle(e).color, getComputedStyle(e).backgroundColor] : null; };
  return {
    title: document.title,
    overflowX: document.documentElement.scrollWidth - window.innerWidth,
    height: document.documentElement.scrollHeight,
    brokenLinks: [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href').slice(1))
      .filter(id => !ids.has(id)),
    matrixRows: document.querySelectorAll('table.matrix tbody tr').length,
    failedCases: document.querySelectorAll('.case.failed').length,
    sumRow: style('tr.sum td'),
    failedCell: style('td.c-failed'),
    passedCell: style('td.c-passed'),
    diffGot: style('table.diff td.got'),
    bodyFont: getComputedStyle(document.body).fontFamily,
  };
})()"""


def _problems(events: list[dict[str, Any]], session: str, url: str) -> list[str]:
    found = []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(
                f"exception: {details.get('text')} {details.get('exception', {}).get('description', '')}"
            )
        elif method == "Runtime.consoleAPICalled":
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            found.append(f"console.{params.get('type')}: {' '.join(texts)}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
            entry = params["entry"]
            found.append(f"log {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            requested = params.get("request", {}).get("url", "")
            if requested != url and not requested.startswith("data:"):
                found.append(f"request: {requested}")
    return found


def visit(tools: DevTools, url: str) -> Visit:
    target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        tools.call(f"{domain}.enable", session=session)
    tools.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session,
    )
    since = len(tools.events)
    tools.call("Page.navigate", {"url": url}, session)
    tools.wait_for("Page.loadEventFired", session, since)
    tools.settle(0.3)
    evaluated = tools.call("Runtime.evaluate", {"expression": _FACTS, "returnByValue": True}, session)
    facts = evaluated.get("result", {}).get("value") or {}
    height = min(int(facts.get("height") or 900), 4_000)  # the top of the page is enough to judge
    shot = tools.call(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
        },
        session,
    )
    tools.settle(0.1)
    result = Visit(_problems(tools.events[since:], session, url), facts, base64.b64decode(shot["data"]))
    tools.call("Target.closeTarget", {"targetId": target})
    return result


@pytest.fixture(scope="module")
def devtools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    chromium = _chromium()
    folder = tmp_path_factory.mktemp("chromium")
    tools = DevTools(chromium, folder / "profile", folder / "stderr.log")
    try:
        tools.call("Browser.getVersion")
        yield tools
    finally:
        tools.close()


def test_the_devtools_check_sees_errors_on_a_broken_page(devtools: DevTools, tmp_path: Path) -> None:
    # The control: the check below is worth something only if it can fail.
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>x</title></head><body>'
        '<script>console.error("bad"); missing();</script>'
        '<img src="https://conformance.invalid/x.png" alt=""></body></html>',
        "utf-8",
    )
    problems = visit(devtools, page.as_uri()).problems
    assert any(p.startswith("exception:") and "missing" in p for p in problems), problems
    assert any(p.startswith("console.error: bad") for p in problems), problems
    assert any(p.startswith("request: https://conformance.invalid/") for p in problems), problems


def test_the_page_in_chromium_has_no_errors_and_looks_right(
    run: Run, written: dict[str, Path], devtools: DevTools
) -> None:
    seen = visit(devtools, written["html"].as_uri())
    assert not seen.problems, seen.problems
    facts = seen.facts
    assert facts["title"].startswith("intentref conformance:")
    assert facts["brokenLinks"] == []
    assert facts["overflowX"] <= 0, "the page is wider than the window"
    assert facts["matrixRows"] == len({c.area for c in run.cases}) + 1
    assert facts["failedCases"] == len(run.of(FAILED))
    # The style sheet applied: coloured cells, and the totals row is not white on white.
    assert facts["failedCell"] == ["rgb(164, 14, 38)", "rgb(255, 235, 233)"]
    assert facts["passedCell"] == ["rgb(17, 99, 41)", "rgb(218, 251, 225)"]
    assert facts["diffGot"][1] == "rgb(255, 235, 233)"
    assert facts["sumRow"][0] != "rgb(255, 255, 255)"
    width, height = _png_size(seen.png)
    assert width == WIDTH and height >= 900
    if os.environ.get("INTENTREF_REPORT_SCREENSHOT"):  # for a person who wants to look at it
        Path(os.environ["INTENTREF_REPORT_SCREENSHOT"]).write_bytes(seen.png)
