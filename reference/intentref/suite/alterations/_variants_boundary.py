"""Decision variants at the boundary: how replies are written, and the rules around them.

*Writing* (wording, payload layout, issue lists, codes) overrides methods of the reference's
``Writer`` (``Alteration.writer``), so the variant Bridge writes its replies that way itself,
before it keeps them for replay and counts their bytes.  *Rules* about which issues or fields
there are, the default language or the keyword table override a ``Policy`` rule or value
(D-ERR-007, D-CAN-002, D-REQ-002, D-SCH-005, D-SCH-012, D-CFG-002).  Requests read another way
are in ``_variants_requests``, used tokens (D-BRG-007, D-BRG-008) in ``_variants_bridge``;
``VARIANTS`` lists them all in the catalogue's order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from intentref.core.errors import DATA_ISSUE_CODES, IntentParseError, Issue
from intentref.core.task import Repair, Task
from intentref.core.wire import CANCEL_ENDING_CODES
from intentref.core.writer import Writer
from intentref.suite.alterations._variant_policy import (
    Reference,
    combination_length_limited,
    detail_verbatim,
    empty_enum_accepted,
)
from intentref.suite.alterations._variants_bridge import (
    CANCELLED_TOKEN_CONFLICTS,
    NO_REPLAY,
    TOKENS_JUDGED_OTHERWISE,
)
from intentref.suite.alterations._variants_requests import (
    FIELDS_NULL_REFUSED,
    JOB_NOT_FOUND_BY_CAUSE,
    LENIENT_MEMBERS,
    NULL_OUTCOME,
    REPAIRS_NOT_CONFIGURABLE,
    REPEATED_FIELD_REFUSED,
    REPLAY_TTL_BOUNDS_IDLE_JOBS,
    STRICT_CONTEXT,
    SURROGATES_REPLACED,
)
from intentref.suite.alterations.alteration import Alteration, policy_changes

# --------------------------------------------------------------------------- wording


def _issue_rewritten(member: str, when: Callable[[IntentParseError, Issue], bool],
                     value: Callable[[IntentParseError, Issue], Any]) -> Callable[..., dict[str, Any]]:  # fmt: skip
    """An ``error_issue`` override: the reference's issue, with ``member`` set to ``value`` where ``when`` holds."""

    def rewritten(reference: Reference, writer: Writer, err: IntentParseError, issue: Issue) -> dict[str, Any]:
        written: dict[str, Any] = reference(writer, err, issue)
        if when(err, issue):
            written[member] = value(err, issue)
        return written

    return rewritten


def _reworded_instructions(reference: Reference, writer: Writer, task: Task) -> str:
    return (f"Write the complete {task.stage} candidate as one JSON document. "
            "Follow the format and read the payload; on a repair, send the whole candidate again.")  # fmt: skip


# --------------------------------------------------------------------------- the core format


def _respell_schema(schema: Any) -> Any:
    """The same JSON Schema written differently: members in reverse order, a comment added."""
    if isinstance(schema, dict):
        spelled = {key: _respell_schema(schema[key]) if key in ("properties", "items") or isinstance(schema[key], dict)
                   else schema[key] for key in reversed(list(schema))}  # fmt: skip
        if "type" in spelled:
            spelled["$comment"] = "spelled by the variant"
        return spelled
    if isinstance(schema, list):
        return [_respell_schema(item) for item in schema]
    return schema


# --------------------------------------------------------------------------- payloads


def _core_payload_without_language(reference: Reference, writer: Writer, task: Task) -> dict[str, Any]:
    # Seed 000 lists the data payload's members only; this core payload leaves the language to
    # the instructions.
    payload: dict[str, Any] = reference(writer, task)
    del payload["structuredLanguage"]
    return payload


def _repair_material(reference: Reference, writer: Writer, repair: Repair) -> dict[str, Any]:
    return {"round": repair.attempt, "problems": [{"at": i.path, "why": i.message} for i in repair.issues],
            "yourLastAnswer": repair.previous_candidate}  # fmt: skip


def _lean_selected_schema(reference: Reference, writer: Writer, task: Task) -> dict[str, Any]:
    schema: dict[str, Any] = reference(writer, task)
    if schema.get("required") == []:
        del schema["required"]
    # The root's annotations stay in schemaReference, beside it in the same payload.
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


# --------------------------------------------------------------------------- issue lists


def _is_parameter_fault(err: IntentParseError) -> bool:
    return err.code == "INPUT_INVALID" and err.stage == "bridge"


# --------------------------------------------------------------------------- codes


# A reference code, and the code (and stage, when it moves) this variant writes instead.
_RENAMED_CODES = {
    "CONFIG_INVALID": ("INTENT_CONFIG_INVALID", None),
    "BRIDGE_INSTANCE_NOT_FOUND": ("INPUT_INVALID", "input"),
    "BRIDGE_JOB_EXPIRED": ("BRIDGE_JOB_NOT_FOUND", None),
}


def _parent_pointer(path: str | None) -> str | None:
    return path[: path.rindex("/")] if path and path.count("/") > 1 else path or None


def _renamed_code(reference: Reference, writer: Writer, err: IntentParseError) -> str:
    return _RENAMED_CODES[err.code][0] if err.code in _RENAMED_CODES else reference(writer, err)


def _moved_stage(reference: Reference, writer: Writer, err: IntentParseError) -> str:
    moved = _RENAMED_CODES.get(err.code, (None, None))[1]
    return moved if moved is not None else reference(writer, err)


_CONFIG_CODES = ("SCHEMA_UNSUPPORTED", "LIMIT_EXCEEDED", "CONFIG_INVALID")


VARIANTS = (
    # D-ERR-006, D-INS-001: other messages and instructions, meaning the same.
    Alteration(
        name="reworded",
        decisions=("D-ERR-006", "D-INS-001"),
        summary="other error and issue messages, other task instructions",
        writer={"message": lambda reference, writer, err: f"[{err.code} at stage {err.stage}] the call could not be completed.",
                # The candidate's own issues keep the model's words (seed 004).
                "error_issue": _issue_rewritten("message", lambda err, issue: issue.code not in DATA_ISSUE_CODES,
                                                lambda err, issue: f"Problem {issue.code} here."),
                "instructions": _reworded_instructions},
    ),
    Alteration(
        name="respelled-core-schema",
        decisions=("D-COR-001",),
        summary="an equivalent intent_core schema, spelled differently",
        writer={"core_schema": lambda reference, writer: _respell_schema(reference(writer))},
    ),
    # D-PAY-001, D-PAY-003: other members, another order, another JSON spelling.
    Alteration(
        name="payload-layout",
        decisions=("D-PAY-001", "D-PAY-003"),
        summary="payload members in another order, written with ASCII escapes and spaces; no structuredLanguage in the core payload",
        writer={"core_payload": _core_payload_without_language, "payload_text": lambda reference, writer, payload: json.dumps(
            dict(reversed(list(payload.items()))), ensure_ascii=True)},
    ),
    # D-PAY-002: context entries with other member names, in another order.
    Alteration(
        name="context-entries",
        decisions=("D-PAY-002",),
        summary="payload context entries as {role, text, sourceId}",
        writer={"context_entry": lambda reference, writer, source: {
            "role": source.role, "text": source.content, "sourceId": source.source_id}},
    ),
    # D-PAY-004: the repair material under other names.
    Alteration(
        name="repair-material",
        decisions=("D-PAY-004",),
        summary="payload.repair as {round, problems: [{at, why}], yourLastAnswer}",
        writer={"repair": _repair_material},
    ),
    Alteration(
        name="request-order-fields",
        decisions=("D-REQ-002",),
        summary="selectedFields in the order the request lists them",
        rules={"select_fields": lambda reference, policy, requested, defined: tuple(dict.fromkeys(requested))},
    ),
    # D-SCH-006: the selected schema without what it does not need.
    Alteration(
        name="lean-selected-schema",
        decisions=("D-SCH-006",),
        summary="the selected schema omits an empty required list and the root's title and description",
        writer={"selected_schema": _lean_selected_schema},
    ),
    Alteration(
        name="plain-contract-issues",
        decisions=("D-ERR-007",),
        summary="MODEL_OUTPUT_INVALID carries one issue with path null, not pointers into the candidate",
        rules={"contract_issues": lambda reference, policy, violations: [
            Issue("MODEL_OUTPUT_INVALID", "processing", None, "The candidate breaks the contract.")]},
    ),
    Alteration(
        name="bare-not-found",
        decisions=("D-BRG-003",),
        summary="BRIDGE_JOB_NOT_FOUND carries no issue",
        writer={"error_issues": lambda reference, writer, err: [] if err.code == "BRIDGE_JOB_NOT_FOUND" else reference(writer, err)},
    ),
    # D-ERR-009: partialResult where seed 004 shows it, and nowhere else.
    Alteration(
        name="partial-on-extraction-only",
        decisions=("D-ERR-009",),
        summary="partialResult only on DATA_EXTRACTION_FAILED",
        writer={"partial_result": lambda reference, writer, err: (
            reference(writer, err) if err.code == "DATA_EXTRACTION_FAILED" else None)},
    ),
    Alteration(
        name="cancel-detail-dropped",
        decisions=("D-CAN-002",),
        summary="a cancel's detail is not kept as an issue",
        rules={"detail_issues": lambda reference, policy, code, detail: []},
    ),
    # D-BRG-001: a malformed call is written as an input fault, without issues.
    Alteration(
        name="parameter-faults-at-input",
        decisions=("D-BRG-001",),
        summary="a malformed call is INPUT_INVALID at stage input, without issues",
        writer={"stage": lambda reference, writer, err: "input" if _is_parameter_fault(err) else reference(writer, err),
                "error_issues": lambda reference, writer, err: [] if _is_parameter_fault(err) else reference(writer, err)},
    ),
    # D-ERR-001 .. D-ERR-005: three endings under other codes, the error's own issue too.
    Alteration(
        name="other-codes",
        decisions=("D-ERR-001", "D-ERR-002", "D-ERR-003", "D-ERR-005"),
        summary="CONFIG_INVALID, BRIDGE_INSTANCE_NOT_FOUND and BRIDGE_JOB_EXPIRED under other codes",
        writer={"code": _renamed_code, "stage": _moved_stage, "error_issue": _issue_rewritten(
            "code", lambda err, issue: issue.code == err.code and err.code in _RENAMED_CODES,
            lambda err, issue: _RENAMED_CODES[err.code][0])},
    ),
    LENIENT_MEMBERS,
    FIELDS_NULL_REFUSED,
    STRICT_CONTEXT,
    SURROGATES_REPLACED,
    NULL_OUTCOME,
    REPAIRS_NOT_CONFIGURABLE,
    Alteration(
        name="default-language-zh",
        decisions=("D-CFG-002",),
        summary="language defaults to zh-CN",
        policy=policy_changes(default_language="zh-CN"),
    ),
    Alteration(
        name="combination-length-limit",
        decisions=("D-SCH-005",),
        summary="an anyOf/oneOf/allOf array outside 1-16 is LIMIT_EXCEEDED, not SCHEMA_UNSUPPORTED",
        rules={"keyword_checks": combination_length_limited},
    ),
    NO_REPLAY,
    CANCELLED_TOKEN_CONFLICTS,
    # D-ERR-001: a definition problem filed as category definition; an unknown field too (it is not defined).
    Alteration(
        name="other-issue-categories",
        decisions=("D-ERR-001",),
        summary="configuration and unknown-field issues filed under category definition",
        writer={"error_issue": _issue_rewritten(
            "category", lambda err, issue: (err.stage == "config" and issue.code in _CONFIG_CODES) or issue.code == "UNKNOWN_FIELD",
            lambda err, issue: "definition")},
    ),
    # D-REQ-007: request faults name what is wrong in words only: their issues carry no pointer.
    Alteration(
        name="request-faults-without-pointers",
        decisions=("D-REQ-007",),
        summary="a request fault's issue has path null instead of a pointer into the request",
        writer={"error_issue": _issue_rewritten("path", lambda err, issue: err.stage == "input", lambda err, issue: None)},
    ),
    # D-SCH-008: a construction error points at the schema node holding the keyword, not at the keyword.
    Alteration(
        name="construction-error-at-node",
        decisions=("D-SCH-008",),
        summary="a construction error points at the schema node, not at its keyword",
        writer={"error_issue": _issue_rewritten(
            "path", lambda err, issue: err.stage == "config" and issue.code in ("SCHEMA_UNSUPPORTED", "LIMIT_EXCEEDED"),
            lambda err, issue: _parent_pointer(issue.path))},
    ),
    Alteration(
        name="empty-enum-accepted",
        decisions=("D-SCH-012",),
        summary="enum: [] is accepted (it admits no value)",
        rules={"keyword_checks": empty_enum_accepted},
    ),
    JOB_NOT_FOUND_BY_CAUSE,
    TOKENS_JUDGED_OTHERWISE,
    Alteration(
        name="cancel-at-bridge-stage",
        decisions=("D-BRG-015",),
        summary="a cancelled job's error has stage bridge, not the stage it was in",
        writer={"stage": lambda reference, writer, err: "bridge" if err.code in CANCEL_ENDING_CODES else reference(writer, err)},
    ),
    Alteration(
        name="cancel-detail-verbatim",
        decisions=("D-CAN-002",),
        summary="any non-empty cancel detail, blank or not, is kept as the error's issue",
        rules={"detail_issues": detail_verbatim},
    ),
    REPEATED_FIELD_REFUSED,
    REPLAY_TTL_BOUNDS_IDLE_JOBS,
)
