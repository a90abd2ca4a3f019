"""The fair-capacity ledger against a real Bridge: the fair share (D-MCP-025), what counts as progress
and what ends a job (D-MCP-021)."""

from __future__ import annotations

from typing import Any

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.mcp.capacity import Client, FairShare, JobLedger
from intentref.mcp.server import call_intent_tool
from mcp_support import CONFIG, ORDER_CORE, ORDER_DATA, ORDER_INPUT, text


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


ME, OTHER = Client("me", "me"), Client("other", "other")


def setup(quota: int = 2, idle: float = 10.0, max_jobs: int = 1024) -> tuple[Any, Any, JobLedger, Clock]:
    instances = {name: Intent(config) for name, config in CONFIG["instances"].items()}
    bridge = create_intent_bridge({"instances": instances, "maxJobs": max_jobs})
    clock = Clock()
    ledger = JobLedger(FairShare.of(max_jobs, quota), lambda: bridge.stats()["activeJobs"], idle, clock=clock)
    return bridge, bridge.connect(), ledger, clock


def run(ledger: JobLedger, session: Any, tool: str, arguments: dict[str, Any], owner: Client = ME) -> dict[str, Any]:
    ledger.reclaim_idle()
    if tool == "intent_prepare" and (refusal := ledger.refusal(owner)) is not None:
        return refusal
    reply = call_intent_tool(session, tool, arguments)
    ledger.record(owner, session, tool, arguments, reply)
    return reply


def prepare(ledger: JobLedger, session: Any, owner: Client = ME) -> dict[str, Any]:
    return run(ledger, session, "intent_prepare", {"instance": "orders", "input": ORDER_INPUT}, owner)


def accept(ledger: JobLedger, session: Any, task: dict[str, Any], candidate: str) -> dict[str, Any]:
    arguments = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": candidate}
    return run(ledger, session, "intent_accept", arguments)


def test_the_quota_counts_active_jobs_only() -> None:
    _, session, ledger, _ = setup()
    first, second = prepare(ledger, session), prepare(ledger, session)
    refused = prepare(ledger, session)
    assert refused["kind"] == "error" and refused["error"]["code"] == "LIMIT_EXCEEDED"
    assert "per-client limit" in refused["error"]["message"]
    assert prepare(ledger, session, owner=OTHER)["kind"] == "task"  # the quota is per owner
    data_task = accept(ledger, session, first, text(ORDER_CORE))
    assert ledger.held_by(ME) == 2  # a new task is still the same active job
    assert accept(ledger, session, data_task, text(ORDER_DATA))["kind"] == "result"
    assert ledger.held_by(ME) == 1
    run(ledger, session, "intent_cancel", {"jobId": second["jobId"]})
    assert ledger.held_by(ME) == 0


def test_only_progress_on_the_current_step_keeps_a_job_alive() -> None:
    _, session, ledger, clock = setup(quota=4, idle=10.0)
    job = prepare(ledger, session)
    data_task = accept(ledger, session, job, text(ORDER_CORE))
    clock.now = 8.0
    # A replay of the core step (same token, same text) is the same reply, not progress;
    # a conflict and a malformed accept are not progress either.
    assert accept(ledger, session, job, text(ORDER_CORE))["kind"] == "task"
    assert accept(ledger, session, job, "{}")["error"]["code"] == "BRIDGE_STEP_CONFLICT"
    run(ledger, session, "intent_accept", {"jobId": data_task["jobId"], "stepToken": data_task["stepToken"]})
    clock.now = 10.5
    assert ledger.reclaim_idle() == 1
    late = accept(ledger, session, data_task, text(ORDER_DATA))
    assert late["kind"] == "error" and late["error"]["code"] == "MODEL_ABORTED"
    assert ledger.reclaimed == 1


def test_a_rejected_oversized_candidate_is_progress_and_the_job_stays() -> None:
    _, session, ledger, clock = setup(quota=4, idle=10.0)
    job = prepare(ledger, session)
    clock.now = 8.0
    rejected = accept(ledger, session, job, "x" * (2 * 1024 * 1024))
    assert rejected["error"]["code"] == "LIMIT_EXCEEDED"
    clock.now = 15.0  # 15 s after prepare, 7 s after the rejection
    assert ledger.reclaim_idle() == 0
    assert accept(ledger, session, job, text(ORDER_CORE))["kind"] == "task"


def test_a_closed_session_leaves_the_ledger() -> None:
    bridge, session, ledger, _ = setup()
    prepare(ledger, session)
    other = bridge.connect()
    prepare(ledger, other, owner=OTHER)
    session.close()
    ledger.forget_session(session)
    assert ledger.held_by(ME) == 0 and ledger.held_by(OTHER) == 1
    assert ledger.reclaim_idle() == 0


def test_another_sessions_job_id_changes_nothing() -> None:
    bridge, session, ledger, _ = setup()
    job = prepare(ledger, session)
    stranger = bridge.connect()
    refused = run(ledger, stranger, "intent_cancel", {"jobId": job["jobId"]}, owner=Client("stranger", "stranger"))
    assert refused["error"]["code"] == "BRIDGE_JOB_NOT_FOUND"
    assert ledger.held_by(ME) == 1
