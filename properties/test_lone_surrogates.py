"""Lone surrogates: the reference's own reading, checked at reference level only.

# spec: R-CAN-003, R-CAN-009, R-IDM-003, R-IDM-004

A JavaScript string may hold a lone surrogate, and JSON text can carry one as an escape
(``\\ud800``), but UTF-8 cannot: the seeds say nothing of them.  The reference counts one as 3
bytes (U+FFFD, D-LIM-006), makes a detail holding one well-formed (D-CAN-002, D-REQ-003) and
accepts the escape over MCP (D-MCP-008); another implementation, or its SDK's transport, may
refuse such a request or drop it unanswered (the official Python SDK's stdio transport does).
So every failure here is reference level (the ``decided`` mark), and no normative property
sends a lone surrogate.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_byte_limits import _cancel, _check_cancel, _ending_with

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, utf8_length

pytestmark = pytest.mark.decided("D-REQ-003", "D-MCP-008", "D-LIM-006", "D-CAN-002")

LONE = {"lone-high": "\ud800", "lone-low": "\udfff"}


@pytest.mark.parametrize("lone", list(LONE))
@pytest.mark.parametrize("over", [0, 1], ids=["at-limit", "one-over"])
def test_cancel_detail_boundary_after_a_lone_surrogate(intentref_target: Any, lone: str, over: int) -> None:
    # D-LIM-006: a lone surrogate counts 3 bytes, as the U+FFFD a TextEncoder writes for it.
    detail = _ending_with(LONE[lone], MAX_CANCEL_DETAIL_BYTES + over)
    first, second = _cancel(intentref_target, detail, "refusal")
    _check_cancel(detail, "refusal", first, second)


@given(over=st.sampled_from([0, 1]), data=st.data())
def test_cancel_detail_boundary_mixed_with_lone_surrogates(intentref_target: Any, over: int, data: st.DataObject) -> None:
    detail = data.draw(ist.cancel_details(MAX_CANCEL_DETAIL_BYTES + over), label="detail")
    assert utf8_length(detail) == MAX_CANCEL_DETAIL_BYTES + over
    first, second = _cancel(intentref_target, detail, "incomplete")
    _check_cancel(detail, "incomplete", first, second)


@given(data=st.data())
def test_a_lone_surrogate_makes_another_text_and_never_a_token(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-IDM-003, R-IDM-004 -- identity is the exact string: a lone surrogate more is
    # another text on a used step, and a token that is one was never issued.
    lone = data.draw(st.sampled_from(list(LONE.values())), label="lone surrogate")
    core = dumps_compact(data.draw(ist.core_candidates(), label="core"))
    with ip.Example(intentref_target, requirements=("R-IDM-003", "R-IDM-004")) as ex:
        session = ex.session()
        task = session.prepare({"instance": "order", "input": "查询订单 000123"})
        bogus = session.accept({"jobId": task["jobId"], "stepToken": lone, "candidateText": core})
        assert ip.error_code(bogus) == "BRIDGE_STEP_CONFLICT", bogus
        first = session.accept(ip.step_of(task, core))
        again = session.accept(ip.step_of(task, core + lone))
    assert first["kind"] in ("task", "result", "error"), first
    assert ip.error_code(again) == "BRIDGE_STEP_CONFLICT", again


def test_an_unknown_job_named_by_a_lone_surrogate_is_not_found(intentref_target: Any) -> None:
    # spec: R-CAN-009
    with ip.Example(intentref_target, requirements=("R-CAN-009",)) as ex:
        reply = ex.session().cancel({"jobId": "\ud800"})
    assert ip.error_code(reply) == "BRIDGE_JOB_NOT_FOUND", reply
