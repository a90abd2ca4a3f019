"""Strict reading of candidate JSON text (spec: R-RES-056, R-RES-057, R-RES-058, D-JSON-001 .. D-JSON-004).

The candidate arrives as text; the number rules are about that text, so numbers are
checked as literals while parsing, not after a float has already rounded them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from intentref.core.limits import MAX_CANDIDATE_DEPTH, MAX_SAFE_INTEGER


class CandidateTextError(ValueError):
    """The text is not a JSON document the reference accepts.

    ``path`` is where the fault lies: the whole text ("") unless a decision variant reports
    number faults at the value's own path (D-JSON-004).
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def json_type_name(value: Any) -> str:
    """The JSON name of a parsed value's type, as messages about wrong types say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: True is an int to Python
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__  # not JSON at all (an in-process caller's object)


def reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # D-JSON-001: duplicate member names are ambiguous (JSON.parse keeps the last, other
    # parsers the first), so a candidate that has them is not a valid candidate.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CandidateTextError(f"duplicate object key {key!r}")
        out[key] = value
    return out


def parse_int(literal: str) -> int:
    value = int(literal)
    if abs(value) > MAX_SAFE_INTEGER:  # spec: R-RES-057 -- integers within the safe range
        raise CandidateTextError(f"integer {literal} is outside the safe integer range")
    return value


def read_double(literal: str) -> float:
    """A number literal as the double it denotes, when it is one exactly (spec: R-RES-058)."""
    value = float(literal)
    if value != value or value in (float("inf"), float("-inf")):
        raise CandidateTextError(f"number {literal} is not a finite double")
    # spec: R-RES-058 -- the literal must survive a decimal round trip through a double.
    # Both sides are valid decimals: json hands over only number literals, and the value is finite.
    if Decimal(literal) != Decimal(repr(value)):
        raise CandidateTextError(f"number {literal} loses precision as a double")
    return value


def parse_float(literal: str) -> float | int:
    value = read_double(literal)
    if value.is_integer():
        if abs(value) > MAX_SAFE_INTEGER:
            raise CandidateTextError(f"integer value {literal} is outside the safe integer range")
        # D-JSON-003: 1.0 and 1 are the same JavaScript number; -0 serialises as 0.
        return int(value)
    return value


def reject_constant(name: str) -> Any:
    raise CandidateTextError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=reject_duplicates,
    parse_int=parse_int,
    parse_float=parse_float,
    parse_constant=reject_constant,
)


# A lone surrogate can reach a parsed string only as a raw code point (caught by encoding the
# text once) or as a \uD800-\uDFFF escape; texts with neither skip the per-string check.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_candidate(text: str, max_depth: int = MAX_CANDIDATE_DEPTH) -> Any:
    """Parse ``text`` strictly, or raise CandidateTextError (``max_depth``: D-LIM-003's nesting limit)."""
    check_text(text)
    value = decode(_DECODER, text, max_depth)
    check_depth(value, check_strings=SURROGATE_ESCAPE.search(text) is not None, max_depth=max_depth)
    return value


def decode(decoder: json.JSONDecoder, text: str, max_depth: int) -> Any:
    """``decoder.decode(text)``, its failures as CandidateTextError (one reading for every path)."""
    try:
        return decoder.decode(text)
    except CandidateTextError:
        raise
    except RecursionError:
        raise CandidateTextError(f"nesting deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise CandidateTextError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def check_depth(root: Any, check_strings: bool, max_depth: int = MAX_CANDIDATE_DEPTH) -> None:
    # Iterative: a recursive walk is what deep nesting is designed to break.  Only
    # containers are pushed; strings are looked at only when an escape could hide a surrogate.
    if not isinstance(root, dict | list):
        if check_strings and isinstance(root, str):
            check_text(root)
        return
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise CandidateTextError(f"nesting deeper than {max_depth} levels")
        values = node.values() if isinstance(node, dict) else node
        if check_strings and isinstance(node, dict):
            for key in node:
                check_text(key)
        for value in values:
            if isinstance(value, dict | list):
                stack.append((value, depth + 1))
            elif check_strings and isinstance(value, str):
                check_text(value)


def check_text(text: str) -> None:
    # D-JSON-002: "\ud800" is valid JSON but not a character; a host that writes it has
    # produced text no UTF-8 consumer can round-trip.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise CandidateTextError("string holds a lone surrogate") from None


def dumps_compact(value: Any) -> str:
    """The wire form used for payload strings and MCP text content."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
