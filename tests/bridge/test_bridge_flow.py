"""The seed's host loop through the Bridge (seed 000 "完整 Bridge 流程", "回复类型")."""

from __future__ import annotations

import json
from typing import Any

from bridge_helpers import (
    CORE_TEXT,
    DATA_TEXT,
    ORDER_INPUT,
    ORDER_RESULT,
    SEED_DATA_PAYLOAD,
    TASK_KEYS,
    make_bridge,
    order_intent,
    prepare,
)

from intentref import Intent
from intentref.core.core_candidate import INTENT_CORE_SCHEMA


def recognize_with_host(
    intent: Intent, request: dict[str, Any], seen: list[dict[str, Any]]
) -> dict[str, Any]:
    """seed 000 recognizeWithHost, with a generator that answers by the task's stage."""
    bridge = make_bridge({"default": intent})
    session = bridge.connect()
    try:
        reply = session.prepare({"instance": "default", **request})
        while reply["kind"] == "task":
            seen.append(reply)
            candidate = CORE_TEXT if reply["stage"] == "core" else DATA_TEXT
            reply = session.accept(
                {"jobId": reply["jobId"], "stepToken": reply["stepToken"], "candidateText": candidate}
            )
        return reply
    finally:
        session.close()
        bridge.close()


def test_seed_order_flow_ends_in_the_seed_result() -> None:
    tasks: list[dict[str, Any]] = []
    reply = recognize_with_host(order_intent(), {"input": ORDER_INPUT}, tasks)
    # spec: R-RPY-012 -- the seed's result reply, member for member.
    assert reply == {"kind": "result", "result": ORDER_RESULT}
    assert [t["stage"] for t in tasks] == ["core", "data"]
    core, data = tasks
    # spec: R-RPY-002, R-RPY-011 -- member order and the core format.
    assert list(core) == TASK_KEYS
    assert core["format"] == {"kind": "json_schema", "name": "intent_core", "schema": INTENT_CORE_SCHEMA}
    # spec: R-RPY-010 -- the data task: same job, a new token, the seed's payload exactly.
    assert list(data) == TASK_KEYS
    assert data["jobId"] == core["jobId"]
    assert data["stepToken"] != core["stepToken"]
    assert data["payload"] == SEED_DATA_PAYLOAD
    assert data["format"] == {"kind": "json_object"}
    assert isinstance(json.loads(core["payload"]), dict)  # spec: R-RPY-005 -- a JSON string


def test_empty_fields_recognise_only_the_default_intent() -> None:
    tasks: list[dict[str, Any]] = []
    reply = recognize_with_host(order_intent(), {"input": ORDER_INPUT, "fields": []}, tasks)
    # spec: R-BRG-011 -- no data stage, data {}.
    assert [t["stage"] for t in tasks] == ["core"]
    assert reply["kind"] == "result"
    assert reply["result"]["data"] == {}


def test_tokens_are_long_random_and_fresh() -> None:
    session = make_bridge().connect()
    replies = [prepare(session, fields=[]) for _ in range(20)]
    tokens = [r["jobId"] for r in replies] + [r["stepToken"] for r in replies]
    assert len(set(tokens)) == len(tokens)
    # D-BRG-006: token_urlsafe(16) -- 22 URL-safe characters, 128 bits.
    assert all(len(t) == 22 and all(c.isalnum() or c in "-_" for c in t) for t in tokens)


def test_returned_replies_are_the_callers_to_edit() -> None:
    session = make_bridge().connect()
    first = prepare(session)
    first["format"]["schema"]["type"] = "edited"
    second = prepare(session)
    assert second["format"]["schema"] == INTENT_CORE_SCHEMA
    assert INTENT_CORE_SCHEMA["type"] == "object"
