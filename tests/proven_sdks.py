"""README's tables of the SDKs the suite is proven against ("What your server meets", issue 37).

Each row is one run CI already makes: a server built on an SDK judged by ``intentref
conformance --level normative``, or a host built on an SDK judged by ``intentref host``. The
test making the run checks what it counted against its row (``check_row``), and
tests/spec/test_documented_figures.py checks each row's SDK version against the installed
package and that some test checks the row, so the tables cannot drift from what CI proves.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from tests.conftest import ROOT

OUTCOMES = ("passed", "failed", "errored", "unsupported")
# A report's era ("era" in runInfo or the host report) as the tables name it.
ERA_NAMES = {"2026": "2026-07-28", "legacy": "handshake"}


def readme_tables() -> list[str]:
    """The tables of the section, each as its lines in README.md."""
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("\n### What your server meets\n")
    section = readme[start : readme.index("\n## ", start)]
    return re.findall(r"^(?:\|.*\n)+", section, re.M)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def readme_rows() -> list[dict[str, str]]:
    """Every row of the tables, by column name."""
    rows = []
    for table in readme_tables():
        header, _rule, *lines = table.splitlines()
        rows += [dict(zip(_cells(header), _cells(line), strict=True)) for line in lines]
    return rows


def check_row(program: str, transport: str, era: str, outcomes: Iterable[str]) -> None:
    """The row of ``program`` (a file name the row links) over ``transport`` in ``era`` ("2026" or
    "legacy", as reports say) states exactly the ``outcomes`` this run counted."""
    counted = Counter(outcomes)
    rows = [row for row in readme_rows() if f"[{program}](" in " ".join(row.values())
            and row["transport"] == transport and row["era"] == ERA_NAMES[era]]  # fmt: skip
    assert len(rows) == 1, f"README's What your server meets has {len(rows)} rows for {program} {transport} {era}"
    stated = {outcome: int(rows[0][outcome]) for outcome in OUTCOMES if outcome in rows[0]}
    assert set(counted) <= set(stated), f"{program} {transport} {era}: no column for {set(counted) - set(stated)}"
    this_run = {outcome: counted[outcome] for outcome in stated}
    assert stated == this_run, f"README states {stated} for {program} {transport} {era}; this run counted {this_run}"
