"""Capacity: maxJobs, maxReplayEntries, maxReplayBytes and LIMIT_EXCEEDED that keeps the step.

spec: R-CAP-005..013, R-LIF-002, R-LIF-009, R-IDM-006.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bridge_helpers import CORE_TEXT, DATA_TEXT, accept, code, make_bridge, order_intent, prepare, wire

from intentref import Intent
from intentref.bridge import BridgeSession
from intentref.core.limits import MAX_CANDIDATE_BYTES

OVERSIZE = '"' + "x" * MAX_CANDIDATE_BYTES + '"'  # valid JSON, one MiB and two bytes


def _cancelled_size() -> tuple[int, int]:
    """(bytes of a fresh job, bytes of the same job once cancelled) as the Bridge counts them."""
    bridge = make_bridge()
    session = bridge.connect()
    task = prepare(session)
    fresh = bridge.stats()["replayBytes"]
    session.cancel({"jobId": task["jobId"]})
    return fresh, bridge.stats()["replayBytes"]


def _is_retained(session: BridgeSession, task: dict[str, Any]) -> bool:
    reply = session.cancel({"jobId": task["jobId"]})
    return not (reply["kind"] == "error" and reply["error"]["code"] == "BRIDGE_JOB_NOT_FOUND")


def test_an_oversized_candidate_keeps_the_job_and_its_token() -> None:
    bridge = make_bridge()
    session = bridge.connect()
    task = prepare(session)
    stats = bridge.stats()
    for _ in range(2):  # the same oversized text is refused again, not treated as a used step
        reply = accept(session, task, OVERSIZE)
        assert code(reply) == "LIMIT_EXCEEDED"
        assert reply["error"]["stage"] == "core"  # the rejection's own stage
        assert bridge.stats() == stats
    # spec: R-LIF-009 -- the corrected candidate on the same token is a normal submission.
    data = accept(session, task, CORE_TEXT)
    assert data["stage"] == "data"
    assert code(accept(session, data, OVERSIZE)) == "LIMIT_EXCEEDED"
    assert accept(session, data, DATA_TEXT)["kind"] == "result"


def test_a_step_whose_record_cannot_fit_keeps_the_job_and_its_token() -> None:
    fresh, _ = _cancelled_size()
    bridge = make_bridge(maxReplayBytes=fresh + 100)  # the job fits, its data step does not
    session = bridge.connect()
    task = prepare(session)
    stats = bridge.stats()
    for _ in range(2):
        reply = accept(session, task, CORE_TEXT)
        assert code(reply) == "LIMIT_EXCEEDED"
        assert reply["error"]["stage"] == "bridge"
        assert reply["error"]["issues"][0]["path"] == "/candidateText"
        assert bridge.stats() == stats
    # The refused core step left no trace in the job: no partialResult on cancel.
    cancelled = session.cancel({"jobId": task["jobId"]})
    assert code(cancelled) == "MODEL_ABORTED"
    assert "partialResult" not in cancelled["error"]


def test_a_refused_step_does_not_spend_a_repair_attempt() -> None:
    # repairAttempts 1: had the refused submission counted, the second fault would be final.
    probe = make_bridge({"default": order_intent(repairAttempts=1)})
    probe_session = probe.connect()
    repair = accept(probe_session, prepare(probe_session), "{")
    small_record = probe.stats()["replayBytes"]
    bridge = make_bridge({"default": order_intent(repairAttempts=1)}, maxReplayBytes=small_record + 10_000)
    session = bridge.connect()
    task = prepare(session)
    big_fault = "{" + "x" * 50_000  # its repair task would quote all of it
    assert code(accept(session, task, big_fault)) == "LIMIT_EXCEEDED"
    again = accept(session, task, "{")
    assert again["kind"] == "task" and again["stage"] == "core"
    assert json.loads(again["payload"])["repair"]["attempt"] == 1
    assert json.loads(again["payload"]) == json.loads(repair["payload"])
    assert code(accept(session, again, "{")) == "MODEL_OUTPUT_INVALID"


def test_max_jobs_counts_active_jobs_of_all_sessions_and_instances() -> None:
    bridge = make_bridge({"a": order_intent(), "b": Intent({"language": "zh-CN"})}, maxJobs=2)
    one, two, three = bridge.connect(), bridge.connect(), bridge.connect()
    first = prepare(one, "a")
    prepare(two, "b")
    refused = prepare(three, "a")
    assert code(refused) == "LIMIT_EXCEEDED" and refused["error"]["stage"] == "bridge"
    assert code(prepare(one, "b")) == "LIMIT_EXCEEDED"
    assert bridge.stats()["activeJobs"] == 2
    # Terminal jobs do not count (spec: R-CAP-007).
    accept(one, accept(one, first, CORE_TEXT), DATA_TEXT)
    assert prepare(three, "a")["kind"] == "task"
    assert bridge.stats() == {**bridge.stats(), "activeJobs": 2, "records": 3}


def test_max_replay_entries_reclaims_the_oldest_terminated_first() -> None:
    bridge = make_bridge(maxReplayEntries=3)
    session = bridge.connect()
    j1, j2, j3 = (prepare(session) for _ in range(3))
    ended = {}
    for task in (j2, j3, j1):  # terminated in this order, created in another
        ended[task["jobId"]] = session.cancel({"jobId": task["jobId"]})
    assert bridge.stats()["records"] == 3
    prepare(session)
    assert bridge.stats()["records"] == 3
    assert code(session.cancel({"jobId": j2["jobId"]})) == "BRIDGE_JOB_NOT_FOUND"
    assert wire(session.cancel({"jobId": j3["jobId"]})) == wire(ended[j3["jobId"]])
    prepare(session)
    assert not _is_retained(session, j3)
    assert wire(session.cancel({"jobId": j1["jobId"]})) == wire(ended[j1["jobId"]])
    # A reclaimed job is gone for accept too (spec: R-IDM-006).
    assert code(accept(session, j2, CORE_TEXT)) == "BRIDGE_JOB_NOT_FOUND"


def test_active_jobs_are_never_reclaimed_for_a_new_job() -> None:
    bridge = make_bridge(maxReplayEntries=2)
    session = bridge.connect()
    first, second = prepare(session), prepare(session)
    refused = prepare(session)
    assert code(refused) == "LIMIT_EXCEEDED" and refused["error"]["stage"] == "bridge"
    assert bridge.stats()["records"] == 2
    assert accept(session, first, CORE_TEXT)["stage"] == "data"
    assert accept(session, second, CORE_TEXT)["stage"] == "data"


def test_max_replay_bytes_reclaims_terminal_records_by_age() -> None:
    fresh, cancelled = _cancelled_size()
    assert cancelled < fresh
    bridge = make_bridge(maxReplayBytes=fresh + cancelled + 10)
    session = bridge.connect()
    j1 = prepare(session)
    session.cancel({"jobId": j1["jobId"]})
    j2 = prepare(session)
    assert bridge.stats()["replayBytes"] == fresh + cancelled
    session.cancel({"jobId": j2["jobId"]})
    j3 = prepare(session)  # 2 cancelled + 1 fresh do not fit: j1 goes
    assert bridge.stats() == {"activeJobs": 1, "records": 2, "replayBytes": fresh + cancelled}
    assert not _is_retained(session, j1)
    # j3's data step (two copies of a data task) cannot fit: refused, and nothing reclaimed for it.
    assert code(accept(session, j3, CORE_TEXT)) == "LIMIT_EXCEEDED"
    assert bridge.stats()["records"] == 2
    assert _is_retained(session, j2)


def test_a_new_job_that_only_fits_by_evicting_an_active_one_is_refused() -> None:
    fresh, _ = _cancelled_size()
    bridge = make_bridge(maxReplayBytes=fresh + 10)
    session = bridge.connect()
    first = prepare(session)
    refused = prepare(session)
    assert code(refused) == "LIMIT_EXCEEDED" and refused["error"]["stage"] == "bridge"
    assert bridge.stats() == {"activeJobs": 1, "records": 1, "replayBytes": fresh}
    session.cancel({"jobId": first["jobId"]})
    assert prepare(session)["kind"] == "task"  # the cancelled record was reclaimed for it
    assert not _is_retained(session, first)


def test_the_byte_count_is_the_documented_sum() -> None:
    # D-BRG-011: active = current task reply; each used step = 32 + its reply; a job ended
    # without a submission also keeps its terminal reply.
    def size(reply: dict[str, Any]) -> int:
        return len(wire(reply).encode("utf-8"))

    bridge = make_bridge()
    session = bridge.connect()
    core = prepare(session)
    assert bridge.stats()["replayBytes"] == size(core)
    data = accept(session, core, CORE_TEXT)
    assert bridge.stats()["replayBytes"] == 32 + 2 * size(data)
    result = accept(session, data, DATA_TEXT)
    assert bridge.stats()["replayBytes"] == 32 + size(data) + 32 + size(result)
    other = prepare(session)
    cancel = session.cancel({"jobId": other["jobId"], "detail": "用户停止"})
    assert bridge.stats()["replayBytes"] == 64 + size(data) + size(result) + size(cancel)


@pytest.mark.parametrize("max_bytes", [1, 100])
def test_a_budget_below_one_task_refuses_every_job(max_bytes: int) -> None:
    bridge = make_bridge(maxReplayBytes=max_bytes)
    reply = prepare(bridge.connect())
    assert code(reply) == "LIMIT_EXCEEDED"
    assert bridge.stats() == {"activeJobs": 0, "records": 0, "replayBytes": 0}
