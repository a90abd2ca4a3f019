"""The reference's ``Policy`` with decisions taken another way: what decision variants build.

The core applies the reference's rules only; each rule a decision shapes is a method of
``intentref.core.policy.Policy`` (reading candidate text, the core contract, the data
contract's rule table, business issues, the schema verdict, the keyword table, regular
expressions, the data validator).  ``VariantPolicy`` is that policy with one field per
alternative reading the seeds also allow, every default the reference's, and each method
overridden here to read its fields.  So the alternatives live beside the catalogue that
names them (``_variants_core``), not as branches inside the rules.

The Bridge's decisions are methods of ``intentref.bridge_store.JobStore``; a variant of one
swaps that method (``_variants_bridge``), with no field here.

A field left at its default changes nothing: ``VariantPolicy()`` judges exactly as the
reference does, which ``tests/conformance/test_variants_core.py`` checks, and every
method falls back to the reference's own rule whenever its fields are at their defaults.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
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


@dataclass(frozen=True)
class VariantPolicy(Policy):
    """The reference's policy, and the core decisions a variant may take another way."""

    # D-DAT-001: evidence at a parent path covers every leaf below it.  False: each returned
    # leaf needs an evidence entry at its own path.
    evidence_covers_children: bool = True
    # D-COR-002: a member the contract does not name is a violation.  False: it is ignored.
    closed_candidates: bool = True
    # D-JSON-001: a repeated member name makes a candidate invalid.  False: the last one wins.
    duplicate_keys_refused: bool = True
    # D-SCH-003: every supported format is asserted.  False: formats only annotate.
    formats_asserted: bool = True
    # D-DAT-005: a schema violation of `data` is a contract violation (repairable).  False: it
    # is a business fault, DATA_EXTRACTION_FAILED with DATA_CONSTRAINT_VIOLATED at its path.
    schema_violation_is_contract_fault: bool = True
    # D-DAT-003: violated / undetermined checks add an implied issue.  False: they do not add
    # one, and the candidate's own issues are all the error carries (or a generic one).
    implied_verdict_issues: bool = True
    # D-DAT-003: the implied issue is left out where the candidate filed one at the check's
    # path.  True: every violated / undetermined check adds its issue regardless.
    verdict_issue_at_every_check: bool = False
    # D-DAT-004: a required field cannot be not_provided.  False: it may, and that is a
    # business fault (DATA_REQUIRED_MISSING).
    required_not_provided_is_contract_fault: bool = True
    # D-JSON-002: a lone surrogate in a candidate makes it invalid.  False: each one is read
    # as U+FFFD, as a JavaScript host's TextDecoder would hand the text over.
    candidate_lone_surrogates_refused: bool = True
    # D-JSON-003: an integral value beyond the safe range is refused however it is written.
    # False: only integer *literals* must be safe; 1e20 written as a double is that double.
    unsafe_integral_doubles_refused: bool = True
    # D-JSON-004: the number rules hold for every number literal of the candidate text (the
    # whole text is at fault).  False: they hold for the values inside `data` only, and the
    # fault is reported at that value's path.
    number_rules_on_every_literal: bool = True
    # D-SCH-001: `pattern` and the `regex` format follow ECMA-262 (regress).  False: Python's
    # `re` (what a plain Draft-7 validator in Python does).
    ecma_regex: bool = True
    # D-SCH-004: `$schema` takes http and https, each with or without the trailing `#`, at
    # any node.  False: only the two canonical spellings, with the `#`, and only at the root.
    any_draft7_id_spelling: bool = True
    # D-DAT-002: each returned selected field with a description needs a check at its path.
    # False: only the root description needs one (R-SRC-005); field checks are optional.
    field_descriptions_need_checks: bool = True
    # D-TXT-001: "blank" is ECMA-262 white space, as JavaScript's trim() reads it.  False: only
    # ASCII white space is blank in a core candidate's texts (an ideographic space is text).
    ecma_blank_texts: bool = True
    # D-SCH-005: an anyOf/oneOf/allOf array that is empty or longer than 16 is
    # SCHEMA_UNSUPPORTED.  True: LIMIT_EXCEEDED (the length read as a resource limit).
    combination_length_is_a_limit: bool = False
    # D-SCH-012: an empty enum is refused at construction.  True: accepted (it admits no value).
    empty_enum_accepted: bool = False
    # D-REQ-002: selected fields are ordered as the definition orders them.  False: in the
    # order the request first lists them.
    selection_in_definition_order: bool = True
    # D-ERR-007: a contract fault has one issue per violation, pointing into the candidate.
    # False: one issue with path null for the whole candidate, in the repair and the error.
    contract_issues_point_into_candidate: bool = True
    # D-CAN-002: a non-blank cancel detail is the ending's one issue ("non-blank").
    # "dropped": never kept; "verbatim": any non-empty detail is kept, blank or not.
    cancel_detail: str = "non-blank"

    # --- the request, the repair, the ending (D-REQ-002, D-ERR-007, D-CAN-002) --------------

    def select_fields(self, requested: list[str], defined: tuple[str, ...]) -> tuple[str, ...]:
        if self.selection_in_definition_order:
            return super().select_fields(requested, defined)
        return tuple(dict.fromkeys(requested))

    def contract_issues(self, violations: list[Violation]) -> list[Issue]:
        if self.contract_issues_point_into_candidate:
            return super().contract_issues(violations)
        return [Issue("MODEL_OUTPUT_INVALID", "processing", None, "The candidate breaks the contract.")]

    def detail_issues(self, code: str, detail: str | None) -> list[Issue]:
        if self.cancel_detail == "dropped":
            return []
        if self.cancel_detail == "verbatim" and detail and not detail.strip():
            return [Issue(code, "processing", None, detail)]  # a blank detail, kept as it came
        return super().detail_issues(code, detail)

    # --- candidate text (D-JSON-001 .. D-JSON-004) ------------------------------------------

    def read_candidate(self, text: str) -> Any:
        if (self.duplicate_keys_refused and self.candidate_lone_surrogates_refused
                and self.unsafe_integral_doubles_refused and self.number_rules_on_every_literal):  # fmt: skip
            return super().read_candidate(text)
        return _read_candidate(text, self)

    # --- the core contract (D-COR-002, D-TXT-001) -------------------------------------------

    def core_violations(self, candidate: Any) -> list[Violation]:
        found = super().core_violations(candidate)
        if not self.closed_candidates:
            found = without_unexpected_members(found)
        if not self.ecma_blank_texts:
            found = [v for v in found if not _ascii_text_at(candidate, v[0])]
        return found

    # --- the data contract (D-COR-002, D-DAT-001 .. D-DAT-005) ------------------------------

    def data_rules(self) -> Mapping[str, Rule]:
        rules = dict(super().data_rules())
        if not self.evidence_covers_children:
            rules["every_returned_leaf_has_evidence"] = every_leaf_has_evidence_at_its_own_path
        if not self.field_descriptions_need_checks:
            del rules["described_fields_are_checked"]  # only the root description needs a check
        if not self.required_not_provided_is_contract_fault:
            del rules["required_fields_are_not_omitted"]  # a business fault instead (below)
        return rules

    def data_contract_violations(self, candidate: dict[str, Any], ctx: DataContext) -> list[Violation]:
        found = super().data_contract_violations(candidate, ctx)
        if not self.closed_candidates:
            # Seed 000 fixes the five root members ("恰有以下五个根字段"); only deeper levels open.
            found = without_unexpected_members(found, keep_root=True)
        return found

    def business_issues(self, candidate: dict[str, Any], ctx: DataContext) -> list[Issue]:
        if (self.implied_verdict_issues and not self.verdict_issue_at_every_check
                and self.required_not_provided_is_contract_fault):  # fmt: skip
            return super().business_issues(candidate, ctx)
        issues = filed_issues(candidate)
        if not self.required_not_provided_is_contract_fault:
            issues.extend(_required_fields_not_provided(candidate, ctx, issues))
        if self.implied_verdict_issues:
            for check in candidate["descriptionChecks"]:
                code = VERDICT_ISSUE_CODES.get(check["verdict"])
                own = not self.verdict_issue_at_every_check and any(i.path == check["path"] for i in issues)
                if code is not None and not own:
                    issues.append(Issue(code, "definition", check["path"], check["explanation"]))
        elif not issues:
            # Verdicts imply no issues; the error still needs one (R-DAT-018).
            failed = [c for c in candidate["descriptionChecks"] if c["verdict"] in VERDICT_ISSUE_CODES]
            if failed:
                issues.append(Issue(VERDICT_ISSUE_CODES[failed[0]["verdict"]], "definition", None,
                                    "a description check was not satisfied."))  # fmt: skip
        return issues

    def schema_judgement(self, errors: list[DataError]) -> DataJudgement:
        if not self.schema_violation_is_contract_fault and not any(e.keyword == "type" for e in errors):
            # A business fault, except a value of the wrong type (seed 004 names a field type
            # error MODEL_OUTPUT_INVALID).
            return DataJudgement([], [Issue("DATA_CONSTRAINT_VIOLATED", "definition", e.path, e.message)
                                      for e in errors], None)  # fmt: skip
        return super().schema_judgement(errors)

    # --- the schema subset (D-SCH-001, D-SCH-003, D-SCH-004) --------------------------------

    def keyword_checks(self) -> Mapping[str, KeywordCheck]:
        checks = dict(super().keyword_checks())
        if not self.any_draft7_id_spelling:
            checks["$schema"] = _canonical_dialect_at_the_root
        if self.combination_length_is_a_limit:
            for keyword in ("anyOf", "oneOf", "allOf"):
                checks[keyword] = functools.partial(_combination_length_limited, checks[keyword])
        if self.empty_enum_accepted:
            checks["enum"] = functools.partial(_empty_enum_accepted, checks["enum"])
        return checks

    def regex_compiles(self, pattern: str) -> bool:
        return super().regex_compiles(pattern) if self.ecma_regex else python_regex_compiles(pattern)

    def data_validator(self, schema: Any) -> Any:
        if self.ecma_regex and self.formats_asserted:
            return super().data_validator(schema)
        draft7, ecma, formats = schema_subset.validation_kit()
        cls = ecma if self.ecma_regex else draft7
        if not self.formats_asserted:
            return cls(schema)  # formats only annotate
        return cls(schema, format_checker=formats if self.ecma_regex else _python_re_formats())


# --------------------------------------------------------------------------- candidate text


class _FaultyInt(int):
    problem = ""


class _FaultyFloat(float):
    problem = ""


def _parse_float_keeping_unsafe_doubles(literal: str) -> float | int:
    """D-JSON-003 the other way: a double written as one stays that double, however large."""
    value = jsontext.read_double(literal)
    if value.is_integer() and abs(value) > MAX_SAFE_INTEGER:
        return value
    return jsontext.parse_float(literal)


def _read_candidate(text: str, policy: VariantPolicy) -> Any:
    """``parse_candidate`` under the variant's readings of D-JSON-001 .. D-JSON-004."""
    faulty: list[Any] = []
    parse_float = jsontext.parse_float if policy.unsafe_integral_doubles_refused else _parse_float_keeping_unsafe_doubles

    def faulty_int(literal: str) -> Any:
        try:
            return jsontext.parse_int(literal)
        except CandidateTextError as exc:
            return _faulty(_FaultyInt(literal), str(exc))

    def faulty_float(literal: str) -> Any:
        try:
            return parse_float(literal)
        except CandidateTextError as exc:
            return _faulty(_FaultyFloat(literal), str(exc))

    def _faulty(value: Any, problem: str) -> Any:
        value.problem = problem
        faulty.append(value)
        return value

    everywhere = policy.number_rules_on_every_literal
    decoder = json.JSONDecoder(
        object_pairs_hook=jsontext.reject_duplicates if policy.duplicate_keys_refused else None,
        parse_int=jsontext.parse_int if everywhere else faulty_int,
        parse_float=parse_float if everywhere else faulty_float,
        parse_constant=jsontext.reject_constant,
    )
    surrogates_refused = policy.candidate_lone_surrogates_refused
    if surrogates_refused:
        jsontext.check_text(text)
    else:
        text = well_formed(text)  # D-JSON-002 the other way: raw lone surrogates read as U+FFFD
    value = jsontext.decode(decoder, text, policy.max_candidate_depth)
    escapes = jsontext.SURROGATE_ESCAPE.search(text) is not None
    jsontext.check_depth(value, check_strings=escapes and surrogates_refused, max_depth=policy.max_candidate_depth)
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


def _ascii_text_at(candidate: Any, path: str) -> bool:
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


def _canonical_dialect_at_the_root(value: Any, path: str, policy: SchemaPolicy) -> SubSchemas:
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
