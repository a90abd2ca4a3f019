"""Ownership, session close and Bridge close (spec: R-BRG-014..017, R-LIF-012, R-IDM-005)."""

from __future__ import annotations

import pytest
from bridge_helpers import CORE_TEXT, DATA_TEXT, accept, code, make_bridge, order_intent, prepare, wire

from intentref.bridge import BridgeClosedError


def test_another_sessions_job_is_not_found_like_a_missing_job() -> None:
    bridge = make_bridge()
    owner, other = bridge.connect(), bridge.connect()
    task = prepare(owner)
    foreign_accept = accept(other, task, CORE_TEXT)
    missing_accept = other.accept(
        {"jobId": "x" * 22, "stepToken": task["stepToken"], "candidateText": CORE_TEXT}
    )
    assert code(foreign_accept) == "BRIDGE_JOB_NOT_FOUND"
    assert foreign_accept["error"]["stage"] == "bridge"
    # D-BRG-003: indistinguishable, to the byte.
    assert wire(foreign_accept) == wire(missing_accept)
    foreign_cancel = other.cancel({"jobId": task["jobId"]})
    assert wire(foreign_cancel) == wire(other.cancel({"jobId": "nope"}))
    assert wire(foreign_cancel) == wire(missing_accept)
    # ... and the other session's attempts did nothing to the owner's job.
    assert bridge.stats()["activeJobs"] == 1
    assert accept(owner, task, CORE_TEXT)["stage"] == "data"


def test_closing_a_session_releases_its_jobs_and_their_capacity() -> None:
    bridge = make_bridge(maxJobs=2)
    first, keeper = bridge.connect(), bridge.connect()
    active = prepare(first)
    finished = prepare(first, fields=[])
    assert accept(first, finished, CORE_TEXT)["kind"] == "result"
    kept = prepare(keeper)
    assert bridge.stats() == {"activeJobs": 2, "records": 3, "replayBytes": bridge.stats()["replayBytes"]}
    before = bridge.stats()["replayBytes"]
    first.close()
    stats = bridge.stats()
    assert stats["activeJobs"] == 1 and stats["records"] == 1
    assert 0 < stats["replayBytes"] < before
    # The freed slot is usable by another session (spec: R-LIF-012, R-CAP-005).
    assert prepare(keeper)["kind"] == "task"
    # The closed session answers not found for its jobs (spec: R-IDM-005) ...
    assert code(accept(first, active, CORE_TEXT)) == "BRIDGE_JOB_NOT_FOUND"
    assert code(first.cancel({"jobId": finished["jobId"]})) == "BRIDGE_JOB_NOT_FOUND"
    # ... and cannot open new ones (D-BRG-004).
    with pytest.raises(BridgeClosedError):
        prepare(first)
    first.close()  # closing twice is harmless
    assert accept(keeper, kept, CORE_TEXT)["stage"] == "data"


def test_parameter_faults_on_a_closed_session_are_still_parameter_faults() -> None:
    session = make_bridge().connect()
    session.close()
    reply = session.accept({"jobId": "j", "stepToken": 5, "candidateText": "x"})
    assert code(reply) == "INPUT_INVALID"
    assert reply["error"]["issues"][0]["path"] == "/stepToken"


def test_closing_the_bridge_closes_sessions_and_leaves_intents_alone() -> None:
    intent = order_intent()
    bridge = make_bridge({"default": intent})
    session = bridge.connect()
    task = prepare(session)
    bridge.close()
    assert bridge.stats() == {"activeJobs": 0, "records": 0, "replayBytes": 0}
    assert code(accept(session, task, CORE_TEXT)) == "BRIDGE_JOB_NOT_FOUND"
    with pytest.raises(BridgeClosedError):
        prepare(session)
    with pytest.raises(BridgeClosedError):
        bridge.connect()
    bridge.close()
    # spec: R-BRG-017 -- the caller's Intent is neither disposed nor broken.
    assert intent.disposed is False
    job = intent.start({"input": "查询订单 000123"})
    assert job.submit(CORE_TEXT).task is not None
    again = make_bridge({"default": intent}).connect()
    data = accept(again, prepare(again), CORE_TEXT)
    assert accept(again, data, DATA_TEXT)["kind"] == "result"
