"""The generators behind ``intentref.strategies`` and ``intentref fuzz``, written once.

Every generator here takes a :class:`Draw`, a five-method source of choices, instead of a
Hypothesis ``draw`` or a ``random.Random``.  Two implementations exist: ``HypothesisDraw``
makes each choice a native Hypothesis draw (so examples shrink towards the first option
and the smallest number), and ``RandomDraw`` makes it from a seeded ``random.Random`` (so
``intentref fuzz --seed N`` writes byte-identical files without depending on Hypothesis'
internals).  The public strategies are thin ``st.composite`` wrappers over these.

What is generated is valid *by construction*, never by filtering: data is drawn from the
schema, the input is built to contain every string value (so exact evidence holds), and
each named fault breaks a valid candidate in exactly one way and says what the reference
answers (``Broken``).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, Protocol, TypeVar

from intentref.core import jsonpointer
from intentref.core.core_candidate import ACTIONS
from intentref.core.data_candidate import leaves as judged_leaves
from intentref.core.errors import BUSINESS_ISSUE_CODES
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, MAX_CANDIDATE_BYTES, MAX_SAFE_INTEGER

T = TypeVar("T")
Json = Any


# --------------------------------------------------------------------------- choice sources


class Draw(Protocol):
    """Where every choice of a generator comes from."""

    def integer(self, lo: int, hi: int) -> int: ...
    def boolean(self) -> bool: ...
    def choice(self, options: Sequence[T]) -> T: ...
    def text(self, alphabet: str, min_size: int, max_size: int) -> str: ...


class RandomDraw:
    """Choices from a seeded ``random.Random``: reproducible across runs and machines."""

    def __init__(self, rng: random.Random | int) -> None:
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        size = self.rng.randint(min_size, max_size)
        return "".join(alphabet[self.rng.randrange(len(alphabet))] for _ in range(size))


class HypothesisDraw:
    """Choices as Hypothesis draws, so a failing example shrinks choice by choice."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self._draw = draw

    def integer(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st

        return int(self._draw(st.integers(lo, hi)))

    def boolean(self) -> bool:
        from hypothesis import strategies as st

        return bool(self._draw(st.booleans()))

    def choice(self, options: Sequence[T]) -> T:
        from hypothesis import strategies as st

        # sampled_from shrinks towards the first option: generators list the plain one first.
        result: T = self._draw(st.sampled_from(options))
        return result

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        from hypothesis import strategies as st

        return str(self._draw(st.text(alphabet=alphabet, min_size=min_size, max_size=max_size)))


def subset(d: Draw, items: Sequence[T]) -> list[T]:
    """A sub-sequence of ``items`` in their order (each kept or not)."""
    return [item for item in items if d.boolean()]


# --------------------------------------------------------------------------- alphabets and texts

# One alphabet per UTF-8 width, so byte limits can be hit with every kind of character.
ONE_BYTE: Final = "abcdefghijklmnopqrstuvwxyz0123456789"
TWO_BYTES: Final = "éßøжλ"
THREE_BYTES: Final = "中文订单号€✓"
FOUR_BYTES: Final = "𝄞😀🀄𠀋"
WORD: Final = ONE_BYTE + TWO_BYTES + THREE_BYTES + FOUR_BYTES
# Keys also get the characters JSON Pointer escaping is about.
KEY_CHARS: Final = ONE_BYTE[:8] + "~/ 中😀"
# Keys every schema generator reaches first: the escaping edge cases (spec: R-DAT-006).
SPECIAL_KEYS: Final = ("~", "/", "~1", "", "~0", "a/b", "m~n", "~01", "/~", "~~", "//")
# Never in any generated text: a quote made of it is in no source.
ABSENT_MARK: Final = "\u2205\u2209"
LONE_SURROGATES: Final = ("\ud800", "\udbff", "\udc00", "\udfff")


def word(d: Draw, max_size: int = 10) -> str:
    """A non-blank text: every character is a non-space character."""
    return d.text(WORD, 1, max_size)


def sentence(d: Draw, max_words: int = 3) -> str:
    return " ".join(word(d, 6) for _ in range(d.integer(1, max_words)))


def key(d: Draw) -> str:
    if d.integer(0, 2) < 2:
        return d.choice(SPECIAL_KEYS)
    return d.text(KEY_CHARS, 0, 6)


def unique_keys(d: Draw, count: int) -> list[str]:
    keys: list[str] = []
    for _ in range(count):
        candidate = key(d)
        while candidate in keys:  # deterministic repair instead of a filter
            candidate += "~" if len(candidate) % 2 else "/"
        keys.append(candidate)
    return keys


# --------------------------------------------------------------------------- schemas

DATE_FORMAT: Final = "date"
DIGITS_PATTERN: Final = "^\\d{6}$"


def leaf_schema(d: Draw) -> dict[str, Any]:
    kind = d.integer(0, 10)
    if kind <= 2:
        schema: dict[str, Any] = {"type": "string"}
        if d.boolean():
            schema["minLength"] = 1
    elif kind == 3:
        schema = {"type": "string", "enum": [word(d, 4) + str(i) for i in range(d.integer(1, 3))]}
    elif kind == 4:
        schema = {"type": "string", "pattern": DIGITS_PATTERN}
    elif kind == 5:
        schema = {"type": "string", "format": DATE_FORMAT}
    elif kind == 6:
        schema = {"type": "integer", "minimum": d.integer(-5, 5)}
    elif kind == 7:
        schema = {"type": "number", "minimum": 0}
    elif kind == 8:
        schema = {"type": "boolean"}
    elif kind == 9:
        schema = {"type": ["string", "null"]}
    else:
        schema = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    return schema


def field_schema(d: Draw, depth: int) -> dict[str, Any]:
    kind = d.integer(0, 5) if depth > 0 else 0
    if kind <= 3:
        schema = leaf_schema(d)
    elif kind == 4:
        schema = {"type": "array", "items": field_schema(d, depth - 1), "maxItems": 3}
        if d.boolean():
            schema["minItems"] = 1
    else:
        schema = object_schema(d, depth - 1, d.integer(1, 3))
    if d.integer(0, 3) == 0:
        schema["description"] = sentence(d)
    return schema


def object_schema(d: Draw, depth: int, count: int) -> dict[str, Any]:
    keys = unique_keys(d, count)
    properties = {k: field_schema(d, depth) for k in keys}
    return {"type": "object", "properties": properties, "required": subset(d, keys), "additionalProperties": False}


def schema(d: Draw, max_fields: int = 4, max_depth: int = 2) -> dict[str, Any]:
    """A definition in the supported subset (spec: R-SCH-011 .. R-SCH-021)."""
    root = object_schema(d, max_depth, d.integer(1, max_fields))
    if d.integer(0, 3) == 0:
        # A root description must be checked at /data (spec: R-SRC-001, R-SRC-005).
        root = {"type": "object", "description": sentence(d), **{k: v for k, v in root.items() if k != "type"}}
    return root


# --------------------------------------------------------------------------- values

Strings = Callable[[Draw, int], str]  # (draw, min length) -> a string value


def value(d: Draw, node: Any, strings: Strings, complete: bool = False) -> Json:
    """A value valid against ``node`` (one of the schemas generated above).

    ``complete``: every optional property present and every array non-empty, so that each
    key the schema declares is in the value.
    """
    if node is True or node == {}:
        return strings(d, 0)
    if "anyOf" in node:
        return value(d, d.choice(node["anyOf"]), strings, complete)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = d.choice(kind)
    if kind == "string":
        return _string_value(d, node, strings)
    if kind == "integer":
        low = int(node.get("minimum", 0))
        # The safe-integer edge is a real value too (spec: R-RES-057).
        return d.choice([low, low + d.integer(1, 1000), MAX_SAFE_INTEGER])
    if kind == "number":
        return d.choice([0, d.integer(1, 99) / 4, 1e-7, 12345.5])
    if kind == "boolean":
        return d.boolean()
    if kind == "null":
        return None
    if kind == "array":
        low = max(int(node.get("minItems", 0)), 1 if complete else 0)
        count = d.integer(low, max(low, node.get("maxItems", 3)))
        return [value(d, node.get("items", {}), strings, complete) for _ in range(count)]
    if kind == "object":
        return object_value(d, node, strings, complete=complete)
    raise ValueError(f"no value generator for {node!r}")


def _string_value(d: Draw, node: dict[str, Any], strings: Strings) -> str:
    if "enum" in node:
        return str(d.choice(node["enum"]))
    if node.get("pattern") == DIGITS_PATTERN:
        return "".join(str(d.integer(0, 9)) for _ in range(6))
    if node.get("format") in FORMAT_VALUES:
        return FORMAT_VALUES[node["format"]](d)
    return strings(d, int(node.get("minLength", 0)))


def _date(d: Draw) -> str:
    return f"{d.integer(1970, 2099):04d}-{d.integer(1, 12):02d}-{d.integer(1, 28):02d}"


def _time(d: Draw) -> str:
    return f"{d.integer(0, 23):02d}:{d.integer(0, 59):02d}:{d.integer(0, 59):02d}" + d.choice(["Z", "+08:00"])


# Values for the supported formats a definition may name (spec: R-SCH-026).
FORMAT_VALUES: Final[dict[str, Callable[[Draw], str]]] = {
    "date": _date,
    "time": _time,
    "date-time": lambda d: _date(d) + "T" + _time(d),
    "email": lambda d: d.text(ONE_BYTE, 1, 6) + "@example.com",
    "uri": lambda d: "https://example.com/" + d.text(ONE_BYTE, 0, 6),
    "url": lambda d: "https://example.com/" + d.text(ONE_BYTE, 0, 6),
    "uuid": lambda d: "123e4567-e89b-12d3-a456-" + "".join(d.choice("0123456789abcdef") for _ in range(12)),
    "ipv4": lambda d: ".".join(str(d.integer(0, 255)) for _ in range(4)),
    "hostname": lambda d: d.text(ONE_BYTE[:26], 1, 8) + ".example",
}


def object_value(d: Draw, node: dict[str, Any], strings: Strings, keep: Sequence[str] | None = None,
                 complete: bool = False) -> dict[str, Any]:  # fmt: skip
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", []))
    names = [k for k in properties if keep is None or k in keep]
    return {k: value(d, properties[k], strings, complete) for k in names if complete or k in required or d.boolean()}


def fresh_strings(d: Draw, min_size: int) -> str:
    """String values for planned data: the input is built around them afterwards."""
    if min_size == 0 and d.integer(0, 5) == 0:
        return d.choice(["", " "])
    return word(d, 8)


def strings_from(sources: Sequence[str]) -> Strings:
    """String values cut from the task's sources, so exact evidence can quote them."""
    material = [s for s in sources if s]

    def strings(d: Draw, min_size: int) -> str:
        text = d.choice(material)
        start = d.integer(0, len(text) - 1)
        piece = text[start : start + d.integer(max(1, min_size), 8)]
        return piece if len(piece) >= min_size else text

    return strings


def leaves(data: dict[str, Any]) -> list[tuple[str, Json]]:
    """Every leaf under /data (scalars and empty containers) with its escaped pointer, by pointer.

    The walk is the judge's own (``data_candidate.leaves``), so a generated candidate covers
    exactly the leaves the reference checks; sorted, because the generators index the list
    and a draw must not depend on the order of a dict.
    """
    return sorted(judged_leaves(data), key=lambda item: item[0])


def schema_paths(node: Any, prefix: str = "/data") -> list[str]:
    """The pointer of every object key a schema declares, nested ones too (array items as /0)."""
    out: list[str] = []
    stack: list[tuple[str, Any]] = [(prefix, node)]
    while stack:
        path, here = stack.pop()
        if not isinstance(here, dict):
            continue
        for name, sub in here.get("properties", {}).items():
            sub_path = f"{path}/{jsonpointer.escape_token(name)}"
            out.append(sub_path)
            stack.append((sub_path, sub))
        if "items" in here:
            stack.append((f"{path}/0", here["items"]))
    return sorted(out)


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Plan:
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
                 complete: bool = False) -> Plan:  # fmt: skip
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
    return Plan(request, data, selected)


# --------------------------------------------------------------------------- core candidates

BLOCKER_NAMES: Final = ("clarificationReason", "confirmationReason", "conditionReason")


def blockers(d: Draw, combination: tuple[bool, bool, bool] | None = None) -> dict[str, Any]:
    """The four blocker members; ``combination`` says which reasons are present."""
    present = combination or (d.boolean(), d.boolean(), d.boolean())
    reasons = {name: (sentence(d) if on else None) for name, on in zip(BLOCKER_NAMES, present, strict=True)}
    questions = []
    if reasons["clarificationReason"] is not None:  # spec: R-COR-006
        questions = [{"question": sentence(d), "options": [word(d) for _ in range(d.integer(0, 2))]}
                     for _ in range(d.integer(1, 2))]  # fmt: skip
    return {"clarificationReason": reasons["clarificationReason"], "questions": questions,
            "confirmationReason": reasons["confirmationReason"], "conditionReason": reasons["conditionReason"]}  # fmt: skip


def intent_item(d: Draw, combination: tuple[bool, bool, bool] | None = None) -> dict[str, Any]:
    block = blockers(d, combination)
    action: str | None = d.choice(ACTIONS)
    if block["clarificationReason"] is not None and d.integer(0, 3) == 0:
        action = None  # spec: R-COR-008 -- only with a clarification
    return {"action": action, "target": d.choice([None, sentence(d)]), "requirements": texts(d), "blockers": block}


def texts(d: Draw, most: int = 2) -> list[str]:
    return [sentence(d) for _ in range(d.integer(0, most))]


def core_candidate(d: Draw, items: int | None = None,
                   combinations: Sequence[tuple[bool, bool, bool]] | None = None) -> dict[str, Any]:  # fmt: skip
    """A valid core candidate (spec: R-COR-001 .. R-COR-009)."""
    if combinations is not None:
        intents = [intent_item(d, c) for c in combinations]
    else:
        intents = [intent_item(d) for _ in range(d.integer(0, 3) if items is None else items)]
    return {
        "normalizedInput": sentence(d),
        "primaryIntent": d.choice([sentence(d), None]),
        "requirements": texts(d),
        "prohibitions": texts(d),
        "intents": intents,
    }


# --------------------------------------------------------------------------- data candidates


def payload_sources(payload: dict[str, Any]) -> dict[str, str]:
    """sourceId -> text, as the task payload names them (spec: R-TSK-005, R-TSK-006)."""
    out = {"input": str(payload["currentInput"])}
    for entry in payload.get("context", []):
        out[str(entry["sourceId"])] = str(entry["content"])
    return out


def quote_from(d: Draw, text: str) -> str:
    start = d.integer(0, max(0, len(text) - 1))
    return text[start : start + d.integer(1, 8)] or text


def _source_for(text: str, sources: dict[str, str]) -> str | None:
    for source_id, content in sources.items():
        if text in content:
            return source_id
    return None


def _citation(d: Draw, sources: dict[str, str]) -> list[dict[str, str]]:
    # The input is never blank, so a quote from it always exists.
    return [{"sourceId": "input", "quote": quote_from(d, sources["input"])}]


def evidence_for(d: Draw, data: dict[str, Any], sources: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per leaf: exact when the value is a quotable string, semantic otherwise."""
    entries = []
    for path, leaf in leaves(data):
        where = _source_for(leaf, sources) if isinstance(leaf, str) and leaf else None
        if where is not None:  # spec: R-DAT-011, R-DAT-012
            entries.append({"path": path, "mode": "exact", "sources": [{"sourceId": where, "quote": leaf}]})
        else:  # spec: R-DAT-013
            entries.append({"path": path, "mode": "semantic", "sources": _citation(d, sources)})
    return entries


def data_candidate(d: Draw, payload: dict[str, Any], data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A valid data candidate for a data task (spec: R-DAT-002 .. R-DAT-017, R-SRC-010, R-SRC-011).

    ``data`` is what to return (a plan's data); without it, values are drawn from the
    selected schema, with strings cut from the task's sources.
    """
    sources = payload_sources(payload)
    selected: list[str] = list(payload["selectedFields"])
    selected_schema: dict[str, Any] = payload["selectedSchema"]
    if data is None:
        data = object_value(d, selected_schema, strings_from(list(sources.values())))
    checks = []
    if isinstance(selected_schema.get("description"), str) and selected_schema["description"].strip():
        checks.append(_check(d, "/data", sources))
    for name in selected:
        described = selected_schema["properties"][name].get("description") if isinstance(
            selected_schema["properties"][name], dict) else None  # fmt: skip
        if name in data and isinstance(described, str) and described.strip():
            checks.append(_check(d, "/data/" + jsonpointer.escape_token(name), sources))
    results = []
    for name in selected:
        status = "extracted" if name in data else d.choice(["not_provided", "not_applicable"])
        results.append({"path": "/data/" + jsonpointer.escape_token(name), "status": status, "explanation": sentence(d)})
    return {"data": data, "evidence": evidence_for(d, data, sources), "descriptionChecks": checks,
            "fieldResults": results, "issues": []}  # fmt: skip


def _check(d: Draw, path: str, sources: dict[str, str]) -> dict[str, Any]:
    return {"path": path, "verdict": "satisfied", "explanation": sentence(d), "sources": _citation(d, sources)}


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Subject:
    """A task and a valid candidate for it: what a fault breaks."""

    stage: str  # "core" or "data"
    candidate: dict[str, Any]
    payload: dict[str, Any]

    @property
    def text(self) -> str:
        return dumps_compact(self.candidate)

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.candidate)


class Broken(NamedTuple):
    """A candidate text broken in one named way, and what the reference makes of it.

    ``expected_code`` is the code of the judgement: MODEL_OUTPUT_INVALID (a repair task
    while repairs are left, then the error), DATA_EXTRACTION_FAILED, or LIMIT_EXCEEDED (a
    rejection that keeps the step open).  ``pointer`` is an issue path the judgement
    reports (None: the issue's path is null).
    """

    text: str
    expected_code: str
    pointer: str | None


INVALID: Final = "MODEL_OUTPUT_INVALID"
EXTRACTION: Final = "DATA_EXTRACTION_FAILED"
LIMIT: Final = "LIMIT_EXCEEDED"


@dataclass(frozen=True)
class CandidateFault:
    """One named way to break a candidate.  Call it: ``CANDIDATE_FAULTS[name](subject, draw)``."""

    name: str
    stages: frozenset[str]
    make: Callable[[Subject, Draw], Broken]
    applies_to: Callable[[Subject], bool] = field(default=lambda subject: True)
    requirements: tuple[str, ...] = ()
    heavy: bool = False  # large texts: left out where size matters (CI properties, small fuzz runs)
    # The reference decisions the fault's verdict rests on (another implementation may judge
    # such a text otherwise and still follow the seeds); () when the seeds fix the verdict.
    decisions: tuple[str, ...] = ()

    def applies(self, subject: Subject) -> bool:
        return subject.stage in self.stages and self.applies_to(subject)

    def __call__(self, subject: Subject, d: Draw) -> Broken:
        if not self.applies(subject):
            raise ValueError(f"fault {self.name} does not apply to this {subject.stage} candidate")
        broken = self.make(subject, d)
        _remember(broken.text, self.name)
        return broken


# The fault each recently generated broken text was made with, so a differential check can
# tell a verdict the seeds fix from one the reference decided (intentref.suite.properties.projection).
# Bounded: a long campaign generates millions; a divergence is judged right after its call.
_RECENT_FAULTS: Final = 4096
_FAULT_OF: dict[str, str] = {}


def _remember(text: str, name: str) -> None:
    if len(_FAULT_OF) >= _RECENT_FAULTS:
        del _FAULT_OF[next(iter(_FAULT_OF))]
    _FAULT_OF[text] = name


def fault_of(text: str) -> str | None:
    """The named fault ``text`` was generated with, if it was generated here recently."""
    return _FAULT_OF.get(text)


CANDIDATE_FAULTS: dict[str, CandidateFault] = {}
BOTH: Final = frozenset({"core", "data"})
CORE: Final = frozenset({"core"})
DATA: Final = frozenset({"data"})


def _fault(name: str, stages: frozenset[str], *requirements: str, applies: Callable[[Subject], bool] | None = None,
           heavy: bool = False, decisions: tuple[str, ...] = ()
           ) -> Callable[[Callable[[Subject, Draw], Broken]], Callable[[Subject, Draw], Broken]]:  # fmt: skip
    def register(make: Callable[[Subject, Draw], Broken]) -> Callable[[Subject, Draw], Broken]:
        CANDIDATE_FAULTS[name] = CandidateFault(name, stages, make, applies or (lambda subject: True), requirements,
                                                heavy, decisions)  # fmt: skip
        return make

    return register


def _ensure_item(candidate: dict[str, Any], d: Draw) -> int:
    if not candidate["intents"]:
        candidate["intents"].append(intent_item(d, (False, False, False)))
    return d.integer(0, len(candidate["intents"]) - 1)


def _broken(candidate: Any, code: str, pointer: str | None) -> Broken:
    return Broken(dumps_compact(candidate), code, pointer)


# --- core ----------------------------------------------------------------------------------


@_fault("core.blank_normalized_input", CORE, "R-COR-009", "R-RES-017")
def _blank_normalized_input(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["normalizedInput"] = d.choice(["", " ", "\t\n", "\u3000"])
    return _broken(c, INVALID, "/normalizedInput")


@_fault("core.questions_without_reason", CORE, "R-COR-006")
def _questions_without_reason(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    item = c["intents"][i]
    item["action"] = item["action"] or "query"
    item["blockers"]["clarificationReason"] = None
    item["blockers"]["questions"] = [{"question": sentence(d), "options": []}]
    return _broken(c, INVALID, f"/intents/{i}/blockers/clarificationReason")


@_fault("core.reason_without_questions", CORE, "R-COR-006")
def _reason_without_questions(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    c["intents"][i]["blockers"]["clarificationReason"] = sentence(d)
    c["intents"][i]["blockers"]["questions"] = []
    return _broken(c, INVALID, f"/intents/{i}/blockers/questions")


@_fault("core.null_action_without_clarification", CORE, "R-COR-008", "R-RES-028")
def _null_action(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    item = c["intents"][i]
    item["action"] = None
    item["blockers"]["clarificationReason"] = None
    item["blockers"]["questions"] = []
    return _broken(c, INVALID, f"/intents/{i}/action")


@_fault("core.unknown_action", CORE, "R-RES-008")
def _unknown_action(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    c["intents"][i]["action"] = d.choice(["frobnicate", "Query", "", "QUERY"])
    return _broken(c, INVALID, f"/intents/{i}/action")


@_fault("core.missing_blockers_member", CORE, "R-COR-004", "R-COR-005")
def _missing_blocker(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    name = d.choice(["clarificationReason", "questions", "confirmationReason", "conditionReason"])
    del c["intents"][i]["blockers"][name]
    return _broken(c, INVALID, f"/intents/{i}/blockers/{name}")


@_fault("core.missing_root_member", CORE, "R-COR-002")
def _missing_root(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = d.choice(["normalizedInput", "primaryIntent", "requirements", "prohibitions", "intents"])
    del c[name]
    return _broken(c, INVALID, f"/{name}")


@_fault("core.extra_member", CORE, "R-DAT-006", "R-ERR-015", decisions=("D-COR-002",))
def _extra_core_member(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = d.choice(["x/y~z", "~1", "extra", "/"])
    c[name] = True
    return _broken(c, INVALID, "/" + jsonpointer.escape_token(name))


@_fault("core.blank_requirement", CORE, "R-COR-009", "R-RES-020")
def _blank_requirement(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    member = d.choice(["requirements", "prohibitions"])
    c[member].append(d.choice([" ", ""]))
    return _broken(c, INVALID, f"/{member}/{len(c[member]) - 1}")


@_fault("core.wrong_type", CORE, "R-COR-002", "R-RES-013")
def _core_wrong_type(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    member, wrong = d.choice([("normalizedInput", 5), ("intents", {}), ("requirements", "x"), ("primaryIntent", []),
                              ("prohibitions", None)])  # fmt: skip
    c[member] = wrong
    return _broken(c, INVALID, f"/{member}")


@_fault("core.question_without_options", CORE, "R-COR-007")
def _question_without_options(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _ensure_item(c, d)
    c["intents"][i]["blockers"]["clarificationReason"] = sentence(d)
    c["intents"][i]["blockers"]["questions"] = [{"question": sentence(d)}]
    return _broken(c, INVALID, f"/intents/{i}/blockers/questions/0/options")


# --- data ----------------------------------------------------------------------------------


def _has_sources(s: Subject) -> bool:
    return bool(s.candidate.get("evidence"))


def _first_evidence(s: Subject, d: Draw) -> int:
    return d.integer(0, len(s.candidate["evidence"]) - 1)


@_fault("data.quote_not_in_source", DATA, "R-DAT-010", applies=_has_sources)
def _quote_not_in_source(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _first_evidence(s, d)
    c["evidence"][i]["mode"] = "semantic"  # so only the quote is wrong
    c["evidence"][i]["sources"][0]["quote"] = ABSENT_MARK + word(d, 3)
    return _broken(c, INVALID, f"/evidence/{i}/sources/0/quote")


@_fault("data.unknown_source_id", DATA, "R-DAT-009", applies=_has_sources)
def _unknown_source(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _first_evidence(s, d)
    c["evidence"][i]["sources"][0]["sourceId"] = d.choice(["context:99", "Input", "ctx:0"])
    return _broken(c, INVALID, f"/evidence/{i}/sources/0/sourceId")


@_fault("data.empty_sources", DATA, "R-DAT-008", applies=_has_sources)
def _empty_sources(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _first_evidence(s, d)
    c["evidence"][i]["sources"] = []
    return _broken(c, INVALID, f"/evidence/{i}/sources")


@_fault("data.missing_field_result", DATA, "R-SRC-011")
def _missing_field_result(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    del c["fieldResults"][d.integer(0, len(c["fieldResults"]) - 1)]
    return _broken(c, INVALID, "/fieldResults")


@_fault("data.duplicate_field_result", DATA, "R-SRC-011")
def _duplicate_field_result(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["fieldResults"].append(copy.deepcopy(c["fieldResults"][0]))
    return _broken(c, INVALID, f"/fieldResults/{len(c['fieldResults']) - 1}/path")


@_fault("data.unselected_field", DATA, "R-FLD-007", "R-RES-047")
def _unselected_field(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = next(n for n in ("zz/unselected~", "~zz", "zz", "zzz") if n not in s.payload["selectedFields"])
    c["data"][name] = "x"
    return _broken(c, INVALID, "/data/" + jsonpointer.escape_token(name))


def _has_leaves(s: Subject) -> bool:
    return bool(leaves(s.candidate["data"]))


@_fault("data.missing_evidence", DATA, "R-SRC-010", applies=_has_leaves, decisions=("D-DAT-001",))
def _missing_evidence(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["evidence"] = []
    return _broken(c, INVALID, leaves(c["data"])[0][0])


def _non_string_leaf(s: Subject) -> int | None:
    values = dict(leaves(s.candidate["data"]))
    for i, entry in enumerate(s.candidate["evidence"]):
        if entry["path"] in values and not isinstance(values[entry["path"]], str):
            return i
    return None


@_fault("data.exact_mode_for_non_string", DATA, "R-DAT-011", applies=lambda s: _non_string_leaf(s) is not None, decisions=("D-DAT-003",))
def _exact_non_string(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _non_string_leaf(s)
    assert i is not None
    c["evidence"][i]["mode"] = "exact"
    return _broken(c, INVALID, f"/evidence/{i}/mode")


def _exact_entry(s: Subject) -> int | None:
    for i, entry in enumerate(s.candidate["evidence"]):
        if entry["mode"] == "exact" and len(entry["sources"][0]["quote"]) > 1:
            return i
    return None


@_fault("data.exact_value_not_quoted", DATA, "R-DAT-012", applies=lambda s: _exact_entry(s) is not None)
def _exact_not_quoted(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _exact_entry(s)
    assert i is not None
    source = c["evidence"][i]["sources"][0]
    source["quote"] = source["quote"][:-1]  # still in the source, no longer the value
    return _broken(c, INVALID, f"/evidence/{i}/mode")


@_fault("data.blank_explanation", DATA, "R-DAT-014")
def _blank_explanation(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["fieldResults"][0]["explanation"] = d.choice([" ", "", "\n"])
    return _broken(c, INVALID, "/fieldResults/0/explanation")


@_fault("data.extra_root_member", DATA, "R-DAT-002", "R-DAT-006", decisions=("D-COR-002",))
def _extra_data_member(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = d.choice(["x/y", "result", "~"])
    c[name] = {}
    return _broken(c, INVALID, "/" + jsonpointer.escape_token(name))


@_fault("data.reserved_issue_code", DATA, "R-DAT-022", "R-ERR-033")
def _reserved_issue(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["issues"].append({"code": "DATA_SOURCE_INVALID", "category": "business_information", "path": None,
                        "message": sentence(d)})  # fmt: skip
    return _broken(c, INVALID, f"/issues/{len(c['issues']) - 1}/code")


@_fault("data.wrong_member_type", DATA, "R-DAT-002", "R-DAT-004")
def _data_wrong_type(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    member, wrong = d.choice([("evidence", {}), ("data", []), ("issues", "none"), ("fieldResults", None)])
    c[member] = wrong
    return _broken(c, INVALID, f"/{member}")


@_fault("data.missing_description_check", DATA, "R-SRC-005", applies=lambda s: bool(s.candidate["descriptionChecks"]), decisions=("D-DAT-002",))
def _missing_check(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    c["descriptionChecks"] = []
    return _broken(c, INVALID, "/descriptionChecks")


def _typed_top_field(s: Subject) -> str | None:
    props = s.payload["selectedSchema"]["properties"]
    for name in s.candidate["data"]:
        if isinstance(props.get(name), dict) and props[name].get("type") in ("string", "integer", "number", "boolean"):
            return str(name)
    return None


@_fault("data.schema_violation", DATA, "R-SCH-035", "R-RES-053", applies=lambda s: _typed_top_field(s) is not None)
def _schema_violation(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = _typed_top_field(s)
    assert name is not None
    kind = s.payload["selectedSchema"]["properties"][name]["type"]
    c["data"][name] = 7 if kind == "string" else "7"  # the wrong JSON type, never coerced
    path = "/data/" + jsonpointer.escape_token(name)
    for entry in c["evidence"]:
        if entry["path"] == path:
            entry["mode"] = "semantic"
    return _broken(c, INVALID, path)


def _omitted_optional(s: Subject) -> int | None:
    for i, entry in enumerate(s.candidate["fieldResults"]):
        if entry["status"] != "extracted":
            return i
    return None


@_fault("data.extracted_but_missing", DATA, "R-DAT-015", applies=lambda s: _omitted_optional(s) is not None, decisions=("D-DAT-003", "D-DAT-005"))
def _extracted_but_missing(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = _omitted_optional(s)
    assert i is not None
    c["fieldResults"][i]["status"] = "extracted"
    return _broken(c, INVALID, f"/fieldResults/{i}/status")


# --- business failures (valid contract, the information is not there) -----------------------


def _required_returned(s: Subject) -> str | None:
    for name in s.payload["selectedSchema"].get("required", []):
        if name in s.candidate["data"]:
            return str(name)
    return None


@_fault("business.required_missing", DATA, "R-DAT-023", "R-DAT-024", "R-ERR-030",
        applies=lambda s: _required_returned(s) is not None, decisions=("D-DAT-004", "D-DAT-005"))  # fmt: skip
def _required_missing(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    name = _required_returned(s)
    assert name is not None
    path = "/data/" + jsonpointer.escape_token(name)
    del c["data"][name]
    c["evidence"] = [e for e in c["evidence"] if not (e["path"] == path or e["path"].startswith(path + "/"))]
    c["descriptionChecks"] = [e for e in c["descriptionChecks"] if e["path"] != path]
    for entry in c["fieldResults"]:
        if entry["path"] == path:
            entry["status"] = "issue"
    c["issues"].append({"code": "DATA_REQUIRED_MISSING", "category": "business_information", "path": path,
                        "message": sentence(d)})  # fmt: skip
    return _broken(c, EXTRACTION, path)


@_fault("business.check_violated", DATA, "R-DAT-018", applies=lambda s: bool(s.candidate["descriptionChecks"]), decisions=("D-DAT-005",))
def _check_violated(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    i = d.integer(0, len(c["descriptionChecks"]) - 1)
    c["descriptionChecks"][i]["verdict"] = d.choice(["violated", "undetermined"])
    return _broken(c, EXTRACTION, c["descriptionChecks"][i]["path"])


@_fault("business.issue_filed", DATA, "R-DAT-019", "R-ERR-029", decisions=("D-DAT-007",))
def _issue_filed(s: Subject, d: Draw) -> Broken:
    c = s.copy()
    path = "/data/" + jsonpointer.escape_token(s.payload["selectedFields"][0])
    c["issues"].append({"code": d.choice(BUSINESS_ISSUE_CODES), "category": "business_information", "path": path,
                        "message": sentence(d)})  # fmt: skip
    return _broken(c, EXTRACTION, path)


# --- JSON text -----------------------------------------------------------------------------


def _inject(text: str, member: str) -> str:
    """``member`` (raw JSON text ``"name":value``) as the first member of the root object."""
    return "{" + member + ("," if text != "{}" else "") + text[1:]


@_fault("json.duplicate_key", BOTH, "R-RES-056", decisions=("D-JSON-001",))
def _duplicate_key(s: Subject, d: Draw) -> Broken:
    name = d.choice(list(s.candidate))
    return Broken(_inject(s.text, json.dumps(name, ensure_ascii=False) + ":null"), INVALID, "")


@_fault("json.trailing_garbage", BOTH)
def _trailing_garbage(s: Subject, d: Draw) -> Broken:
    return Broken(s.text + d.choice([" x", "}", ",", "\n{}", "\x00"]), INVALID, "")


@_fault("json.truncated", BOTH)
def _truncated(s: Subject, d: Draw) -> Broken:
    return Broken(s.text[: d.integer(0, len(s.text) - 1)], INVALID, "")


@_fault("json.nan_literal", BOTH, "R-RES-056")
def _nan(s: Subject, d: Draw) -> Broken:
    literal = d.choice(["NaN", "Infinity", "-Infinity"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.unsafe_integer", BOTH, "R-RES-057", decisions=("D-JSON-004",))
def _unsafe_integer(s: Subject, d: Draw) -> Broken:
    literal = d.choice([str(MAX_SAFE_INTEGER + 1), str(-MAX_SAFE_INTEGER - 2), "1e400", "9007199254740993.0"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.lossy_number", BOTH, "R-RES-058", decisions=("D-JSON-004",))
def _lossy_number(s: Subject, d: Draw) -> Broken:
    literal = d.choice(["0.1000000000000000055511151231257827", "1.00000000000000000001", "3.141592653589793238"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.wrong_root", BOTH)
def _wrong_root(s: Subject, d: Draw) -> Broken:
    return Broken(d.choice(["[]", "null", "42", '"text"', "true", json.dumps([s.candidate])]), INVALID, "")


@_fault("json.leading_bom", BOTH, decisions=("D-JSON-001",))
def _bom(s: Subject, d: Draw) -> Broken:
    return Broken("\ufeff" + s.text, INVALID, "")


@_fault("json.not_json", BOTH)
def _not_json(s: Subject, d: Draw) -> Broken:
    return Broken(d.choice(["", " ", "not json", "{'a': 1}", "```json\n{}\n```"]), INVALID, "")


BIG: Final = 10 * 1024 * 1024  # the long profile's "10 MB texts"
# Depths: just past MAX_CANDIDATE_DEPTH (64), and far past it (what breaks recursive parsers).
DEEP_NESTING: Final = (65, 1_000, 100_000)


@_fault("json.deep_nesting", BOTH, "R-RES-056", decisions=("D-LIM-003",))
def _deep_nesting(s: Subject, d: Draw) -> Broken:
    depth = d.choice(DEEP_NESTING)
    return Broken("[" * depth + "]" * depth, INVALID, "")


# Faults whose candidate text holds a raw lone surrogate: JSON text can carry it as an escape,
# UTF-8 cannot, and whether a server ever sees it is its transport's (D-MCP-008, D-CNF-053).
LONE_SURROGATE_FAULTS: Final = frozenset({"text.lone_surrogate"})


@_fault("text.lone_surrogate", BOTH, decisions=("D-JSON-002",))
def _lone_surrogate(s: Subject, d: Draw) -> Broken:
    # A raw lone surrogate in the candidate string: JavaScript strings can hold one.
    c = s.copy()
    first = next(iter(c))
    c[first] = d.choice(LONE_SURROGATES) + (c[first] if isinstance(c[first], str) else "")
    return Broken(json.dumps(c, ensure_ascii=False), INVALID, "")


@_fault("text.escaped_lone_surrogate", BOTH, decisions=("D-JSON-002",))
def _escaped_lone_surrogate(s: Subject, d: Draw) -> Broken:
    escape = d.choice(["\\ud800", "\\udfff", "\\ud83d x"])
    return Broken(_inject(s.text, '"s":"' + escape + '"'), INVALID, "")


def oversize_text(d: Draw, total: int | None = None) -> str:
    """A JSON string of just over the candidate budget (or ``total`` bytes), in one character width."""
    unit = d.choice(["x", "é", "中", "😀"])
    width = len(unit.encode("utf-8"))
    wanted = MAX_CANDIDATE_BYTES + d.integer(1, width) if total is None else total
    count = -(-(wanted - 2) // width)  # ceil: at least ``wanted`` bytes with the quotes
    return '"' + unit * count + '"'


@_fault("text.oversize", BOTH, "R-CAP-013", "R-LIF-009", decisions=("D-LIM-003",))
def _oversize(s: Subject, d: Draw) -> Broken:
    return Broken(oversize_text(d), LIMIT, None)


@_fault("text.oversize_10mb", BOTH, "R-CAP-013", heavy=True, decisions=("D-LIM-003",))
def _oversize_10mb(s: Subject, d: Draw) -> Broken:
    return Broken(oversize_text(d, BIG), LIMIT, None)


def broken(d: Draw, subject: Subject, names: Sequence[str]) -> tuple[str, Broken]:
    """One of ``names`` applied to ``subject``: (fault name, Broken)."""
    name = d.choice(list(names))
    return name, CANDIDATE_FAULTS[name](subject, d)


def faults_for(subject: Subject, include_heavy: bool = True) -> list[str]:
    """The names of every fault that applies to ``subject``, in registry order."""
    return [name for name, f in CANDIDATE_FAULTS.items() if f.applies(subject) and (include_heavy or not f.heavy)]


# --------------------------------------------------------------------------- cancel details


def detail_with_bytes(d: Draw, total: int, lone_surrogates: bool = True) -> str:
    """A detail of exactly ``total`` UTF-8 bytes as a TextEncoder counts them (D-LIM-006).

    Units of every width are drawn, lone surrogates included unless ``lone_surrogates`` is
    false (3 bytes each, as U+FFFD), then ``a``s fill the rest, so the boundary falls right
    after any kind of character.
    """
    units = ["a", "é", "中", "😀", *(("\ud800", "\udfff") if lone_surrogates else ())]
    parts: list[str] = []
    used = 0
    while True:
        unit = d.choice(units)
        if unit == "\udfff" and parts and parts[-1] == "\ud800":
            unit = "a"  # a high+low pair would be one 4-byte character, not two replacements
        width = len(unit.encode("utf-8", "surrogatepass"))
        if used + width > total or d.integer(0, 9) == 0:
            break
        parts.append(unit)
        used += width
    return "".join(parts) + "a" * (total - used)


DETAIL_LIMIT: Final = MAX_CANCEL_DETAIL_BYTES


# --------------------------------------------------------------------------- replies and tool results


def tool_result(reply: dict[str, Any]) -> dict[str, Any]:
    """A BridgeReply as an MCP CallToolResult (spec: R-ENV-001, R-ENV-002, R-ENV-003)."""
    return {
        "content": [{"type": "text", "text": dumps_compact(reply)}],
        "structuredContent": reply,
        "isError": reply.get("kind") == "error",
    }


def _drop(value: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != name}


# name -> (kinds it applies to, requirement broken, how)
ReplyDefect = Callable[[dict[str, Any], Draw], Any]
REPLY_DEFECTS: dict[str, tuple[frozenset[str], str, ReplyDefect]] = {
    "reply.kind_missing": (frozenset({"task", "result", "error"}), "R-RPY-001", lambda r, d: _drop(r, "kind")),
    "reply.kind_unknown": (frozenset({"task", "result", "error"}), "R-RPY-001",
                           lambda r, d: {**r, "kind": d.choice(["Task", "done", "", None])}),
    "reply.not_an_object": (frozenset({"task", "result", "error"}), "R-RPY-001", lambda r, d: [r]),
    "reply.task_without_step_token": (frozenset({"task"}), "R-RPY-002", lambda r, d: _drop(r, "stepToken")),
    "reply.task_without_job_id": (frozenset({"task"}), "R-RPY-002", lambda r, d: _drop(r, "jobId")),
    "reply.payload_not_string": (frozenset({"task"}), "R-RPY-005", lambda r, d: {**r, "payload": json.loads(r["payload"])}),
    "reply.stage_unknown": (frozenset({"task"}), "R-RPY-002", lambda r, d: {**r, "stage": "repair"}),
    "reply.expires_at_null": (frozenset({"task"}), "R-RPY-008", lambda r, d: {**r, "expiresAt": None}),
    "reply.result_missing": (frozenset({"result"}), "R-RPY-003", lambda r, d: _drop(r, "result")),
    "reply.result_not_object": (frozenset({"result"}), "R-RPY-003", lambda r, d: {**r, "result": "done"}),
    "reply.error_missing": (frozenset({"error"}), "R-RPY-004", lambda r, d: _drop(r, "error")),
    "reply.error_without_code": (frozenset({"error"}), "R-ERR-010", lambda r, d: {**r, "error": _drop(r["error"], "code")}),
    "reply.error_issues_not_array": (frozenset({"error"}), "R-ERR-006",
                                     lambda r, d: {**r, "error": {**r["error"], "issues": {}}}),
    "reply.error_partial_result_null": (frozenset({"error"}), "R-ERR-011",
                                        lambda r, d: {**r, "error": {**r["error"], "partialResult": None}}),
}  # fmt: skip


def _mcp_text_mismatch(result: dict[str, Any], d: Draw) -> dict[str, Any]:
    reply = result["structuredContent"]
    other = {**reply, "kind": "result" if reply.get("kind") != "result" else "error"}
    return {**result, "content": [{"type": "text", "text": dumps_compact(other)}]}


MCP_DEFECTS: dict[str, tuple[str, Callable[[dict[str, Any], Draw], dict[str, Any]]]] = {
    "mcp.structured_content_missing": ("R-ENV-002", lambda r, d: _drop(r, "structuredContent")),
    "mcp.text_content_missing": ("R-ENV-001", lambda r, d: {**r, "content": []}),
    "mcp.text_not_json": ("R-ENV-001", lambda r, d: {**r, "content": [{"type": "text", "text": "{" + r["content"][0]["text"]}]}),
    "mcp.text_differs": ("R-ENV-002", _mcp_text_mismatch),
    "mcp.is_error_mismatch": ("R-ENV-003", lambda r, d: {**r, "isError": not r["isError"]}),
    "mcp.is_error_missing": ("R-ENV-003", lambda r, d: _drop(r, "isError")),
    "mcp.content_not_text": ("R-ENV-001", lambda r, d: {**r, "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
    "mcp.structured_kind_unknown": ("R-ENV-007", lambda r, d: {**r, "structuredContent": {**r["structuredContent"],
                                                                                        "kind": "unknown"}}),
}  # fmt: skip


def malformed_reply(d: Draw, reply: dict[str, Any]) -> tuple[str, str, Any]:
    """(defect, requirement, value): ``reply`` broken in one named way."""
    names = [n for n, (kinds, _, _) in REPLY_DEFECTS.items() if reply.get("kind") in kinds]
    name = d.choice(names)
    _, requirement, make = REPLY_DEFECTS[name]
    return name, requirement, make(copy.deepcopy(reply), d)


def malformed_tool_result(d: Draw, reply: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    name = d.choice(list(MCP_DEFECTS))
    requirement, make = MCP_DEFECTS[name]
    return name, requirement, make(tool_result(copy.deepcopy(reply)), d)


def token(d: Draw) -> str:
    """A token shaped like the reference's (22 URL-safe characters, D-BRG-006 in bridge.py)."""
    return d.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 22, 22)


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
        ("cancel.detail_oversize", {"jobId": job_id, "detail": detail_with_bytes(d, DETAIL_LIMIT + 1, lone_surrogates)}),
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
