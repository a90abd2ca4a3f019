"""The deprecated TTLs (spec: R-CAP-003, R-CAP-015, R-RPY-008, R-RPY-009, D-BRG-016)."""

from __future__ import annotations

import re

from bridge_helpers import CORE_TEXT, DATA_TEXT, FakeClock, accept, code, make_bridge, prepare, wire

from intentref.bridge import iso_timestamp

WALL = 1_700_000_000_123.9  # 2023-11-14T22:13:20.123Z


def test_no_expires_at_by_default() -> None:
    session = make_bridge().connect()
    core = prepare(session)
    repair = accept(session, prepare(session), "{")
    data = accept(session, core, CORE_TEXT)
    for task in (core, repair, data):
        assert task["kind"] == "task" and "expiresAt" not in task


def test_expires_at_with_job_ttl_is_an_iso_string_fixed_for_the_job() -> None:
    clock = FakeClock(5_000)
    session = make_bridge(jobTtlMs=1_000, clock=clock, wall_clock=lambda: WALL).connect()
    core = prepare(session)
    assert list(core)[-1] == "expiresAt"
    assert core["expiresAt"] == "2023-11-14T22:13:21.123Z"
    clock.advance(999)
    data = accept(session, core, CORE_TEXT)
    assert data["expiresAt"] == core["expiresAt"]  # the job's deadline, not the step's


def test_iso_timestamp_matches_to_iso_string() -> None:
    assert iso_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert iso_timestamp(1_700_000_000_999.99) == "2023-11-14T22:13:20.999Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", iso_timestamp(2**41))


def test_an_expired_job_ends_with_bridge_job_expired_and_is_retained() -> None:
    clock = FakeClock()
    bridge = make_bridge(jobTtlMs=1_000, clock=clock)
    session = bridge.connect()
    task = prepare(session)
    data = accept(session, task, CORE_TEXT)
    clock.advance(1_000)
    expired = accept(session, data, DATA_TEXT)
    assert code(expired) == "BRIDGE_JOB_EXPIRED"
    assert expired["error"]["stage"] == "bridge"
    assert bridge.stats()["activeJobs"] == 0 and bridge.stats()["records"] == 1
    assert wire(session.cancel({"jobId": task["jobId"]})) == wire(expired)
    assert wire(accept(session, data, DATA_TEXT)) == wire(expired)
    assert wire(accept(session, task, CORE_TEXT)) == wire(data)  # the used step still replays


def test_expiry_is_applied_when_capacity_is_checked() -> None:
    clock = FakeClock()
    bridge = make_bridge(maxJobs=1, jobTtlMs=50, clock=clock)
    session = bridge.connect()
    old = prepare(session)
    assert code(prepare(session)) == "LIMIT_EXCEEDED"
    clock.advance(50)
    assert prepare(session)["kind"] == "task"  # the expired job no longer holds the slot
    assert code(session.cancel({"jobId": old["jobId"]})) == "BRIDGE_JOB_EXPIRED"


def test_replay_ttl_drops_terminal_records() -> None:
    clock = FakeClock()
    bridge = make_bridge(replayTtlMs=100, clock=clock)
    session = bridge.connect()
    task = prepare(session, fields=[])
    active = prepare(session)
    result = accept(session, task, CORE_TEXT)
    clock.advance(99)
    assert wire(session.cancel({"jobId": task["jobId"]})) == wire(result)
    clock.advance(1)
    assert code(session.cancel({"jobId": task["jobId"]})) == "BRIDGE_JOB_NOT_FOUND"
    assert code(accept(session, task, CORE_TEXT)) == "BRIDGE_JOB_NOT_FOUND"
    # Active jobs are not subject to the replay TTL.
    clock.advance(10_000)
    assert accept(session, active, CORE_TEXT)["stage"] == "data"
    assert bridge.stats()["records"] == 1


def test_without_ttls_time_changes_nothing() -> None:
    clock = FakeClock()
    session = make_bridge(clock=clock).connect()
    task = prepare(session)
    clock.advance(10**12)
    assert accept(session, task, CORE_TEXT)["stage"] == "data"
