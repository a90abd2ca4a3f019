"""Definitions in the supported subset, and values valid against them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from intentref.core import jsonpointer
from intentref.core.data_candidate import leaves as judged_leaves
from intentref.core.limits import MAX_SAFE_INTEGER
from intentref.suite.generators.draw import Draw, subset
from intentref.suite.generators.texts import ONE_BYTE, sentence, unique_keys, word

Json = Any


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
