"""A report as a short Markdown summary: what a CI page shows where its reader looks (issue 39).

One page: the run's facts (era, target or host command), the counts per level and per area,
each failed or errored row with its one-line diff and what it cites, the unsupported rows
grouped by reason.  A matrix run is one table row per implementation.  When
``$GITHUB_STEP_SUMMARY`` names a file the same text is appended to it, as GitHub documents
for a job summary (D-CNF-061).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from intentref.suite.cases.script import ERRORED, FAILED
from intentref.suite.reports.model import (
    LEVELS,
    OUTCOMES,
    Report,
    Row,
    by_area,
    by_era,
    closing_line,
    counts,
    of_level,
    plain_value,
    unsupported_reasons,
)
from intentref.suite.reports.output import PathLike, write_text

# spec: D-CNF-061 -- a summary stays short: the first rows that went wrong are listed, the rest counted.
LISTED_PROBLEMS: Final = 50
# The run facts a reader of a summary looks for first, in this order, when the run has them.
FACTS: Final = ("target", "transport", "era", "command", "level")
STEP_SUMMARY: Final = "GITHUB_STEP_SUMMARY"

_TABLE_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def cell(value: Any) -> str:
    """Text that stays one table cell: Markdown's and a table's special characters escaped, on one line."""
    return _TABLE_SPECIAL.sub(r"\\\1", " ".join(plain_value(value).split()))


def code(text: str) -> str:
    """Text as one inline code span, whatever backticks it holds (CommonMark's rule: a longer fence)."""
    flat = " ".join(text.split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    return f"{fence}{padded}{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return [*lines, ""]


def _tally_rows(groups: Mapping[str, Sequence[Row]]) -> list[list[Any]]:
    return [[name, len(rows), *counts(rows).values()] for name, rows in groups.items() if rows]


def _facts(report: Report) -> list[str]:
    shown = [f"**{key}** {cell(report.run_info[key])}" for key in FACTS if report.run_info.get(key) not in (None, "", "-")]
    return [" · ".join(shown), ""] if shown else []


def problem_line(row: Row) -> str:
    """One list item: the row, its level and citations, and the first thing that went wrong."""
    cited = ", ".join(row.requirements + row.decisions)
    where = "" if row.failed_step is None else f" at step {row.failed_step}"
    first = row.lines[0] if row.lines else row.detail or f"the case {row.outcome}"
    about = f" — {cell(cited)}" if cited else ""
    return f"- **{cell(row.label)}** {row.outcome} ({row.level}){where}{about}: {code(first)}"


def _problems(rows: Sequence[Row]) -> list[str]:
    wrong = [row for row in rows if row.outcome in (FAILED, ERRORED)]
    if not wrong:
        return []
    lines = [f"### Failed and errored ({len(wrong)})", ""]
    lines += [problem_line(row) for row in wrong[:LISTED_PROBLEMS]]
    if len(wrong) > LISTED_PROBLEMS:
        lines.append(f"- … and {len(wrong) - LISTED_PROBLEMS} more (the JSON, JUnit and HTML reports list them all)")
    return [*lines, ""]


def _unsupported(rows: Sequence[Row]) -> list[str]:
    reasons = unsupported_reasons(rows)
    if not reasons:
        return []
    total = sum(count for _, count in reasons)
    return [f"### Unsupported ({total}), by reason", "", *table(("Cases", "Reason"), ((n, r) for r, n in reasons))]


def summary(report: Report, extra: Sequence[str] = ()) -> str:
    """The report as a Markdown summary; ``extra`` (Markdown lines, e.g. what changed since a baseline) ends it."""
    rows = report.rows
    lines = [f"## {cell(report.title)}", "", *_facts(report), closing_line(report), ""]
    header = ("", "cases", *OUTCOMES)
    levels = {level: of_level(rows, level) for level in LEVELS}
    levels.update({row.level: of_level(rows, row.level) for row in rows if row.level not in levels})
    lines += ["### By level", "", *table(("level", *header[1:]), _tally_rows(levels))]
    if eras := by_era(rows):  # spec: D-CNF-070
        lines += ["### By era", "", *table(("era", *header[1:]), _tally_rows(eras))]
    areas = by_area(rows)
    if len(areas) > 1:
        lines += ["### By area", "", *table(("area", *header[1:]), _tally_rows(areas))]
    lines += _problems(rows) + _unsupported(rows) + list(extra)
    return "\n".join(lines).rstrip("\n") + "\n"


def matrix_summary(document: Mapping[str, Any]) -> str:
    """A matrix run (``conformance/matrix.schema.json``) as one table row per implementation."""
    header = ("implementation", "kind", "normative passed", "failed", "unsupported", "errored",
              "reference passed", "failed", "unsupported", "errored", "note")  # fmt: skip
    rows = []
    for impl in document.get("implementations", []):
        s = impl["summary"]
        numbers = [s[level].get(name, 0) for level in LEVELS for name in OUTCOMES]
        rows.append([impl["name"], impl["kind"], *numbers, s.get("error") or ""])
    cases = len(document.get("cases", []))
    lines = [f"## intentref matrix: {len(rows)} implementations × {cases} cases", "",
             f"{len(document.get('disagreements', []))} cases on which implementations disagree; "
             f"{document.get('wallSeconds', 0)} s", "", *table(header, rows)]  # fmt: skip
    return "\n".join(lines).rstrip("\n") + "\n"


def write_markdown(path: PathLike, text: str) -> None:
    write_text(path, text)


def append_step_summary(text: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Append ``text`` to the file ``$GITHUB_STEP_SUMMARY`` names; that path, or None when unset.

    spec: D-CNF-061 -- appended, never overwritten (another step's summary stays); a file that
    cannot be written is a warning on stderr, never the run's verdict.
    """
    path = environ.get(STEP_SUMMARY)
    if not path:
        return None
    try:
        with open(path, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(text if text.startswith("\n") else "\n" + text)
    except OSError as exc:
        print(f"warning: ${STEP_SUMMARY} {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    return path
