"""intent_cancel / session.cancel (seed 000 "工具与 session 方法", spec: R-CAN-001..009)."""

from __future__ import annotations

from typing import Any

import pytest
from bridge_helpers import CHECKED_DEFAULT, CORE_TEXT, DATA_TEXT, accept, code, make_bridge, prepare, wire

OUTCOMES = [(None, "MODEL_ABORTED"), ("cancelled", "MODEL_ABORTED"), ("refusal", "MODEL_REFUSED"),
            ("incomplete", "MODEL_OUTPUT_INCOMPLETE")]  # fmt: skip


def _cancel(session: Any, task: dict[str, Any], outcome: str | None = None, **extra: Any) -> dict[str, Any]:
    request = {"jobId": task["jobId"], **extra}
    if outcome is not None:
        request["outcome"] = outcome
    reply: dict[str, Any] = session.cancel(request)
    return reply


@pytest.mark.parametrize(("outcome", "expected"), OUTCOMES)
def test_cancel_before_core_has_no_partial_result(outcome: str | None, expected: str) -> None:
    bridge = make_bridge()
    session = bridge.connect()
    task = prepare(session)
    reply = _cancel(session, task, outcome)
    assert code(reply) == expected
    assert reply["error"]["stage"] == "core"
    assert "partialResult" not in reply["error"]
    assert bridge.stats()["activeJobs"] == 0 and bridge.stats()["records"] == 1


@pytest.mark.parametrize(("outcome", "expected"), OUTCOMES)
def test_cancel_after_core_keeps_the_checked_default(outcome: str | None, expected: str) -> None:
    session = make_bridge().connect()
    data = accept(session, prepare(session), CORE_TEXT)
    reply = _cancel(session, data, outcome)
    assert code(reply) == expected
    assert reply["error"]["stage"] == "data"
    assert reply["error"]["partialResult"] == CHECKED_DEFAULT


def test_detail_is_measured_in_utf8_bytes() -> None:
    session = make_bridge().connect()
    task = prepare(session)
    # spec: R-CAN-004 -- 683 x 中 = 2049 bytes: refused, and the job is untouched.
    refused = _cancel(session, task, detail="中" * 683)
    assert code(refused) == "INPUT_INVALID"
    assert refused["error"]["stage"] == "bridge"
    assert refused["error"]["issues"][0]["path"] == "/detail"
    assert accept(session, task, CORE_TEXT)["stage"] == "data"
    # 682 x 中 = 2046 bytes: accepted, and kept as the error's one issue (D-CAN-002).
    accepted = _cancel(session, task, "refusal", detail="中" * 682)
    assert code(accepted) == "MODEL_REFUSED"
    assert [issue["message"] for issue in accepted["error"]["issues"]] == ["中" * 682]


@pytest.mark.parametrize(("detail", "ok"), [("a" * 2045 + "\ud800", True), ("a" * 2046 + "\ud800", False),
                                            ("\udc00" * 682, True), ("\udc00" * 683, False)])  # fmt: skip
def test_a_lone_surrogate_counts_three_bytes(detail: str, ok: bool) -> None:
    session = make_bridge().connect()
    reply = _cancel(session, prepare(session), detail=detail)
    if ok:
        assert code(reply) == "MODEL_ABORTED"
        message = reply["error"]["issues"][0]["message"]
        assert "\ufffd" in message and message.encode("utf-8")  # well-formed: encodes cleanly
    else:
        assert code(reply) == "INPUT_INVALID"


def test_a_blank_detail_files_no_issue() -> None:
    session = make_bridge().connect()
    assert _cancel(session, prepare(session), detail="  ")["error"]["issues"] == []


def test_cancel_after_a_result_returns_the_result() -> None:
    session = make_bridge().connect()
    data = accept(session, prepare(session), CORE_TEXT)
    result = accept(session, data, DATA_TEXT)
    assert result["kind"] == "result"
    for outcome in (None, "refusal", "incomplete"):
        assert wire(_cancel(session, data, outcome)) == wire(result)  # spec: R-CAN-008


def test_cancel_on_a_cancelled_job_returns_the_original_error() -> None:
    session = make_bridge().connect()
    task = prepare(session)
    first = _cancel(session, task, "refusal", detail="不想做")
    assert code(first) == "MODEL_REFUSED"
    assert wire(_cancel(session, task, "incomplete", detail="别的")) == wire(first)
    assert wire(_cancel(session, task)) == wire(first)


def test_parameters_are_checked_before_the_terminal_reply() -> None:
    session = make_bridge().connect()
    task = prepare(session)
    _cancel(session, task)
    assert code(_cancel(session, task, "later")) == "INPUT_INVALID"
    assert code(_cancel(session, task, detail="中" * 683)) == "INPUT_INVALID"


@pytest.mark.parametrize(
    ("request_", "path"),
    [
        ({"outcome": "canceled"}, "/outcome"),
        ({"outcome": None}, "/outcome"),
        ({"outcome": 1}, "/outcome"),
        ({"outcome": "Refusal"}, "/outcome"),
        ({"detail": None}, "/detail"),
        ({"detail": 12}, "/detail"),
        ({"reason": "x"}, "/reason"),
    ],
)
def test_invalid_cancel_members(request_: dict[str, Any], path: str) -> None:
    bridge = make_bridge()
    session = bridge.connect()
    task = prepare(session)
    reply = session.cancel({"jobId": task["jobId"], **request_})
    assert code(reply) == "INPUT_INVALID"
    assert reply["error"]["stage"] == "bridge"
    assert reply["error"]["issues"][0]["path"] == path
    assert bridge.stats()["activeJobs"] == 1  # nothing happened to the job


def test_cancel_of_a_reclaimed_job_is_not_found() -> None:
    session = make_bridge(maxReplayEntries=1).connect()
    first = prepare(session)
    _cancel(session, first)
    prepare(session)  # reclaims the cancelled record
    assert code(_cancel(session, first)) == "BRIDGE_JOB_NOT_FOUND"  # spec: R-CAN-009
