"""The data candidate contract (seed 000 "data 候选", seed 003 "来源与完整性").

Like the core rules, each rule is one function named after what it checks, registered in
``DATA_RULES``, yielding ``(pointer, message)`` per violation.  Rules receive the task's
``DataContext`` because sources, selection and descriptions belong to the task, not to
the candidate.  What is a contract fault (repairable, MODEL_OUTPUT_INVALID) and what is a
business fault (DATA_EXTRACTION_FAILED, never repaired) is decided in ``judge``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from intentref.core import jsonpointer
from intentref.core.core_candidate import exact_members
from intentref.core.errors import BUSINESS_ISSUE_CODES, DEFINITION_ISSUE_CODES, RESERVED_ISSUE_CODES, Issue
from intentref.core.schema_subset import DataError, Definition
from intentref.core.text import has_text

ROOT_MEMBERS: Final = ("data", "evidence", "descriptionChecks", "fieldResults", "issues")
EVIDENCE_MEMBERS: Final = ("path", "mode", "sources")
CHECK_MEMBERS: Final = ("path", "verdict", "explanation", "sources")
FIELD_RESULT_MEMBERS: Final = ("path", "status", "explanation")
ISSUE_MEMBERS: Final = ("code", "category", "path", "message")
SOURCE_MEMBERS: Final = ("sourceId", "quote")
EVIDENCE_MODES: Final = ("exact", "semantic")  # spec: R-DAT-011, R-DAT-013
VERDICTS: Final = ("satisfied", "violated", "undetermined")  # spec: R-DAT-018
FIELD_STATUSES: Final = ("extracted", "not_provided", "not_applicable", "issue")  # spec: R-DAT-015, R-DAT-016
ISSUE_CODES_BY_CATEGORY: Final = {
    "business_information": BUSINESS_ISSUE_CODES,
    "definition": DEFINITION_ISSUE_CODES,
}
# D-DAT-003: the issue a descriptionCheck verdict implies when the candidate filed none.
VERDICT_ISSUE_CODES: Final = {"violated": "DATA_CONSTRAINT_VIOLATED", "undetermined": "DATA_DESCRIPTION_UNDETERMINED"}

Violation = tuple[str, str]


@dataclass(frozen=True)
class DataContext:
    definition: Definition
    selected: tuple[str, ...]
    sources: dict[str, str]  # sourceId -> text

    def field_path(self, name: str) -> str:
        return "/data/" + jsonpointer.escape_token(name)

    def selected_field_of(self, pointer: Any) -> str | None:
        """The selected top-level field ``pointer`` lies in (at or below), else None."""
        if not isinstance(pointer, str):
            return None
        tokens = jsonpointer.split(pointer)
        if tokens is None or len(tokens) < 2 or tokens[0] != "data" or tokens[1] not in self.selected:
            return None
        return tokens[1]


Rule = Callable[[dict[str, Any], DataContext], Iterator[Violation]]


def _is_text(value: Any) -> bool:
    return has_text(value)  # spec: R-DAT-014, D-TXT-001


def _entries(candidate: dict[str, Any], member: str) -> Iterator[tuple[str, dict[str, Any]]]:
    value = candidate.get(member)
    if isinstance(value, list):
        for index, entry in enumerate(value):
            if isinstance(entry, dict):
                yield f"/{member}/{index}", entry


def _sources(value: Any, path: str, ctx: DataContext) -> Iterator[Violation]:
    # spec: R-DAT-008, R-DAT-009, R-DAT-010 -- non-empty; each quote a substring of the source it names.
    if not isinstance(value, list) or not value:
        yield path, "sources must be a non-empty array."
        return
    for index, source in enumerate(value):
        spath = f"{path}/{index}"
        if not isinstance(source, dict):
            yield spath, "each source must be an object with sourceId and quote."
            continue
        yield from exact_members(source, SOURCE_MEMBERS, spath)
        source_id, quote = source.get("sourceId"), source.get("quote")
        if not isinstance(source_id, str) or not source_id:
            yield f"{spath}/sourceId", "sourceId must be a non-empty string."
            continue
        if source_id not in ctx.sources:
            yield f"{spath}/sourceId", f"unknown sourceId {source_id!r}; use input or a context:N id from the payload."
            continue
        if not isinstance(quote, str) or not quote:
            yield f"{spath}/quote", "quote must be a non-empty string."
        elif quote not in ctx.sources[source_id]:
            yield f"{spath}/quote", f"quote {quote!r} does not occur in {source_id}."


def leaves(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every leaf under /data: scalars and empty containers, with their pointers."""
    stack: list[tuple[str, Any]] = [("/data/" + jsonpointer.escape_token(k), v) for k, v in data.items()]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend((f"{path}/{jsonpointer.escape_token(k)}", v) for k, v in node.items())
        elif isinstance(node, list) and node:
            stack.extend((f"{path}/{i}", v) for i, v in enumerate(node))
        else:
            yield path, node


def _covers(ancestor: str, path: str) -> bool:
    return path == ancestor or path.startswith(ancestor + "/")


# --- the rules ------------------------------------------------------------------------------


def root_has_exactly_the_data_members(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    yield from exact_members(c, ROOT_MEMBERS, "")  # spec: R-DAT-002


def members_have_their_types(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    if "data" in c and not isinstance(c["data"], dict):
        yield "/data", "data must be an object."
    for name in ROOT_MEMBERS[1:]:
        if name in c:
            if not isinstance(c[name], list):
                yield f"/{name}", f"{name} must be an array."
                continue
            for index, entry in enumerate(c[name]):
                if not isinstance(entry, dict):
                    yield f"/{name}/{index}", f"each {name} entry must be an object."


def data_holds_only_selected_fields(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    data = c.get("data")
    if isinstance(data, dict):  # spec: R-FLD-007
        for key in data:
            if key not in ctx.selected:
                yield ctx.field_path(key), f"{key!r} is not a selected field; data holds only selected fields."


def evidence_is_well_formed(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    data = c.get("data") if isinstance(c.get("data"), dict) else {}
    for path, entry in _entries(c, "evidence"):
        yield from exact_members(entry, EVIDENCE_MEMBERS, path)
        pointer = entry.get("path")
        tokens = jsonpointer.split(pointer) if isinstance(pointer, str) else None
        if tokens is None or ctx.selected_field_of(pointer) is None:
            yield f"{path}/path", f"path must be a JSON Pointer into a selected field under /data, got {pointer!r}."
        elif not jsonpointer.exists({"data": data}, tokens):
            yield f"{path}/path", f"path {pointer} names no returned value."
        if entry.get("mode") not in EVIDENCE_MODES:
            yield f"{path}/mode", "mode must be exact or semantic."
        if "sources" in entry:
            yield from _sources(entry["sources"], f"{path}/sources", ctx)


def exact_evidence_equals_a_quote(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-DAT-011, R-DAT-012 -- exact only for strings, equal to at least one of its quotes.
    data = c.get("data") if isinstance(c.get("data"), dict) else {}
    for path, entry in _entries(c, "evidence"):
        if entry.get("mode") != "exact" or not isinstance(entry.get("path"), str):
            continue
        tokens = jsonpointer.split(entry["path"])
        if tokens is None or not jsonpointer.exists({"data": data}, tokens):
            continue
        value = jsonpointer.resolve({"data": data}, tokens)
        if not isinstance(value, str):
            yield f"{path}/mode", "exact evidence is only for string values; use semantic."
            continue
        quotes = [s.get("quote") for s in entry.get("sources", []) if isinstance(s, dict)] if isinstance(
            entry.get("sources"), list
        ) else []
        if value not in quotes:
            yield f"{path}/mode", f"exact evidence requires the value {value!r} to equal one of its quotes."


def every_returned_leaf_has_evidence(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-SRC-010 -- each returned value needs a source in the input or explicit context.
    data = c.get("data")
    if not isinstance(data, dict):
        return
    # D-DAT-001: evidence at a parent path covers every leaf below it.
    covered = [e["path"] for _, e in _entries(c, "evidence") if isinstance(e.get("path"), str)]
    for leaf, _value in sorted(leaves(data)):
        if not any(_covers(anchor, leaf) for anchor in covered):
            yield leaf, "this returned value has no evidence entry (at its path or an enclosing one)."


def description_checks_are_well_formed(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    for path, entry in _entries(c, "descriptionChecks"):
        yield from exact_members(entry, CHECK_MEMBERS, path)
        pointer = entry.get("path")
        if pointer != "/data" and ctx.selected_field_of(pointer) is None:
            yield f"{path}/path", f"path must be /data or lie in a selected field, got {pointer!r}."
        if entry.get("verdict") not in VERDICTS:
            yield f"{path}/verdict", "verdict must be satisfied, violated or undetermined."
        if "explanation" in entry and not _is_text(entry["explanation"]):
            yield f"{path}/explanation", "explanation must be a non-blank string."
        if "sources" in entry:
            yield from _sources(entry["sources"], f"{path}/sources", ctx)


def _checked_paths(c: dict[str, Any]) -> set[str]:
    return {e["path"] for _, e in _entries(c, "descriptionChecks") if isinstance(e.get("path"), str)}


def root_description_is_checked(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-SRC-001, R-SRC-005 -- a root description is checked at /data, even under partial selection.
    if ctx.definition.root_description is not None and "/data" not in _checked_paths(c):
        yield "/descriptionChecks", "the definition has a root description: add a descriptionCheck at /data."


def described_fields_are_checked(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # D-DAT-002 -- so is the description of each returned selected field.
    data = c.get("data")
    checked = _checked_paths(c)
    if isinstance(data, dict):
        for name in ctx.selected:
            schema = ctx.definition.field_schema(name)
            described = isinstance(schema, dict) and _is_text(schema.get("description"))
            if name in data and described and ctx.field_path(name) not in checked:
                yield "/descriptionChecks", f"field {name!r} has a description: add a descriptionCheck at {ctx.field_path(name)}."


def field_results_cover_each_selected_field(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-SRC-011 -- exactly one conclusion per selected field.
    seen: dict[str, str] = {}
    for path, entry in _entries(c, "fieldResults"):
        yield from exact_members(entry, FIELD_RESULT_MEMBERS, path)
        pointer = entry.get("path")
        name = ctx.selected_field_of(pointer)
        if name is None or pointer != ctx.field_path(name):
            yield f"{path}/path", f"path must be the /data path of a selected top-level field, got {pointer!r}."
        elif name in seen:
            yield f"{path}/path", f"{pointer} already has a field result at {seen[name]}."
        else:
            seen[name] = path
        if entry.get("status") not in FIELD_STATUSES:
            yield f"{path}/status", "status must be extracted, not_provided, not_applicable or issue."
        if "explanation" in entry and not _is_text(entry["explanation"]):
            yield f"{path}/explanation", "explanation must be a non-blank string."
    if isinstance(c.get("fieldResults"), list):
        for name in ctx.selected:
            if name not in seen:
                yield "/fieldResults", f"selected field {ctx.field_path(name)} has no field result."


def field_status_matches_data(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-DAT-015, R-DAT-016 -- extracted means returned; the other statuses mean omitted.
    data = c.get("data")
    if not isinstance(data, dict):
        return
    for path, entry in _entries(c, "fieldResults"):
        name = ctx.selected_field_of(entry.get("path"))
        status = entry.get("status")
        if name is None or status not in FIELD_STATUSES:
            continue
        if status == "extracted" and name not in data:
            yield f"{path}/status", f"status is extracted but data has no {name!r}."
        if status != "extracted" and name in data:
            yield f"{path}/status", f"status is {status} but data returns {name!r}; omit it or mark it extracted."


def required_fields_are_not_omitted(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # D-DAT-004: a missing required field is reported as a business issue, not omitted.
    if not isinstance(c.get("data"), dict):
        return
    for path, entry in _entries(c, "fieldResults"):
        name = ctx.selected_field_of(entry.get("path"))
        if (name is not None and entry.get("status") in ("not_provided", "not_applicable")
                and ctx.definition.is_required(name)):  # fmt: skip
            yield f"{path}/status", f"{name!r} is required: report status issue with a DATA_REQUIRED_MISSING issue."


def issue_status_has_a_matching_issue(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    # spec: R-DAT-017 -- status issue needs an issue at (or below) that field's path.
    issue_paths = [str(e["path"]) for _, e in _entries(c, "issues") if isinstance(e.get("path"), str)]
    for path, entry in _entries(c, "fieldResults"):
        if entry.get("status") != "issue" or not isinstance(entry.get("path"), str):
            continue
        if not any(_covers(entry["path"], p) for p in issue_paths):
            yield f"{path}/status", f"status is issue but no issue names {entry['path']}."


def issues_are_well_formed(c: dict[str, Any], ctx: DataContext) -> Iterator[Violation]:
    for path, entry in _entries(c, "issues"):
        yield from exact_members(entry, ISSUE_MEMBERS, path)
        code, category = entry.get("code"), entry.get("category")
        if code in RESERVED_ISSUE_CODES:
            # spec: R-DAT-022 -- source faults are the runtime's to find, never the model's to file.
            yield f"{path}/code", f"{code} may not be filed by a candidate; source problems are contract errors."
        elif not isinstance(category, str) or category not in ISSUE_CODES_BY_CATEGORY:  # may be unhashable
            yield f"{path}/category", "category must be business_information or definition."
        elif code not in ISSUE_CODES_BY_CATEGORY[category]:
            allowed = ", ".join(ISSUE_CODES_BY_CATEGORY[category])
            yield f"{path}/code", f"code for category {category} must be one of {allowed}, got {code!r}."
        pointer = entry.get("path")
        if pointer is not None and pointer != "/data" and ctx.selected_field_of(pointer) is None:
            yield f"{path}/path", f"path must be null, /data or lie in a selected field, got {pointer!r}."
        if "message" in entry and not _is_text(entry["message"]):
            yield f"{path}/message", "message must be a non-blank string."


DATA_RULES: Final[dict[str, Rule]] = {
    rule.__name__: rule
    for rule in (
        root_has_exactly_the_data_members,
        members_have_their_types,
        data_holds_only_selected_fields,
        evidence_is_well_formed,
        exact_evidence_equals_a_quote,
        every_returned_leaf_has_evidence,
        description_checks_are_well_formed,
        root_description_is_checked,
        described_fields_are_checked,
        field_results_cover_each_selected_field,
        field_status_matches_data,
        required_fields_are_not_omitted,
        issue_status_has_a_matching_issue,
        issues_are_well_formed,
    )
}


@dataclass(frozen=True)
class DataJudgement:
    """What a data candidate amounts to: contract violations, business issues, or data."""

    violations: list[Violation]
    issues: list[Issue]
    data: dict[str, Any] | None


class DataPolicy(Protocol):
    """What ``judge`` asks of the job's policy: the three places a decision shapes the verdict.

    ``intentref.core.policy.Policy`` answers with the reference functions below; a decision
    variant answers another way.
    """

    def data_contract_violations(self, candidate: dict[str, Any], ctx: DataContext) -> list[Violation]: ...

    def business_issues(self, candidate: dict[str, Any], ctx: DataContext) -> list[Issue]: ...

    def schema_judgement(self, errors: list[DataError]) -> DataJudgement: ...


def judge(candidate: Any, ctx: DataContext, policy: DataPolicy) -> DataJudgement:
    """Contract first (repairable), then business issues (final), then the schema (spec: R-DAT-018)."""
    if not isinstance(candidate, dict):
        return DataJudgement([("", "the data candidate must be a JSON object.")], [], None)
    violations = policy.data_contract_violations(candidate, ctx)
    if violations:
        return DataJudgement(violations, [], None)
    issues = policy.business_issues(candidate, ctx)
    if issues:
        return DataJudgement([], issues, None)
    # spec: R-SCH-035, R-SCH-036, R-SCH-037 -- validated against the selected schema, never coerced or filled.
    schema_errors = ctx.definition.validate(ctx.selected, candidate["data"])
    if schema_errors:
        return policy.schema_judgement(schema_errors)
    return DataJudgement([], [], candidate["data"])


# --- the reference's answers to DataPolicy ------------------------------------------------


def contract_violations(candidate: dict[str, Any], ctx: DataContext, rules: Mapping[str, Rule] = DATA_RULES) -> list[Violation]:
    """Every violation of ``rules``, sorted, each once."""
    return sorted({v for rule in rules.values() for v in rule(candidate, ctx)})


def filed_issues(candidate: dict[str, Any]) -> list[Issue]:
    """The business issues the candidate filed itself, in its order."""
    return [Issue(e["code"], e["category"], e["path"], e["message"]) for e in candidate["issues"]]


def implied_issues(candidate: dict[str, Any], issues: list[Issue]) -> list[Issue]:
    """``issues`` (the filed ones), then one per violated / undetermined check at a path none is at.

    spec: R-DAT-018 -- violated / undetermined checks are business extraction errors;
    D-DAT-003 -- the implied issue is left out where the candidate filed one at the check's path.
    """
    for check in candidate["descriptionChecks"]:
        code = VERDICT_ISSUE_CODES.get(check["verdict"])
        if code is not None and not any(i.path == check["path"] for i in issues):
            issues.append(Issue(code, "definition", check["path"], check["explanation"]))
    return issues


def schema_errors_are_contract_faults(errors: list[DataError]) -> DataJudgement:
    """D-DAT-005: data the selected schema cannot hold is a contract fault (repairable)."""
    return DataJudgement([(e.path, e.message) for e in errors], [], None)


