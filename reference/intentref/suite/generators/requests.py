"""Prepare requests planned around the data a model would extract, and calls wrong in one named way."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, MAX_SAFE_INTEGER
from intentref.suite.generators.draw import Draw, subset
from intentref.suite.generators.schemas import Json, fresh_strings, leaves, object_value
from intentref.suite.generators.texts import BIG, LONE_SURROGATES, detail_with_bytes, sentence


@dataclass(frozen=True)
class RequestPlan:
    """A prepare request and the data a model would truthfully extract from it."""

    request: dict[str, Any]
    data: dict[str, Any]  # for the selected fields only
    selected: tuple[str, ...]


def context(d: Draw, segments: list[str]) -> tuple[Any, list[str]]:
    """A context value (absent, text or messages); some segments move into messages.

    Never null: the wire form omits an absent member (D-MCP-006 validates against a schema
    without null), even though the Bridge reads null as absent (D-REQ-004).
    """
    kind = d.integer(0, 3)
    if kind == 0:
        return _ABSENT, segments
    if kind == 1:
        return sentence(d), segments
    messages: list[dict[str, str]] = []
    left: list[str] = []
    for _ in range(d.integer(1, 3)):
        messages.append({"role": d.choice(["user", "assistant", "tool"]), "content": sentence(d)})
    for segment in segments:
        if d.boolean():
            target = messages[d.integer(0, len(messages) - 1)]
            target["content"] += " " + segment
        else:
            left.append(segment)
    return messages, left


def context_value(d: Draw) -> Any:
    """A context member that is present: a text, or messages."""
    value_, _ = context(d, [])
    return sentence(d) if value_ is _ABSENT else value_


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()


def selection(d: Draw, fields: Sequence[str]) -> tuple[Any, tuple[str, ...]]:
    """A ``fields`` member (absent, or a list maybe with repeats) and what it selects."""
    if d.integer(0, 2) == 0 or not fields:
        return _ABSENT, tuple(fields)  # spec: R-FLD-001
    chosen = subset(d, fields) or [fields[0]]
    written = list(reversed(chosen)) if d.boolean() else list(chosen)
    if d.boolean():
        written.append(written[0])  # D-REQ-002: a repeat selects once
    return written, tuple(f for f in fields if f in chosen)  # selection follows schema order


def plan_request(d: Draw, instance: str, definition: dict[str, Any], allow_empty_selection: bool = False,
                 complete: bool = False) -> RequestPlan:  # fmt: skip
    """A request whose input (and context) contains every string value of the planned data.

    ``complete``: the data holds every key the selected schema declares (arrays non-empty).
    """
    fields = list(definition.get("properties", {}))
    fields_member, selected = selection(d, fields)
    if allow_empty_selection and d.integer(0, 5) == 0:
        fields_member, selected = [], ()
    data = object_value(d, definition, fresh_strings, keep=selected, complete=complete) if selected else {}
    segments = [v for _, v in leaves(data) if isinstance(v, str) and v.strip()]
    segments += [json.dumps(v) for _, v in leaves(data) if isinstance(v, bool | int | float)]
    context_value, in_input = context(d, segments)
    text = " ".join([sentence(d), *in_input])
    if d.integer(0, 4) == 0:  # the input is kept exactly as received, surrounding space too (R-RES-015)
        text = d.choice([" ", "\n", "\u3000", "  "]) + text + d.choice(["", " ", "\t"])
    request: dict[str, Any] = {"instance": instance, "input": text}
    if context_value is not _ABSENT:
        request["context"] = context_value
    if fields_member is not _ABSENT:
        request["fields"] = fields_member
    return RequestPlan(request, data, selected)


# --------------------------------------------------------------------------- malformed requests

def _bad_prepare(d: Draw, instance: str, heavy: bool, objects_only: bool, lone_surrogates: bool) -> tuple[str, Any]:
    base = {"instance": instance, "input": sentence(d)}
    options: list[tuple[str, Any]] = [
        ("prepare.instance_missing", {"input": base["input"]}),
        ("prepare.instance_not_string", {**base, "instance": d.choice([7, None, ["default"]])}),
        ("prepare.instance_unknown", {**base, "instance": d.choice(["nope", "", "DEFAULT"])}),
        ("prepare.input_missing", {"instance": instance}),
        ("prepare.input_not_string", {**base, "input": d.choice([42, None, [], {"text": "x"}, True])}),
        ("prepare.input_blank", {**base, "input": d.choice(["", " ", "\n\t", "\u3000"])}),
        *([("prepare.input_lone_surrogate", {**base, "input": base["input"] + d.choice(LONE_SURROGATES)})]
          if lone_surrogates else []),
        ("prepare.input_oversize", {**base, "input": d.choice(["x", "中", "😀"]) * (32 * 1024 + 1)}),
        ("prepare.context_wrong_type", {**base, "context": d.choice([{}, 5, True])}),
        ("prepare.context_bad_role", {**base, "context": [{"role": "system", "content": "x"}]}),
        ("prepare.context_extra_member", {**base, "context": [{"role": "user", "content": "x", "name": "n"}]}),
        ("prepare.fields_not_list", {**base, "fields": d.choice(["orderId", 3, {}])}),
        ("prepare.fields_unknown", {**base, "fields": [d.choice(["nope", "orders/0", "/data"])]}),
        ("prepare.unknown_member", {**base, d.choice(["Input", "extra", "a/b"]): 1}),
    ]
    if not objects_only:
        options.append(("prepare.not_an_object", d.choice([[], "request", None, 7])))
    if heavy:
        options.append(("prepare.input_10mb", {**base, "input": "x" * BIG}))
    return d.choice(options)


def _bad_accept(d: Draw, job_id: str, step_token: str, heavy: bool, objects_only: bool) -> tuple[str, Any]:
    base = {"jobId": job_id, "stepToken": step_token, "candidateText": "{}"}
    member = d.choice(["jobId", "stepToken", "candidateText"])
    options: list[tuple[str, Any]] = [
        ("accept.member_missing", {k: v for k, v in base.items() if k != member}),
        ("accept.member_not_string", {**base, member: d.choice([None, 1, [], {}, False])}),
        ("accept.unknown_member", {**base, d.choice(["extra", "stage", "~"]): "x"}),
    ]
    if not objects_only:
        options.append(("accept.not_an_object", d.choice([[], "accept", None, 0])))
    if heavy:
        options.append(("accept.candidate_10mb", {**base, "candidateText": "x" * BIG}))
    return d.choice(options)


def _bad_cancel(d: Draw, job_id: str, heavy: bool, objects_only: bool, lone_surrogates: bool) -> tuple[str, Any]:
    options: list[tuple[str, Any]] = [
        ("cancel.job_id_missing", {"outcome": "cancelled"}),
        ("cancel.job_id_not_string", {"jobId": d.choice([None, 5, []])}),
        ("cancel.outcome_unknown", {"jobId": job_id, "outcome": d.choice(["done", None, "", "Cancelled", 1])}),
        ("cancel.detail_not_string", {"jobId": job_id, "detail": d.choice([None, 5, ["x"]])}),
        ("cancel.detail_oversize", {"jobId": job_id, "detail": detail_with_bytes(d, MAX_CANCEL_DETAIL_BYTES + 1, lone_surrogates)}),
        ("cancel.unknown_member", {"jobId": job_id, d.choice(["reason", "Outcome"]): "x"}),
    ]
    if not objects_only:
        options.append(("cancel.not_an_object", d.choice([[], "cancel", None, 1])))
    if heavy:
        options.append(("cancel.detail_10mb", {"jobId": job_id, "detail": "x" * BIG}))
    return d.choice(options)


def malformed_request(d: Draw, op: str, *, instance: str = "default", job_id: str = "no-such-job",
                      step_token: str = "no-such-step", heavy: bool = False,
                      objects_only: bool = False, lone_surrogates: bool = True) -> tuple[str, Any]:  # fmt: skip
    """(defect, request): a request wrong in one named way; every target must answer an error reply.

    ``objects_only`` leaves out requests that are not objects: MCP tool arguments always are.
    ``lone_surrogates=False`` leaves out texts holding a lone surrogate, which reach a server
    only over some transports (D-MCP-008, D-CNF-053).
    """
    if op == "prepare":
        return _bad_prepare(d, instance, heavy, objects_only, lone_surrogates)
    if op == "accept":
        return _bad_accept(d, job_id, step_token, heavy, objects_only)
    return _bad_cancel(d, job_id, heavy, objects_only, lone_surrogates)


def wrong_type_value(d: Draw) -> Json:
    return d.choice([None, True, 0, -1.5, "", "x", [], [1], {}, {"a": None}, MAX_SAFE_INTEGER])
