"""The one report model every run of the suite becomes before anything is written.

A ``Report`` is the run's facts (``run_info``: free-form, shown as given; its ``seconds``, when
present, is the wall time) and a ``Row`` per case or host scenario.  ``conformance`` makes one of
a conformance run; the host command and the matrix make theirs of the same rows.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from intentref._paths import data_dir
from intentref.core.limits import well_formed
from intentref.suite.cases.fixtures import Case, fixture_files
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.cases.values import Mismatch
from intentref.suite.reports.output import PathLike

OUTCOMES: tuple[str, ...] = (PASSED, FAILED, UNSUPPORTED, ERRORED)
LEVELS: tuple[str, ...] = ("normative", "reference")


@dataclass(frozen=True)
class Row:
    """One case (or host scenario) of a run and what happened to it."""

    id: str
    outcome: str
    area: str
    level: str
    title: str = ""  # the case's description, the scenario's title
    file: str = ""
    group: str = ""  # the dotted name a test reporter files the row under (JUnit's classname)
    seconds: float = 0.0
    failed_step: int | None = None
    detail: str = ""
    lines: tuple[str, ...] = ()  # one line per thing that went wrong, as a log shows it
    mismatches: tuple[Mismatch, ...] = ()  # a conformance case's lines as records
    violations: tuple[dict[str, str], ...] = ()  # a host scenario's lines as records
    requirements: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    trace: dict[str, Any] | None = None  # --trace: what a failed or errored case exchanged (D-CNF-064)
    flaky: tuple[str, ...] = ()  # --repeat: each run's outcome, when they differ (D-CNF-065)
    era: str = ""  # --era both: the era this row was judged in (D-CNF-070); "" in a run of one era

    @property
    def label(self) -> str:
        """The row's id, with its era when the run judged two (``BRG-0001 [legacy]``)."""
        return labelled(self.id, self.era)


@dataclass(frozen=True)
class Report:
    """A run: its facts and its rows."""

    name: str  # "intentref conformance": the heading of every rendering
    title: str  # the outcome in one sentence: the page's title
    run_info: dict[str, Any]
    rows: list[Row]
    note: str = ""  # what a reader of the page should know about the rules applied
    failure_type: str = "mismatch"  # what a failed row's lines are, in JUnit's terms

    @cached_property
    def tally(self) -> dict[str, int]:
        return counts(self.rows)

    @property
    def seconds(self) -> float:
        wall = self.run_info.get("seconds")
        if isinstance(wall, int | float) and not isinstance(wall, bool):
            return float(wall)
        return sum(row.seconds for row in self.rows)


# --------------------------------------------------------------------------- a conformance run


def case_row(case: Case, outcome: CaseOutcome) -> Row:
    return Row(
        id=case.id, outcome=outcome.outcome, area=case.area, level=case.level,
        title=str(case.data.get("description", "")), file=case.file,
        group=f"conformance.{case.area}.{case.file.removesuffix('.json') or case.area}",
        seconds=outcome.seconds, failed_step=outcome.failed_step, detail=outcome.detail,
        lines=tuple(str(m) for m in outcome.mismatches), mismatches=tuple(outcome.mismatches),
        requirements=tuple(str(r) for r in case.data.get("requirements", [])),
        decisions=tuple(str(d) for d in case.data.get("decisions", [])),
        trace=outcome.trace, flaky=tuple(outcome.flaky), era=outcome.era,
    )  # fmt: skip


def _stub_case(case_id: str) -> Case:
    # An outcome whose case was not passed in still belongs in the report; its area is
    # the id's prefix, as every fixture id's is.
    return Case(case_id.split("-", 1)[0], "", {"id": case_id, "level": "normative", "requirements": []})


def case_rows(cases: Iterable[Case], outcomes: Iterable[CaseOutcome]) -> list[Row]:
    """The outcomes in run order, each with its case paired by id (cases that did not run are left out)."""
    by_id = {case.id: case for case in cases}
    return [case_row(by_id.get(o.case_id) or _stub_case(o.case_id), o) for o in outcomes]


def conformance(run_info: dict[str, Any], cases: Iterable[Case], outcomes: Iterable[CaseOutcome]) -> Report:
    rows = case_rows(cases, outcomes)
    tally = counts(rows)
    return Report("intentref conformance", f"intentref conformance: {tally[PASSED]} passed, {tally[FAILED]} failed",
                  run_info, rows)  # fmt: skip


# --------------------------------------------------------------------------- tallies


def counts(rows: Iterable[Row]) -> dict[str, int]:
    tally = Counter(row.outcome for row in rows)
    return {name: tally.get(name, 0) for name in OUTCOMES}


def labelled(row_id: str, era: str = "") -> str:
    return f"{row_id} [{era}]" if era else row_id


def by_era(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """The rows of each era, side by side (D-CNF-070); empty when the run judged one era."""
    eras: dict[str, list[Row]] = {}
    for row in rows:
        if row.era:
            eras.setdefault(row.era, []).append(row)
    return eras


def of_level(rows: Iterable[Row], level: str) -> list[Row]:
    return [row for row in rows if row.level == level]


def by_area(rows: Iterable[Row]) -> dict[str, list[Row]]:
    areas: dict[str, list[Row]] = {}
    for row in rows:  # first-seen order: the fixture files' order, which is the spec's
        areas.setdefault(row.area, []).append(row)
    return areas


def closing_line(report: Report) -> str:
    """``N passed, N failed, N unsupported, N errored in S s (R cases/s)``."""
    seconds = report.seconds
    rate = len(report.rows) / seconds if seconds > 0 else 0.0
    listed = ", ".join(f"{report.tally[name]} {name}" for name in OUTCOMES)
    return f"{listed} in {seconds:.2f} s ({rate:.1f} cases/s)"


def unsupported_reasons(rows: Iterable[Row]) -> list[tuple[str, int]]:
    """Each distinct reason a case was unsupported, with how many cases gave it, most first."""
    tally = Counter(row.detail or "(no reason given)" for row in rows if row.outcome == UNSUPPORTED)
    return sorted(tally.items(), key=lambda item: (-item[1], item[0]))


# --------------------------------------------------------------------------- titles


def area_titles(folder: PathLike | None = None) -> dict[str, str]:
    """Each fixture file's area code and its title up to the seed citation in parentheses."""
    titles: dict[str, str] = {}
    for path in fixture_files(None if folder is None else Path(folder)):
        document = json.loads(path.read_text("utf-8"))
        title = str(document.get("title", ""))
        titles[str(document.get("area", ""))] = title.split(" (", 1)[0] if title.endswith(")") else title
    return titles


_REQUIREMENT_HEADING = re.compile(r"^#{2,6} (R-[A-Z]{3}-\d{3}) — (.+?)\s*$", re.M)


@cache
def requirement_titles() -> dict[str, str]:
    """``R-…`` id → title, from spec/requirements.md (empty when the spec is not shipped)."""
    try:
        text = (data_dir("spec") / "requirements.md").read_text("utf-8")
    except OSError:
        return {}
    return {m[1]: m[2] for m in _REQUIREMENT_HEADING.finditer(text)}


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
    """``value`` as text that XML 1.0 and HTML5 accept: lone surrogates become U+FFFD, as a
    UTF-8 wire would carry them; other characters XML forbids are dropped."""
    text = well_formed(str(value))
    if all(_is_allowed(c) for c in text):
        return text
    return "".join(c for c in text if _is_allowed(c))


def plain_value(value: Any) -> str:
    """A run_info value as a reader wants it: a mapping as ``key value, key value`` (empty members
    left out), a list as ``a, b``, anything else as its text."""
    if isinstance(value, dict):
        shown = [f"{key} {plain_value(item)}" for key, item in value.items() if item not in (None, "", [], {})]
        return ", ".join(shown) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(item) for item in value) or "-"
    return clean_text(value)


def clean_json(value: Any) -> Any:
    """A JSON-ready copy of ``value`` whose strings (keys too) are well-formed Unicode."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, dict):
        return {well_formed(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return well_formed(str(value))  # a datetime or a path in run_info: shown as text
