"""The writer: the one layer that writes tasks and errors, and what another writer changes (issue 23).

The core decides what happened (a ``Task``, an ``IntentParseError``); the ``Writer`` of the
policy a Bridge or an Intent is built with writes it.  Another writer is a subclass that
overrides one method, and everything the Bridge does with a reply -- keeping it for replay,
counting its bytes against maxReplayBytes -- then happens to the reply as *that* writer wrote it.
"""

from __future__ import annotations

import json
from typing import Any

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.core.errors import IntentParseError
from intentref.core.policy import REFERENCE_POLICY
from intentref.core.task import Task
from intentref.core.writer import REFERENCE_WRITER, Writer
from intentref.suite.alterations.alteration import Alteration, combined_writer

SCHEMA = {"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}


class _Shouting(Writer):
    def message(self, err: IntentParseError) -> str:
        return super().message(err).upper()

    def instructions(self, task: Task) -> str:
        return "ANSWER WITH THE CANDIDATE."


class _Spaced(Writer):
    def payload_text(self, payload: dict[str, Any]) -> str:
        return json.dumps(payload, ensure_ascii=True, indent=2)

    def message(self, err: IntentParseError) -> str:
        return "<" + super().message(err) + ">"


def _session(writer: Writer, **options: Any) -> Any:
    policy = REFERENCE_POLICY.but(writer=writer)
    return create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}, **options}, policy=policy).connect()


def test_the_bridge_writes_its_replies_with_its_policys_writer():
    # D-INS-001, D-ERR-006 -- instructions and messages are the writer's, nothing else moves.
    reference = _session(REFERENCE_WRITER).prepare({"instance": "order", "input": "查询订单 000123"})
    shouted = _session(_Shouting()).prepare({"instance": "order", "input": "查询订单 000123"})
    assert shouted["instructions"] == "ANSWER WITH THE CANDIDATE."
    assert reference["instructions"] != shouted["instructions"]
    assert (shouted["payload"], shouted["format"]) == (reference["payload"], reference["format"])
    bad = {"instance": "order", "input": "查询订单", "fields": ["nope"]}
    refused, plain = _session(_Shouting()).prepare(bad), _session(REFERENCE_WRITER).prepare(bad)
    assert refused["error"]["message"] == plain["error"]["message"].upper() != plain["error"]["message"]
    assert refused["error"]["issues"] == plain["error"]["issues"] != []


def test_a_replayed_reply_is_the_one_the_writer_wrote():
    # spec: R-IDM-001 -- a replay is the first reply byte for byte, as written, not rewritten later.
    session = _session(_Spaced())
    task = session.prepare({"instance": "order", "input": "查询订单 000123"})
    assert "\n  " in task["payload"] and "\\u" in task["payload"]
    step = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": "{}"}
    first = session.accept(step)
    assert first["kind"] == "task" and "\n  " in first["payload"]
    assert session.accept(step) == first


def test_the_bridge_counts_the_bytes_of_the_reply_as_written():
    # D-BRG-011 -- maxReplayBytes counts the retained reply, which is the written one: a writer
    # that spells payloads at greater length makes the same first task too large to admit.
    def size(reply: dict[str, Any]) -> int:
        return len(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode())

    compact = _session(REFERENCE_WRITER).prepare({"instance": "order", "input": "查询订单 000123"})
    spaced = _session(_Spaced()).prepare({"instance": "order", "input": "查询订单 000123"})
    budget = size(compact)  # ids and tokens have fixed lengths, so the same job written compactly fits exactly
    assert size(spaced) > budget
    assert _session(REFERENCE_WRITER, maxReplayBytes=budget).prepare(
        {"instance": "order", "input": "查询订单 000123"})["kind"] == "task"  # fmt: skip
    refused = _session(_Spaced(), maxReplayBytes=budget).prepare({"instance": "order", "input": "查询订单 000123"})
    assert refused["kind"] == "error" and refused["error"]["code"] == "LIMIT_EXCEEDED"


def test_intent_parse_hands_its_executor_the_tasks_its_writer_wrote():
    # spec: R-TSK-002 -- the executor receives the model request the Intent's own policy writes.
    seen: list[dict[str, Any]] = []

    def executor(request: dict[str, Any]) -> str:
        seen.append(request)
        return "{}"

    intent = Intent({"schema": SCHEMA, "repairAttempts": 0}, policy=REFERENCE_POLICY.but(writer=_Shouting()))
    try:
        intent.parse({"input": "查询订单 000123"}, executor)
    except IntentParseError as exc:
        assert exc.code == "MODEL_OUTPUT_INVALID"
    else:
        raise AssertionError("an empty core candidate was accepted")
    assert [r["instructions"] for r in seen] == ["ANSWER WITH THE CANDIDATE."]


def test_writers_of_several_alterations_combine_each_over_the_next():
    # Both override message: the first alteration's is outermost, and each defers to the one it replaces.
    one = Alteration(name="one", summary="", writer={
        "message": lambda reference, writer, err: reference(writer, err).upper(),
        "instructions": lambda reference, writer, task: "ANSWER WITH THE CANDIDATE."})  # fmt: skip
    two = Alteration(name="two", summary="", writer={
        "message": lambda reference, writer, err: "<" + reference(writer, err) + ">"})  # fmt: skip
    combined = combined_writer([one, two])
    assert combined is not None
    err = IntentParseError("INPUT_INVALID", "input", "bad.")
    assert combined.message(err) == "<BAD.>"
    assert combined.instructions(Task("core", "en", None)) == "ANSWER WITH THE CANDIDATE."  # type: ignore[arg-type]
    assert combined_writer([Alteration(name="none", summary="")]) is None
