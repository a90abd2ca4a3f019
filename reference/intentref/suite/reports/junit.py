"""A report as JUnit XML, so any CI shows the run as tests: a ``testsuite`` per area, the run's facts
as its ``properties``; ``failure``, ``error`` or ``skipped`` as the row's outcome says."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from intentref.suite.cases.script import ERRORED, FAILED, UNSUPPORTED
from intentref.suite.reports.model import Report, Row, by_area, clean_text, counts
from intentref.suite.reports.output import PathLike


def _suite_counts(rows: Sequence[Row]) -> dict[str, str]:
    tally = counts(rows)
    return {"tests": str(len(rows)), "failures": str(tally[FAILED]), "errors": str(tally[ERRORED]),
            "skipped": str(tally[UNSUPPORTED]), "time": f"{sum(r.seconds for r in rows):.6f}"}


def _testcase(suite: ET.Element, row: Row, failure_type: str) -> None:
    element = ET.SubElement(
        suite, "testcase", {"name": clean_text(row.label), "classname": clean_text(row.group), "time": f"{row.seconds:.6f}"}
    )
    if row.outcome == FAILED:
        first = row.lines[0] if row.lines else "the case failed"
        step = "" if row.failed_step is None else f"step {row.failed_step}: "
        failure = ET.SubElement(element, "failure", {"message": clean_text(step + first), "type": failure_type})
        failure.text = clean_text("\n".join(row.lines))
    elif row.outcome == ERRORED:
        error = ET.SubElement(
            element, "error", {"message": clean_text(row.detail or "the target broke"), "type": "target-broke"}
        )
        error.text = clean_text(row.detail)
    elif row.outcome == UNSUPPORTED:
        ET.SubElement(element, "skipped", {"message": clean_text(f"unsupported: {row.detail}")})
    if row.flaky:
        # spec: D-CNF-065 -- a property every JUnit reader keeps, beside the failure or error the
        # case's worst run gave (surefire's flakyFailure is for a rerun that passed).
        properties = ET.SubElement(element, "properties")
        ET.SubElement(properties, "property", {"name": "flaky", "value": ", ".join(row.flaky)})
    if row.title or row.requirements:
        # Where a CI shows a test's output, show what the case is about and what it cites.
        cited = " ".join(row.requirements + row.decisions)
        ET.SubElement(element, "system-out").text = clean_text(f"{row.title}\n{cited}".strip())


def junit_tree(report: Report) -> ET.ElementTree:
    root = ET.Element("testsuites", {"name": report.name, **_suite_counts(report.rows)})
    for area, area_rows in by_area(report.rows).items():
        suite = ET.SubElement(root, "testsuite", {"name": clean_text(area), **_suite_counts(area_rows)})
        if report.run_info:
            properties = ET.SubElement(suite, "properties")
            for key, value in report.run_info.items():
                ET.SubElement(properties, "property", {"name": clean_text(key), "value": clean_text(value)})
        for row in area_rows:
            _testcase(suite, row, report.failure_type)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: PathLike, report: Report) -> None:
    junit_tree(report).write(path, encoding="utf-8", xml_declaration=True)
