"""Decision variants made inside the core: how candidates are judged, and the limits.

Each variant swaps the rule of ``intentref.core.policy.Policy`` that applies its decision
(``rules``, see ``alteration.extend``), or changes a value or a field of the policy the core
is built with, read where the decision is applied.  Every alternative here is one the seeds
also allow: they are silent on it, or (as for evidence per leaf) read that way just as well.
"""

from __future__ import annotations

from typing import Any

from intentref.core import limits
from intentref.suite.alterations._variant_policy import (
    ascii_text_at,
    canonical_dialect_at_the_root,
    every_leaf_has_evidence_at_its_own_path,
    no_implied_issues,
    numbers_in_data_only,
    parse_float_keeping_unsafe_doubles,
    python_regex_compiles,
    python_regex_validator,
    reading_with,
    required_missing_issues,
    schema_violations_are_business,
    surrogates_replaced,
    verdict_issue_at_every_check,
    without_rule,
    without_unexpected_members,
)
from intentref.suite.alterations.alteration import Alteration, policy_changes

# The numeric limits of D-LIM-002..004, scaled.  A case "exactly at the limit is accepted"
# breaks only under smaller limits, "one over is refused" only under larger ones, so both
# are needed; they take the same decisions, so the combined variant keeps the first.
_LIMIT_FIELDS = {
    "max_input_bytes": limits.MAX_INPUT_BYTES,
    "max_context_messages": limits.MAX_CONTEXT_MESSAGES,
    "max_context_bytes": limits.MAX_CONTEXT_BYTES,
    "max_fields_selected": limits.MAX_FIELDS_SELECTED,
    "max_candidate_bytes": limits.MAX_CANDIDATE_BYTES,
    "max_candidate_depth": limits.MAX_CANDIDATE_DEPTH,
    "max_schema_bytes": limits.MAX_SCHEMA_BYTES,
    "max_schema_depth": limits.MAX_SCHEMA_DEPTH,
    "max_schema_nodes": limits.MAX_SCHEMA_NODES,
    "max_top_level_fields": limits.MAX_TOP_LEVEL_FIELDS,
    "max_pattern_length": limits.MAX_PATTERN_LENGTH,
    "max_enum_values": limits.MAX_ENUM_VALUES,
}


def _scaled(numerator: int, denominator: int) -> dict[str, Any]:
    return policy_changes(**{name: value * numerator // denominator for name, value in _LIMIT_FIELDS.items()})


VARIANTS: tuple[Alteration, ...] = (
    Alteration(
        name="evidence-per-leaf",
        decisions=("D-DAT-001",),
        summary="each returned leaf needs an evidence entry at its own path (a parent's entry covers nothing below it)",
        rules={"data_rules": lambda reference, policy: {
            **reference(policy), "every_returned_leaf_has_evidence": every_leaf_has_evidence_at_its_own_path}},
    ),
    Alteration(
        name="open-candidates",
        decisions=("D-COR-002",),
        summary="a candidate member the contract does not name is ignored, not a violation",
        rules={
            "core_violations": lambda reference, policy, candidate: without_unexpected_members(reference(policy, candidate)),
            # Seed 000 fixes the data candidate's five root members ("恰有以下五个根字段"): only deeper levels open.
            "data_contract_violations": lambda reference, policy, candidate, ctx: without_unexpected_members(
                reference(policy, candidate, ctx), keep_root=True),
        },
    ),
    Alteration(
        name="duplicate-keys-last-wins",
        decisions=("D-JSON-001",),
        summary="a repeated member name in a candidate: the last one wins, as JSON.parse reads it",
        rules=reading_with(object_pairs_hook=None),
    ),
    Alteration(
        name="candidate-surrogates-replaced",
        decisions=("D-JSON-002",),
        summary="a lone surrogate in a candidate is read as U+FFFD instead of refused",
        rules=reading_with(lone_surrogates=surrogates_replaced),
    ),
    Alteration(
        name="unsafe-integral-doubles",
        decisions=("D-JSON-003",),
        summary="only integer literals must be safe; 1e20 or 1.7976931348623157e308 written as a double is that double",
        rules=reading_with(parse_float=parse_float_keeping_unsafe_doubles),
    ),
    Alteration(
        name="number-rules-in-data",
        decisions=("D-JSON-004",),
        summary="the number rules hold for values inside data only, and a fault is reported at the value's path",
        rules=reading_with(numbers=numbers_in_data_only),
    ),
    Alteration(
        name="python-regex",
        decisions=("D-SCH-001",),
        summary="pattern and the regex format use Python's re instead of ECMA-262",
        rules={"regex_compiles": lambda reference, policy, pattern: python_regex_compiles(pattern),
               "data_validator": python_regex_validator},
    ),
    Alteration(
        name="formats-annotate",
        decisions=("D-SCH-003",),
        summary="format only annotates; no value is refused for its format",
        rules={"data_validator": lambda reference, policy, schema: reference(policy, schema).evolve(format_checker=None)},
    ),
    Alteration(
        name="canonical-draft7-id",
        decisions=("D-SCH-004",),
        # Seed 003 names the http and https identifiers; the spelling without "#" is the decision.
        summary="$schema accepts only http(s)://json-schema.org/draft-07/schema# (with the #), and only at the root",
        rules={"keyword_checks": lambda reference, policy: {**reference(policy), "$schema": canonical_dialect_at_the_root}},
    ),
    Alteration(
        name="root-description-checks-only",
        decisions=("D-DAT-002",),
        summary="only a root description needs a descriptionCheck; checks of field descriptions are optional",
        rules={"data_rules": without_rule("described_fields_are_checked")},  # R-SRC-005
    ),
    Alteration(
        name="no-implied-issues",
        decisions=("D-DAT-003",),
        summary="violated / undetermined checks imply no issue; with none filed the error carries one generic issue",
        rules={"implied_issues": no_implied_issues},
    ),
    Alteration(
        name="verdict-issue-at-every-check",
        decisions=("D-DAT-003",),
        summary="every violated / undetermined check adds its issue, even beside the candidate's own at that path",
        rules={"implied_issues": verdict_issue_at_every_check},
    ),
    Alteration(
        name="required-not-provided-is-business",
        decisions=("D-DAT-004",),
        summary="a required field reported not_provided is DATA_EXTRACTION_FAILED (DATA_REQUIRED_MISSING), not a contract fault",
        rules={"data_rules": without_rule("required_fields_are_not_omitted"), "business_issues": required_missing_issues},
    ),
    Alteration(
        name="schema-violation-is-business",
        decisions=("D-DAT-005",),
        summary="data the selected schema refuses (a wrong type aside) is DATA_EXTRACTION_FAILED, DATA_CONSTRAINT_VIOLATED at its path",
        rules={"schema_judgement": schema_violations_are_business},
    ),
    Alteration(
        name="smaller-limits",
        decisions=("D-LIM-002", "D-LIM-003", "D-LIM-004"),
        summary="every request, candidate and schema limit at half the reference's value",
        policy=_scaled(1, 2),
    ),
    Alteration(
        name="larger-limits",
        decisions=("D-LIM-002", "D-LIM-003", "D-LIM-004"),
        summary="every request, candidate and schema limit at twice the reference's value",
        policy=_scaled(2, 1),
    ),
    Alteration(
        name="lone-surrogate-one-byte",
        decisions=("D-LIM-006",),
        summary='a lone surrogate counts 1 byte in a UTF-8 limit (a "?", as Python\'s encode(errors="replace") writes it)',
        policy=policy_changes(lone_surrogate_utf8_bytes=1),
    ),
    # The other direction: "one under the limit is accepted" breaks only when a lone surrogate
    # counts for more than three bytes.
    Alteration(
        name="lone-surrogate-as-escape",
        decisions=("D-LIM-006",),
        summary="a lone surrogate counts 6 bytes in a UTF-8 limit (its \\uXXXX escape, as JSON text carries it)",
        policy=policy_changes(lone_surrogate_utf8_bytes=6),
    ),
    Alteration(
        name="ascii-blanks",
        decisions=("D-TXT-001",),
        summary="in a core candidate only ASCII white space is blank (an ideographic space is text)",
        rules={"core_violations": lambda reference, policy, candidate: [
            v for v in reference(policy, candidate) if not ascii_text_at(candidate, v[0])]},
    ),
)
