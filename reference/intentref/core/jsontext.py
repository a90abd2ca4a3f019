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

from intentref.core import jsonpointer
from intentref.core.limits import MAX_CANDIDATE_DEPTH, MAX_SAFE_INTEGER, well_formed
from intentref.core.policy import REFERENCE_POLICY, Policy


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


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # D-JSON-001: duplicate member names are ambiguous (JSON.parse keeps the last, other
    # parsers the first), so a candidate that has them is not a valid candidate.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CandidateTextError(f"duplicate object key {key!r}")
        out[key] = value
    return out


def _parse_int(literal: str) -> int:
    value = int(literal)
    if abs(value) > MAX_SAFE_INTEGER:  # spec: R-RES-057 -- integers within the safe range
        raise CandidateTextError(f"integer {literal} is outside the safe integer range")
    return value


def _parse_float(literal: str, unsafe_integral_refused: bool = True) -> float | int:
    value = float(literal)
    if value != value or value in (float("inf"), float("-inf")):
        raise CandidateTextError(f"number {literal} is not a finite double")
    # spec: R-RES-058 -- the literal must survive a decimal round trip through a double.
    # Both sides are valid decimals: json hands over only number literals, and the value is finite.
    if Decimal(literal) != Decimal(repr(value)):
        raise CandidateTextError(f"number {literal} loses precision as a double")
    if value.is_integer():
        if abs(value) > MAX_SAFE_INTEGER:
            if not unsafe_integral_refused:
                return value  # a variant of D-JSON-003: a double written as one stays that double
            raise CandidateTextError(f"integer value {literal} is outside the safe integer range")
        # D-JSON-003: 1.0 and 1 are the same JavaScript number; -0 serialises as 0.
        return int(value)
    return value


def _reject_constant(name: str) -> Any:
    raise CandidateTextError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_reject_duplicates,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_reject_constant,
)


# A lone surrogate can reach a parsed string only as a raw code point (caught by encoding the
# text once) or as a \uD800-\uDFFF escape; texts with neither skip the per-string check.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_candidate(text: str, policy: Policy = REFERENCE_POLICY) -> Any:
    """Parse ``text`` strictly under ``policy``, or raise CandidateTextError."""
    if not _reads_as_reference(policy):
        return _parse_as_chosen(text, policy)
    _check_text(text)
    value = _decode(_DECODER, text, MAX_CANDIDATE_DEPTH)
    _check_depth(value, check_strings=_SURROGATE_ESCAPE.search(text) is not None)
    return value


def _decode(decoder: json.JSONDecoder, text: str, max_depth: int) -> Any:
    """``decoder.decode(text)``, its failures as CandidateTextError (one reading for every path)."""
    try:
        return decoder.decode(text)
    except CandidateTextError:
        raise
    except RecursionError:
        raise CandidateTextError(f"nesting deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise CandidateTextError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


# --- the same reading under other decisions (decision variants, D-CNF-040) ------------------


class _FaultyInt(int):
    problem = ""


class _FaultyFloat(float):
    problem = ""


def _reads_as_reference(policy: Policy) -> bool:
    """Whether ``policy`` reads candidate text as the reference does (D-JSON-001 .. D-JSON-004,
    D-LIM-003): then the one prebuilt decoder does, the fast path."""
    return (policy.duplicate_keys_refused and policy.candidate_lone_surrogates_refused
            and policy.unsafe_integral_doubles_refused and policy.number_rules_on_every_literal
            and policy.max_candidate_depth == MAX_CANDIDATE_DEPTH)  # fmt: skip


def _parse_as_chosen(text: str, chosen: Policy) -> Any:
    """``parse_candidate`` with the decisions of ``chosen``; the reference path stays the fast one."""
    faulty: list[Any] = []
    refuse_unsafe = chosen.unsafe_integral_doubles_refused

    def parse_int(literal: str) -> Any:
        try:
            return _parse_int(literal)
        except CandidateTextError as exc:
            return _faulty(_FaultyInt(literal), str(exc))

    def parse_float(literal: str) -> Any:
        try:
            return _parse_float(literal, refuse_unsafe)
        except CandidateTextError as exc:
            return _faulty(_FaultyFloat(literal), str(exc))

    def _faulty(value: Any, problem: str) -> Any:
        value.problem = problem
        faulty.append(value)
        return value

    everywhere = chosen.number_rules_on_every_literal
    decoder = json.JSONDecoder(
        object_pairs_hook=_reject_duplicates if chosen.duplicate_keys_refused else None,
        parse_int=_parse_int if everywhere else parse_int,
        parse_float=(lambda lit: _parse_float(lit, refuse_unsafe)) if everywhere else parse_float,
        parse_constant=_reject_constant,
    )
    surrogates_refused = chosen.candidate_lone_surrogates_refused
    if surrogates_refused:
        _check_text(text)
    else:
        text = well_formed(text)  # a variant of D-JSON-002: raw lone surrogates read as U+FFFD
    value = _decode(decoder, text, chosen.max_candidate_depth)
    escapes = _SURROGATE_ESCAPE.search(text) is not None
    _check_depth(value, check_strings=escapes and surrogates_refused, max_depth=chosen.max_candidate_depth)
    if escapes and not surrogates_refused:
        value = _well_formed_strings(value)
    if faulty:
        value = _judge_numbers_in_data(value)
    return value


def _well_formed_strings(node: Any) -> Any:
    # Recursion is safe here: the depth was checked first.
    if isinstance(node, str):
        return well_formed(node)
    if isinstance(node, dict):
        return {well_formed(k): _well_formed_strings(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_well_formed_strings(v) for v in node]
    return node


def _judge_numbers_in_data(node: Any, path: str = "", in_data: bool = False) -> Any:
    """A variant of D-JSON-004: a faulty number inside the root member ``data`` is a fault at
    its path; one elsewhere is left to the contract rules as a plain number."""
    if isinstance(node, _FaultyInt | _FaultyFloat):
        if in_data:
            raise CandidateTextError(node.problem, path)
        return int(node) if isinstance(node, int) else float(node)
    if isinstance(node, dict):
        return {k: _judge_numbers_in_data(v, f"{path}/{jsonpointer.escape_token(k)}", in_data or (path == "" and k == "data"))
                for k, v in node.items()}  # fmt: skip
    if isinstance(node, list):
        return [_judge_numbers_in_data(v, f"{path}/{i}", in_data) for i, v in enumerate(node)]
    return node


def _check_depth(root: Any, check_strings: bool, max_depth: int = MAX_CANDIDATE_DEPTH) -> None:
    # Iterative: a recursive walk is what deep nesting is designed to break.  Only
    # containers are pushed; strings are looked at only when an escape could hide a surrogate.
    if not isinstance(root, dict | list):
        if check_strings and isinstance(root, str):
            _check_text(root)
        return
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise CandidateTextError(f"nesting deeper than {max_depth} levels")
        values = node.values() if isinstance(node, dict) else node
        if check_strings and isinstance(node, dict):
            for key in node:
                _check_text(key)
        for value in values:
            if isinstance(value, dict | list):
                stack.append((value, depth + 1))
            elif check_strings and isinstance(value, str):
                _check_text(value)


def _check_text(text: str) -> None:
    # D-JSON-002: "\ud800" is valid JSON but not a character; a host that writes it has
    # produced text no UTF-8 consumer can round-trip.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise CandidateTextError("string holds a lone surrogate") from None


def dumps_compact(value: Any) -> str:
    """The wire form used for payload strings and MCP text content."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
