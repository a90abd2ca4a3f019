"""What a conformance run tells its reader: the console summary, live progress, and files.

Four renderings of one list of ``(Case, CaseOutcome)`` pairs:

* ``print_summary`` and ``LiveProgress`` -- for a person at a terminal (and, degraded to
  plain lines, for a CI log);
* ``write_json`` -- the machine report, described by ``conformance/report.schema.json``;
* ``write_junit`` -- JUnit XML, so any CI can show the run as tests;
* ``write_html`` -- one self-contained page to hand to an implementer.

``run_info`` is free-form (target, transport, level, start time, …) and is shown as given;
its ``seconds`` member, when present, is the run's wall time, otherwise the case times
are added up.  Outcomes are paired with their cases by id, so a caller may pass every
selected case even when the run stopped early.
"""

from __future__ import annotations

import html
import json
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from intentref._paths import data_dir
from intentref.core.limits import well_formed
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.cases.values import Mismatch

OUTCOMES: tuple[str, ...] = (PASSED, FAILED, UNSUPPORTED, ERRORED)
LEVELS: tuple[str, ...] = ("normative", "reference")
REPORT_FORMAT = "intentref-conformance-report/1"
_STYLES = {PASSED: "green", FAILED: "red", UNSUPPORTED: "bright_black", ERRORED: "magenta"}

PathLike = str | os.PathLike[str]


# --------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class Row:
    """One case of the run with what happened to it."""

    case: Case
    outcome: CaseOutcome

    @property
    def requirements(self) -> list[str]:
        return [str(r) for r in self.case.data.get("requirements", [])]

    @property
    def decisions(self) -> list[str]:
        return [str(d) for d in self.case.data.get("decisions", [])]

    @property
    def description(self) -> str:
        return str(self.case.data.get("description", ""))


def _stub_case(case_id: str) -> Case:
    # An outcome whose case was not passed in still belongs in the report; its area is
    # the id's prefix, as every fixture id's is.
    return Case(case_id.split("-", 1)[0], "", {"id": case_id, "level": "normative", "requirements": []})


def pair(cases: Iterable[Case], outcomes: Iterable[CaseOutcome]) -> list[Row]:
    """The outcomes in run order, each with its case (cases that did not run are left out)."""
    by_id = {case.id: case for case in cases}
    return [Row(by_id.get(o.case_id) or _stub_case(o.case_id), o) for o in outcomes]


def counts(rows: Iterable[Row]) -> dict[str, int]:
    tally = Counter(row.outcome.outcome for row in rows)
    return {name: tally.get(name, 0) for name in OUTCOMES}


def _by_area(rows: Sequence[Row]) -> dict[str, list[Row]]:
    areas: dict[str, list[Row]] = {}
    for row in rows:  # first-seen order: the fixture files' order, which is the spec's
        areas.setdefault(row.case.area, []).append(row)
    return areas


def _seconds(run_info: dict[str, Any], rows: Sequence[Row]) -> float:
    wall = run_info.get("seconds")
    if isinstance(wall, int | float) and not isinstance(wall, bool):
        return float(wall)
    return sum(row.outcome.seconds for row in rows)


def closing_line(rows: Sequence[Row], seconds: float) -> str:
    """``N passed, N failed, N unsupported, N errored in S s (R cases/s)``."""
    tally = counts(rows)
    rate = len(rows) / seconds if seconds > 0 else 0.0
    listed = ", ".join(f"{tally[name]} {name}" for name in OUTCOMES)
    return f"{listed} in {seconds:.2f} s ({rate:.1f} cases/s)"


# --------------------------------------------------------------------------- mismatches


# The runner hands over ``values.Mismatch`` records (where, path, expected, actual, reason);
# every format below renders their fields, none parses a line of text back.


# --------------------------------------------------------------------------- text hygiene


def _is_allowed(char: str) -> bool:
    # XML 1.0 Char production, which also excludes what HTML5 calls control characters
    # and noncharacters U+FFFE/U+FFFF; tab, newline and carriage return stay.
    code = ord(char)
    if code in (0x9, 0xA, 0xD):
        return True
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return False
    return not (0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF))


def clean_text(value: Any) -> str:
    """``value`` as text that XML 1.0 and HTML5 accept.

    Lone surrogates (a fixture may send them on purpose) become U+FFFD, as a UTF-8 wire
    would carry them; other characters XML forbids (C0/C1 controls, U+FFFE/U+FFFF) are
    dropped.
    """
    text = well_formed(str(value))
    if all(_is_allowed(c) for c in text):
        return text
    return "".join(c for c in text if _is_allowed(c))


def _clean_json(value: Any) -> Any:
    """A JSON-ready copy of ``value`` whose strings (keys too) are well-formed Unicode."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, dict):
        return {well_formed(str(k)): _clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return well_formed(str(value))  # a datetime or a path in run_info: shown as text


# --------------------------------------------------------------------------- console


def plain_value(value: Any) -> str:
    """A run_info value as a reader wants it: a mapping as ``key value, key value`` (empty members
    left out), a list as ``a, b``, anything else as its text."""
    if isinstance(value, dict):
        shown = [f"{key} {plain_value(item)}" for key, item in value.items() if item not in (None, "", [], {})]
        return ", ".join(shown) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(item) for item in value) or "-"
    return clean_text(value)


def _run_info_text(run_info: dict[str, Any]) -> Text:
    text = Text("Conformance run", style="bold")
    for key, value in run_info.items():
        text.append("\n  ")
        text.append(f"{key}: ", style="dim")
        text.append(plain_value(value))
    return text


def area_titles(folder: PathLike | None = None) -> dict[str, str]:
    """Each fixture file's area code and its title up to the seed citation in parentheses."""
    from intentref.suite.cases.fixtures import fixture_files

    titles: dict[str, str] = {}
    for path in fixture_files(None if folder is None else Path(folder)):
        document = json.loads(path.read_text("utf-8"))
        title = str(document.get("title", ""))
        titles[str(document.get("area", ""))] = title.split(" (", 1)[0] if title.endswith(")") else title
    return titles


def _level_cell(rows: list[Row], level: str) -> Text:
    """``passed/total`` of one level, with its failures and errors (unsupported is the rest)."""
    level_rows = [r for r in rows if r.case.level == level]
    if not level_rows:
        return Text("–", style="dim")
    tally = counts(level_rows)
    broken = tally[FAILED] or tally[ERRORED]
    cell = Text(f"{tally[PASSED]}/{len(level_rows)}", style="bold" if broken else _STYLES[PASSED])
    for name in (FAILED, ERRORED):
        if tally[name]:
            cell.append(f" · {tally[name]} {name}", style=_STYLES[name])
    return cell


def _count_cell(value: int, name: str) -> Text:
    return Text(str(value), style=_STYLES[name] if value else "dim")


# Narrower than this, the per-level columns leave the summary table and become one line
# under it: the table then fits an 80-column terminal with every header whole.
LEVEL_COLUMNS_WIDTH = 120


def summary_table(rows: Sequence[Row], titles: dict[str, str] | None = None, levels: bool = True) -> Table:
    """One row per area (its code, then its title when ``titles`` has one), then the total.

    Headers never wrap or shorten (``min_width``, ``no_wrap``); on a narrow console the area
    column wraps its title.  ``levels`` adds the normative and reference columns.
    """
    titles = titles or {}
    table = Table(title="Conformance by area", title_justify="left")
    table.add_column("Area", ratio=1, min_width=len("Area"), overflow="fold")
    table.add_column("Cases", justify="right", no_wrap=True, min_width=len("Cases"))
    for name in OUTCOMES:
        table.add_column(name.capitalize(), justify="right", no_wrap=True, min_width=len(name))
    if levels:
        for level in LEVELS:
            table.add_column(level.capitalize(), no_wrap=True, min_width=len(level))
    areas = _by_area(rows)
    for area, area_rows in areas.items():
        tally = counts(area_rows)
        cell = Text(area, style="bold")
        if titles.get(area):
            cell.append(" " + clean_text(titles[area]))
        table.add_row(
            cell,
            str(len(area_rows)),
            *(_count_cell(tally[n], n) for n in OUTCOMES),
            *((_level_cell(area_rows, level) for level in LEVELS) if levels else ()),
        )
    total = counts(rows)
    table.add_section()
    table.add_row(
        Text("Total", style="bold"),
        str(len(rows)),
        *(_count_cell(total[n], n) for n in OUTCOMES),
        *((_level_cell(list(rows), level) for level in LEVELS) if levels else ()),
    )
    return table


def levels_line(rows: Sequence[Row]) -> Text:
    """``normative 900/950 passed · reference …``: the level split when the table has no room for it."""
    line = Text("By level: ", style="dim")
    for index, level in enumerate(LEVELS):
        level_rows = [r for r in rows if r.case.level == level]
        line.append(" · " if index else "", style="dim")
        if not level_rows:
            line.append(f"{level} –")
            continue
        tally = counts(level_rows)
        line.append(f"{level} {tally[PASSED]}/{len(level_rows)} passed")
        for name in (FAILED, ERRORED):
            if tally[name]:
                line.append(f", {tally[name]} {name}", style=_STYLES[name])
    return line


def mismatch_line(mismatch: Mismatch) -> Text:
    """One readable line: where, pointer, expected (green) and got (red), or what is wrong in words."""
    line = Text("    ")
    if mismatch.where:
        line.append(clean_text(mismatch.where), style="dim")
        line.append(" ")
    line.append(clean_text(mismatch.path or "/"), style="cyan")  # no path: the reply as a whole
    if not mismatch.is_pair:
        line.append("  ")
        line.append(clean_text(mismatch.message))
        return line
    line.append("  expected ", style="dim")
    line.append(clean_text(mismatch.expected), style="green")
    line.append("  got ", style="dim")
    line.append(clean_text(mismatch.actual), style="red")
    return line


def _case_heading(row: Row) -> Text:
    outcome = row.outcome
    heading = Text(f"  {row.case.id}", style=f"bold {_STYLES[outcome.outcome]}")
    where = ", ".join(p for p in (row.case.file, row.case.level) if p)
    heading.append(f" ({where})" if where else "", style="dim")
    if outcome.failed_step is not None:
        heading.append(f" at step {outcome.failed_step}", style="dim")
    if row.description:
        heading.append("\n    " + clean_text(row.description), style="italic")
    return heading


def unsupported_reasons(rows: Sequence[Row]) -> list[tuple[str, int]]:
    """Each distinct reason a case was unsupported, with how many cases gave it, most first."""
    tally = Counter(row.outcome.detail or "(no reason given)" for row in rows if row.outcome.outcome == UNSUPPORTED)
    return sorted(tally.items(), key=lambda item: (-item[1], item[0]))


def print_summary(
    console: Console,
    run_info: dict[str, Any],
    cases: list[Case],
    outcomes: list[CaseOutcome],
    titles: dict[str, str] | None = None,
) -> None:
    """The run's facts, the area table (with each area's title from ``titles``), every failure and
    errored case, the unsupported reasons grouped with their counts, then the closing line."""
    rows = pair(cases, outcomes)
    console.print(_run_info_text(run_info))
    wide = console.width >= LEVEL_COLUMNS_WIDTH
    console.print(summary_table(rows, titles, levels=wide))
    if not wide:
        console.print(levels_line(rows))
    failures = [r for r in rows if r.outcome.outcome == FAILED]
    if failures:
        console.print(Text(f"Failures ({len(failures)})", style="bold red"))
        for row in failures:
            console.print(_case_heading(row))
            for mismatch in row.outcome.mismatches:
                console.print(mismatch_line(mismatch), soft_wrap=True)
    errored = [r for r in rows if r.outcome.outcome == ERRORED]
    if errored:
        console.print(Text(f"Errored ({len(errored)})", style="bold magenta"))
        for row in errored:
            console.print(_case_heading(row))
            console.print(Text("    " + clean_text(row.outcome.detail or "(no detail)")), soft_wrap=True)
    reasons = unsupported_reasons(rows)
    if reasons:
        console.print(Text(f"Unsupported ({sum(n for _, n in reasons)}), by reason (not failures):", style="bold"))
        for reason, number in reasons:
            line = Text(f"  {number:>4} × ", style=_STYLES[UNSUPPORTED])
            line.append(clean_text(reason))
            console.print(line, soft_wrap=True)
    tally = counts(rows)
    style = "bold red" if tally[FAILED] or tally[ERRORED] else "bold green"
    console.print(Text(closing_line(rows, _seconds(run_info, rows)), style=style))


class LiveProgress:
    """Progress while the cases run: one live bar on a terminal, one plain line per area elsewhere.

    ``advance`` has the runner's ``on_outcome`` signature, so the CLI can write::

        with LiveProgress(console, len(cases), cases=cases) as progress:
            outcomes = execute(cases, target, on_outcome=progress.advance)

    On a terminal the bar is the only thing drawn (its tally counts failures as they come;
    the summary lists them).  When the console is not a terminal (a CI log, a pipe) a line
    is written as each area's last case ends -- no cursor movement, no colour.  Without
    ``cases`` the areas are unknown and a line is written per case instead.
    """

    def __init__(self, console: Console, total: int, description: str = "conformance",
                 cases: Sequence[Case] | None = None) -> None:  # fmt: skip
        self.console = console
        self.total = total
        self.description = description
        self.tally: Counter[str] = Counter()
        self.done = 0
        self._area_total: Counter[str] = Counter(case.area for case in cases or ())
        self._area_tally: dict[str, Counter[str]] = {}
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    @property
    def live(self) -> bool:
        return self.console.is_terminal and not self.console.is_dumb_terminal

    def __enter__(self) -> LiveProgress:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[tally]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,  # the summary that follows says it all; keep the log short
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total, tally="")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _tally_text(self, tally: Counter[str]) -> str:
        return ", ".join(f"{tally[name]} {name}" for name in OUTCOMES if tally[name])

    def advance(self, case: Case, outcome: CaseOutcome) -> None:
        self.done += 1
        self.tally[outcome.outcome] += 1
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, tally=self._tally_text(self.tally))
            return
        # Plain text straight to the console's file: a log line needs none of rich's rendering.
        width = len(str(self.total))
        if not self._area_total:
            plain = f"[{self.done:>{width}}/{self.total}] {case.id} {outcome.outcome} ({outcome.seconds:.3f} s)"
            if outcome.outcome in (FAILED, ERRORED):
                plain += ": " + clean_text(str(outcome.mismatches[0]) if outcome.mismatches else outcome.detail)
            self.console.file.write(plain + "\n")
            return
        area = self._area_tally.setdefault(case.area, Counter())
        area[outcome.outcome] += 1
        if sum(area.values()) == self._area_total[case.area]:
            self.console.file.write(f"[{self.done:>{width}}/{self.total}] {case.area}: "
                                    f"{self._area_total[case.area]} cases, {self._tally_text(area)}\n")  # fmt: skip


# --------------------------------------------------------------------------- JSON


def report_document(
    run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]
) -> dict[str, Any]:
    """The machine report as a JSON-ready dict (``conformance/report.schema.json``)."""
    rows = pair(cases, outcomes)
    summary: dict[str, Any] = {
        "total": len(rows),
        **counts(rows),
        "seconds": round(_seconds(run_info, rows), 6),
    }
    summary["byLevel"] = {level: counts(r for r in rows if r.case.level == level) for level in LEVELS}
    summary["byArea"] = {area: counts(area_rows) for area, area_rows in _by_area(rows).items()}
    return {
        "format": REPORT_FORMAT,
        "runInfo": _clean_json(run_info),
        "summary": summary,
        "cases": [_case_entry(row) for row in rows],
    }


def _case_entry(row: Row) -> dict[str, Any]:
    outcome = row.outcome
    return {
        "id": row.case.id,
        "area": row.case.area,
        "file": row.case.file,
        "level": row.case.level,
        "requirements": row.requirements,
        "decisions": row.decisions,
        "outcome": outcome.outcome,
        "seconds": round(outcome.seconds, 6),
        "failedStep": outcome.failed_step,
        "mismatches": [well_formed(str(m)) for m in outcome.mismatches],
        "mismatchDetails": [_mismatch_entry(m) for m in outcome.mismatches],
        "detail": well_formed(outcome.detail),
    }


def _mismatch_entry(mismatch: Mismatch) -> dict[str, Any]:
    # well_formed: a side may quote a reply's lone surrogate, which JSON text cannot carry.
    return {name: None if value is None else well_formed(value) for name, value in mismatch.to_json().items()}


def report_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((data_dir("conformance") / "report.schema.json").read_text("utf-8"))
    return schema


def write_json(
    path: PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]
) -> None:
    document = report_document(run_info, cases, outcomes)
    text = json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False)
    _write_text(path, text + "\n")


def output_problem(path: PathLike) -> str | None:
    """Why a report cannot be written at ``path``, or None: checked before a run starts, so a
    mistyped folder costs nothing and no run's results are lost to it."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        return "is a folder"
    if not folder.is_dir():
        return f"folder {str(folder)!r} does not exist" if not folder.exists() else f"{str(folder)!r} is not a folder"
    if target.exists() and not os.access(target, os.W_OK):
        return "cannot be written (permission denied)"
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {str(folder)!r} cannot be written to (permission denied)"
    return None


def _write_text(path: PathLike, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


# --------------------------------------------------------------------------- JUnit XML


def _attr(value: Any) -> str:
    return clean_text(value)


def _suite_counts(rows: Sequence[Row]) -> dict[str, str]:
    tally = counts(rows)
    return {
        "tests": str(len(rows)),
        "failures": str(tally[FAILED]),
        "errors": str(tally[ERRORED]),
        "skipped": str(tally[UNSUPPORTED]),
        "time": f"{sum(r.outcome.seconds for r in rows):.6f}",
    }


def _testcase(suite: ET.Element, row: Row) -> None:
    outcome = row.outcome
    element = ET.SubElement(
        suite,
        "testcase",
        {
            "name": _attr(row.case.id),
            "classname": _attr(
                f"conformance.{row.case.area}.{row.case.file.removesuffix('.json') or row.case.area}"
            ),
            "time": f"{outcome.seconds:.6f}",
        },
    )
    if outcome.outcome == FAILED:
        first = str(outcome.mismatches[0]) if outcome.mismatches else "the case failed"
        step = "" if outcome.failed_step is None else f"step {outcome.failed_step}: "
        failure = ET.SubElement(element, "failure", {"message": _attr(step + first), "type": "mismatch"})
        failure.text = clean_text("\n".join(str(m) for m in outcome.mismatches))
    elif outcome.outcome == ERRORED:
        error = ET.SubElement(
            element, "error", {"message": _attr(outcome.detail or "the target broke"), "type": "target-broke"}
        )
        error.text = clean_text(outcome.detail)
    elif outcome.outcome == UNSUPPORTED:
        ET.SubElement(element, "skipped", {"message": _attr(f"unsupported: {outcome.detail}")})
    if row.description or row.requirements:
        # Where a CI shows a test's output, show what the case is about and what it cites.
        cited = " ".join(row.requirements + row.decisions)
        ET.SubElement(element, "system-out").text = clean_text(f"{row.description}\n{cited}".strip())


def junit_tree(run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]) -> ET.ElementTree:
    rows = pair(cases, outcomes)
    root = ET.Element("testsuites", {"name": "intentref conformance", **_suite_counts(rows)})
    for area, area_rows in _by_area(rows).items():
        suite = ET.SubElement(root, "testsuite", {"name": _attr(area), **_suite_counts(area_rows)})
        if run_info:
            properties = ET.SubElement(suite, "properties")
            for key, value in run_info.items():
                ET.SubElement(properties, "property", {"name": _attr(key), "value": _attr(value)})
        for row in area_rows:
            _testcase(suite, row)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(
    path: PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]
) -> None:
    junit_tree(run_info, cases, outcomes).write(path, encoding="utf-8", xml_declaration=True)


# --------------------------------------------------------------------------- HTML

_REQUIREMENT_HEADING = re.compile(r"^#{2,6} (R-[A-Z]{3}-\d{3}) — (.+?)\s*$", re.M)


@cache
def requirement_titles() -> dict[str, str]:
    """``R-…`` id → title, from spec/requirements.md (empty when the spec is not shipped)."""
    try:
        text = (data_dir("spec") / "requirements.md").read_text("utf-8")
    except (FileNotFoundError, OSError):
        return {}
    return {m[1]: m[2] for m in _REQUIREMENT_HEADING.finditer(text)}


def _e(value: Any) -> str:
    return html.escape(clean_text(value), quote=True)


def _anchor(prefix: str, name: str) -> str:
    # Ids are fixture ids and R-/D- ids already; anything else is made id-safe.
    return prefix + re.sub(r"[^A-Za-z0-9_-]", "_", name)


_CSS = """
:root { --pass: #1a7f37; --fail: #cf222e; --unsup: #6e7781; --err: #8250df; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 0;
  background: #f6f8fa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 0 0 10px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
dl.info { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; }
dl.info dt { color: #656d76; } dl.info dd { margin: 0; overflow-wrap: anywhere; }
.totals { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 14px; }
.total { border-radius: 6px; padding: 8px 14px; color: #fff; min-width: 120px; }
.total b { display: block; font-size: 24px; line-height: 1.1; }
.bg-passed { background: var(--pass); } .bg-failed { background: var(--fail); }
.bg-unsupported { background: var(--unsup); } .bg-errored { background: var(--err); }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { color: #afb8c1; }
td.c-passed { background: #dafbe1; color: #116329; font-weight: 600; }
td.c-failed { background: #ffebe9; color: #a40e26; font-weight: 600; }
td.c-unsupported { background: #eaeef2; color: #424a53; font-weight: 600; }
td.c-errored { background: #fbefff; color: #6639ba; font-weight: 600; }
tr.sum td { font-weight: 700; border-top: 2px solid #8c959f; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; color: #fff; font-size: 12px; font-weight: 600; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: 8px; border-radius: 6px; margin: 6px 0; }
.case { border-left: 4px solid var(--fail); padding: 4px 0 4px 12px; margin: 14px 0; }
.case.errored { border-color: var(--err); }
.case h3 { font-size: 15px; margin: 0 0 2px; } .meta { color: #656d76; font-size: 12.5px; }
table.diff td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px;
  overflow-wrap: anywhere; }
table.diff { table-layout: fixed; } table.diff th:nth-child(1) { width: 13%; }
table.diff th:nth-child(2) { width: 25%; } table.diff th:nth-child(3), table.diff th:nth-child(4) { width: 31%; }
table.diff td.ptr { color: #0550ae; } table.diff td.exp { background: #e6ffec; } table.diff td.got { background: #ffebe9; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
.cases a { margin-right: 2px; white-space: nowrap; }
a.o-failed { color: var(--fail); font-weight: 600; } a.o-errored { color: var(--err); font-weight: 600; }
a.o-unsupported { color: var(--unsup); }
td.req { white-space: nowrap; } td.title { width: 30%; } td.outcome { width: 190px; } .badge { white-space: nowrap; margin: 1px 0; }
tr.w-failed td.req { box-shadow: inset 4px 0 var(--fail); } tr.w-errored td.req { box-shadow: inset 4px 0 var(--err); }
tr.w-unsupported td.req { box-shadow: inset 4px 0 var(--unsup); } tr.w-passed td.req { box-shadow: inset 4px 0 var(--pass); }
details > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
.muted { color: #656d76; }
"""


def _info_block(run_info: dict[str, Any], rows: Sequence[Row], seconds: float) -> str:
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in run_info.items())
    tally = counts(rows)
    totals = "".join(f'<div class="total bg-{name}"><b>{tally[name]}</b>{name}</div>' for name in OUTCOMES)
    return (
        "<section><h1>intentref conformance report</h1>"
        f'<p class="muted">{_e(closing_line(rows, seconds))}</p>'
        f'<dl class="info">{items}</dl><div class="totals">{totals}</div></section>'
    )


def _count_td(value: int, name: str) -> str:
    css = f"c-{name}" if value else "zero"
    return f'<td class="n {css}">{value}</td>'


def _matrix(rows: Sequence[Row]) -> str:
    head = "".join(f'<th class="n">{name}</th>' for name in OUTCOMES)
    level_head = "".join(f"<th>{level}</th>" for level in LEVELS)
    body = []
    for area, area_rows in [*_by_area(rows).items(), ("Total", list(rows))]:
        tally = counts(area_rows)
        levels = "".join(f"<td>{_level_html(area_rows, level)}</td>" for level in LEVELS)
        css = ' class="sum"' if area == "Total" else ""  # areas are three capitals, never "Total"
        body.append(
            f'<tr{css}><td>{_e(area)}</td><td class="n">{len(area_rows)}</td>'
            + "".join(_count_td(tally[n], n) for n in OUTCOMES)
            + levels
            + "</tr>"
        )
    return (
        '<section><h2 id="areas">Areas × outcomes</h2><table class="matrix"><thead><tr><th>Area</th>'
        f'<th class="n">cases</th>{head}{level_head}</tr></thead><tbody>{"".join(body)}</tbody></table></section>'
    )


def _level_html(rows: Sequence[Row], level: str) -> str:
    tally = counts(r for r in rows if r.case.level == level)
    parts = [f'<span class="badge bg-{n}">{tally[n]} {n}</span>' for n in OUTCOMES if tally[n]]
    return " ".join(parts) or '<span class="muted">–</span>'


_SEVERITY: tuple[str, ...] = (ERRORED, FAILED, UNSUPPORTED, PASSED)


def _worst(outcomes: Iterable[str]) -> str:
    # A requirement is only as good as its weakest case.
    seen = set(outcomes)
    for name in _SEVERITY:
        if name in seen:
            return name
    return UNSUPPORTED


def _requirement_sort_key(req: str) -> tuple[int, str]:
    order = list(requirement_titles())
    return (order.index(req), req) if req in order else (len(order), req)


def _coverage(rows: Sequence[Row]) -> str:
    cited: dict[str, list[Row]] = {}
    for row in rows:
        for req in row.requirements:
            cited.setdefault(req, []).append(row)
    titles = requirement_titles()
    body = []
    for req in sorted(cited, key=_requirement_sort_key):
        req_rows = cited[req]
        worst = _worst(r.outcome.outcome for r in req_rows)
        # Spaces between the links let a long list wrap; the cases that did not pass come first.
        ordered = sorted(req_rows, key=lambda r: r.outcome.outcome == PASSED)
        links = " ".join(
            f'<a class="o-{r.outcome.outcome}" href="#{_anchor("case-", r.case.id)}" '
            f'title="{_e(r.outcome.outcome)}">{_e(r.case.id)}</a>'
            for r in ordered
        )
        tally = counts(req_rows)
        summary = " ".join(f'<span class="badge bg-{n}">{tally[n]} {n}</span>' for n in _SEVERITY if tally[n])
        body.append(
            f'<tr class="w-{worst}" id="{_anchor("req-", req)}"><td class="req"><code>{_e(req)}</code></td>'
            f'<td class="title">{_e(titles.get(req, ""))}</td><td class="outcome">{summary}</td>'
            f'<td class="cases">{links}</td></tr>'
        )
    uncited = [r for r in titles if r not in cited]
    spec_note = f" of {len(titles)} in spec/requirements.md" if titles else ""
    missing = ""
    if uncited:
        missing = (
            f"<details><summary>{len(uncited)} requirements no case cites</summary><p>"
            + ", ".join(f"<code>{_e(r)}</code> {_e(titles[r])}" for r in uncited)
            + "</p></details>"
        )
    return (
        '<section><h2 id="coverage">Requirement coverage</h2>'
        f'<p class="muted">{len(cited)} requirements cited by the cases run{spec_note}.</p>'
        "<table><thead><tr><th>Requirement</th><th>Title</th><th>Outcome</th><th>Cases</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{missing}</section>"
    )


def _diff_table(mismatches: list[Mismatch]) -> str:
    body = []
    for m in mismatches:
        if not m.is_pair:
            cells = f'<td colspan="2">{_e(m.message)}</td>'
        else:
            cells = f'<td class="exp">{_e(m.expected)}</td><td class="got">{_e(m.actual)}</td>'
        body.append(f'<tr><td>{_e(m.where)}</td><td class="ptr">{_e(m.path or "/")}</td>{cells}</tr>')
    return (
        '<table class="diff"><thead><tr><th>where</th><th>pointer</th><th>expected</th><th>got</th></tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _case_meta(row: Row) -> str:
    cited = ", ".join(f'<a href="#{_anchor("req-", r)}">{_e(r)}</a>' for r in row.requirements)
    decisions = f" · decisions {_e(', '.join(row.decisions))}" if row.decisions else ""
    step = "" if row.outcome.failed_step is None else f" · failed at step {row.outcome.failed_step}"
    return (
        f'<div class="meta">{_e(row.case.file)} · {_e(row.case.level)}{step} · {cited}{decisions}</div>'
        f"<p>{_e(row.description)}</p>"
    )


def _problems(rows: Sequence[Row]) -> str:
    failed = [r for r in rows if r.outcome.outcome == FAILED]
    errored = [r for r in rows if r.outcome.outcome == ERRORED]
    parts = [f'<section><h2 id="failures">Failures ({len(failed)})</h2>']
    if not failed:
        parts.append('<p class="muted">No case failed.</p>')
    for row in failed:
        parts.append(
            f'<div class="case failed" id="{_anchor("case-", row.case.id)}"><h3>{_e(row.case.id)}</h3>'
            f"{_case_meta(row)}{_diff_table(row.outcome.mismatches)}</div>"
        )
    parts.append(f'</section><section><h2 id="errored">Errored ({len(errored)})</h2>')
    if not errored:
        parts.append('<p class="muted">No case errored.</p>')
    for row in errored:
        parts.append(
            f'<div class="case errored" id="{_anchor("case-", row.case.id)}"><h3>{_e(row.case.id)}</h3>'
            f"{_case_meta(row)}<pre>{_e(row.outcome.detail)}</pre></div>"
        )
    parts.append("</section>")
    return "".join(parts)


def _all_cases(rows: Sequence[Row]) -> str:
    # Failed and errored cases are anchored in their own sections; the rest get theirs here.
    body = []
    for row in rows:
        anchored = row.outcome.outcome in (FAILED, ERRORED)
        row_id = "" if anchored else f' id="{_anchor("case-", row.case.id)}"'
        name = (
            f'<a href="#{_anchor("case-", row.case.id)}">{_e(row.case.id)}</a>'
            if anchored
            else _e(row.case.id)
        )
        note = row.outcome.detail if row.outcome.outcome == UNSUPPORTED else ""
        body.append(
            f"<tr{row_id}><td>{name}</td><td>{_e(row.case.level)}</td>"
            f'<td><span class="badge bg-{row.outcome.outcome}">{row.outcome.outcome}</span></td>'
            f'<td class="n">{row.outcome.seconds * 1000:.1f} ms</td><td>{_e(row.description)}'
            f"{' <span class=muted>(' + _e(note) + ')</span>' if note else ''}</td></tr>"
        )
    return (
        f'<section><h2 id="cases">All cases ({len(rows)})</h2><details><summary>Show every case</summary>'
        '<table><thead><tr><th>Case</th><th>Level</th><th>Outcome</th><th class="n">Time</th>'
        f"<th>Description</th></tr></thead><tbody>{''.join(body)}</tbody></table></details></section>"
    )


def html_page(run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]) -> str:
    rows = pair(cases, outcomes)
    seconds = _seconds(run_info, rows)
    tally = counts(rows)
    title = f"intentref conformance: {tally[PASSED]} passed, {tally[FAILED]} failed"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
        + _info_block(run_info, rows, seconds)
        + _matrix(rows)
        + _problems(rows)
        + _coverage(rows)
        + _all_cases(rows)
        + "\n</main>\n</body>\n</html>\n"
    )


def write_html(
    path: PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]
) -> None:
    _write_text(path, html_page(run_info, cases, outcomes))
