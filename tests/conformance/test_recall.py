"""Recall of the faulty implementations at normative level, and the stdio blind spot (D-CNF-032, D-CNF-033).

``test_faulty_implementations`` checks recall over the whole suite; here the function the
lead calls runs end to end on a few cases, and the reclamation fault is shown to a real
harness subprocess, the transport that takes Bridge options without being in-process.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from intentref.suite.alterations.faulty import FAULTS, harness_command
from intentref.suite.cases.fixtures import Case, load_cases
from intentref.suite.cases.script import FAILED, PASSED
from intentref.suite.commands.recall import on_stdio_floor, recall, run_all
from intentref.suite.execution.runner import execute
from intentref.suite.targets.harness import HarnessTarget

# spec: R-CAN-009 -- the normative reclamation cases, old and appended.
RECLAMATION = ("CAN-0056", "CAN-0060", "CAN-0061", "CAP-0037", "CAP-0068", "CAP-0069")


def _cases(*ids: str) -> list[Case]:
    chosen = [c for c in load_cases() if c.id in ids]
    assert sorted(c.id for c in chosen) == sorted(ids)
    return chosen


def test_recall_runs_every_fault_and_prints_a_table() -> None:
    cases = _cases("CAN-0060", "RES-0015", "ENV-0001", "IDM-0007")
    table = recall(cases=cases)
    assert [row.fault for row in table.rows] == list(FAULTS)
    rows = {row.fault: row for row in table.rows}
    assert rows["reclaimed_cancel_conflict"].normative == ("CAN-0060",)
    assert rows["reclaimed_cancel_conflict"].stdio_floor == ()
    assert rows["input_trimmed"].normative == ("RES-0015",) == rows["input_trimmed"].stdio_floor
    # Four cases cannot catch every fault: the table says which are missed, and counts right.
    missed = {row.fault for row in table.missed}
    assert "reason_order" in missed and "reclaimed_cancel_conflict" not in missed
    assert table.recall == len(table.caught) / len(table.breaking) < 1
    text = table.text()
    assert f"recall at --level normative: {len(table.caught)}/{len(table.breaking)}" in text
    assert "MISSED: reason_order" in text


def test_worker_processes_give_the_outcomes_of_one_process() -> None:
    # An envelope case (the MCP model and the envelope faults run only those) beside three others.
    cases = _cases("CAN-0060", "RES-0015", "ENV-0001", "IDM-0007")

    def seen(outcomes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {name: {case_id: (o.outcome, [str(m) for m in o.mismatches], o.failed_step, o.detail)
                       for case_id, o in by_case.items()} for name, by_case in outcomes.items()}  # fmt: skip

    alone = seen(run_all(cases=cases, jobs=1))
    assert alone == seen(run_all(cases=cases, jobs=2))
    assert sorted(alone) == sorted(["reference", "mcp-model", *FAULTS])
    assert any(verdict[0] == FAILED for by_case in alone.values() for verdict in by_case.values())


def test_the_recall_command_takes_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    from intentref.suite.commands.recall import main

    with pytest.raises(SystemExit) as exited:
        main(["--jobs", "0"])
    assert exited.value.code == 2 and "must be at least 1, got 0" in capsys.readouterr().err


def test_the_stdio_floor_excludes_options_decided_members_and_error_objects() -> None:
    by_id = {c.id: c for c in load_cases()}
    assert on_stdio_floor(by_id["RES-0015"])
    assert not on_stdio_floor(by_id["CAN-0056"])  # Bridge options
    assert not on_stdio_floor(by_id["CAP-0022"])  # inspects a configuration error object
    repair = next(c for c in by_id.values() if any(s.get("args", {}).get("instance") == "norepair"
                                                   for s in c.data["steps"] if isinstance(s.get("args"), dict)))  # fmt: skip
    assert not on_stdio_floor(repair)


def test_the_reclamation_rule_is_reached_through_a_real_harness() -> None:
    cases = _cases(*RECLAMATION)
    assert all(c.level == "normative" for c in cases)
    faulty = HarnessTarget(harness_command("reclaimed_cancel_conflict"))
    try:
        outcomes = {o.case_id: o for o in execute(cases, faulty)}
    finally:
        faulty.close()
    assert {k: o.outcome for k, o in outcomes.items()} == dict.fromkeys(RECLAMATION, FAILED), outcomes
    assert all("BRIDGE_STEP_CONFLICT" in str(o.mismatches[0]) for o in outcomes.values())
    # The reference harness passes them: the failures are the fault's.
    good = HarnessTarget([sys.executable, "-m", "intentref.suite.targets.harness_reference"])
    try:
        assert {o.outcome for o in execute(cases, good)} == {PASSED}
    finally:
        good.close()
