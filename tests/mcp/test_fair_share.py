"""The fair share (D-MCP-025) against a real Bridge, in process: the rule and exactly what it guarantees.

The HTTP tests (test_fair_capacity.py) show it through real servers and SDK clients; here
the same ledger the server uses is driven directly, so every size and any interleaving of
clients can be tried quickly.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.mcp.capacity import Client, FairShare, JobLedger, per_client_fault, per_client_share
from intentref.mcp.server import call_intent_tool
from mcp_support import CONFIG, ORDER_INPUT

INSTANCES = {name: Intent(config) for name, config in CONFIG["instances"].items()}
BRIDGE_FULL = "the Bridge already holds maxJobs"


class Server:
    """One Bridge session (as the 2026-07-28 era has) behind the ledger, calls made as the HTTP server makes them."""

    def __init__(self, max_jobs: int, per_client: int | None = None) -> None:
        self.bridge = create_intent_bridge({"instances": INSTANCES, "maxJobs": max_jobs})
        self.session = self.bridge.connect()
        self.ledger = JobLedger(FairShare.of(max_jobs, per_client), lambda: self.bridge.stats()["activeJobs"], None)
        self.jobs: dict[Client, list[str]] = {}

    def prepare(self, client: Client) -> dict[str, Any]:
        if (refusal := self.ledger.refusal(client)) is not None:
            return refusal
        arguments = {"instance": "orders", "input": ORDER_INPUT}
        reply = call_intent_tool(self.session, "intent_prepare", arguments)
        self.ledger.record(client, self.session, "intent_prepare", arguments, reply)
        if reply["kind"] == "task":
            self.jobs.setdefault(client, []).append(reply["jobId"])
        return reply

    def finish(self, client: Client) -> None:
        arguments = {"jobId": self.jobs[client].pop()}
        reply = call_intent_tool(self.session, "intent_cancel", arguments)
        self.ledger.record(client, self.session, "intent_cancel", arguments, reply)

    def hoard(self, client: Client) -> tuple[int, dict[str, Any]]:
        """Prepare until refused: how many it got, and the refusal."""
        for count in range(self.bridge.options.max_jobs + 1):
            reply = self.prepare(client)
            if reply["kind"] != "task":
                return count, reply
        raise AssertionError("never refused")


def client(number: int) -> Client:
    return Client(number, f"client {number}")


def message(reply: dict[str, Any]) -> str:
    assert reply["kind"] == "error" and reply["error"]["code"] == "LIMIT_EXCEEDED", reply
    return str(reply["error"]["message"])


@pytest.mark.parametrize(("slots", "share"), [(1, 1), (2, 1), (3, 1), (16, 8), (17, 8), (1024, 512)])
def test_the_share_is_half_the_slots_and_at_least_one(slots: int, share: int) -> None:
    assert per_client_share(slots) == share
    assert FairShare.of(slots).per_client == share
    assert per_client_fault(share, slots) is None and per_client_fault(1, slots) is None
    for wrong in (0, share + 1):
        fault = per_client_fault(wrong, slots)
        assert fault is not None and f"from 1 to {share}" in fault and "D-MCP-025" in fault
        with pytest.raises(ValueError, match=f"from 1 to {share}"):
            FairShare.of(slots, wrong)


@pytest.mark.parametrize("max_jobs", [2, 16, 1024])
def test_one_hoarder_takes_half_and_every_newcomer_still_starts(max_jobs: int) -> None:
    """The guarantee at its boundary: ceil(M/2) newcomers start one job each beside a hoarder; the next finds the Bridge full."""
    server = Server(max_jobs)
    share = per_client_share(max_jobs)
    held, refused = server.hoard(client(0))
    assert held == share
    assert "per-client limit" in message(refused)
    newcomers = max_jobs - max_jobs // 2
    for number in range(1, newcomers + 1):
        assert server.prepare(client(number))["kind"] == "task", number
    if max_jobs > 2:
        # Past the half mark a client that holds a job may not start another, even under its limit.
        assert "past the half mark" in message(server.prepare(client(1)))
    # Locking a newcomer out took ceil(M/2) + 1 other clients: here is the one refused.
    assert BRIDGE_FULL in message(server.prepare(client(newcomers + 1)))
    # The hoarder's jobs are its own to finish; each one frees a slot for anyone.
    server.finish(client(0))
    assert server.prepare(client(newcomers + 1))["kind"] == "task"


def test_a_lower_limit_is_kept_and_the_half_mark_still_holds() -> None:
    server = Server(16, per_client=3)
    assert [server.hoard(client(n))[0] for n in range(3)] == [3, 3, 2]  # the third hits the half mark at 8
    assert "past the half mark" in message(server.prepare(client(2)))


@given(
    max_jobs=st.integers(1, 10),
    # Mostly starts (3 in 4), so the Bridge fills often; up to 12 clients, some hoarding.
    steps=st.lists(st.tuples(st.sampled_from([True, True, True, False]), st.integers(0, 11)), min_size=5, max_size=80),
)
def test_a_client_holding_nothing_is_refused_only_when_half_the_bridge_is_single_jobs(
    max_jobs: int, steps: list[tuple[bool, int]]
) -> None:
    """D-MCP-025's guarantee under any interleaving of clients that do not lie about who they are.

    A client holding no job is never refused by the fair share; the Bridge refuses it only when
    full, and then at least ceil(M/2) clients hold exactly one job each (so at least
    ceil(M/2) + 1 clients hold jobs when M >= 2).  No client ever holds more than its share.
    """
    server = Server(max_jobs)
    for start, number in steps:
        who = client(number)
        if not start:
            if server.jobs.get(who):
                server.finish(who)
            continue
        holding = server.ledger.held_by(who)
        reply = server.prepare(who)
        counts = [len(jobs) for jobs in server.jobs.values() if jobs]
        assert max(counts, default=0) <= per_client_share(max_jobs)
        if reply["kind"] != "task" and holding == 0:
            assert BRIDGE_FULL in message(reply)
            assert sum(counts) == max_jobs
            assert counts.count(1) >= math.ceil(max_jobs / 2), counts
            event("a newcomer found the Bridge full")
