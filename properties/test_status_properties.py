"""Item status by blocker priority, reason joining and the status branch fields, through the target.

# spec: R-RES-031, R-RES-032, R-RES-033, R-RES-037, R-RES-038, R-RES-039, R-RES-040, R-COR-010, R-RES-026, R-RES-015

The expected status is computed here from the priority rule alone:
needs_clarification > awaiting_confirmation > conditional > ready; the reason lists every
present reason in that order joined by "\\n"; ``reason`` is absent exactly for ready and
``clarification`` present exactly for needs_clarification.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core.jsontext import dumps_compact

REQUIREMENTS = ("R-RES-038", "R-RES-039", "R-RES-032", "R-RES-033")
EVERY_COMBINATION = list(itertools.product([False, True], repeat=3))


def expected_item(index: int, item: dict[str, Any]) -> dict[str, Any]:
    blockers = item["blockers"]
    reasons = [blockers[n] for n in ("clarificationReason", "confirmationReason", "conditionReason")]
    if reasons[0] is not None:
        status = "needs_clarification"
    elif reasons[1] is not None:
        status = "awaiting_confirmation"
    elif reasons[2] is not None:
        status = "conditional"
    else:
        status = "ready"
    out: dict[str, Any] = {"id": f"i{index + 1}", "action": item["action"], "target": item["target"],
                           "requirements": item["requirements"], "status": status}  # fmt: skip
    present = [r for r in reasons if r is not None]
    if present:
        out["reason"] = "\n".join(present)
    if status == "needs_clarification":
        out["clarification"] = blockers["questions"]
    return out


def _result(target: Any, request: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    with ip.Example(target, requirements=REQUIREMENTS) as ex:
        session = ex.session()
        task = session.prepare(request)
        assert task["kind"] == "task" and task["stage"] == "core", task
        reply = session.accept(ip.step_of(task, dumps_compact(candidate)))
    assert reply["kind"] == "result", reply  # "default" has no fields: the core result is final
    result: dict[str, Any] = reply["result"]
    return result


@given(combinations=st.lists(ist.blocker_combinations(), min_size=1, max_size=6), data=st.data())
def test_status_reason_and_branch_fields(intentref_target: Any, combinations: list[Any], data: st.DataObject) -> None:
    # spec: R-RES-038, R-RES-039, R-RES-032, R-RES-033, R-RES-037, R-COR-010
    candidate = data.draw(ist.core_candidates(combinations=combinations), label="core")
    request = data.draw(ist.requests("default"), label="request")
    result = _result(intentref_target, request, candidate)
    assert result["input"] == request["input"]  # spec: R-RES-015 -- kept exactly
    assert result["intents"] == [expected_item(i, item) for i, item in enumerate(candidate["intents"])]


def test_every_blocker_combination_in_one_candidate(intentref_target: Any) -> None:
    # spec: R-RES-038, R-RES-040 -- all eight combinations, lower-priority reasons kept in the reason.
    candidate = {
        "normalizedInput": "所有组合", "primaryIntent": None, "requirements": [], "prohibitions": [],
        "intents": [{
            "action": "execute", "target": f"t{i}", "requirements": [],
            "blockers": {"clarificationReason": "澄清" if c else None,
                         "questions": [{"question": "哪个？", "options": ["甲", "乙"]}] if c else [],
                         "confirmationReason": "确认" if f else None, "conditionReason": "条件" if k else None},
        } for i, (c, f, k) in enumerate(EVERY_COMBINATION)],
    }  # fmt: skip
    result = _result(intentref_target, {"instance": "default", "input": "执行全部"}, candidate)
    statuses = [item["status"] for item in result["intents"]]
    assert statuses == ["ready", "conditional", "awaiting_confirmation", "awaiting_confirmation",
                        "needs_clarification", "needs_clarification", "needs_clarification", "needs_clarification"]  # fmt: skip
    assert result["intents"][7]["reason"] == "澄清\n确认\n条件"
    assert result["intents"] == [expected_item(i, item) for i, item in enumerate(candidate["intents"])]


@given(request=ist.requests("order"), member=st.sampled_from(["context", "fields"]))
def test_null_members_mean_absent(intentref_target: Any, request: dict[str, Any], member: str) -> None:
    # D-REQ-004, D-REQ-005 -- null context and null fields are read as absent (spec: R-BRG-019, R-FLD-001).
    with ip.Example(intentref_target, requirements=("R-BRG-019", "R-FLD-001")) as ex:
        session = ex.session()
        absent = session.prepare({k: v for k, v in request.items() if k != member})
        # Accepting null at all is decided: an SDK whose schema has no null may refuse it.
        with ip.decided("D-REQ-004", "D-REQ-005"):
            null = session.prepare({**request, member: None})
    with ip.decided("D-REQ-004", "D-REQ-005"):
        assert absent["kind"] == null["kind"] == "task", (absent, null)
        assert absent["payload"] == null["payload"]
