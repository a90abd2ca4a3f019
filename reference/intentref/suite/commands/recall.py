"""Recall: how many of the shipped faulty implementations the normative cases catch (D-CNF-033).

A fault *breaks a seed rule* when the seeds themselves rule its answer out (its class names
the seed text in ``seed_rule``); such a fault must fail at least one ``normative`` case, or
the normative level lets through an implementation the seeds reject.  A fault that only
departs from a reference decision or a MAY (``seed_rule`` None) must fail a reference case
and no normative one is expected to see it.

    recall = faults caught at normative level / faults that break a seed rule

Beside it the table shows the *stdio floor*: the normative cases any seed-following MCP
server can be asked over stdio, taking instances only (no Bridge options, no decided
instance members such as ``repairAttempts``; D-CNF-032).  A fault caught at normative level
but not on the floor is one only a configurable target (in-process, harness) can show.

    python -m intentref.suite.commands.recall [--jobs N]   # prints the table for the shipped faults

``--jobs N`` (default: the CPUs this process may use) runs the implementations in N worker
processes, each making its targets from their names, as the conformance runner's workers
do; the outcomes, and so the table, are those of ``--jobs 1``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from intentref.suite.cases.capabilities import needs
from intentref.suite.cases.fixtures import Case, load_cases
from intentref.suite.cases.script import FAILED, PASSED, CaseOutcome
from intentref.suite.execution.pool import map_in_workers
from intentref.suite.execution.runner import execute
from intentref.suite.targets.base import load_instances
from intentref.suite.usage import worker_count

Outcomes = Mapping[str, CaseOutcome]


# --------------------------------------------------------------------------- the stdio floor


def on_stdio_floor(case: Case, instances: Mapping[str, Any] | None = None) -> bool:
    """Whether a server taking instances only can be asked this case, all of it, over stdio (D-CNF-032)."""
    if case.bridge_options:  # seed 000 #MCP 服务: 命令行配置只使用 instances
        return False
    if needs(case.data, load_instances() if instances is None else instances):
        return False  # a configuration member the seeds do not fix (D-CNF-030)
    setup = case.data.get("setup")
    # Over MCP a refused configuration is an exit, not an error object (D-CNF-003, D-CNF-051):
    # only a case that asks nothing more than whether the server starts is asked all of it.
    return not (isinstance(setup, dict) and "expect" in setup
                and setup["expect"] not in ({"ok": True}, {"$not": {"ok": True}}))  # fmt: skip


def stdio_blind_spots(cases: Iterable[Case], instances: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """Requirements whose every normative case is off the stdio floor, with those cases."""
    instances = load_instances() if instances is None else instances
    cited: dict[str, list[Case]] = {}
    for case in cases:
        if case.level == "normative":
            for requirement in case.data.get("requirements", []):
                cited.setdefault(requirement, []).append(case)
    return {
        requirement: [c.id for c in held]
        for requirement, held in sorted(cited.items())
        if not any(on_stdio_floor(c, instances) for c in held)
    }


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class RecallRow:
    fault: str
    seed_rule: str | None  # the seed text the fault contradicts; None: a decision or a MAY only
    normative: tuple[str, ...]  # normative cases it fails that the baseline passes
    reference: tuple[str, ...]  # reference cases likewise
    stdio_floor: tuple[str, ...]  # the normative ones a server taking instances only can be asked

    @property
    def caught_normative(self) -> bool:
        return bool(self.normative)


@dataclass(frozen=True)
class RecallTable:
    rows: tuple[RecallRow, ...]

    @property
    def breaking(self) -> list[RecallRow]:
        return [row for row in self.rows if row.seed_rule is not None]

    @property
    def caught(self) -> list[RecallRow]:
        return [row for row in self.breaking if row.caught_normative]

    @property
    def missed(self) -> list[RecallRow]:
        """Faults that break a seed rule and pass every normative case: a normative case is missing."""
        return [row for row in self.breaking if not row.caught_normative]

    @property
    def recall(self) -> float:
        return len(self.caught) / len(self.breaking) if self.breaking else 1.0

    @property
    def floor_caught(self) -> list[RecallRow]:
        return [row for row in self.breaking if row.stdio_floor]

    def text(self) -> str:
        width = max(len(row.fault) for row in self.rows) if self.rows else 5
        lines = [f"{'fault':<{width}}  seed rule  normative  reference  stdio floor  first normative case"]
        for row in self.rows:
            first = row.normative[0] if row.normative else "-"
            lines.append(f"{row.fault:<{width}}  {'yes' if row.seed_rule else 'no':<9}  {len(row.normative):>9}  "
                         f"{len(row.reference):>9}  {len(row.stdio_floor):>11}  {first}")  # fmt: skip
        lines.append(f"recall at --level normative: {len(self.caught)}/{len(self.breaking)} faults that break a "
                     f"seed rule ({self.recall:.0%}); on the stdio floor: {len(self.floor_caught)}/{len(self.breaking)}")  # fmt: skip
        lines.extend(f"MISSED: {row.fault} breaks {row.seed_rule!r} and passes every normative case" for row in self.missed)
        return "\n".join(lines)


def recall_from(outcomes: Mapping[str, Outcomes], cases: Iterable[Case]) -> RecallTable:
    """The table from outcomes already run, by target name (``reference``, ``mcp-model``, faults) and case id."""
    from intentref.suite.alterations.faulty import FAULTS, MCP_MODEL, REFERENCE

    by_id = {case.id: case for case in cases}
    instances = load_instances()
    floor = {case_id for case_id, case in by_id.items() if on_stdio_floor(case, instances)}
    rows = []
    for name, cls in FAULTS.items():
        baseline = outcomes[MCP_MODEL if cls.envelope_only else REFERENCE]
        caught = sorted(
            case_id for case_id, outcome in outcomes[name].items()
            if outcome.outcome == FAILED and case_id in baseline and baseline[case_id].outcome == PASSED
        )  # fmt: skip
        normative = tuple(c for c in caught if by_id[c].level == "normative")
        reference = tuple(c for c in caught if by_id[c].level != "normative")
        rows.append(RecallRow(name, cls.seed_rule, normative, reference, tuple(c for c in normative if c in floor)))
    return RecallTable(tuple(rows))


def _cases_for(name: str, cases: list[Case]) -> list[Case]:
    from intentref.suite.alterations.faulty import FAULTS, MCP_MODEL

    # An envelope fault (and the MCP model that is its baseline) can only show where a
    # step checks the envelope; every other case would repeat the reference's run.
    if name == MCP_MODEL or (name in FAULTS and FAULTS[name].envelope_only):
        return [c for c in cases if any("envelope" in step for step in c.data["steps"])]
    return cases


def _sleeps(case: Case) -> bool:
    return any(step["op"] == "sleep" for step in case.data["steps"])


def run_all(cases: list[Case] | None = None, jobs: int = 1) -> dict[str, dict[str, CaseOutcome]]:
    """Every case against the reference, the MCP model and each fault: outcomes by name and case id.

    The implementations run on ``jobs`` worker processes (``execution.pool``), each making its
    target from its name, the largest first so that no worker is left with a long one at the
    end.  The legacy TTL cases spend their time asleep, so they run on threads here instead,
    where their waits overlap rather than each holding a worker.
    """
    from intentref.suite.alterations.faulty import FAULTS, MCP_MODEL, REFERENCE

    cases = load_cases() if cases is None else cases
    names = [REFERENCE, MCP_MODEL, *FAULTS]
    fast = {n: [c for c in _cases_for(n, cases) if not _sleeps(c)] for n in names}
    slow = {n: [c for c in _cases_for(n, cases) if _sleeps(c)] for n in names}
    order = sorted((n for n in names if fast[n]), key=lambda n: -len(fast[n]))
    # The threads make the pool spawn its workers rather than fork beside them (execution.pool).
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="intentref-recall") as threads:
        waiting = {n: threads.submit(_run_slim, (n, slow[n])) for n in names if slow[n]}
        ran = dict(zip(order, map_in_workers(_run_slim, [(n, fast[n]) for n in order], jobs), strict=True))
        asleep = {n: future.result() for n, future in waiting.items()}
    return {n: {o.case_id: o for o in [*ran.get(n, []), *asleep.get(n, [])]} for n in names}


def _run_slim(task: tuple[str, list[Case]]) -> list[CaseOutcome]:
    """The cases against the shipped target of that name, without the replies (recall reads
    none, and a worker would otherwise send every reply back through its pipe)."""
    from intentref.suite.alterations.faulty import target_named

    name, cases = task
    target = target_named(name)
    try:
        outcomes = execute(cases, target)
    finally:
        target.close()
    for outcome in outcomes:
        outcome.replies = []
    return outcomes


def recall(cases: list[Case] | None = None, jobs: int = 1) -> RecallTable:
    """Run the shipped faults and tabulate what the cases catch."""
    cases = load_cases() if cases is None else cases
    return recall_from(run_all(cases, jobs), cases)


def main(argv: Sequence[str] | None = None) -> int:
    from intentref.suite.execution.workers import default_jobs

    parser = argparse.ArgumentParser(prog="python -m intentref.suite.commands.recall",
                                     description=(__doc__ or "").splitlines()[0])  # fmt: skip
    parser.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                        help="worker processes (default: the CPUs this process may use)")  # fmt: skip
    args = parser.parse_args(argv)
    cases = load_cases()
    table = recall(cases=cases, jobs=default_jobs() if args.jobs is None else args.jobs)
    print(table.text())
    blind = stdio_blind_spots(cases)
    print(f"\nrequirements no normative case can reach over stdio with instances only ({len(blind)}):")
    for requirement, held in blind.items():
        print(f"  {requirement}: {', '.join(held)}")
    return 0 if not table.missed else 1


if __name__ == "__main__":  # pragma: no cover - a program
    raise SystemExit(main())
