"""Parameter faults are error replies that change nothing (D-BRG-001, D-BRG-002)."""

from __future__ import annotations

from typing import Any

import pytest
from bridge_helpers import CORE_TEXT, accept, code, make_bridge, prepare

GOOD = {"jobId": "j", "stepToken": "t", "candidateText": "{}"}


@pytest.mark.parametrize("method", ["prepare", "accept", "cancel"])
@pytest.mark.parametrize("request_", [None, [], "x", 3])
def test_a_request_that_is_not_an_object(method: str, request_: Any) -> None:
    reply = getattr(make_bridge().connect(), method)(request_)
    assert code(reply) == "INPUT_INVALID"
    assert reply["error"]["stage"] == "bridge"
    assert reply["error"]["issues"][0]["path"] == ""


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"jobId": None}, "/jobId"),
        ({"stepToken": 1}, "/stepToken"),
        ({"candidateText": {"data": {}}}, "/candidateText"),
        ({"candidateText": None}, "/candidateText"),
        ({"extra": 1}, "/extra"),
        ({"a/b~": 1}, "/a~1b~0"),
    ],
)
def test_wrong_accept_members_leave_the_step_usable(change: dict[str, Any], path: str) -> None:
    bridge = make_bridge()
    session = bridge.connect()
    task = prepare(session)
    stats = bridge.stats()
    request = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE_TEXT, **change}
    reply = session.accept(request)
    assert code(reply) == "INPUT_INVALID"
    assert reply["error"]["stage"] == "bridge"
    assert [i["path"] for i in reply["error"]["issues"]] == [path]
    assert bridge.stats() == stats
    assert accept(session, task, CORE_TEXT)["stage"] == "data"


@pytest.mark.parametrize("missing", ["jobId", "stepToken", "candidateText"])
def test_missing_accept_members(missing: str) -> None:
    session = make_bridge().connect()
    task = prepare(session)
    request = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE_TEXT}
    del request[missing]
    reply = session.accept(request)
    assert code(reply) == "INPUT_INVALID"
    assert reply["error"]["issues"][0]["path"] == f"/{missing}"
    assert accept(session, task, CORE_TEXT)["stage"] == "data"


def test_missing_cancel_job_id() -> None:
    reply = make_bridge().connect().cancel({"outcome": "refusal"})
    assert code(reply) == "INPUT_INVALID" and reply["error"]["issues"][0]["path"] == "/jobId"


@pytest.mark.parametrize(("request_", "expected", "stage", "path"), [
    ({"input": "查询订单"}, "INPUT_INVALID", "bridge", "/instance"),
    ({"instance": 1, "input": "查询订单"}, "INPUT_INVALID", "bridge", "/instance"),
    ({"instance": "other", "input": "查询订单"}, "BRIDGE_INSTANCE_NOT_FOUND", "bridge", "/instance"),
    ({"instance": "default"}, "INPUT_INVALID", "input", "/input"),
    ({"instance": "default", "input": "查询订单", "extra": 1}, "INPUT_INVALID", "input", "/extra"),
    ({"instance": "default", "input": "查询订单", "fields": ["nope"]}, "UNKNOWN_FIELD", "input", "/fields/0"),
])  # fmt: skip
def test_prepare_faults(request_: dict[str, Any], expected: str, stage: str, path: str) -> None:
    bridge = make_bridge()
    reply = bridge.connect().prepare(request_)
    assert code(reply) == expected
    assert reply["error"]["stage"] == stage
    assert reply["error"]["issues"][0]["path"] == path
    assert bridge.stats() == {"activeJobs": 0, "records": 0, "replayBytes": 0}


def test_blank_input_gives_the_seed_error_reply() -> None:
    # spec: R-RPY-013 -- exactly the seed's error reply.
    assert make_bridge().connect().prepare({"instance": "default", "input": "  \n"}) == {
        "kind": "error",
        "error": {
            "code": "INPUT_INVALID",
            "stage": "input",
            "message": "input must contain non-whitespace text.",
            "issues": [],
        },
    }


def test_prepare_passes_context_and_fields_to_the_instance() -> None:
    session = make_bridge().connect()
    reply = prepare(session, context=[{"role": "user", "content": "上一句"}], fields=["orderId"])
    assert reply["kind"] == "task"
    assert '"sourceId":"context:0"' in reply["payload"]
