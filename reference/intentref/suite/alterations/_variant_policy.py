"""The core's rules taken another way: what decision variants swap into the reference's ``Policy``.

Each rule a decision shapes is a method of ``intentref.core.policy.Policy``; a variant swaps it
for a function here (``Alteration.rules``, combined by ``alteration.extend``), so the
alternatives live beside the catalogue that names them and no rule reads a flag.
``VariantPolicy`` is the policy every altered reference is built with: the reference's, with
its candidate-text reading also written as a table of parts (``READING``), because the four
readings of D-JSON-001 .. D-JSON-004 combine inside one decoder.  ``VariantPolicy()`` judges
exactly as the reference does (``tests/conformance/test_variants_core.py``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from intentref.core import jsonpointer, jsontext, schema_subset
from intentref.core.core_candidate import UNEXPECTED_MEMBER
from intentref.core.data_candidate import (
    VERDICT_ISSUE_CODES,
    DataContext,
    DataJudgement,
    Rule,
    Violation,
    filed_issues,
    leaves,
)
from intentref.core.errors import Issue
from intentref.core.jsontext import CandidateTextError
from intentref.core.limits import MAX_COMBINATION_ITEMS, MAX_SAFE_INTEGER, MIN_COMBINATION_ITEMS, well_formed
from intentref.core.policy import Policy
from intentref.core.schema_subset import DataError, KeywordCheck, SchemaPolicy, SubSchemas
from intentref.core.text import has_text
from intentref.suite.cases.values import well_formed_json

# The function an override replaces, as ``alteration.extend`` hands it to the override.
Reference = Callable[..., Any]


@dataclass(frozen=True)
class VariantPolicy(Policy):
    """The reference's policy, with its candidate-text reading as a table a variant can swap parts of:
    a variant that swaps a part also swaps ``read_candidate`` for ``read_by_parts``."""

    def candidate_reading(self) -> Mapping[str, Any]:
        """D-JSON-001 .. D-JSON-004, part by part: the reference's strict reading."""
        return READING


# --------------------------------------------------------------------------- candidate text


class _FaultyInt(int):
    problem = ""


class _FaultyFloat(float):
    problem = ""


def parse_float_keeping_unsafe_doubles(literal: str) -> float | int:
    """D-JSON-003 the other way: a double written as one stays that double, however large."""
    value = jsontext.read_double(literal)
    if value.is_integer() and abs(value) > MAX_SAFE_INTEGER:
        return value
    return jsontext.parse_float(literal)


def every_literal(parse_int: Callable[[str], Any], parse_float: Callable[[str], Any]) -> tuple[Any, Any, Any]:
    """D-JSON-004: the number rules hold for every literal; a fault fails the whole text at once."""
    return parse_int, parse_float, lambda value: value


def numbers_in_data_only(parse_int: Callable[[str], Any], parse_float: Callable[[str], Any]) -> tuple[Any, Any, Any]:
    """D-JSON-004 the other way: a faulty literal is kept aside and judged where it stands; inside
    ``data`` it is a fault at its path, elsewhere a plain number."""
    faulty: list[Any] = []

    def kept_aside(parse: Callable[[str], Any], kind: type[_FaultyInt | _FaultyFloat]) -> Callable[[str], Any]:
        def read(literal: str) -> Any:
            try:
                return parse(literal)
            except CandidateTextError as exc:
                value = kind(literal)
                value.problem = str(exc)
                faulty.append(value)
                return value

        return read

    def judged(value: Any) -> Any:
        return _judge_numbers_in_data(value) if faulty else value

    return kept_aside(parse_int, _FaultyInt), kept_aside(parse_float, _FaultyFloat), judged


def surrogates_refused(text: str, decode: Callable[[str], Any], max_depth: int) -> Any:
    """D-JSON-002: a lone surrogate, raw or escaped, makes the candidate invalid."""
    jsontext.check_text(text)
    value = decode(text)
    jsontext.check_depth(value, check_strings=jsontext.SURROGATE_ESCAPE.search(text) is not None, max_depth=max_depth)
    return value


def surrogates_replaced(text: str, decode: Callable[[str], Any], max_depth: int) -> Any:
    """D-JSON-002 the other way: each lone surrogate, raw or escaped, is read as U+FFFD."""
    text = well_formed(text)
    value = decode(text)
    jsontext.check_depth(value, check_strings=False, max_depth=max_depth)
    # Recursion is safe here: the depth was checked first.
    return well_formed_json(value) if jsontext.SURROGATE_ESCAPE.search(text) is not None else value


# The reference's reading of candidate text, part by part (``jsontext.parse_candidate``).
READING: Final[Mapping[str, Any]] = {
    "object_pairs_hook": jsontext.reject_duplicates,  # D-JSON-001; None: the last member wins
    "lone_surrogates": surrogates_refused,  # D-JSON-002
    "parse_float": jsontext.parse_float,  # D-JSON-003
    "numbers": every_literal,  # D-JSON-004
}


def read_by_parts(reference: Reference, policy: VariantPolicy, text: str) -> Any:
    """``read_candidate`` by the parts of ``policy.candidate_reading()``."""
    reading = policy.candidate_reading()
    parse_int, parse_float, judged = reading["numbers"](jsontext.parse_int, reading["parse_float"])
    decoder = json.JSONDecoder(object_pairs_hook=reading["object_pairs_hook"], parse_int=parse_int,
                               parse_float=parse_float, parse_constant=jsontext.reject_constant)  # fmt: skip
    depth = policy.max_candidate_depth
    return judged(reading["lone_surrogates"](text, lambda t: jsontext.decode(decoder, t, depth), depth))


def reading_with(**parts: Any) -> dict[str, Any]:
    """The ``rules`` of a variant that reads candidate text with ``parts`` swapped."""
    unknown = set(parts) - set(READING)
    if unknown:
        raise TypeError(f"not a part of the candidate reading: {', '.join(sorted(unknown))}")
    return {"candidate_reading": lambda reference, policy: {**reference(policy), **parts}, "read_candidate": read_by_parts}


def _judge_numbers_in_data(node: Any, path: str = "", in_data: bool = False) -> Any:
    """D-JSON-004 the other way: a faulty number inside the root member ``data`` is a fault at
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


# --------------------------------------------------------------------------- the contracts


def without_unexpected_members(violations: list[Violation], keep_root: bool = False) -> list[Violation]:
    """D-COR-002 the other way (open candidates): unknown members are ignored, not violations
    (``keep_root``: except members of the root object)."""
    return [v for v in violations
            if not v[1].startswith(UNEXPECTED_MEMBER + " ") or (keep_root and v[0].count("/") == 1)]  # fmt: skip


_ASCII_WHITESPACE: Final = " \t\n\v\f\r"


def ascii_text_at(candidate: Any, path: str) -> bool:
    """D-TXT-001 the other way: the value at ``path`` is blank to ECMA-262 but not to ASCII."""
    tokens = jsonpointer.split(path)
    value = candidate if tokens is None else jsonpointer.resolve(candidate, tokens)
    return isinstance(value, str) and not has_text(value) and bool(value.strip(_ASCII_WHITESPACE))


def every_leaf_has_evidence_at_its_own_path(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    """D-DAT-001 the other way: each returned leaf needs an evidence entry at its own path."""
    data = c.get("data")
    if not isinstance(data, dict):
        return
    evidence = c.get("evidence")
    entries = evidence if isinstance(evidence, list) else []
    exact = {e["path"] for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)}
    for leaf, _value in sorted(leaves(data)):
        if leaf not in exact:
            yield leaf, "this returned value has no evidence entry at its own path."


def _required_fields_not_provided(c: dict[str, Any], ctx: DataContext, filed: list[Issue]) -> Iterator[Issue]:
    """D-DAT-004 the other way: a required field reported not_provided / not_applicable is the
    business fault DATA_REQUIRED_MISSING (unless the candidate filed an issue at its path)."""
    for entry in c["fieldResults"]:
        name = ctx.selected_field_of(entry["path"])
        if (name is not None and entry["status"] in ("not_provided", "not_applicable")
                and ctx.definition.is_required(name) and not any(i.path == entry["path"] for i in filed)):  # fmt: skip
            yield Issue("DATA_REQUIRED_MISSING", "business_information", entry["path"], entry["explanation"])


# --------------------------------------------------------------------------- the schema subset

# D-SCH-004 the other way: only the canonical spellings (with the trailing "#").
CANONICAL_DRAFT7_IDS: Final = frozenset(i for i in schema_subset.DRAFT7_IDS if i.endswith("#"))


def canonical_dialect_at_the_root(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if path != "/$schema":
        raise schema_subset.unsupported(path, "$schema is accepted only at the root of a definition.")
    if not isinstance(value, str) or value not in CANONICAL_DRAFT7_IDS:  # a list or dict is not hashable
        raise schema_subset.unsupported(path, "$schema accepts only the Draft-7 identifier (http or https).")
    yield from ()


def _combination_length_limited(reference: KeywordCheck, value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    if isinstance(value, list) and not MIN_COMBINATION_ITEMS <= len(value) <= MAX_COMBINATION_ITEMS:
        raise schema_subset.too_large(path, f"a combination holds {MIN_COMBINATION_ITEMS} to {MAX_COMBINATION_ITEMS} schemas.")
    return reference(value, path, policy)


def _empty_enum_accepted(reference: KeywordCheck, value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
    # Draft 7 admits no value for ``enum: []``; the reference refuses it only by decision.
    return iter(()) if value == [] else reference(value, path, policy)


def empty_enum_accepted(reference: Reference, policy: Policy) -> Mapping[str, KeywordCheck]:
    checks = reference(policy)
    return {**checks, "enum": functools.partial(_empty_enum_accepted, checks["enum"])}


def python_regex_compiles(pattern: str) -> bool:
    """D-SCH-001 the other way: whether ``pattern`` compiles as Python ``re``."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


@functools.cache
def _python_re_formats() -> Any:
    """The reference's format checker with the ``regex`` format read by Python's ``re``."""
    from jsonschema import FormatChecker

    _draft7, _ecma, formats = schema_subset.validation_kit()
    checker = FormatChecker(formats=())
    checker.checkers = {**formats.checkers, "regex": (lambda i: not isinstance(i, str) or python_regex_compiles(i), ())}
    return checker


# --------------------------------------------------------------------------- overrides of Policy's rules
# Each is called with the reference's rule first (``alteration.extend``); the catalogue entries
# that use them are in ``_variants_core`` and ``_variants_boundary``.


def without_rule(name: str) -> Callable[[Reference, Policy], Mapping[str, Rule]]:
    """An override of ``data_rules`` that leaves out the rule ``name`` (D-DAT-002, D-DAT-004 the other way)."""
    return lambda reference, policy: {n: rule for n, rule in reference(policy).items() if n != name}


def detail_verbatim(reference: Reference, policy: Policy, code: str, detail: str | None) -> list[Issue]:
    """D-CAN-002 the other way: any non-empty detail is kept, a blank one as it came."""
    if detail and not detail.strip():
        return [Issue(code, "processing", None, detail)]
    answer: list[Issue] = reference(policy, code, detail)
    return answer


def schema_violations_are_business(reference: Reference, policy: Policy, errors: list[DataError]) -> DataJudgement:
    """D-DAT-005 the other way: a business fault, DATA_CONSTRAINT_VIOLATED at its path, except a
    value of the wrong type (seed 004 names a field type error MODEL_OUTPUT_INVALID)."""
    if any(e.keyword == "type" for e in errors):
        answer: DataJudgement = reference(policy, errors)
        return answer
    return DataJudgement([], [Issue("DATA_CONSTRAINT_VIOLATED", "definition", e.path, e.message) for e in errors], None)


def combination_length_limited(reference: Reference, policy: Policy) -> Mapping[str, KeywordCheck]:
    """D-SCH-005 the other way: a combination's length is a limit (LIMIT_EXCEEDED)."""
    checks = dict(reference(policy))
    for keyword in ("anyOf", "oneOf", "allOf"):
        checks[keyword] = functools.partial(_combination_length_limited, checks[keyword])
    return checks


def required_missing_issues(reference: Reference, policy: Policy, candidate: dict[str, Any],
                            ctx: DataContext) -> list[Issue]:  # fmt: skip
    """D-DAT-004 the other way, in the issues: after the filed ones, DATA_REQUIRED_MISSING for each
    required field reported not_provided; the failed checks' issues come after both."""
    issues = filed_issues(candidate)
    issues.extend(_required_fields_not_provided(candidate, ctx, issues))
    return policy.implied_issues(candidate, issues)


def no_implied_issues(reference: Reference, policy: Policy, candidate: dict[str, Any], issues: list[Issue]) -> list[Issue]:
    """D-DAT-003 the other way: failed checks imply no issue; with none at all, the error still
    needs one (R-DAT-018), a generic one for the first failed check."""
    failed = [c for c in candidate["descriptionChecks"] if c["verdict"] in VERDICT_ISSUE_CODES]
    if issues or not failed:
        return issues
    return [Issue(VERDICT_ISSUE_CODES[failed[0]["verdict"]], "definition", None, "a description check was not satisfied.")]


def verdict_issue_at_every_check(reference: Reference, policy: Policy, candidate: dict[str, Any],
                                 issues: list[Issue]) -> list[Issue]:  # fmt: skip
    """D-DAT-003 the other way: every failed check adds its issue, even beside one filed at its path."""
    for check in candidate["descriptionChecks"]:
        code = VERDICT_ISSUE_CODES.get(check["verdict"])
        if code is not None:
            issues.append(Issue(code, "definition", check["path"], check["explanation"]))
    return issues


def python_regex_validator(reference: Reference, policy: Policy, schema: Any) -> Any:
    """D-SCH-001 the other way, in the data: plain Draft 7 (Python ``re`` for ``pattern``), with
    the ``regex`` format read by ``re`` too wherever formats are asserted at all."""
    given = reference(policy, schema)
    draft7, _ecma, _formats = schema_subset.validation_kit()
    return draft7(given.schema, format_checker=None if given.format_checker is None else _python_re_formats())


