"""Replay of retained replies and step conflicts (seed 000 "重复提交与冲突", spec: R-IDM-001..004)."""

from __future__ import annotations

import json

from bridge_helpers import (
    CORE_TEXT,
    DATA_MISSING_TEXT,
    DATA_TEXT,
    ORDER_CORE,
    accept,
    code,
    make_bridge,
    order_intent,
    prepare,
    wire,
)


def test_replaying_a_step_returns_the_same_task_to_the_byte() -> None:
    bridge = make_bridge()
    session = bridge.connect()
    core = prepare(session)
    data = accept(session, core, CORE_TEXT)
    stats = bridge.stats()
    data["payload"] = "edited by the caller"  # must not reach the retained copy
    again = accept(session, core, CORE_TEXT)
    assert again["stepToken"] != core["stepToken"]
    assert again["payload"] != "edited by the caller"
    assert wire(again) == wire(accept(session, core, CORE_TEXT))
    assert bridge.stats() == stats  # a replay stores nothing new
    # The replayed task is the live one: its token moves the job on.
    assert accept(session, again, DATA_TEXT)["kind"] == "result"


def test_replay_of_a_result_and_of_a_terminal_error() -> None:
    session = make_bridge({"default": order_intent(), "strict": order_intent(repairAttempts=0)}).connect()
    core = prepare(session)
    data = accept(session, core, CORE_TEXT)
    result = accept(session, data, DATA_TEXT)
    assert result["kind"] == "result"
    assert wire(accept(session, data, DATA_TEXT)) == wire(result)
    # Earlier steps of a finished job still replay.
    assert wire(accept(session, core, CORE_TEXT)) == wire(data)

    failed_core = prepare(session, "strict")
    failure = accept(session, failed_core, "{")
    assert code(failure) == "MODEL_OUTPUT_INVALID"
    assert wire(accept(session, failed_core, "{")) == wire(failure)

    missing = accept(session, prepare(session), CORE_TEXT)
    extraction = accept(session, missing, DATA_MISSING_TEXT)
    assert code(extraction) == "DATA_EXTRACTION_FAILED"
    assert "partialResult" in extraction["error"]
    assert wire(accept(session, missing, DATA_MISSING_TEXT)) == wire(extraction)


def test_a_repair_task_replays_with_its_own_token() -> None:
    session = make_bridge().connect()
    core = prepare(session)
    repair = accept(session, core, "{")
    assert repair["kind"] == "task" and repair["stage"] == "core"
    assert json.loads(repair["payload"])["repair"]["previousCandidate"] == "{"
    replayed = accept(session, core, "{")
    assert replayed["stepToken"] == repair["stepToken"]
    assert wire(replayed) == wire(repair)
    assert accept(session, repair, CORE_TEXT)["stage"] == "data"


def test_a_used_token_with_another_text_conflicts_and_changes_nothing() -> None:
    bridge = make_bridge()
    session = bridge.connect()
    core = prepare(session)
    data = accept(session, core, CORE_TEXT)
    stats = bridge.stats()
    reformatted = json.dumps(ORDER_CORE, ensure_ascii=False, indent=2)  # same JSON, other text
    for text in (reformatted, json.dumps(ORDER_CORE), CORE_TEXT + " ", "{", "\ud800"):
        reply = accept(session, core, text)
        assert code(reply) == "BRIDGE_STEP_CONFLICT", text
        assert reply["error"]["stage"] == "bridge"
        assert reply["error"]["issues"][0]["path"] == "/stepToken"
    assert bridge.stats() == stats
    assert wire(accept(session, core, CORE_TEXT)) == wire(data)
    assert accept(session, data, DATA_TEXT)["kind"] == "result"


def test_tokens_that_are_not_the_current_step_conflict() -> None:
    session = make_bridge().connect()
    first = prepare(session)
    second = prepare(session)
    # Another job's token, an invented one, a non-ASCII one: none is this job's step.
    for token in (second["stepToken"], "A" * 22, "", "令牌", "\udfff"):
        assert code(accept(session, first, CORE_TEXT, token=token)) == "BRIDGE_STEP_CONFLICT"
    # The real token still works after all of them.
    data = accept(session, first, CORE_TEXT)
    assert data["stage"] == "data"
    # A never-used token on a terminal job conflicts too (spec: R-LIF-005).
    done = accept(session, data, DATA_TEXT)
    assert done["kind"] == "result"
    assert code(accept(session, data, CORE_TEXT, token="B" * 22)) == "BRIDGE_STEP_CONFLICT"
    assert code(accept(session, data, CORE_TEXT)) == "BRIDGE_STEP_CONFLICT"  # used token, other text


def test_the_open_step_of_a_cancelled_job_answers_how_the_job_ended() -> None:
    session = make_bridge().connect()
    core = prepare(session)
    data = accept(session, core, CORE_TEXT)
    cancelled = session.cancel({"jobId": core["jobId"], "outcome": "refusal"})
    # D-BRG-008: the step that was open gets the terminal reply, whatever is submitted.
    assert wire(accept(session, data, DATA_TEXT)) == wire(cancelled)
    assert wire(accept(session, data, "{")) == wire(cancelled)
    # The step before it was used, so it still replays its own reply.
    assert wire(accept(session, core, CORE_TEXT)) == wire(data)


def test_lone_surrogates_in_candidates_are_digested_not_crashed_on() -> None:
    session = make_bridge().connect()
    core = prepare(session)
    text = '{"x":"\ud800"}'
    repair = accept(session, core, text)
    assert repair["kind"] == "task"
    assert wire(accept(session, core, text)) == wire(repair)
    assert code(accept(session, core, '{"x":"\udc00"}')) == "BRIDGE_STEP_CONFLICT"


def test_every_handed_out_reply_carries_its_own_compact_json() -> None:
    """D-BRG-021: the carried text is exactly the reply's compact JSON, for each kind."""
    from intentref.bridge import retained_json
    from intentref.core.jsontext import dumps_compact

    session = make_bridge().connect()
    core = prepare(session)
    data = accept(session, core, CORE_TEXT)
    result = accept(session, data, DATA_TEXT)
    replay = accept(session, data, DATA_TEXT)
    cancelled = session.cancel({"jobId": prepare(session)["jobId"]})
    for reply in (core, data, result, replay, cancelled):
        text = retained_json(reply)
        assert text is not None, reply["kind"]
        assert text == dumps_compact(reply)
        assert json.loads(text) == reply
    # A reply the Bridge did not retain (a parameter fault) carries none.
    assert retained_json(session.accept({"jobId": 1})) is None
    assert retained_json({"kind": "result", "result": {}}) is None
