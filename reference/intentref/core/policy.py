"""The reference's decisions where the seeds are silent, as one value passed to what applies them.

A ``Policy`` holds the decisions (``spec/decisions*.md``) the core and the Bridge apply: the
numeric limits (D-LIM-*) and every decision a conformance variant takes another way.  An
``Intent``, a ``Job``, a ``Definition`` and a Bridge are each *given* their policy when built
and keep it; nothing is ambient (``tests/spec/test_no_ambient_policy.py``).  The suite builds
the reference with another policy (``intentref.suite.alterations.variants``) to prove which
cases rest on a decision.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from intentref.core import core_candidate, data_candidate, jsontext, limits, schema_subset
from intentref.core.data_candidate import DataContext, DataJudgement
from intentref.core.errors import Issue, self_issue
from intentref.core.limits import well_formed
from intentref.core.schema_subset import DataError, KeywordCheck
from intentref.core.writer import REFERENCE_WRITER, Writer

Violation = tuple[str, str]

# D-ERR-007, D-PAY-004: a contract fault lists at most this many issues, in the repair and in
# the error alike; the first ones are enough to act on, and a model given hundreds repairs worse.
MAX_CONTRACT_ISSUES: Final = 32


@dataclass(frozen=True)
class Policy:
    """The decisions one implementation applies; every default is what the reference decided."""

    # D-LIM-002 .. D-LIM-005: the numeric limits (see ``intentref.core.limits`` for their reasons).
    max_input_bytes: int = limits.MAX_INPUT_BYTES
    max_context_messages: int = limits.MAX_CONTEXT_MESSAGES
    max_context_bytes: int = limits.MAX_CONTEXT_BYTES
    max_fields_selected: int = limits.MAX_FIELDS_SELECTED
    max_candidate_bytes: int = limits.MAX_CANDIDATE_BYTES
    max_candidate_depth: int = limits.MAX_CANDIDATE_DEPTH
    max_schema_bytes: int = limits.MAX_SCHEMA_BYTES
    max_schema_depth: int = limits.MAX_SCHEMA_DEPTH
    max_schema_nodes: int = limits.MAX_SCHEMA_NODES
    max_top_level_fields: int = limits.MAX_TOP_LEVEL_FIELDS
    max_pattern_length: int = limits.MAX_PATTERN_LENGTH
    max_enum_values: int = limits.MAX_ENUM_VALUES

    # D-LIM-006: bytes a lone surrogate counts for in a UTF-8 limit (3: U+FFFD as a
    # TextEncoder writes it; variants: 1, a "?" as Python's encode(errors="replace") writes
    # it, or 6, its \uXXXX escape).
    lone_surrogate_utf8_bytes: int = 3

    # D-LIM-001: the capacity a BridgeConfig gets for an option it leaves out.
    default_max_jobs: int = limits.DEFAULT_MAX_JOBS
    default_max_replay_entries: int = limits.DEFAULT_MAX_REPLAY_ENTRIES
    default_max_replay_bytes: int = limits.DEFAULT_MAX_REPLAY_BYTES

    # D-CFG-002: the language an Intent config that names none works in.
    default_language: str = "en"

    # D-INS-001, D-PAY-*, D-COR-001, D-ERR-006 ...: how tasks and errors are written.
    writer: Writer = REFERENCE_WRITER

    # --- the rules a decision shapes --------------------------------------------------------
    # Each is the reference's rule; a decision variant swaps one and leaves the rest
    # (``intentref.suite.alterations.alteration.extend``, as python-jsonschema's
    # ``validators.extend``: another behaviour is other functions, never a flag inside a rule).

    def read_candidate(self, text: str) -> Any:
        """D-JSON-001 .. D-JSON-004: candidate text read strictly (duplicates, lone surrogates,
        numbers a JavaScript host cannot hold: the whole text is at fault)."""
        return jsontext.parse_candidate(text, self.max_candidate_depth)

    def core_violations(self, candidate: Any) -> list[Violation]:
        """D-COR-002, D-TXT-001: the core contract, closed, with ECMA-262 white space as blank."""
        return core_candidate.core_violations(candidate)

    def data_rules(self) -> Mapping[str, data_candidate.Rule]:
        """D-DAT-001, D-DAT-002, D-DAT-004: the data contract's rules, every one of them."""
        return data_candidate.DATA_RULES

    def data_contract_violations(self, candidate: dict[str, Any], ctx: DataContext) -> list[Violation]:
        """D-COR-002: the data contract, closed at every level."""
        return data_candidate.contract_violations(candidate, ctx, self.data_rules())

    def business_issues(self, candidate: dict[str, Any], ctx: DataContext) -> list[Issue]:
        """The filed issues, and those the failed checks imply (``implied_issues``)."""
        return self.implied_issues(candidate, data_candidate.filed_issues(candidate))

    def implied_issues(self, candidate: dict[str, Any], issues: list[Issue]) -> list[Issue]:
        """D-DAT-003: after ``issues``, the one each failed check implies where none is at its path."""
        return data_candidate.implied_issues(candidate, issues)

    def schema_judgement(self, errors: list[DataError]) -> DataJudgement:
        """D-DAT-005: data the schema cannot hold is a contract fault."""
        return data_candidate.schema_errors_are_contract_faults(errors)

    def keyword_checks(self) -> Mapping[str, KeywordCheck]:
        """D-SCH-004 and the subset's keyword table (spec: R-SCH-013 .. R-SCH-031)."""
        return schema_subset.KEYWORD_CHECKS

    def regex_compiles(self, pattern: str) -> bool:
        """D-SCH-001: a ``pattern`` is an ECMA-262 regular expression."""
        return schema_subset.ecma_regex_compiles(pattern)

    def data_validator(self, schema: Any) -> Any:
        """D-SCH-001, D-SCH-003: Draft 7 with ECMA-262 patterns and every supported format asserted."""
        return schema_subset.data_validator(schema)

    def select_fields(self, requested: list[str], defined: tuple[str, ...]) -> tuple[str, ...]:
        """D-REQ-002: a repeated name selects its field once, in the definition's order, so the
        same selection always builds the same task (``requested`` names defined fields only)."""
        return tuple(name for name in defined if name in requested)

    def contract_issues(self, violations: list[Violation]) -> list[Issue]:
        """D-ERR-007: one issue per violation, pointing into the candidate, the first 32."""
        return [Issue("MODEL_OUTPUT_INVALID", "processing", path, message)
                for path, message in violations[:MAX_CONTRACT_ISSUES]]  # fmt: skip

    def detail_issues(self, code: str, detail: str | None) -> list[Issue]:
        """D-CAN-002: a non-blank detail is the ending's one issue, made well-formed."""
        return [self_issue(code, None, well_formed(detail))] if detail and detail.strip() else []

    def but(self, **changes: Any) -> Policy:
        """This policy with some fields changed (unknown names raise TypeError)."""
        return dataclasses.replace(self, **changes)


REFERENCE_POLICY: Final = Policy()
