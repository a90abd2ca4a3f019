"""What the runner makes of refusals a server shows its own way (D-CNF-051, D-CNF-055).

A scripted MCP server (``scripted_server.py``: real stdio, the handshake era) behaves as
the instance names and inputs tell it: ``refuse-*`` exits with status 7 in its own words,
``error-*`` starts and answers every prepare SCHEMA_UNSUPPORTED, ``serve-*`` serves the
instance, and the input ``sdk-refuses`` gets an isError result that is not a BridgeReply.

Each verdict below could come out otherwise: the same cases against the other behaviours
give the opposite outcome.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.cases.fixtures import load_cases
from intentref.suite.cases.script import ERRORED, FAILED, PASSED
from intentref.suite.execution.runner import execute
from intentref.suite.targets.mcp_stdio import StdioTarget

SCRIPTED_SERVER = Path(__file__).with_name("scripted_server.py")

REFUSED = {"$subset": {"stage": "config", "code": {"$anyOf": ["SCHEMA_UNSUPPORTED", "LIMIT_EXCEEDED"]}}}


def _configuration_case(case_id: str, instance: str, expect: Any) -> dict[str, Any]:
    return {"id": case_id, "description": f"configuration {instance}", "requirements": ["R-SCH-020"],
            "level": "normative", "instances": [instance],
            "setup": {"instances": {instance: {"language": "en"}}, "expect": expect}, "steps": []}  # fmt: skip


def _prepare_case(case_id: str, text: str, expect: Any) -> dict[str, Any]:
    return {"id": case_id, "description": f"prepare {text}", "requirements": ["R-BRG-019"], "level": "normative",
            "instances": ["default"],
            "steps": [{"op": "prepare", "args": {"instance": "default", "input": text}, "expect": expect}]}  # fmt: skip


def _finished_case(case_id: str) -> dict[str, Any]:
    case = _prepare_case(case_id, "fine", {"$task": {"stage": "core"}})
    case["steps"].append({"op": "accept", "args": {"jobId": {"$reply": 0, "pointer": "/jobId"},
                                                   "stepToken": {"$reply": 0, "pointer": "/stepToken"},
                                                   "candidateText": "finish"},
                          "expect": {"$subset": {"kind": "result"}}})  # fmt: skip
    return case


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: Any) -> dict[str, Any]:
    cases = tmp_path_factory.mktemp("observable") / "cases"
    cases.mkdir()
    document = {"area": "SCH", "title": "refusals shown another way", "cases": [
        _configuration_case("SCH-9001", "refuse-a", REFUSED),      # exits: refused, as expected
        _configuration_case("SCH-9002", "error-a", REFUSED),       # serves, but every prepare is refused
        _configuration_case("SCH-9003", "serve-a", REFUSED),       # serves a rejected instance: breaks it
        _configuration_case("SCH-9004", "refuse-b", {"ok": True}),  # refuses an accepted one: breaks it
        _configuration_case("SCH-9007", "error-b", {"$subset": {"stage": "config", "code": "CONFIG_INVALID"}}),
        _prepare_case("SCH-9005", "sdk-refuses", {"$error": {"code": "INPUT_INVALID"}}),  # allowed
        _prepare_case("SCH-9006", "sdk-refuses", {"$task": {"stage": "core"}}),           # not allowed
        _prepare_case("SCH-9008", "fine", {"$task": {"stage": "core"}}),  # its job will not end
        _prepare_case("SCH-9009", "fine", {"$task": {"stage": "core"}}),
        _finished_case("SCH-9010"),  # its job ended with a result: nothing to cancel
    ]}  # fmt: skip
    (cases / "sch.json").write_text(json.dumps(document), "utf-8")
    target = StdioTarget(f"{sys.executable} {SCRIPTED_SERVER} {{config}}", era="legacy", timeout=5)
    try:
        return {o.case_id: o for o in execute(load_cases(Path(cases)), target)}
    finally:
        target.close()


def test_a_server_that_exits_with_its_own_status_and_words_has_refused_the_configuration(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9001"].outcome == PASSED, outcomes["SCH-9001"]
    assert "exit status 7" in outcomes["SCH-9001"].detail and "judged by the refusal alone" in outcomes["SCH-9001"].detail


def test_a_server_that_starts_but_refuses_every_prepare_on_the_instance_passes(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9002"].outcome == PASSED, outcomes["SCH-9002"]


def test_refusing_every_prepare_with_another_code_than_expected_fails(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9007"].outcome == FAILED, outcomes["SCH-9007"]
    assert "error SCHEMA_UNSUPPORTED" in str(outcomes["SCH-9007"].mismatches[0])


def test_a_server_that_serves_a_rejected_instance_fails(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9003"].outcome == FAILED, outcomes["SCH-9003"]
    assert "the target serves 'serve-a'" in str(outcomes["SCH-9003"].mismatches[0])


def test_refusing_an_accepted_configuration_fails_and_is_never_errored(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9004"].outcome == FAILED, outcomes["SCH-9004"]
    assert "should be accepted" in str(outcomes["SCH-9004"].mismatches[0])


def test_a_protocol_layer_refusal_passes_only_where_a_malformed_call_is_expected(outcomes: dict[str, Any]) -> None:
    assert outcomes["SCH-9005"].outcome == PASSED and "D-CNF-055" in outcomes["SCH-9005"].detail
    assert outcomes["SCH-9006"].outcome == ERRORED
    assert "refused by the protocol layer" in outcomes["SCH-9006"].detail


def test_a_job_a_case_leaves_that_will_not_end_is_said_and_its_run_replaced(outcomes: dict[str, Any]) -> None:
    # D-CNF-050: the scripted server answers the runner's cancel with a task, so the job stays
    # active; the case still passes, says so, and the next case starts on a new server.
    for case_id in ("SCH-9008", "SCH-9009"):
        assert outcomes[case_id].outcome == PASSED, outcomes[case_id]
        assert "the run was replaced after this case" in outcomes[case_id].detail
        assert "did not end it" in outcomes[case_id].detail


def test_a_job_that_ended_with_a_result_is_not_cancelled_after_its_case(outcomes: dict[str, Any]) -> None:
    # The scripted server answers any cancel with a task: had the runner cancelled the job
    # its result ended, the case's detail would say the job did not end.
    outcome = outcomes["SCH-9010"]
    assert outcome.outcome == PASSED, outcome
    assert "did not end it" not in outcome.detail
