"""A conformance run's reports: its facts, cases and outcomes (paired by id, so every selected case
may be passed even when the run stopped early) become one ``model.Report``, which the console,
JSON (``conformance/report.schema.json``), JUnit and HTML renderers draw.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

from intentref._paths import data_dir
from intentref.core.limits import well_formed
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import CaseOutcome
from intentref.suite.cases.values import Mismatch
from intentref.suite.reports import console, html, junit, model, output
from intentref.suite.reports.model import LEVELS, Report, Row, by_area, by_era, clean_json, counts, of_level

REPORT_FORMAT = "intentref-conformance-report/1"


def report_document(report: Report) -> dict[str, Any]:
    """The machine report as a JSON-ready dict (``conformance/report.schema.json``)."""
    rows = report.rows
    summary: dict[str, Any] = {"total": len(rows), **report.tally, "seconds": round(report.seconds, 6)}
    summary["byLevel"] = {level: counts(of_level(rows, level)) for level in LEVELS}
    summary["byArea"] = {area: counts(area_rows) for area, area_rows in by_area(rows).items()}
    if eras := by_era(rows):  # spec: D-CNF-070 -- each era's counts beside the other's
        summary["byEra"] = {era: counts(era_rows) for era, era_rows in eras.items()}
    return {
        "format": REPORT_FORMAT,
        "runInfo": clean_json(report.run_info),
        "summary": summary,
        "cases": [_case_entry(row) for row in rows],
    }


def _case_entry(row: Row) -> dict[str, Any]:
    return {
        "id": row.id,
        "area": row.area,
        "file": row.file,
        "level": row.level,
        "requirements": list(row.requirements),
        "decisions": list(row.decisions),
        "outcome": row.outcome,
        "seconds": round(row.seconds, 6),
        "failedStep": row.failed_step,
        "mismatches": [well_formed(line) for line in row.lines],
        "mismatchDetails": [_mismatch_entry(m) for m in row.mismatches],
        "detail": well_formed(row.detail),
        **({"trace": clean_json(row.trace)} if row.trace is not None else {}),  # D-CNF-064
        **({"flaky": list(row.flaky)} if row.flaky else {}),  # D-CNF-065
        **({"era": row.era} if row.era else {}),  # D-CNF-070
    }


def _mismatch_entry(mismatch: Mismatch) -> dict[str, Any]:
    # well_formed: a side may quote a reply's lone surrogate, which JSON text cannot carry.
    return {name: None if value is None else well_formed(value) for name, value in mismatch.to_json().items()}


def report_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((data_dir("conformance") / "report.schema.json").read_text("utf-8"))
    return schema


def print_summary(to: Console, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome],
                  titles: dict[str, str] | None = None) -> None:  # fmt: skip
    console.print_summary(to, model.conformance(run_info, cases, outcomes), titles)


def write_json(path: output.PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]) -> None:
    output.write_json(path, report_document(model.conformance(run_info, cases, outcomes)))


def write_junit(path: output.PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]) -> None:
    junit.write_junit(path, model.conformance(run_info, cases, outcomes))


def write_html(path: output.PathLike, run_info: dict[str, Any], cases: list[Case], outcomes: list[CaseOutcome]) -> None:
    html.write_html(path, model.conformance(run_info, cases, outcomes))
