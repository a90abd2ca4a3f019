"""How the reference writes what the seeds leave to each runtime's own words and layout.

The seeds fix what a reply *means*; how it is *written* (wording, the payload's members, order
and spelling, the repair material's shape, an error's codes, stages and pointers) is the
reference's to decide (``spec/decisions.md``), and the choice an independent implementation
most often makes differently.  So the core decides what happened (a ``Task`` or an
``IntentParseError``) and a ``Writer``, part of the ``Policy``, writes it: one method per part
of a reply, each naming its decision, which a decision variant swaps
(``intentref.suite.alterations.alteration.extend``).  Nothing here judges anything.
"""

from __future__ import annotations

from typing import Any, Final

from intentref.core.core_candidate import INTENT_CORE_SCHEMA
from intentref.core.errors import IntentParseError, Issue, serialized_error
from intentref.core.instructions import task_instructions
from intentref.core.jsontext import dumps_compact
from intentref.core.request import Source
from intentref.core.task import Repair, Task


class Writer:
    """The reference's writing of tasks and errors; a subclass writes one part another way."""

    # --- tasks (spec: R-RPY-002, R-BRG-012) --------------------------------------------------

    def model_request(self, task: Task) -> dict[str, Any]:
        """What a host hands its model unchanged: instructions, the payload string, format."""
        return {"instructions": self.instructions(task), "payload": self.payload_text(self.payload(task)),
                "format": self.format(task)}  # fmt: skip

    def instructions(self, task: Task) -> str:
        """D-INS-001: the stage's whole contract, in Chinese for zh* languages, else English."""
        return task_instructions(task.stage, task.language, task.repair is not None)

    def format(self, task: Task) -> dict[str, Any]:
        if task.stage == "core":  # spec: R-RPY-011 -- the full intent_core schema
            return {"kind": "json_schema", "name": "intent_core", "schema": self.core_schema()}
        return {"kind": "json_object"}  # spec: R-DAT-001

    def core_schema(self) -> dict[str, Any]:
        """D-COR-001: the intent_core schema, as ``core_candidate`` spells it."""
        return INTENT_CORE_SCHEMA

    def payload(self, task: Task) -> dict[str, Any]:
        return self.core_payload(task) if task.stage == "core" else self.data_payload(task)

    def core_payload(self, task: Task) -> dict[str, Any]:
        """D-PAY-001: the core payload members, in this order."""
        payload: dict[str, Any] = {
            "structuredLanguage": task.language,
            "currentInput": task.request.input,
            "context": [self.context_entry(source) for source in task.request.context],
        }
        if task.repair is not None:
            payload["repair"] = self.repair(task.repair)  # spec: R-TSK-010, R-TSK-011
        return payload

    def data_payload(self, task: Task) -> dict[str, Any]:
        """spec: R-TSK-004, R-RPY-010 -- the data payload members, in the seed example's order."""
        assert task.definition is not None
        payload: dict[str, Any] = {
            "structuredLanguage": task.language,
            "currentInput": task.request.input,
            "context": [self.context_entry(source) for source in task.request.context],
            "schemaReference": task.definition.schema,
            "checkedDefault": task.checked_default,
            "selectedSchema": self.selected_schema(task),
            "selectedFields": list(task.selected),
        }
        if task.repair is not None:
            payload["repair"] = self.repair(task.repair)
        return payload

    def context_entry(self, source: Source) -> dict[str, Any]:
        """D-PAY-002: each context entry carries its sourceId, role and content."""
        return {"sourceId": source.source_id, "role": source.role, "content": source.content}

    def selected_schema(self, task: Task) -> dict[str, Any]:
        """D-SCH-006: the selected schema in its fixed shape (``Definition.selected_schema``)."""
        assert task.definition is not None
        return task.definition.selected_schema(task.selected)

    def repair(self, repair: Repair) -> dict[str, Any]:
        """D-PAY-004: {attempt, maxAttempts, issues, previousCandidate}."""
        return {"attempt": repair.attempt, "maxAttempts": repair.max_attempts,
                "issues": [issue.to_json() for issue in repair.issues],
                "previousCandidate": repair.previous_candidate}  # fmt: skip

    def payload_text(self, payload: dict[str, Any]) -> str:
        """D-PAY-003: compact JSON, non-ASCII as itself, members in the order given."""
        return dumps_compact(payload)

    # --- errors (spec: R-ERR-005, R-ERR-006, R-RPY-004) --------------------------------------

    def error(self, err: IntentParseError) -> dict[str, Any]:
        """A SerializedIntentError: code, stage, message, issues, and partialResult when kept."""
        return serialized_error(self.code(err), self.stage(err), self.message(err), self.error_issues(err),
                                self.partial_result(err))  # fmt: skip

    def code(self, err: IntentParseError) -> str:
        """D-ERR-001 .. D-ERR-005: the public code list, as ``errors.ERROR_CODES`` names it."""
        return err.code

    def stage(self, err: IntentParseError) -> str:
        """spec: R-ERR-007; D-BRG-001, D-BRG-015: where the core placed the error."""
        return err.stage

    def message(self, err: IntentParseError) -> str:
        """D-ERR-006: the fixed English sentence the core chose (or the seed's own example)."""
        return err.message

    def error_issues(self, err: IntentParseError) -> list[dict[str, Any]]:
        """D-BRG-003, D-CAN-002, D-ERR-007: every issue the core filed, in its order."""
        return [self.error_issue(err, issue) for issue in err.issues]

    def error_issue(self, err: IntentParseError, issue: Issue) -> dict[str, Any]:
        """D-ERR-001, D-REQ-007, D-SCH-008: an issue as filed, with its category and pointer."""
        return issue.to_json()

    def partial_result(self, err: IntentParseError) -> dict[str, Any] | None:
        """D-ERR-009: the checked default on every ending after the core succeeded."""
        return err.partial_result


REFERENCE_WRITER: Final = Writer()
