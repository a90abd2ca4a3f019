"""Generators (in step arguments) and matchers (in expectations) of the fixture language.

Everything a fixture may write as ``{"$name": ...}`` is defined here, one function each,
registered in ``GENERATORS`` and ``MATCHERS``.  A mismatch is reported with the JSON
Pointer of the place in the reply and what was expected there, like a schema error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from intentref.core import jsonpointer
from intentref.core.limits import map_strings as map_strings
from intentref.core.limits import well_formed_json as well_formed_json  # D-MCP-008; its home before core


class FixtureError(ValueError):
    """The fixture itself is malformed (a broken case, not a failing implementation)."""


@dataclass
class History:
    """What earlier steps of the case returned; generators and matchers may refer to it."""

    replies: list[Any] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)

    def lookup(self, step: Any, pointer: Any) -> Any:
        if not isinstance(step, int) or not 0 <= step < len(self.replies):
            raise FixtureError(f"$reply refers to step {step!r}, which has not run")
        tokens = jsonpointer.split(pointer if isinstance(pointer, str) else "")
        if tokens is None:
            raise FixtureError(f"$reply pointer {pointer!r} is not a JSON Pointer")
        value = jsonpointer.resolve(self.replies[step], tokens)
        if not jsonpointer.exists(self.replies[step], tokens):
            raise _Unresolved(f"step {step} reply has nothing at {pointer}")
        return value

    def tokens_seen(self) -> set[str]:
        seen: set[str] = set()
        for reply in self.replies:
            if isinstance(reply, dict) and reply.get("kind") == "task":
                for key in ("jobId", "stepToken"):
                    if isinstance(reply.get(key), str):
                        seen.add(reply[key])
        return seen


class _Unresolved(Exception):
    """A reference into an earlier reply that is not there: the case fails, it is not broken."""


# --- generators ----------------------------------------------------------------------------


def stringify(value: Any) -> str:
    """JSON.stringify(value): compact separators, non-ASCII characters written as themselves."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _gen_reply(spec: dict[str, Any], history: History) -> Any:
    return history.lookup(spec["$reply"], spec.get("pointer", ""))


def _gen_json(spec: dict[str, Any], history: History) -> Any:
    return stringify(generate(spec["$json"], history))


def _gen_repeat(spec: dict[str, Any], history: History) -> Any:
    unit, times = generate(spec["$repeat"], history), spec.get("times")
    if not isinstance(unit, str) or not isinstance(times, int) or times < 0:
        raise FixtureError("$repeat takes a string and a non-negative integer times")
    return unit * times


def _gen_concat(spec: dict[str, Any], history: History) -> Any:
    parts = [generate(p, history) for p in spec["$concat"]]
    if not all(isinstance(p, str) for p in parts):
        raise FixtureError("$concat joins strings only")
    return "".join(parts)


def _gen_utf16(spec: dict[str, Any], history: History) -> Any:
    # Lets a fixture hold lone surrogates without putting them in the JSON file itself.
    units = spec["$utf16"]
    if not isinstance(units, list) or not all(isinstance(u, int) and 0 <= u <= 0xFFFF for u in units):
        raise FixtureError("$utf16 takes an array of UTF-16 code units")
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def _gen_literal(spec: dict[str, Any], history: History) -> Any:
    return spec["$literal"]  # an object that must not be read as a generator


GENERATORS: dict[str, Callable[[dict[str, Any], History], Any]] = {
    "$reply": _gen_reply,
    "$json": _gen_json,
    "$repeat": _gen_repeat,
    "$concat": _gen_concat,
    "$utf16": _gen_utf16,
    "$literal": _gen_literal,
}


def _operator(value: Any, table: dict[str, Any]) -> str | None:
    if isinstance(value, dict):
        ops = [k for k in value if k in table]
        if len(ops) > 1:
            raise FixtureError(f"one operator per object, got {ops}")
        if ops:
            return str(ops[0])
    return None


def generate(value: Any, history: History) -> Any:
    op = _operator(value, GENERATORS)
    if op is not None:
        return GENERATORS[op](value, history)
    if isinstance(value, dict):
        return {k: generate(v, history) for k, v in value.items()}
    if isinstance(value, list):
        return [generate(v, history) for v in value]
    return value


# --- matchers ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mismatch:
    """One way a reply differs from what its case expects, as data, from the matcher to the report.

    ``path`` is a JSON Pointer into the compared value (``/`` for the value itself), or None
    when the mismatch concerns the step as a whole; ``expected`` / ``actual`` are the two sides
    as the report shows them, ``reason`` what is wrong in words when that is not simply
    "expected …, got …" (a mismatch may have both), ``where`` the step or ``setup`` (``at``).
    """

    path: str | None
    expected: str | None = None
    actual: str | None = None
    reason: str | None = None
    where: str = ""

    @property
    def message(self) -> str:
        return self.reason if self.reason is not None else f"expected {self.expected}, got {self.actual}"

    @property
    def is_pair(self) -> bool:
        """Whether the report can show it as an expected and an actual side."""
        return self.expected is not None and self.actual is not None

    def at(self, where: str) -> Mismatch:
        return replace(self, where=where)

    def __str__(self) -> str:
        """The one-line form: ``step 3 (accept) /error/code: expected "A", got "B"``."""
        located = self.message if self.path is None else f"{self.path}: {self.message}"
        if not self.where:
            return located
        return f"{self.where}: {located}" if self.path is None else f"{self.where} {located}"

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "path": self.path, "expected": self.expected, "actual": self.actual,
                "reason": self.reason}  # fmt: skip


Mismatches = list[Mismatch]


def _pair(path: str, expected: str, actual: str) -> Mismatch:
    return Mismatch(path or "/", expected, actual)


def _said(path: str, reason: str) -> Mismatch:
    return Mismatch(path or "/", reason=reason)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _show(value: Any) -> str:
    text = stringify(value) if not isinstance(value, str) or len(value) < 200 else stringify(value[:200]) + "…"
    return text if len(text) <= 300 else text[:300] + "…"


def _m_type(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    names = spec["$type"] if isinstance(spec["$type"], list) else [spec["$type"]]
    if any(_TYPES[n](actual) for n in names):
        return []
    return [_pair(path, f"a {' or '.join(names)}", _show(actual))]


def _m_subset(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, dict):
        return [_pair(path, "an object", _show(actual))]
    out: Mismatches = []
    for key, expected in spec["$subset"].items():
        sub = f"{path}/{jsonpointer.escape_token(key)}"
        if isinstance(expected, dict) and expected.get("$absent") is True:
            if key in actual:
                out.append(_pair(sub, "no such member", _show(actual[key])))
        elif key not in actual:
            out.append(Mismatch(sub, "a member here", "nothing", "missing"))
        else:
            out.extend(match(expected, actual[key], sub, h))
    return out


def _m_absent(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    raise FixtureError("$absent is only meaningful as a member of $subset or $error")


def _m_any_of(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    results = [match(alt, actual, path, h) for alt in spec["$anyOf"]]
    if any(not r for r in results):
        return []
    alternatives = " | ".join("; ".join(str(m) for m in r) for r in results)
    return [_said(path, f"matched none of {len(results)} alternatives: {alternatives}")]


def _m_all_of(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    # Lets a case state what every reading gives without fixing what the seeds leave open,
    # e.g. "these seven names, in any order": $length beside an $each of the names.
    return [m for alt in spec["$allOf"] for m in match(alt, actual, path, h)]


def _m_not(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if match(spec["$not"], actual, path, h):
        return []
    return [_said(path, f"expected anything but {_show(spec['$not'])}")]


def _m_fresh(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, str) or not actual:
        return [_pair(path, "a non-empty token string", _show(actual))]
    if actual in h.tokens_seen():
        return [_pair(path, "a new token", "one an earlier reply already used")]
    return []


def _m_same_as(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    step = spec["$sameAs"]
    try:
        earlier = h.lookup(step, "")
    except _Unresolved as exc:
        return [Mismatch(None, reason=str(exc))]
    if stringify(earlier) != stringify(actual):
        return [_pair(path, f"a reply identical to step {step}'s", _show(actual))]
    return []


def _m_error(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    want = spec["$error"]
    if not isinstance(actual, dict) or actual.get("kind") != "error" or not isinstance(actual.get("error"), dict):
        return [_pair(path, f"an error reply with code {want.get('code')}", _show(actual))]
    expected_error = {k: v for k, v in want.items()}
    return _m_subset({"$subset": expected_error}, actual["error"], f"{path}/error", h)


def _m_task(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, dict) or actual.get("kind") != "task":
        return [_pair(path, "a task reply", _show(actual))]
    want = {"jobId": {"$type": "string"}, "stepToken": {"$type": "string"}, **spec["$task"]}
    return _m_subset({"$subset": want}, actual, path, h)


def _m_kind_not(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if isinstance(actual, dict) and actual.get("kind") == spec["$kindNot"]:
        return [_pair(path, f"anything but a {spec['$kindNot']} reply", _show(actual))]
    return []


def _m_contains(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, list):
        return [_pair(path, "an array", _show(actual))]
    if any(not match(spec["$contains"], item, f"{path}/{i}", h) for i, item in enumerate(actual)):
        return []
    return [_said(path, f"no element matches {_show(spec['$contains'])}")]


def _m_each(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    # Where the seeds fix the shape of every element but not how many there are (the issues
    # of MODEL_OUTPUT_INVALID, D-ERR-007), a case must not pin the length: $each checks every
    # element, and holds for an empty array.
    if not isinstance(actual, list):
        return [_pair(path, "an array", _show(actual))]
    return [m for i, item in enumerate(actual) for m in match(spec["$each"], item, f"{path}/{i}", h)]


def _m_length(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, list | str) or len(actual) != spec["$length"]:
        return [_pair(path, f"length {spec['$length']}", _show(actual))]
    return []


def _m_json_text(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if not isinstance(actual, str):
        return [_pair(path, "a JSON string", _show(actual))]
    try:
        decoded = json.loads(actual)
    except ValueError:
        return [_pair(path, "a JSON string", "text that does not parse")]
    return match(spec["$jsonText"], decoded, f"{path}(decoded)", h)


def _m_reply(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    try:
        expected = h.lookup(spec["$reply"], spec.get("pointer", ""))
    except _Unresolved as exc:
        return [Mismatch(None, reason=str(exc))]
    return _m_literal(expected, actual, path, h)


def _m_prefix(spec: dict[str, Any], actual: Any, path: str, h: History) -> Mismatches:
    if isinstance(actual, str) and actual.startswith(spec["$prefix"]):
        return []
    return [_pair(path, f"a string starting {_show(spec['$prefix'])}", _show(actual))]


MATCHERS: dict[str, Callable[[dict[str, Any], Any, str, History], Mismatches]] = {
    "$type": _m_type,
    "$subset": _m_subset,
    "$absent": _m_absent,
    "$anyOf": _m_any_of,
    "$allOf": _m_all_of,
    "$not": _m_not,
    "$fresh": _m_fresh,
    "$sameAs": _m_same_as,
    "$error": _m_error,
    "$task": _m_task,
    "$kindNot": _m_kind_not,
    "$contains": _m_contains,
    "$each": _m_each,
    "$length": _m_length,
    "$jsonText": _m_json_text,
    "$reply": _m_reply,
    "$prefix": _m_prefix,
}


def _m_literal(expected: Any, actual: Any, path: str, h: History) -> Mismatches:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [_pair(path, "an object", _show(actual))]
        out: Mismatches = []
        for key in expected:
            sub = f"{path}/{jsonpointer.escape_token(key)}"
            if key not in actual:
                out.append(Mismatch(sub, "a member here", "nothing", "missing"))
            else:
                out.extend(match(expected[key], actual[key], sub, h))
        for key in actual:
            if key not in expected:
                shown = _show(actual[key])
                out.append(Mismatch(f"{path}/{jsonpointer.escape_token(key)}", "no such member", shown,
                                    f"unexpected member {shown}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [_pair(path, "an array", _show(actual))]
        if len(actual) != len(expected):
            return [_pair(path, f"{len(expected)} elements", f"{len(actual)}: {_show(actual)}")]
        return [m for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for m in match(e, a, f"{path}/{i}", h)]
    # JSON equality: true is not 1, "1" is not 1, 1 is 1.0.
    if isinstance(expected, str) or isinstance(actual, str):
        same = isinstance(expected, str) and isinstance(actual, str) and expected == actual
    elif isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    else:
        same = expected == actual and (expected is None) == (actual is None)
    if same:
        return []
    return [_pair(path, _show(expected), _show(actual))]


def match(expected: Any, actual: Any, path: str, history: History) -> Mismatches:
    """Every way ``actual`` differs from the matcher ``expected`` (empty: it matches)."""
    op = _operator(expected, MATCHERS)
    if op is not None:
        return MATCHERS[op](expected, actual, path, history)
    return _m_literal(expected, actual, path, history)


Unresolved = _Unresolved
