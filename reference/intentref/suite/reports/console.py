"""Reports for a person at a terminal: ``LiveProgress`` while the cases run, then ``print_summary``
(rich; plain when the console is not a terminal); ``print_scenarios`` is the host judge's plain list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.cases.values import Mismatch
from intentref.suite.reports import model
from intentref.suite.reports.model import LEVELS, OUTCOMES, Report, Row, clean_text, counts, of_level

_STYLES = {PASSED: "green", FAILED: "red", UNSUPPORTED: "bright_black", ERRORED: "magenta"}


def _run_info_text(run_info: dict[str, Any]) -> Text:
    text = Text("Conformance run", style="bold")
    for key, value in run_info.items():
        text.append("\n  ")
        text.append(f"{key}: ", style="dim")
        text.append(model.plain_value(value))
    return text


def _level_cell(rows: list[Row], level: str) -> Text:
    """``passed/total`` of one level, with its failures and errors (unsupported is the rest)."""
    level_rows = of_level(rows, level)
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
    """One row per area (its code, then its title), then the total; headers never wrap or shorten."""
    titles = titles or {}
    table = Table(title="Conformance by area", title_justify="left")
    table.add_column("Area", ratio=1, min_width=len("Area"), overflow="fold")
    table.add_column("Cases", justify="right", no_wrap=True, min_width=len("Cases"))
    for name in OUTCOMES:
        table.add_column(name.capitalize(), justify="right", no_wrap=True, min_width=len(name))
    if levels:
        for level in LEVELS:
            table.add_column(level.capitalize(), no_wrap=True, min_width=len(level))
    eras = [(f"era {era}", era_rows) for era, era_rows in model.by_era(rows).items()]  # D-CNF-070
    sections = {"Total", *(name for name, _ in eras[:1])}  # areas are three capitals, never these
    for area, area_rows in [*model.by_area(rows).items(), *eras, ("Total", list(rows))]:
        tally = counts(area_rows)
        cell = Text(area, style="bold")
        if titles.get(area):
            cell.append(" " + clean_text(titles[area]))
        if area in sections:
            table.add_section()
        table.add_row(
            cell,
            str(len(area_rows)),
            *(_count_cell(tally[n], n) for n in OUTCOMES),
            *((_level_cell(area_rows, level) for level in LEVELS) if levels else ()),
        )
    return table


def levels_line(rows: Sequence[Row]) -> Text:
    """``normative 900/950 passed · reference …``: the level split when the table has no room for it."""
    line = Text("By level: ", style="dim")
    for index, level in enumerate(LEVELS):
        level_rows = of_level(rows, level)
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
    heading = Text(f"  {row.label}", style=f"bold {_STYLES[row.outcome]}")
    where = ", ".join(p for p in (row.file, row.level) if p)
    heading.append(f" ({where})" if where else "", style="dim")
    if row.failed_step is not None:
        heading.append(f" at step {row.failed_step}", style="dim")
    if row.title:
        heading.append("\n    " + clean_text(row.title), style="italic")
    return heading


def print_summary(console: Console, report: Report, titles: dict[str, str] | None = None) -> None:
    """The run's facts, the area table (with each area's title from ``titles``), every failure and
    errored case, the unsupported reasons grouped with their counts, then the closing line."""
    rows = report.rows
    console.print(_run_info_text(report.run_info))
    wide = console.width >= LEVEL_COLUMNS_WIDTH
    console.print(summary_table(rows, titles, levels=wide))
    if not wide:
        console.print(levels_line(rows))
    failures = [r for r in rows if r.outcome == FAILED]
    if failures:
        console.print(Text(f"Failures ({len(failures)})", style="bold red"))
        for row in failures:
            console.print(_case_heading(row))
            for mismatch in row.mismatches:
                console.print(mismatch_line(mismatch), soft_wrap=True)
    errored = [r for r in rows if r.outcome == ERRORED]
    if errored:
        console.print(Text(f"Errored ({len(errored)})", style="bold magenta"))
        for row in errored:
            console.print(_case_heading(row))
            console.print(Text("    " + clean_text(row.detail or "(no detail)")), soft_wrap=True)
    flaky = [row for row in rows if row.flaky]
    if flaky:  # spec: D-CNF-065 -- the outcome changed from one run of --repeat to another
        console.print(Text(f"Flaky ({len(flaky)}): the outcome changed from one run to another", style="bold yellow"))
        for row in flaky:
            console.print(Text(f"  {row.label}: {', '.join(row.flaky)}", style="yellow"), soft_wrap=True)
    reasons = model.unsupported_reasons(rows)
    if reasons:
        console.print(Text(f"Unsupported ({sum(n for _, n in reasons)}), by reason (not failures):", style="bold"))
        for reason, number in reasons:
            line = Text(f"  {number:>4} × ", style=_STYLES[UNSUPPORTED])
            line.append(clean_text(reason))
            console.print(line, soft_wrap=True)
    style = "bold red" if report.tally[FAILED] or report.tally[ERRORED] else "bold green"
    console.print(Text(model.closing_line(report), style=style))


class LiveProgress:
    """Progress while the cases run: one live bar on a terminal, one plain line per area elsewhere.

    ``advance`` has the runner's ``on_outcome`` signature.  Off a terminal (a CI log, a pipe)
    a line is written as each area's last case ends, or per case without ``cases``.
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


def print_scenarios(report: Report) -> None:
    """The host judge's plain list: a line per scenario with each of its violations under it, then the count."""
    level = report.run_info["level"]
    for row in report.rows:
        mark = {FAILED: "FAIL", UNSUPPORTED: "unsupported"}.get(row.outcome, "pass")  # unsupported: D-CNF-071
        print(f"{mark} {row.label} {row.title} ({row.seconds:.1f} s)")
        for line in [row.detail] if row.outcome == UNSUPPORTED else row.lines:
            print(f"  {line}")
    print(f"{report.tally[PASSED]} of {len(report.rows)} scenarios pass at {level} level in {report.seconds:.1f} s")
