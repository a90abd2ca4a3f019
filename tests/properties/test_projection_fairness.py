"""The differential properties judge the normative projection, and judge it fairly.

# spec: D-CNF-020, D-CNF-021, D-CNF-022

* a target that differs from the reference only in what the reference decided (tokens,
  wording, schema and payload spelling: ``variant_targets.reworded``) shows no normative
  failure, and its campaign no divergence; the properties that probe the replay budget to
  the byte diverge at reference level, because its replies, written another way, have other
  sizes (D-BRG-010, D-BRG-011 and the limits those properties cite);
* a target that breaks a seed rule (status priority) is caught as a normative divergence,
  written as a normative case that passes on the reference and fails on the target;
* a target whose replay answers a conflict is caught at reference level, citing D-BRG-007.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from intentref import properties as ip
from intentref.suite.cases.fixtures import fixture_schema
from intentref.suite.cases.script import FAILED, PASSED, refusal_allowed, run_case
from intentref.suite.properties import projection, targets
from intentref.suite.targets.base import CallSession, InProcessTarget, ProtocolRefusal, Run, Session, Target

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
import variant_targets  # noqa: E402 -- the variants live beside this file

# What the reworded variant changes: every one of them a reference decision.
REWORDED_DECISIONS = {"D-BRG-006", "D-INS-001", "D-ERR-006", "D-ERR-007", "D-COR-001", "D-PAY-001", "D-PAY-003",
                      "D-CAN-002", "D-BRG-010", "D-BRG-011", "D-BRG-015"}  # fmt: skip
# What rests on the size of a reply, which its writing sets: the replay budget's boundaries
# (D-BRG-009 .. D-BRG-011) and the limits the byte-budget properties cite beside them.
REPLY_SIZE_DECISIONS = {"D-BRG-009", "D-BRG-010", "D-BRG-011", "D-LIM-002", "D-LIM-003", "D-LIM-004"}


def _properties(tmp: pathlib.Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    # One pytest process: a second one costs its own start, and -k leaves it little or nothing.
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "properties", *args, "--jobs", "1", "--json",
                           str(tmp / "out.json")], env=env, text=True, capture_output=True, timeout=300)  # fmt: skip
    return done.returncode, done.stdout + done.stderr, json.loads((tmp / "out.json").read_text("utf-8"))


def _cases(path: pathlib.Path) -> list[dict[str, Any]]:
    document = json.loads(path.read_text("utf-8"))
    jsonschema.Draft202012Validator(fixture_schema()).validate(document)  # a fixture file as it stands
    cases: list[dict[str, Any]] = document["cases"]
    return cases


def _outcome(case: dict[str, Any], target: Any) -> str:
    run = target.open(ip.catalog_instances(), case.get("bridge", {}))
    try:
        return str(run_case(case, run, "in-process").outcome)
    finally:
        run.close()


def test_a_target_differing_only_in_decisions_shows_no_normative_divergence(tmp_path: pathlib.Path) -> None:
    # spec: D-CNF-020 -- every property, and the ci profile's 2,000 campaign calls.  The smoke
    # profile's examples reach every decision the ci profile's do (seed 4: the same eight) at a
    # fifth of the property calls.
    status, out, figures = _properties(tmp_path, "--python", "variant_targets:reworded", "--seed", "4", "--level",
                                       "normative", "--profile", "smoke", "--calls", "2000")  # fmt: skip
    assert status == 0, out[-4000:]
    assert figures["normativeFailures"] == 0, out[-4000:]
    assert figures["propertyCalls"] > 300 and figures["campaignCalls"] == 2_000
    assert figures["decisionsDiffering"], out[-4000:]  # the examples did reach what the variant changed
    campaign = re.findall(r"campaign: 2,000/2,000 calls .* div (\d+)", out)
    assert campaign == ["0"], out[-4000:]  # the campaign's replies mean what the reference's mean
    # Properties that assert a decided value may fail or diverge, but only at reference level,
    # citing what the variant changed or what the size of a reply sets.
    allowed = REWORDED_DECISIONS | REPLY_SIZE_DECISIONS
    assert set(figures["decisionsDiffering"]) <= allowed, figures["decisionsDiffering"]
    assert all(failure["level"] == "reference" for failure in figures["failedProperties"])
    diverged = [f for f in figures["failedProperties"] if set(f["decisions"]) & (REPLY_SIZE_DECISIONS - REWORDED_DECISIONS)]
    assert figures["divergences"] == 0 or diverged, out[-4000:]


def test_the_same_variant_over_the_real_stdio_transport_breaks_no_seed_rule(tmp_path: pathlib.Path) -> None:
    # spec: D-CNF-020, D-CNF-024 -- the variant as an MCP server over stdio: one process per
    # connection, so its counter tokens (job-1, ...) repeat across connections.  A foreign
    # token may then name a job of the connection that sends it: what that answers rests on
    # the token decision (D-BRG-006) and the not-found and conflict ones, never on a seed rule.
    server = f"{sys.executable} {HERE / 'variant_server.py'} reworded --config {{config}}"
    status, out, figures = _properties(tmp_path, "--stdio", server, "--profile", "smoke", "--seed", "4",
                                       "--calls", "300", "--level", "normative")  # fmt: skip
    assert status == 0, out[-4000:]
    assert figures["normativeFailures"] == 0 and figures["propertyCalls"] > 200, out[-4000:]
    collisions = {"D-BRG-003", "D-BRG-005", "D-BRG-008"}
    assert set(figures["decisionsDiffering"]) <= REWORDED_DECISIONS | collisions, figures["decisionsDiffering"]


def test_a_broken_status_priority_is_a_normative_divergence(tmp_path: pathlib.Path) -> None:
    # spec: D-CNF-021, R-RES-038
    cases_out = tmp_path / "cases.json"
    status, out, figures = _properties(tmp_path, "--python", "variant_targets:status_priority", "-k", "status",
                                       "--seed", "5", "--calls", "0", "--level", "normative",
                                       "--cases-out", str(cases_out))  # fmt: skip
    assert status == 1, out[-4000:]
    assert figures["normativeFailures"] >= 1 and not figures["passed"]
    assert "normative divergence, breaks a seed rule" in out
    cases = _cases(cases_out)
    assert cases and all(case["level"] == "normative" and "decisions" not in case for case in cases)
    case = cases[0]
    assert _outcome(case, InProcessTarget()) == PASSED
    assert _outcome(case, variant_targets.status_priority()) == FAILED


def test_a_replay_answered_with_a_conflict_is_caught_at_reference_level(tmp_path: pathlib.Path) -> None:
    # spec: D-CNF-022, D-BRG-007 -- seed 000 lets a replay reuse the reply; it does not require it.
    cases_out = tmp_path / "cases.json"
    status, out, figures = _properties(tmp_path, "--python", "variant_targets:replay_conflicts", "-k", "replay",
                                       "--seed", "6", "--calls", "0", "--cases-out", str(cases_out))  # fmt: skip
    assert status == 1, out[-4000:]  # level all: caught
    assert figures["normativeFailures"] == 0 and figures["referenceFailures"] >= 1, out[-4000:]
    assert "D-BRG-007" in figures["decisionsDiffering"]
    cases = _cases(cases_out)
    replays = [case for case in cases if case["level"] == "reference" and "D-BRG-007" in case["decisions"]]
    assert replays and len(replays) == len(cases)
    assert _outcome(replays[0], InProcessTarget()) == PASSED
    assert _outcome(replays[0], variant_targets.replay_conflicts()) == FAILED


# --------------------------------------------------------------------------- the projection itself


def _task(**members: Any) -> dict[str, Any]:
    return {"kind": "task", "jobId": "j", "stepToken": "s", "stage": "core", "instructions": "Do it.",
            "payload": '{"currentInput":"x"}', "format": {"kind": "json_schema", "name": "intent_core",
                                                          "schema": {"type": "object"}}, **members}  # fmt: skip


def test_the_projection_ignores_what_is_decided() -> None:
    # spec: D-CNF-020 -- wording, schema spelling and payload spelling are not compared.
    ours = _task()
    theirs = _task(instructions="Something else.", payload='{ "currentInput": "x" }',
                   format={"kind": "json_schema", "name": "intent_core", "schema": {"$comment": "c", "type": "object"}})  # fmt: skip
    assert projection.project(ours) == projection.project(theirs)
    error = {"kind": "error", "error": {"code": "INPUT_INVALID", "stage": "input", "message": "a", "issues": [{"path": "/input"}]}}
    other = {"kind": "error", "error": {"code": "INPUT_INVALID", "stage": "input", "message": "b", "issues": []}}
    assert projection.project(error) == projection.project(other)
    assert projection.project({"kind": "result", "result": {"data": {"n": 1}}}) == projection.project(
        {"kind": "result", "result": {"data": {"n": 1.0}}})  # D-JSON-003: the spelling of 1


def test_the_projection_keeps_what_the_seeds_fix() -> None:
    # spec: D-CNF-020 -- stage, repair, expiresAt, codes, results, partialResult contents.
    repair = _task(payload=json.dumps({"repair": {"issues": []}}))
    assert projection.project(_task()) != projection.project(repair)
    assert projection.project(_task()) != projection.project(_task(stage="data"))
    assert projection.project(_task()) != projection.project(_task(expiresAt="2026-01-01T00:00:00Z"))
    ready = {"kind": "result", "result": {"intents": [{"status": "ready"}]}}
    assert projection.project(ready) != projection.project({"kind": "result", "result": {"intents": [{"status": "conditional"}]}})
    assert projection.project(ready) != projection.project({"kind": "result", "result": {"intents": [{"status": "ready", "reason": None}]}})
    a = {"kind": "error", "error": {"code": "MODEL_ABORTED", "stage": "data", "partialResult": {"data": {}}}}
    b = {"kind": "error", "error": {"code": "MODEL_ABORTED", "stage": "data", "partialResult": {"data": {"x": 1}}}}
    assert projection.project(a) != projection.project(b)


@pytest.mark.parametrize(("context", "reference", "target", "level", "cited"), [
    # A status difference on a plain call: the seeds' rule (R-RES-038).
    (projection.CallContext("accept"), {"kind": "result", "result": {"s": 1}}, {"kind": "result", "result": {"s": 2}},
     "normative", ()),
    # A replay: whatever differs, the answer to a replay is a decision (seed 000 "可以复用").
    (projection.CallContext("accept", replay=True), {"kind": "result", "result": {}},
     {"kind": "error", "error": {"code": "BRIDGE_STEP_CONFLICT"}}, "reference", ("D-BRG-007", "D-BRG-008")),
    # A conflict elsewhere: the seeds say "may".
    (projection.CallContext("accept"), {"kind": "error", "error": {"code": "BRIDGE_STEP_CONFLICT"}},
     {"kind": "result", "result": {}}, "reference", ("D-BRG-008",)),
    # A configured number of repairs: D-CFG-001 / D-LIM-005.
    (projection.CallContext("accept", repair_attempts=0), {"kind": "error", "error": {"code": "MODEL_OUTPUT_INVALID"}},
     _task(payload='{"repair":{}}'), "reference", ("D-CFG-001", "D-LIM-005")),
    # The seeds' default of one repair: normative.
    (projection.CallContext("accept"), {"kind": "error", "error": {"code": "MODEL_OUTPUT_INVALID"}},
     _task(payload='{"repair":{}}'), "normative", ()),
    # A candidate fault only a decision judges.
    (projection.CallContext("accept", fault="json.duplicate_key"), {"kind": "error", "error": {"code": "MODEL_OUTPUT_INVALID"}},
     {"kind": "result", "result": {}}, "reference", ("D-JSON-001",)),
    # The seeds' 2048-byte cancel detail, whatever the refusal's code.
    (projection.CallContext("cancel", seed_cancel=True), {"kind": "error", "error": {"code": "INPUT_INVALID"}},
     {"kind": "error", "error": {"code": "MODEL_REFUSED"}}, "normative", ()),
    # The stage of a cancel's error: D-BRG-015.
    (projection.CallContext("cancel"), {"kind": "error", "error": {"code": "MODEL_ABORTED", "stage": "data"}},
     {"kind": "error", "error": {"code": "MODEL_ABORTED", "stage": "bridge"}}, "reference", ("D-BRG-015",)),
    # partialResult given by one side only: optional in seed 004.
    (projection.CallContext("cancel"), {"kind": "error", "error": {"code": "MODEL_ABORTED", "partialResult": {}}},
     {"kind": "error", "error": {"code": "MODEL_ABORTED"}}, "reference", ("D-ERR-009",)),
])  # fmt: skip
def test_each_difference_gets_its_level(context: Any, reference: Any, target: Any, level: str, cited: tuple[str, ...]) -> None:
    # spec: D-CNF-021
    assert projection.classify(context, reference, target) == (level, cited)


def test_seed_cancel_needs_a_well_formed_request() -> None:
    # spec: D-CNF-021 -- only the detail's size may be at fault for the seeds to fix the answer.
    refused = {"kind": "error", "error": {"code": "INPUT_INVALID"}}
    ended = {"kind": "error", "error": {"code": "MODEL_REFUSED"}}
    assert projection.seed_cancel({"jobId": "j", "outcome": "refusal", "detail": "中" * 683}, refused)
    assert projection.seed_cancel({"jobId": "j", "outcome": "refusal", "detail": "中" * 682}, ended)
    assert not projection.seed_cancel({"jobId": "j", "detail": "中" * 10}, refused)  # refused for something else
    assert not projection.seed_cancel({"jobId": "j", "extra": 1}, refused)
    assert not projection.seed_cancel({"jobId": "j", "detail": "\ud800"}, ended)


def test_a_decided_assertion_is_reference_level_and_others_are_not() -> None:
    # spec: D-CNF-021
    with pytest.raises(projection.DecidedAssertion) as caught, projection.decided("D-LIM-002"):
        raise AssertionError("over the budget")
    assert projection.failure_level(caught.value) == ("reference", ("D-LIM-002",))
    with pytest.raises(AssertionError) as plain, projection.decided():
        raise AssertionError("no decision named")
    assert projection.failure_level(plain.value) == ("normative", ())
    group = ExceptionGroup("two", [caught.value, ValueError("x")])
    assert projection.failure_level(group) == ("normative", ())
    assert projection.failure_level(ExceptionGroup("one", [caught.value])) == ("reference", ("D-LIM-002",))


# --------------------------------------------------------------------------- protocol-layer refusals


class _RefusingSession(CallSession):
    """An SDK that refuses every call with its own parameter validation (seed 000 allows it)."""

    def _call(self, op: str, request: Any) -> Any:
        raise ProtocolRefusal(f"{op} refused by the SDK")

    def close(self) -> None:
        return None


class _RefusingRun(Run):
    def connect(self) -> Session:
        return _RefusingSession()

    def close(self) -> None:
        return None


class _RefusingTarget(Target):
    name = "refusing"

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        return _RefusingRun()


NOT_IN_SCHEMA = {"instance": "default", "input": 7}  # the published input schema refuses it
BLANK_INPUT = {"instance": "default", "input": " "}  # the schema takes it; the Bridge answers INPUT_INVALID
VALID = {"instance": "default", "input": "查询订单 000123"}


def test_a_refusal_passes_where_the_reference_answers_input_invalid() -> None:
    # spec: D-CNF-055 -- the reference's reply to the same call is the expectation, as a case's is.
    with ip.Example(ip.DifferentialTarget(_RefusingTarget(), InProcessTarget()), fresh=True) as ex:
        session = ex.session()
        assert ip.error_code(session.prepare(NOT_IN_SCHEMA)) == "INPUT_INVALID"
        assert ip.error_code(session.prepare(BLANK_INPUT)) == "INPUT_INVALID"
        with pytest.raises(ProtocolRefusal):
            session.prepare(VALID)  # the reference answers a task: no refusal may stand in for it


def test_without_a_reference_a_refusal_passes_where_the_input_schema_refuses() -> None:
    # spec: D-CNF-055 -- nothing else is known to be a malformed call without the reference's reply.
    with ip.Example(_RefusingTarget(), fresh=True) as ex:
        session = ex.session()
        assert ip.error_code(session.prepare(NOT_IN_SCHEMA)) == "INPUT_INVALID"
        with pytest.raises(ProtocolRefusal):
            session.prepare(BLANK_INPUT)


def test_the_conformance_script_and_the_properties_share_one_refusal_rule() -> None:
    # spec: D-CNF-055
    assert targets.refusal_allowed is refusal_allowed
    assert refusal_allowed({"$error": {"code": {"$anyOf": ["INPUT_INVALID", "LIMIT_EXCEEDED"]}}})
    assert refusal_allowed({"kind": "error", "error": {"code": "INPUT_INVALID", "stage": "bridge"}})
    assert not refusal_allowed({"kind": "error", "error": {"code": "LIMIT_EXCEEDED", "stage": "bridge"}})
    assert not refusal_allowed({"kind": "task"}) and not refusal_allowed(None)
