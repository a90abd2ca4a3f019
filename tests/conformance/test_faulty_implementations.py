"""The suite is not lenient: every deliberately broken Bridge fails at least one fixture case.

Each fault of ``intentref.suite.alterations.faulty`` breaks exactly one rule.  The whole fixture
suite runs against each (for the MCP envelope fault: every case that checks an envelope,
the only place it can show); a fault that no case catches is a gap in the fixtures, and
the failure message says what case would catch it.  A fault that breaks a rule the seeds
themselves state (its ``seed_rule``) must fail a *normative* case, so that ``--level
normative`` catches it too (D-CNF-033).  The unmodified reference (in-process,
and behind the MCP model that the envelope fault uses) must pass every case it supports,
or "caught" would mean nothing.

Each fault also has a *probe*: a small case in the fixture language that passes on the
reference and fails on the fault.  The probes prove the faults are real (a fault the
suite misses is then the suite's gap, not a dud wrapper) and are ready to be copied into
``conformance/cases`` when a gap shows.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import pytest

from intentref.devtools.examples import ORDER_CORE
from intentref.suite.alterations.faulty import (
    FAULTS,
    MCP_MODEL,
    REFERENCE,
    faulty_target,
    target_named,
)
from intentref.suite.cases.fixtures import Case, load_cases
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.commands.recall import recall_from, stdio_blind_spots
from intentref.suite.execution.runner import execute

Outcomes = dict[str, CaseOutcome]
TARGETS: tuple[str, ...] = (REFERENCE, MCP_MODEL, *FAULTS)


def run_named(name: str, cases: list[Case]) -> list[CaseOutcome]:
    """The cases against ``target_named(name)``: a picklable job for the test's process pool."""
    return execute(cases, target_named(name))


def _baseline(fault: str) -> str:
    return MCP_MODEL if FAULTS[fault].envelope_only else REFERENCE


def _sleeps(case: Case) -> bool:
    return any(step["op"] == "sleep" for step in case.data["steps"])


def _checks_envelope(case: Case) -> bool:
    return any("envelope" in step for step in case.data["steps"])


def _cases_for(name: str, cases: list[Case]) -> list[Case]:
    # The MCP model differs from the in-process reference only in the envelope, which the
    # runner reads only where a step has "envelope"; every other case would just repeat
    # the reference's run at three times its cost.
    if name == MCP_MODEL or (name in FAULTS and FAULTS[name].envelope_only):
        return [c for c in cases if _checks_envelope(c)]
    return cases


def run_suites(names: Iterable[str], cases: list[Case]) -> dict[str, Outcomes]:
    """The cases each named target can tell apart, by target name and case id.

    Twelve runs of the suite must stay well inside the test budget.  The legacy TTL cases
    spend their time asleep, so they run one thread per target here; the rest is pure
    CPU and runs in worker processes (spawned, not forked: this process has threads).
    The sleeping threads barely compete with anything, so the TTL margins hold.
    """
    names = list(names)
    chosen = {name: _cases_for(name, cases) for name in names}
    workers = max(1, min(len(names), os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as processes:
        fast = {n: processes.submit(run_named, n, [c for c in chosen[n] if not _sleeps(c)]) for n in names}
        with ThreadPoolExecutor(len(names)) as threads:
            slow = {n: threads.submit(run_named, n, [c for c in chosen[n] if _sleeps(c)]) for n in names}
            return {n: {o.case_id: o for o in [*fast[n].result(), *slow[n].result()]} for n in names}


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


@pytest.fixture(scope="module")
def outcomes(cases: list[Case]) -> dict[str, Outcomes]:
    return run_suites(TARGETS, cases)


def _ids(outcomes: Iterable[CaseOutcome], *kinds: str) -> list[str]:
    return sorted(o.case_id for o in outcomes if o.outcome in kinds)


def _explain(outcome: CaseOutcome) -> str:
    return f"{outcome.case_id} {outcome.outcome}: " + ("; ".join(str(m) for m in outcome.mismatches[:3]) or outcome.detail)


# --------------------------------------------------------------------------- the baselines


@pytest.mark.parametrize("target", [REFERENCE, MCP_MODEL])
def test_the_reference_passes_every_case_it_supports(target: str, outcomes: dict[str, Outcomes]) -> None:
    results = outcomes[target]
    bad = [results[i] for i in _ids(results.values(), FAILED, ERRORED)]
    assert not bad, f"{len(bad)} cases do not pass on the {target}:\n" + "\n".join(_explain(o) for o in bad)
    assert _ids(results.values(), PASSED), "no case passed: the suite did not run"


def test_only_the_envelope_cases_are_unsupported_in_process(
    cases: list[Case], outcomes: dict[str, Outcomes]
) -> None:
    # The in-process reference takes every Bridge option, so "unsupported" may only mean
    # "checks the MCP envelope"; the MCP model supports everything.
    mcp_only = sorted(c.id for c in cases if c.transport == "mcp")
    assert _ids(outcomes[REFERENCE].values(), UNSUPPORTED) == mcp_only
    assert _ids(outcomes[MCP_MODEL].values(), UNSUPPORTED) == []


# --------------------------------------------------------------------------- the faults


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_suite_catches_the_fault(
    fault: str, cases: list[Case], outcomes: dict[str, Outcomes], record_property: pytest.RecordProperty
) -> None:
    broken, baseline = outcomes[fault], outcomes[_baseline(fault)]
    crashed = [broken[i] for i in _ids(broken.values(), ERRORED)]
    assert not crashed, "a fault wrapper must break a rule, not the target:\n" + "\n".join(
        map(_explain, crashed)
    )
    # A fault must not hide from a case by making it unsupported (a failed capability
    # probe would, D-CNF-030): it is asked every case its baseline is asked.
    hidden = sorted(set(_ids(broken.values(), UNSUPPORTED)) - set(_ids(baseline.values(), UNSUPPORTED)))
    assert not hidden, f"the fault {fault} is not asked {len(hidden)} case(s): " + ", ".join(
        _explain(broken[i]) for i in hidden[:3]
    )
    # A case the baseline already fails catches nothing: only new failures count.
    caught = [i for i in _ids(broken.values(), FAILED) if baseline[i].outcome == PASSED]
    record_property("caught_by", " ".join(caught))
    shown = " ".join(caught[:30]) + (f" … and {len(caught) - 30} more" if len(caught) > 30 else "")
    print(f"{fault}: caught by {len(caught)} case(s): {shown or '-'}")
    cls = FAULTS[fault]
    assert caught, (
        f"GAP: no fixture case catches the fault {fault!r} ({cls.breaks}).\n"
        f"A case that would catch it: {cls.catch_with}.\n"
        f"test_probe_separates_fault_from_reference[{fault}] holds one in the fixture language."
    )
    # D-CNF-033: a fault the seeds themselves rule out must fail a normative case.
    levels = {c.id: c.level for c in cases}
    normative = [i for i in caught if levels[i] == "normative"]
    assert normative or cls.seed_rule is None, (
        f"GAP at --level normative: {fault!r} breaks a seed rule ({cls.seed_rule}) but only reference "
        f"cases catch it ({' '.join(caught[:10])}). A normative case that would: {cls.catch_with}."
    )


# --------------------------------------------------------------------------- the probes

_JOB0 = {"jobId": {"$reply": 0, "pointer": "/jobId"}, "stepToken": {"$reply": 0, "pointer": "/stepToken"}}
# R-EXM-009: one delete item with clarification, confirmation and a condition.
_THREE_BLOCKERS_CORE: dict[str, Any] = {
    "normalizedInput": "先明确旧日志类型，用户确认且备份检查通过后删除。",
    "primaryIntent": "删除旧日志",
    "requirements": [],
    "prohibitions": [],
    "intents": [
        {
            "action": "delete",
            "target": "旧日志",
            "requirements": ["先明确日志类型", "等待用户确认", "备份检查通过后"],
            "blockers": {
                "clarificationReason": "尚未明确应用日志还是审计日志。",
                "questions": [{"question": "需要删除哪类旧日志？", "options": ["应用日志", "审计日志"]}],
                "confirmationReason": "等待用户确认。",
                "conditionReason": "尚未提供备份检查通过的材料。",
            },
        }
    ],
}


def _prepare(instance: str = "default", text: str = "查询订单 000123") -> dict[str, Any]:
    return {"op": "prepare", "args": {"instance": instance, "input": text}, "expect": {"$task": {}}}


def _accept(core: dict[str, Any], expect: Any, job: dict[str, Any] = _JOB0) -> dict[str, Any]:
    return {"op": "accept", "args": {**job, "candidateText": {"$json": core}}, "expect": expect}


def _result(**members: Any) -> dict[str, Any]:
    return {"$subset": {"kind": "result", "result": {"$subset": members}}}


_READY_ITEM = {
    "$subset": {
        "id": "i1",
        "status": "ready",
        "reason": {"$absent": True},
        "clarification": {"$absent": True},
    }
}

PROBES: dict[str, list[dict[str, Any]]] = {
    "reason_order": [
        _prepare(text="删除旧日志；先明确是应用日志还是审计日志，等我确认并通过备份检查后再删除。"),
        _accept(
            _THREE_BLOCKERS_CORE,
            _result(
                intents=[
                    {
                        "$subset": {
                            "status": "needs_clarification",
                            "reason": "尚未明确应用日志还是审计日志。\n等待用户确认。\n尚未提供备份检查通过的材料。",
                        }
                    }
                ]
            ),
        ),
    ],
    "replay_new_token": [
        _prepare("order"),
        _accept(ORDER_CORE, {"$task": {"stage": "data"}}),
        _accept(ORDER_CORE, {"$sameAs": 1}),
    ],
    "is_error_wrong": [
        {**_prepare(), "envelope": {"isError": False, "textIsReply": True}},
        {
            "op": "cancel",
            "args": {"jobId": {"$reply": 0, "pointer": "/jobId"}},
            "expect": {"$error": {"code": "MODEL_ABORTED"}},
            "envelope": {"isError": True, "textIsReply": True},
        },
    ],
    "bytes_as_characters": [
        _prepare(),
        {
            "op": "cancel",
            "args": {"jobId": {"$reply": 0, "pointer": "/jobId"}, "detail": {"$repeat": "中", "times": 683}},
            "expect": {"$error": {"code": "INPUT_INVALID", "stage": "bridge"}},
        },
    ],
    "partial_result_dropped": [
        _prepare("order"),
        _accept(ORDER_CORE, {"$task": {"stage": "data"}}),
        {
            "op": "cancel",
            "args": {"jobId": {"$reply": 0, "pointer": "/jobId"}},
            "expect": {"$error": {"partialResult": {"$subset": {"input": "查询订单 000123", "data": {}}}}},
        },
    ],
    "expires_at_by_default": [
        {**_prepare(), "expect": {"$task": {"expiresAt": {"$absent": True}}}},
    ],
    "ids_from_zero": [_prepare(), _accept(ORDER_CORE, _result(intents=[_READY_ITEM]))],
    "input_trimmed": [
        _prepare(text="  查询订单 000123\n"),
        _accept(ORDER_CORE, _result(input="  查询订单 000123\n")),
    ],
    "null_for_absent": [_prepare(), _accept(ORDER_CORE, _result(intents=[_READY_ITEM]))],
    "conflict_as_replay": [
        _prepare(),
        _accept(ORDER_CORE, {"$subset": {"kind": "result"}}),
        _accept({**ORDER_CORE, "primaryIntent": "查询订单"}, {"$error": {"code": "BRIDGE_STEP_CONFLICT"}}),
    ],
    "reclaimed_cancel_conflict": [
        _prepare(),
        {"op": "cancel", "args": {"jobId": _JOB0["jobId"]}, "expect": {"$error": {"code": "MODEL_ABORTED"}}},
        _prepare(),  # maxReplayEntries 1 (PROBE_BRIDGE): the first job's record is reclaimed
        {"op": "cancel", "args": {"jobId": _JOB0["jobId"]}, "expect": {"$error": {"code": "BRIDGE_JOB_NOT_FOUND"}}},
    ],
}
# Bridge options a probe needs to show its fault.
PROBE_BRIDGE: dict[str, dict[str, Any]] = {"reclaimed_cancel_conflict": {"maxReplayEntries": 1}}


def _probe(fault: str) -> Case:
    data = {
        "id": "PRB-0001",
        "description": f"probe for the fault {fault}",
        "requirements": ["R-BRG-001"],
        "level": "normative",
        "steps": PROBES[fault],
    }
    if FAULTS[fault].envelope_only:
        data["transport"] = "mcp"
    if fault in PROBE_BRIDGE:
        data["bridge"] = PROBE_BRIDGE[fault]
    return Case("PRB", "probes", data)


def test_every_fault_has_a_probe() -> None:
    assert sorted(PROBES) == sorted(FAULTS)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_probe_separates_fault_from_reference(fault: str) -> None:
    case = _probe(fault)
    [good] = execute([case], target_named(_baseline(fault)))
    assert good.outcome == PASSED, _explain(good)
    [bad] = execute([case], faulty_target(fault))
    assert bad.outcome == FAILED, f"the fault {fault} did not show: {_explain(bad)}"


def test_probes_are_valid_fixture_cases() -> None:
    # So that a probe can be pasted into conformance/cases as it is.
    import jsonschema

    from intentref.suite.cases.fixtures import fixture_schema

    document = {"area": "PRB", "title": "probes", "cases": [_probe(f).data for f in sorted(FAULTS)]}
    for i, case in enumerate(document["cases"]):
        case["id"] = f"PRB-{i + 1:04d}"
    jsonschema.Draft202012Validator(fixture_schema()).validate(json.loads(json.dumps(document)))


# --------------------------------------------------------------------------- recall (D-CNF-033)


def test_recall_counts_every_seed_breaking_fault_as_caught(cases: list[Case], outcomes: dict[str, Outcomes]) -> None:
    table = recall_from(outcomes, cases)
    print(table.text())
    assert [row.fault for row in table.rows] == list(FAULTS)
    assert table.breaking, "no fault claims to break a seed rule: the recall would be vacuous"
    assert not table.missed, table.text()
    assert table.recall == 1.0
    # The figures are the outcomes' own: each row's normative cases failed on the fault.
    for row in table.rows:
        assert all(outcomes[row.fault][i].outcome == FAILED for i in row.normative + row.reference)
    # A fault that only departs from a MAY is caught, at reference level only.
    replay = next(row for row in table.rows if row.fault == "replay_new_token")
    assert replay.seed_rule is None and replay.reference and not replay.normative


def test_the_reclaimed_cancel_fault_is_the_stdio_blind_spot(cases: list[Case], outcomes: dict[str, Outcomes]) -> None:
    # Seed 000: a reclaimed job's cancel returns BRIDGE_JOB_NOT_FOUND.  Reclamation needs
    # Bridge options, which a server taking instances only cannot be given (D-CNF-032).
    row = next(row for row in recall_from(outcomes, cases).rows if row.fault == "reclaimed_cancel_conflict")
    assert row.normative and not row.stdio_floor
    assert "R-CAN-009" in stdio_blind_spots(cases)
    # Faults in what every reply carries are seen on the floor too.
    ids = next(row for row in recall_from(outcomes, cases).rows if row.fault == "ids_from_zero")
    assert ids.stdio_floor
