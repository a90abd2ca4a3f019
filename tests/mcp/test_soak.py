"""The soak's short mode runs end to end against real servers, at the default and a small Bridge (D-MCP-024).

Its figures mean little in two seconds on a shared machine; what is checked is what must
hold whatever the machine: every abuser ran and met the server's limits, no legitimate
flow failed or got someone else's result, and the server stayed under its memory bound.
No verdict rests on the machine's speed: phases wait for work, not for the clock (D-MCP-036).
"""

from __future__ import annotations

import logging

import anyio
import pytest

from intentref.devtools.soak import FIRST_FLOW_CAP_SECONDS, RSS_BOUND_MIB, SMALL_MAX_JOBS, report, soak
from intentref.mcp.server import _one_line_if_a_stream_closed


@pytest.mark.parametrize(
    ("max_jobs", "slots", "authorized"),
    [(None, 1024, False), (SMALL_MAX_JOBS, SMALL_MAX_JOBS, False), (None, 1024, True)],
    ids=["default", "small", "authorized"],
)
def test_the_soak_smoke_run(max_jobs: int | None, slots: int, authorized: bool) -> None:
    """spec: D-MCP-024; authorized: D-MCP-031 -- a 2026-07-28 jobId reaches nothing of another principal's."""
    abused, alone = soak(smoke=True, max_jobs=max_jobs, authorized=authorized)
    lines = report(abused, alone)
    assert len(lines) == 8
    # Refusals are logged once per message per 10 s, not once per request (D-MCP-023).
    assert abused.server_log_lines < 30, lines
    # Each phase waited for every client's first flow, up to a cap only a stuck client reaches.
    assert abused.flows > 0 and alone.flows > 0, (f"a client finished no flow in {FIRST_FLOW_CAP_SECONDS:g} s", lines)
    assert abused.errors == 0 and alone.errors == 0, lines
    assert abused.mixed_up == 0 and alone.mixed_up == 0, lines
    assert abused.peak_rss_mib < RSS_BOUND_MIB, lines
    met = abused.abusers
    assert met["abuser_crashes"] == 0, met
    # D-MCP-025: the first hoarder holds half the Bridge; the next two, one job each past the half mark.
    assert met["hoarder_refused"] == 3 and met["hoarded_jobs"] == slots // 2 + 2, met
    assert met["cross_client_refused"] > 0 and met["cross_client_succeeded"] == 0, met
    assert sum(v for k, v in met.items() if k.startswith("garbage_4")) > 0, met
    assert sum(v for k, v in met.items() if k.startswith("big_body_")) > 0, met
    assert alone.abusers == {}


@pytest.mark.parametrize("closed", [anyio.ClosedResourceError(), ExceptionGroup("", [anyio.BrokenResourceError()])])
def test_a_closed_session_stream_is_logged_in_one_line(closed: Exception) -> None:
    """spec: D-MCP-037 -- what a request racing its session's end raises under the SDK, found by the soak."""
    record = logging.LogRecord("mcp.server.streamable_http", logging.ERROR, "", 0, "SSE response error", None, None)
    record.exc_info = (type(closed), closed, None)
    assert _one_line_if_a_stream_closed(record)
    assert logging.Formatter().format(record) == "SSE response error (its session's stream was closed)"


def test_any_other_failure_keeps_its_traceback() -> None:
    """spec: D-MCP-037 -- only a closed stream loses its traceback, even beside it in one group."""
    failure = ExceptionGroup("", [anyio.ClosedResourceError(), KeyError("x")])
    record = logging.LogRecord("mcp.server.streamable_http", logging.ERROR, "", 0, "SSE response error", None, None)
    record.exc_info = (type(failure), failure, None)
    assert _one_line_if_a_stream_closed(record)
    assert "KeyError" in logging.Formatter().format(record)
