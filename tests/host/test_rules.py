"""The rules on hand-made runs: the cases no real host here produces, and input meant to break the judge.

A ``Run`` is what the judge reads back from its logs; building one by hand lets a test put
exactly one thing wrong (or odd) in it.  Every rule must yield its violation there, and no
rule may raise on input a host controls (arguments, its model's stdin, what it prints).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentref.suite.host.rules import RULES, compare_wordings, judge_run, same_candidate, utf8_prefix
from intentref.suite.host.trace import Call, Connection, ModelRun, Run

TASK = {"kind": "task", "jobId": "J", "stepToken": "T1", "stage": "core", "instructions": "i", "payload": "{}",
        "format": {"kind": "json_object"}}  # fmt: skip
SIZE_REFUSAL = {"kind": "error", "error": {"code": "LIMIT_EXCEEDED", "stage": "core", "message": "m",
                                           "issues": [{"code": "LIMIT_EXCEEDED", "category": "processing", "path": None, "message": "m"}]}}  # fmt: skip
RESULT = {"kind": "result", "result": {"data": {}}}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1
        return self.t


def call(clock: Clock, number: int, tool: str, arguments: dict[str, Any], reply: Any, active: list[str],
         fault: str | None = None, connection: str = "c1") -> Call:  # fmt: skip
    return Call(connection, number, tool, arguments, reply, fault, active, clock())


def model(clock: Clock, number: int, task: Any, stdout: str, status: int = 0) -> ModelRun:
    return ModelRun(number, task, None, {}, stdout, status, clock())


def run_of(timeline: list[Any], exit_status: int | None = 0, stdout: str = "") -> Run:
    connections = {c: Connection(c, pid=None, closed=True) for c in {e.connection for e in timeline if isinstance(e, Call)}}
    return Run("S", "reference", timeline, connections, exit_status, stdout, "", 1.0)


def rules_broken(run: Run) -> set[str]:
    return {v.rule for v in judge_run(run)}


def test_a_resubmission_after_a_size_refusal_on_another_token_breaks_r_hst_010():
    clock = Clock()
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": "x", "input": "y"}, TASK, ["J"]),
        model(clock, 0, TASK, "{}"),
        call(clock, 2, "intent_accept", {"jobId": "J", "stepToken": "T1", "candidateText": "{}"}, SIZE_REFUSAL, ["J"]),
        model(clock, 1, TASK, "{}"),
        call(clock, 3, "intent_accept", {"jobId": "J", "stepToken": "T0", "candidateText": "{}"}, RESULT, []),
    ]
    broken = rules_broken(run_of(timeline, stdout=json.dumps(RESULT)))
    assert {"R-HST-010", "R-HST-007"} <= broken
    assert "R-HST-014" not in broken  # the text itself was the model's, complete


def test_the_same_run_resubmitted_on_the_same_token_breaks_nothing():
    clock = Clock()
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": "x", "input": "y"}, TASK, ["J"]),
        model(clock, 0, TASK, "{}"),
        call(clock, 2, "intent_accept", {"jobId": "J", "stepToken": "T1", "candidateText": "{}"}, SIZE_REFUSAL, ["J"]),
        model(clock, 1, TASK, '{ "a" : 1 }'),
        call(clock, 3, "intent_accept", {"jobId": "J", "stepToken": "T1", "candidateText": '{"a":1}'}, RESULT, []),
    ]
    assert judge_run(run_of(timeline, stdout=json.dumps(RESULT))) == []


def test_a_host_that_stops_holding_a_candidate_breaks_r_hst_015():
    clock = Clock()
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": "x", "input": "y"}, TASK, ["J"]),
        model(clock, 0, TASK, "{}"),
    ]
    assert rules_broken(run_of(timeline, exit_status=1)) == {"R-HST-015"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"jobId": ["J"], "stepToken": {"x": 1}, "candidateText": 5},
        {"jobId": None},
        {},
        {"jobId": "J", "stepToken": "T1", "candidateText": "\ud800"},
    ],
)
def test_odd_arguments_never_crash_a_rule(arguments):
    clock = Clock()
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": 3}, TASK, ["J"]),
        model(clock, 0, "not the task at all", "{}"),
        call(clock, 2, "intent_accept", arguments, {"kind": "error", "error": {"code": "INPUT_INVALID"}}, ["J"]),
        call(clock, 3, "intent_cancel", {**arguments, "detail": 7}, None, [], fault="not_a_reply"),
    ]
    for printed in ("", "null", "[1]", '{"kind": "error", "error": 5}', '{"kind": "result"}', "\x00"):
        for exit_status in (0, 1, None):
            run = run_of(timeline, exit_status, printed)
            for function in RULES.values():
                list(function(run))  # must not raise
            judge_run(run, {"outcome": "result"})
            compare_wordings(run, run_of(timeline[:2], exit_status, printed))


def test_the_model_given_other_text_than_the_task_breaks_r_hst_001():
    clock = Clock()
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": "x", "input": "y"}, TASK, ["J"]),
        ModelRun(0, None, "instructions only", {}, "{}", 3, clock()),
        call(clock, 2, "intent_cancel", {"jobId": "J", "outcome": "refusal", "detail": "{}"}, RESULT, []),
    ]
    violations = [v for v in judge_run(run_of(timeline, 1)) if v.rule.startswith("R-")]
    assert [(v.rule, v.where) for v in violations] == [("R-HST-001", "model run 1")]


def test_helpers():
    assert utf8_prefix("中" * 683) == "中" * 682 and len(("中" * 682).encode()) == 2046
    assert utf8_prefix("a" * 2048) == "a" * 2048
    assert same_candidate('{"b":2,"a":1}', '{"a": 1, "b": 2}')
    assert not same_candidate('{"a":1}', '{"a": 1, "b": 2}')
    assert not same_candidate('{"a":true}', '{"a": 1}') and not same_candidate('{"a":"1"}', '{"a": 1}')
    assert same_candidate('{"a":1}', '{"a": 1.0}')  # JSON.stringify(JSON.parse("1.0")) is "1"
    assert not same_candidate(None, "{}")
    assert same_candidate("not json", "not json") and not same_candidate("not json ", "not json")


def test_output_nested_past_pythons_limit_is_judged_not_a_crash():
    clock = Clock()
    deep = "[" * 100_000 + "]" * 100_000
    timeline = [
        call(clock, 1, "intent_prepare", {"instance": "x", "input": "y"}, TASK, ["J"]),
        model(clock, 0, TASK, deep),
        call(clock, 2, "intent_accept", {"jobId": "J", "stepToken": "T1", "candidateText": deep}, RESULT, []),
    ]
    run = run_of(timeline, 0, deep)
    rules = {v.rule for v in judge_run(run, {"outcome": "result"})}
    assert "D-HST-001" in rules  # printed something that is not a reply
    assert "R-HST-014" not in rules  # the same text as the model's, compared as text
