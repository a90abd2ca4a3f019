"""What changed between two conformance reports (``conformance/report.schema.json``): issue 39.

A pull request is judged against its main branch's report, not against zero: which cases
regressed, which were fixed, which became or stopped being unsupported, which were added to
the suite or left it.  The kinds of change, and which of them is a regression, are D-CNF-060.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED
from intentref.suite.reports.model import OUTCOMES, labelled

REPORT_FORMAT: Final = "intentref-conformance-report/1"  # reports.conformance's; not imported: it pulls rich
NOT_PASSING: Final = (FAILED, ERRORED)


class NotAReport(ValueError):
    """A file given as a report is not one: a usage error, one line."""


@dataclass(frozen=True)
class Change:
    id: str
    level: str
    before: str | None  # None: not in the old report
    after: str | None  # None: not in the new report
    line: str = ""  # the new report's first mismatch or detail, for a regression

    def text(self) -> str:
        moved = f"{self.before or 'absent'} → {self.after or 'absent'}"
        return f"{self.id} ({self.level}) {moved}" + (f": {self.line}" if self.line else "")


# spec: D-CNF-060 -- one rule per kind of change, in the order they are listed; a case's
# change belongs to the first kind whose rule holds (so errored → failed is "changed", no fix).
KINDS: Final[tuple[tuple[str, str, Callable[[str | None, str | None], bool]], ...]] = (
    ("regressions", "passed → failed or errored", lambda old, new: old == PASSED and new in NOT_PASSING),
    ("fixes", "failed or errored → passed", lambda old, new: old in NOT_PASSING and new == PASSED),
    ("newly unsupported", "now unsupported", lambda old, new: old is not None and new == UNSUPPORTED),
    ("no longer unsupported", "unsupported before", lambda old, new: old == UNSUPPORTED and new is not None),
    ("changed failures", "failed ↔ errored: failing before and now", lambda old, new: old in NOT_PASSING and new in NOT_PASSING),
    ("added", "not in the old report", lambda old, new: old is None),
    ("removed", "not in the new report (left the suite or not selected)", lambda old, new: new is None),
)
REGRESSIONS: Final = "regressions"


@dataclass(frozen=True)
class Changes:
    by_kind: dict[str, list[Change]]

    @property
    def regressions(self) -> list[Change]:
        return self.by_kind[REGRESSIONS]

    def ids(self) -> set[str]:
        return {change.id for changes in self.by_kind.values() for change in changes}

    def headline(self) -> str:
        counted = ", ".join(f"{len(self.by_kind[name])} {name}" for name, _, _ in KINDS)
        return f"since the baseline: {counted}"

    def lines(self) -> list[str]:
        """The changes as console lines: the headline, then each non-empty kind and its cases."""
        shown = [self.headline()]
        for name, meaning, _ in KINDS:
            if self.by_kind[name]:
                shown.append(f"{name} ({meaning}):")
                shown += [f"  {change.text()}" for change in self.by_kind[name]]
        return shown

    def markdown(self) -> list[str]:
        """The changes as Markdown lines, for the end of a summary."""
        from intentref.suite.reports.markdown import LISTED_PROBLEMS, cell, code

        shown = ["### Since the baseline", "", cell(self.headline()), ""]
        for name, meaning, _ in KINDS:
            listed = self.by_kind[name]
            if listed:
                shown += [f"#### {cell(name)} ({cell(meaning)})", ""]
                shown += [f"- {code(change.text())}" for change in listed[:LISTED_PROBLEMS]]
                if len(listed) > LISTED_PROBLEMS:  # a job summary stays short (D-CNF-061)
                    shown.append(f"- … and {len(listed) - LISTED_PROBLEMS} more (the console lists them all)")
                shown.append("")
        return shown


def _first_line(case: Mapping[str, Any]) -> str:
    mismatches = case.get("mismatches") or []
    return str(mismatches[0]) if mismatches else str(case.get("detail") or "")


def between(old: Mapping[str, Any], new: Mapping[str, Any]) -> Changes:
    """The changes from report ``old`` to report ``new`` (both checked by ``load``), in the new report's order."""
    # A case judged in two eras (D-CNF-070) is two entries, compared era by era.
    before = {labelled(case["id"], case.get("era", "")): case for case in old["cases"]}
    after = {labelled(case["id"], case.get("era", "")): case for case in new["cases"]}
    order = list(after) + [case_id for case_id in before if case_id not in after]
    found: dict[str, list[Change]] = {name: [] for name, _, _ in KINDS}
    for case_id in order:
        was, now = before.get(case_id), after.get(case_id)
        old_outcome, new_outcome = (None if c is None else str(c["outcome"]) for c in (was, now))
        if old_outcome == new_outcome:
            continue
        level = str((now or was or {}).get("level", ""))
        for name, _, rule in KINDS:
            if rule(old_outcome, new_outcome):
                line = _first_line(now) if now is not None and name == REGRESSIONS else ""
                found[name].append(Change(case_id, level, old_outcome, new_outcome, line))
                break
    return Changes(found)


def check(document: Any, name: str) -> dict[str, Any]:
    """``document`` if it is a conformance report as far as comparing needs; else NotAReport, one line."""
    if not isinstance(document, dict) or document.get("format") != REPORT_FORMAT:
        raise NotAReport(f"{name}: not an intentref conformance JSON report (its \"format\" is not {REPORT_FORMAT!r})")
    cases = document.get("cases")
    if not isinstance(cases, list):
        raise NotAReport(f"{name}: not an intentref conformance JSON report (no \"cases\" list)")
    for index, case in enumerate(cases):
        if not (isinstance(case, dict) and isinstance(case.get("id"), str) and case.get("outcome") in OUTCOMES):
            raise NotAReport(f"{name}: /cases/{index} has no string id and outcome ({', '.join(OUTCOMES)})")
    return document


def load(path: str) -> dict[str, Any]:
    """The report at ``path``; NotAReport (one line) when it cannot be read or is not a report."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise NotAReport(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise NotAReport(f"{path}: not UTF-8 text") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise NotAReport(f"{path}: not JSON ({exc})") from None
    return check(document, path)
