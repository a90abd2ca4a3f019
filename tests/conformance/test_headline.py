"""A reply of another kind than expected is said first, in the seeds' terms (D-CNF-031)."""

from __future__ import annotations

import json
from typing import Any

from intentref.devtools.examples import ORDER_CORE
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.headline import kind_headline
from intentref.suite.cases.script import FAILED, CaseOutcome
from intentref.suite.cases.values import History
from intentref.suite.execution.runner import execute
from intentref.suite.targets.base import InProcessTarget

_JOB0 = {"jobId": {"$reply": 0, "pointer": "/jobId"}, "stepToken": {"$reply": 0, "pointer": "/stepToken"}}


def _failed(instance: str, candidate: str, expect: Any) -> CaseOutcome:
    steps = [
        {"op": "prepare", "args": {"instance": instance, "input": "查询订单 000123"}, "expect": {"$task": {}}},
        {"op": "accept", "args": {**_JOB0, "candidateText": candidate}, "expect": expect},
    ]
    case = Case("TST", "t", {"id": "TST-0001", "description": "d", "requirements": ["R-BRG-001"],
                             "level": "normative", "steps": steps})  # fmt: skip
    [outcome] = execute([case], InProcessTarget())
    assert outcome.outcome == FAILED
    return outcome


def _failure(instance: str, candidate: str, expect: Any) -> list[str]:
    return [str(m) for m in _failed(instance, candidate, expect).mismatches]


def test_an_error_expected_and_a_repair_task_received() -> None:
    lines = _failure("default", "not json", {"$error": {"code": "MODEL_OUTPUT_INVALID"}})
    assert lines[0] == ("step 1 (accept): expected an error (MODEL_OUTPUT_INVALID), got a task: stage core, "
                        "a repair task whose issues are MODEL_OUTPUT_INVALID at (root)")  # fmt: skip
    # The JSON-Pointer list follows, unchanged.
    assert lines[1].startswith("step 1 (accept) /: expected an error reply with code MODEL_OUTPUT_INVALID, got ")
    headline = _failed("default", "not json", {"$error": {"code": "MODEL_OUTPUT_INVALID"}}).mismatches[0]
    assert (headline.where, headline.path, headline.expected) == ("step 1 (accept)", None, "an error (MODEL_OUTPUT_INVALID)")
    assert headline.actual is not None and headline.actual.startswith("a task: stage core, a repair task")


def test_a_task_expected_and_an_error_received() -> None:
    lines = _failure("norepair", "not json", {"$task": {"stage": "data"}})
    assert lines[0] == ("step 1 (accept): expected a data task, got an error: MODEL_OUTPUT_INVALID at stage core, "
                        "issues MODEL_OUTPUT_INVALID at (root)")  # fmt: skip


def test_a_result_expected_and_a_task_that_is_no_repair() -> None:
    lines = _failure("order", json.dumps(ORDER_CORE, ensure_ascii=False), {"$subset": {"kind": "result"}})
    assert lines[0] == "step 1 (accept): expected a result, got a task: stage data, not a repair task"


def test_the_right_kind_with_a_wrong_member_gets_no_headline() -> None:
    lines = _failure("default", "not json", {"$task": {"stage": "data"}})
    assert lines == ['step 1 (accept) /stage: expected "data", got "core"']


def _task(payload: Any, stage: str = "core") -> dict[str, Any]:
    return {"kind": "task", "jobId": "j", "stepToken": "t", "stage": stage, "payload": payload}


def test_the_repair_material_is_read_whatever_its_shape() -> None:
    error = {"$error": {"code": "MODEL_OUTPUT_INVALID"}}
    issues = [{"code": f"C{i}", "path": f"/data/f{i}"} for i in range(6)]
    # payload as an object, repair as a bare list, more issues than shown
    line = str(kind_headline(error, _task({"repair": issues}, "data"), History()))
    assert line == ("expected an error (MODEL_OUTPUT_INVALID), got a task: stage data, a repair task whose issues are "
                    "C0 at /data/f0, C1 at /data/f1, C2 at /data/f2, C3 at /data/f3 and 2 more")  # fmt: skip
    # an issue without a path, or not an object at all
    headline = kind_headline(error, _task(json.dumps({"repair": {"issues": [{"code": "X"}, "odd"]}})), History())
    assert headline is not None and headline.path is None and str(headline).endswith('issues are X at no path, "odd"')
    # a payload that is not JSON, and a repair without issues
    assert str(kind_headline(error, _task("{"), History())) == (
        "expected an error (MODEL_OUTPUT_INVALID), got a task: stage core, not a repair task")
    headline = kind_headline(error, _task({"repair": {}}), History())
    assert headline is not None and str(headline).endswith("issues are none listed")


def test_the_kinds_a_matcher_accepts() -> None:
    result = {"kind": "result", "result": {"intents": [{"status": "ready"}, {"status": "conditional"}]}}
    either = {"$anyOf": [{"$task": {}}, {"$error": {}}]}
    assert str(kind_headline(either, result, History())) == "expected a task or an error, got a result (ready, conditional)"
    assert str(kind_headline({"$kindNot": "result"}, result, History())) == (
        "expected a task or an error, got a result (ready, conditional)")
    assert kind_headline({"$kindNot": "task"}, result, History()) is None
    history = History(replies=[_task({})])
    assert str(kind_headline({"$sameAs": 0}, result, history)) == "expected a task, got a result (ready, conditional)"
    # No claim on the kind: no headline, whatever came back.
    assert kind_headline({"$not": {"$task": {}}}, result, History()) is None
    assert kind_headline({"$type": "object"}, result, History()) is None
    assert kind_headline({"$error": {}}, {"kind": "other"}, History()) is None
