"""The soak's short mode runs end to end against real servers, at the default and a small Bridge (D-MCP-024).

Its figures mean little in two seconds on a shared machine; what is checked is what must
hold whatever the machine: every abuser ran and met the server's limits, no legitimate
flow failed or got someone else's result, and the server stayed under its memory bound.
"""

from __future__ import annotations

import pytest

from intentref.devtools.soak import RSS_BOUND_MIB, SMALL_MAX_JOBS, report, soak


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
    assert abused.flows > 0 and alone.flows > 0, lines
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
