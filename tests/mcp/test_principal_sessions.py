"""D-LIM-009: the 2026-07-28 era keeps a Bridge session per principal (D-MCP-031), and no more
than ``MAX_PRINCIPAL_SESSIONS`` of them once their principals hold no active job.

The sessions are resolved as the HTTP app resolves a call's: from the principal the SDK's bearer
middleware put in the request's scope, on a real Bridge and the app's own job ledger.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.mcp import http_app
from intentref.mcp.capacity import FairShare, JobLedger, principal_client
from intentref.mcp.server import call_intent_tool
from mcp_support import CONFIG, ORDER_INPUT

BOUND = 4


def _call_of(principal: str) -> Any:
    token = AccessToken(token="t", client_id=principal, subject=principal, scopes=[])
    version = sorted(MODERN_PROTOCOL_VERSIONS)[-1]
    return SimpleNamespace(protocol_version=version, request=SimpleNamespace(scope={"user": AuthenticatedUser(token)}))


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(http_app, "MAX_PRINCIPAL_SESSIONS", BOUND)
    instances = {name: Intent(config) for name, config in CONFIG["instances"].items()}
    bridge = create_intent_bridge({"instances": instances, "maxJobs": 64})
    ledger = JobLedger(FairShare.of(64, None), lambda: bridge.stats()["activeJobs"], None)
    return http_app._HttpSessions(bridge, ledger)


def test_a_principal_keeps_one_session_across_its_calls(sessions: Any) -> None:
    """spec: D-MCP-031"""
    first = sessions.resolve(_call_of("alice"))
    assert sessions.resolve(_call_of("alice")) is first
    assert sessions.resolve(_call_of("bob")) is not first


def test_idle_principals_are_closed_at_the_bound_and_one_holding_a_job_is_kept(sessions: Any) -> None:
    """spec: D-LIM-009"""
    holder = sessions.resolve(_call_of("holder"))
    arguments = {"instance": "orders", "input": ORDER_INPUT}
    task = call_intent_tool(holder, "intent_prepare", arguments)
    assert task["kind"] == "task", task
    sessions.ledger.record(principal_client("holder"), holder, "intent_prepare", arguments, task)
    idle = [sessions.resolve(_call_of(f"idle-{n}")) for n in range(BOUND - 1)]
    sessions.resolve(_call_of("newcomer"))  # the bound is reached: the idle ones go, the holder stays
    assert all(session.closed for session in idle)
    assert not holder.closed and sessions.resolve(_call_of("holder")) is holder
    reply = call_intent_tool(holder, "intent_cancel", {"jobId": task["jobId"]})
    assert reply["kind"] == "error" and reply["error"]["code"] == "MODEL_ABORTED", reply
    again = sessions.resolve(_call_of("idle-0"))  # a closed principal gets a new session
    assert again is not idle[0] and not again.closed


def test_below_the_bound_nothing_is_closed(sessions: Any) -> None:
    """spec: D-LIM-009"""
    kept = [sessions.resolve(_call_of(f"p{n}")) for n in range(BOUND)]
    assert not any(session.closed for session in kept)
