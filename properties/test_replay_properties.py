"""Idempotent replay: a used step answers the same candidate identically and any other text conflicts.

# spec: R-IDM-001, R-IDM-002, R-IDM-003, R-IDM-004, R-LIF-005, R-LIF-011, R-CAP-013, R-BRG-015, R-RPY-015

A job is walked through its steps with candidates that are valid or broken in a named
way (repairs included); afterwards every used step is submitted again, in any order,
with the same text (the reply must be identical, to the byte where the transport carries
text) and with other texts (BRIDGE_STEP_CONFLICT, and the job stays usable).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core.jsontext import dumps_compact

REPAIRING = ["tworepairs", "order", "multi", "default", "gen-01", "gen-02", "gen-03"]


@dataclass
class Used:
    token: str
    text: str
    reply: dict[str, Any]
    wire: str | None  # the reply's text as the transport carried it


def _candidate(data: st.DataObject, task: dict[str, Any], plan: ip.RequestPlan) -> str:
    payload = json.loads(task["payload"])
    if task["stage"] == "core":
        subject = ip.Subject("core", data.draw(ist.core_candidates(), label="core"), payload)
    else:
        subject = ip.Subject("data", data.draw(ist.data_candidates(payload, plan.data), label="data"), payload)
    if data.draw(st.booleans(), label="break it"):
        _, broken = data.draw(ist.broken_candidates(subject, lone_surrogates=False), label="fault")
        return broken.text
    return subject.text


def _others(text: str) -> list[str]:
    """Texts that are not ``text``: identity is the exact string (spec: R-IDM-002)."""
    others = [text + " ", " " + text, text.replace("{", "{ ", 1), "\ufffd" + text, ""]
    return [other for other in others if other != text]


def _walk(data: st.DataObject, session: ip.ExampleSession, plan: ip.RequestPlan) -> tuple[list[Used], dict[str, Any]]:
    reply = session.prepare(plan.request)
    assert reply["kind"] == "task", reply
    used: list[Used] = []
    task = reply
    for _ in range(5):
        text = _candidate(data, task, plan)
        reply = session.accept(ip.step_of(task, text))
        if ip.error_code(reply) == "LIMIT_EXCEEDED":
            continue  # spec: R-CAP-013 -- a refused candidate is not a used step
        used.append(Used(task["stepToken"], text, reply, session.last_text))
        if reply["kind"] != "task":
            break
        assert reply["jobId"] == task["jobId"]
        assert reply["stepToken"] not in [u.token for u in used]  # spec: R-LIF-011 -- every step its own token
        task = reply
    return used, task


@given(data=st.data())
def test_every_used_step_replays_identically_and_other_texts_conflict(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-IDM-001, R-IDM-002, R-IDM-003, R-LIF-005
    name = data.draw(st.sampled_from(ip.available(intentref_target, REPAIRING)), label="instance")
    plan = data.draw(ist.plans(name), label="plan")
    with ip.Example(intentref_target, requirements=("R-IDM-001", "R-IDM-003")) as ex:
        session = ex.session()
        used, current = _walk(data, session, plan)
        order = data.draw(st.permutations(used), label="replay order") if used else []
        for step in order:
            again = session.accept({"jobId": current["jobId"], "stepToken": step.token, "candidateText": step.text})
            with ip.decided("D-BRG-007"):  # seed 000: a replay *may* reuse the retained reply
                assert ip.canonical(again) == ip.canonical(step.reply)
                if step.wire is not None and session.last_text is not None:
                    assert session.last_text == step.wire  # the same reply to the byte
            other = data.draw(st.sampled_from(_others(step.text)), label="other text")
            conflict = session.accept({"jobId": current["jobId"], "stepToken": step.token, "candidateText": other})
            with ip.decided("D-BRG-008"):  # seed 000: another text on a used token *may* conflict
                assert ip.error_code(conflict) == "BRIDGE_STEP_CONFLICT", conflict
                assert conflict["error"]["stage"] == "bridge" and ip.issue_paths(conflict) == ["/stepToken"]
        if used and used[-1].reply["kind"] == "task":
            # Still active after all of that: its open step takes a candidate.
            final = session.accept(ip.step_of(current, _candidate(data, current, plan)))
            assert ip.error_code(final) not in ("BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND"), final


@given(data=st.data())
def test_a_refused_candidate_is_not_a_used_step(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-CAP-013, R-LIF-009 -- after LIMIT_EXCEEDED the same token takes another candidate.
    plan = data.draw(ist.plans("order"), label="plan")
    core = data.draw(ist.core_candidates(), label="core")
    with ip.Example(intentref_target, requirements=("R-CAP-013",)) as ex, ip.decided("D-LIM-003", "D-BRG-009"):
        session = ex.session()
        task = session.prepare(plan.request)
        big = ip.CANDIDATE_FAULTS["text.oversize"](ip.Subject("core", core, {}), ip.RandomDraw(0)).text
        assert ip.error_code(session.accept(ip.step_of(task, big))) == "LIMIT_EXCEEDED"
        reply = session.accept(ip.step_of(task, dumps_compact(core)))
    assert reply["kind"] == "task" and reply["stage"] == "data", reply


@given(data=st.data())
def test_unknown_tokens_conflict_and_other_sessions_see_nothing(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-IDM-004, R-BRG-014, R-BRG-015 -- a token never issued conflicts; another session's job is not found.
    plan = data.draw(ist.plans("order"), label="plan")
    text = dumps_compact(data.draw(ist.core_candidates(), label="core"))
    bogus = data.draw(st.sampled_from(["x" * 22, "", "🀄" * 11]), label="bogus token")
    with ip.Example(intentref_target, requirements=("R-IDM-004", "R-BRG-015")) as ex:
        owner, other = ex.session(), ex.session()
        task = owner.prepare(plan.request)
        stolen = other.accept(ip.step_of(task, text))
        with ip.decided("D-BRG-003"):  # seed 000: jobs are not usable across connections; the code is ours
            assert ip.error_code(stolen) == "BRIDGE_JOB_NOT_FOUND", stolen
            assert ip.error_code(other.cancel({"jobId": task["jobId"]})) == "BRIDGE_JOB_NOT_FOUND"
        wrong = owner.accept({"jobId": task["jobId"], "stepToken": bogus, "candidateText": text})
        with ip.decided("D-BRG-008"):
            assert ip.error_code(wrong) == "BRIDGE_STEP_CONFLICT", wrong
        reply = owner.accept(ip.step_of(task, text))  # none of that touched the job
    assert reply["kind"] == "task" and reply["stage"] == "data", reply
