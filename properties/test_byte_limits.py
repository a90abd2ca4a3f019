"""UTF-8 byte limits at their boundaries, counted as a JavaScript TextEncoder counts them.

# spec: R-CAN-003, R-CAN-004, R-CAP-009, R-CAP-012, R-CAP-013, R-LIF-009, R-LIF-002, R-ERR-017

1-, 2-, 3- and 4-byte characters are put right at each boundary: exactly the limit is
accepted, one byte more is refused, and a refusal never ends the job.  Lone surrogates
(3 bytes each, as U+FFFD: D-LIM-006) are the reference's own reading and reach a server only
over some transports: they are checked at reference level in test_lone_surrogates.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import (
    MAX_CANCEL_DETAIL_BYTES,
    MAX_CANDIDATE_BYTES,
    MAX_INPUT_BYTES,
    utf8_length,
    well_formed,
)
from intentref.core.wire import CANCEL_OUTCOMES

# One character of each width.
WIDTHS = {"1-byte": "a", "2-byte": "é", "3-byte": "中", "4-byte": "😀"}
CORE = {"normalizedInput": "x", "primaryIntent": None, "requirements": [], "prohibitions": [], "intents": []}


def _ending_with(char: str, total: int) -> str:
    """``total`` bytes whose last character is ``char``."""
    return "a" * (total - utf8_length(char)) + char


def _cancel(target: Any, detail: str, outcome: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reply to the cancel with ``detail``, reply to a plain cancel of the same job afterwards)."""
    with ip.Example(target, requirements=("R-CAN-003", "R-CAN-004")) as ex:
        session = ex.session()
        task = session.prepare({"instance": "default", "input": "取消测试"})
        first = session.cancel({"jobId": task["jobId"], "outcome": outcome, "detail": detail})
        second = session.cancel({"jobId": task["jobId"]})
    return first, second


def _check_cancel(detail: str, outcome: str, first: dict[str, Any], second: dict[str, Any]) -> None:
    if utf8_length(detail) <= MAX_CANCEL_DETAIL_BYTES:
        assert first["kind"] == "error" and first["error"]["code"] == CANCEL_OUTCOMES[outcome], first
        with ip.decided("D-BRG-015", "D-CAN-002"):  # the stage, and the detail as the one issue
            assert first["error"]["stage"] == "core"
            # D-CAN-002: a non-blank detail is the one issue, made well-formed.
            assert [i["message"] for i in first["error"]["issues"]] == [well_formed(detail)]
        assert second == first  # spec: R-CAN-008 -- the job ended: its terminal reply again
    else:
        assert first["kind"] == "error", first  # seed 000: 2049 bytes are refused
        with ip.decided("D-BRG-015"):  # how a refused cancel is spelled
            assert first["error"]["code"] == "INPUT_INVALID", first
            assert first["error"]["stage"] == "bridge" and ip.issue_paths(first) == ["/detail"]
        # The refused cancel did not end the job: a plain cancel ends it now.
        assert second["kind"] == "error" and second["error"]["code"] == "MODEL_ABORTED", second


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("over", [0, 1], ids=["at-limit", "one-over"])
def test_cancel_detail_boundary_after_each_width(intentref_target: Any, width: str, over: int) -> None:
    # spec: R-CAN-003, R-CAN-004 -- 2048 bytes pass, 2049 do not, whatever the last character is.
    detail = _ending_with(WIDTHS[width], MAX_CANCEL_DETAIL_BYTES + over)
    first, second = _cancel(intentref_target, detail, "refusal")
    _check_cancel(detail, "refusal", first, second)


@given(over=st.sampled_from([0, 1]), outcome=st.sampled_from(list(CANCEL_OUTCOMES)), data=st.data())
def test_cancel_detail_boundary_mixed(intentref_target: Any, over: int, outcome: str, data: st.DataObject) -> None:
    # spec: R-CAN-003 -- mixed widths, exactly at the limit or one byte over.
    detail = data.draw(ist.cancel_details(MAX_CANCEL_DETAIL_BYTES + over, lone_surrogates=False), label="detail")
    assert utf8_length(detail) == MAX_CANCEL_DETAIL_BYTES + over
    first, second = _cancel(intentref_target, detail, outcome)
    _check_cancel(detail, outcome, first, second)


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("over", [0, 1], ids=["at-limit", "one-over"])
def test_candidate_size_boundary(intentref_target: Any, width: str, over: int) -> None:
    # spec: R-CAP-013, R-LIF-009 -- one byte over the candidate budget is refused and the step stays open.
    text = '"' + _ending_with(WIDTHS[width], MAX_CANDIDATE_BYTES + over - 2) + '"'
    assert utf8_length(text) == MAX_CANDIDATE_BYTES + over
    with ip.Example(intentref_target, requirements=("R-CAP-013", "R-LIF-009")) as ex, ip.decided("D-LIM-003"):
        session = ex.session()
        task = session.prepare({"instance": "default", "input": "大小"})
        reply = session.accept(ip.step_of(task, text))
        if over:
            assert ip.error_code(reply) == "LIMIT_EXCEEDED", reply
            after = session.accept(ip.step_of(task, dumps_compact(CORE)))  # the same token still works
            assert after["kind"] == "result", after
        else:
            assert ip.error_code(reply) != "LIMIT_EXCEEDED", reply  # judged: a JSON string is no candidate


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("over", [0, 1], ids=["at-limit", "one-over"])
def test_input_size_boundary(intentref_target: Any, width: str, over: int) -> None:
    # D-LIM-002 -- the input budget (32 KiB), judged in UTF-8 bytes.
    text = _ending_with(WIDTHS[width], MAX_INPUT_BYTES + over)
    with ip.Example(intentref_target, requirements=("R-BRG-019",)) as ex:
        reply = ex.session().prepare({"instance": "default", "input": text})
    with ip.decided("D-LIM-002"):  # the input budget is the reference's
        if over:
            assert ip.error_code(reply) == "LIMIT_EXCEEDED" and reply["error"]["stage"] == "input", reply
        else:
            assert reply["kind"] == "task", reply


def _measure(target: Any, request: dict[str, Any], core: dict[str, Any]) -> tuple[int, int]:
    """(bytes of the first task reply, bytes of the data task reply) on a roomy run of the target."""
    with ip.Example(target, options={"maxReplayBytes": 10**8}, requirements=("R-CAP-009",)) as ex:
        session = ex.session()
        task = session.prepare(request)
        data_task = session.accept(ip.step_of(task, dumps_compact(core)))
    assert data_task["kind"] == "task", data_task
    return utf8_length(dumps_compact(task)), utf8_length(dumps_compact(data_task))


@given(unit=st.sampled_from(["a", "é", "中", "😀"]), count=st.integers(1, 40), over=st.sampled_from([0, 1]))
def test_prepare_fits_the_replay_budget_to_the_byte(intentref_target: Any, unit: str, count: int, over: int) -> None:
    # spec: R-CAP-009, R-CAP-012 -- a new job's task must fit maxReplayBytes beside the active ones.
    request = {"instance": "order", "input": "订单 000123 " + unit * count}
    with ip.decided(*BUDGET_DECISIONS):
        _prepare_budget(intentref_target, request, over)


# What maxReplayBytes counts, and how exactly, are the reference's (the seed names the option).
BUDGET_DECISIONS = ("D-BRG-010", "D-BRG-011")


def _prepare_budget(intentref_target: Any, request: dict[str, Any], over: int) -> None:
    first, _ = _measure(intentref_target, request, CORE)
    with ip.Example(intentref_target, options={"maxReplayBytes": first - over}, requirements=("R-CAP-012",)) as ex:
        reply = ex.session().prepare(request)
    if over:
        assert ip.error_code(reply) == "LIMIT_EXCEEDED" and reply["error"]["stage"] == "bridge", reply
    else:
        assert reply["kind"] == "task", reply


@given(unit=st.sampled_from(["a", "é", "中", "😀"]), count=st.integers(1, 40), over=st.sampled_from([0, 1]))
def test_a_step_fits_the_replay_budget_to_the_byte(intentref_target: Any, unit: str, count: int, over: int) -> None:
    # spec: R-CAP-009, R-CAP-013 -- the stepping job keeps its used step (digest + reply) and its
    # new task; when that does not fit, the step is refused and stays open.
    request = {"instance": "order", "input": "订单 000123 " + unit * count}
    core = {**CORE, "normalizedInput": unit * count}
    with ip.decided(*BUDGET_DECISIONS):
        _step_budget(intentref_target, request, core, over)


def _step_budget(intentref_target: Any, request: dict[str, Any], core: dict[str, Any], over: int) -> None:
    first, data_reply = _measure(intentref_target, request, core)
    budget = max(first, 32 + 2 * data_reply - over)  # a SHA-256 digest, the reply, the same task again
    with ip.Example(intentref_target, options={"maxReplayBytes": budget}, requirements=("R-CAP-013",)) as ex:
        session = ex.session()
        task = session.prepare(request)
        reply = session.accept(ip.step_of(task, dumps_compact(core)))
        if over:
            assert ip.error_code(reply) == "LIMIT_EXCEEDED", reply
            ended = session.cancel({"jobId": task["jobId"]})  # still active: the cancel ends it
            assert ip.error_code(ended) == "MODEL_ABORTED", ended
        else:
            assert reply["kind"] == "task" and reply["stage"] == "data", reply
            assert json.loads(reply["payload"])["currentInput"] == request["input"]
