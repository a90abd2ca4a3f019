"""The replay budget is no limit on results (R-CAP-010, D-BRG-020)."""

from __future__ import annotations

import json

from tests.bridge.bridge_helpers import ORDER_CORE, accept, code, make_bridge, prepare


def _big_core(extra: int) -> str:
    candidate = json.loads(json.dumps(ORDER_CORE))
    candidate["normalizedInput"] = "查询订单 000123。" + "很" * extra
    return json.dumps(candidate, ensure_ascii=False)


def test_a_result_larger_than_the_budget_is_returned_and_then_forgotten():
    # spec: R-CAP-010 R-CAP-011
    bridge = make_bridge(maxReplayBytes=20_000)
    session = bridge.connect()
    task = prepare(session, fields=[])
    text = _big_core(10_000)  # ~30 kB of result: alone it cannot fit 20 kB
    reply = accept(session, task, text)
    assert reply["kind"] == "result", reply
    assert reply["result"]["normalizedInput"].endswith("很" * 10_000)
    assert bridge.stats() == {"activeJobs": 0, "records": 0, "replayBytes": 0}
    # Its record could not be kept, so the job is gone, not replayed and not conflicting.
    assert code(accept(session, task, text)) == "BRIDGE_JOB_NOT_FOUND"


def test_a_result_that_fits_after_reclaiming_older_records_is_retained():
    bridge = make_bridge(maxReplayBytes=30_000)  # one ~19 kB record fits, two do not
    session = bridge.connect()
    first = prepare(session, fields=[])
    assert accept(session, first, _big_core(6_000))["kind"] == "result"
    second = prepare(session, fields=[])
    reply = accept(session, second, _big_core(6_000))
    assert reply["kind"] == "result"
    assert bridge.stats()["records"] == 1  # the older terminal record made room
    assert accept(session, second, _big_core(6_000)) == reply  # retained: it replays
    assert code(accept(session, first, _big_core(6_000))) == "BRIDGE_JOB_NOT_FOUND"
