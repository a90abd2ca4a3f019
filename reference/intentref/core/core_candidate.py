"""The core candidate: its contract (seed 000 "core 候选") and its assembly into an IntentResult (seed 001).

Each contract rule is one small function named after what it checks, registered in
``CORE_RULES``; each yields ``(pointer, message)`` for every violation it sees, so a
repair task can list all of them at once.  Assembly adds what the model never writes:
the original input, ids, statuses, reasons and the data root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from intentref.core import jsonpointer
from intentref.core.text import has_text

ACTIONS: Final = ("query", "analyze", "generate", "modify", "delete", "execute", "other")  # spec: R-RES-008
ROOT_MEMBERS: Final = ("normalizedInput", "primaryIntent", "requirements", "prohibitions", "intents")
ITEM_MEMBERS: Final = ("action", "target", "requirements", "blockers")
BLOCKER_MEMBERS: Final = ("clarificationReason", "questions", "confirmationReason", "conditionReason")
QUESTION_MEMBERS: Final = ("question", "options")

_TEXT: Final = {"type": "string", "minLength": 1, "pattern": "\\S"}
_NULLABLE_TEXT: Final = {"anyOf": [_TEXT, {"type": "null"}]}
_TEXTS: Final = {"type": "array", "items": _TEXT}

# D-COR-001: the intent_core schema each core task carries in format.schema.  It is the
# structural half of the contract; the cross-field rules below it (questions iff a
# clarification reason, null action only with a clarification) are stated in the task
# instructions, since not every structured-output engine supports the keywords for them.
INTENT_CORE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "normalizedInput": _TEXT,
        "primaryIntent": _NULLABLE_TEXT,
        "requirements": _TEXTS,
        "prohibitions": _TEXTS,
        "intents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"enum": [*ACTIONS, None]},
                    "target": _NULLABLE_TEXT,
                    "requirements": _TEXTS,
                    "blockers": {
                        "type": "object",
                        "properties": {
                            "clarificationReason": _NULLABLE_TEXT,
                            "questions": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"question": _TEXT, "options": _TEXTS},
                                    "required": list(QUESTION_MEMBERS),
                                    "additionalProperties": False,
                                },
                            },
                            "confirmationReason": _NULLABLE_TEXT,
                            "conditionReason": _NULLABLE_TEXT,
                        },
                        "required": list(BLOCKER_MEMBERS),
                        "additionalProperties": False,
                    },
                },
                "required": list(ITEM_MEMBERS),
                "additionalProperties": False,
            },
        },
    },
    "required": list(ROOT_MEMBERS),
    "additionalProperties": False,
}

Violation = tuple[str, str]
Rule = Callable[[Any], Iterator[Violation]]


def _is_text(value: Any) -> bool:
    # spec: R-COR-009 -- every non-null text must hold a non-whitespace character (D-TXT-001).
    return has_text(value)


def exact_members(node: dict[str, Any], members: tuple[str, ...], path: str) -> Iterator[Violation]:
    """A violation for each missing member and each unexpected one (both candidate stages use it)."""
    for name in members:
        if name not in node:
            yield f"{path}/{name}", f"{name} is required."
    for name in node:
        if name not in members:
            yield f"{path}/{jsonpointer.escape_token(name)}", f"{UNEXPECTED_MEMBER} {name!r}."


# The start of the message of a member the contract does not name (D-COR-002).
UNEXPECTED_MEMBER: Final = "unexpected member"


def _texts(value: Any, path: str, what: str) -> Iterator[Violation]:
    if not isinstance(value, list):
        yield path, f"{what} must be an array of strings."
        return
    for index, text in enumerate(value):
        if not _is_text(text):
            yield f"{path}/{index}", f"{what} entries must be non-blank strings, got {_show(text)}."


def _nullable_text(value: Any, path: str, what: str) -> Iterator[Violation]:
    if value is not None and not _is_text(value):
        yield path, f"{what} must be null or a non-blank string, got {_show(value)}."


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _items(candidate: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    intents = candidate.get("intents")
    if isinstance(intents, list):
        for index, item in enumerate(intents):
            if isinstance(item, dict):
                yield f"/intents/{index}", item


def _blockers(candidate: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in _items(candidate):
        blockers = item.get("blockers")
        if isinstance(blockers, dict):
            yield f"{path}/blockers", blockers


# --- the rules ------------------------------------------------------------------------------


def root_has_exactly_the_core_members(candidate: dict[str, Any]) -> Iterator[Violation]:
    yield from exact_members(candidate, ROOT_MEMBERS, "")


def normalized_input_is_text(candidate: dict[str, Any]) -> Iterator[Violation]:
    if "normalizedInput" in candidate and not _is_text(candidate["normalizedInput"]):
        yield "/normalizedInput", "normalizedInput must be a non-blank string."


def primary_intent_is_null_or_text(candidate: dict[str, Any]) -> Iterator[Violation]:
    if "primaryIntent" in candidate:
        yield from _nullable_text(candidate["primaryIntent"], "/primaryIntent", "primaryIntent")


def global_lists_hold_texts(candidate: dict[str, Any]) -> Iterator[Violation]:
    for name in ("requirements", "prohibitions"):
        if name in candidate:
            yield from _texts(candidate[name], f"/{name}", name)


def intents_is_an_array_of_objects(candidate: dict[str, Any]) -> Iterator[Violation]:
    intents = candidate.get("intents", [])
    if not isinstance(intents, list):
        yield "/intents", "intents must be an array."
        return
    for index, item in enumerate(intents):
        if not isinstance(item, dict):
            yield f"/intents/{index}", "each intent must be an object."


def intent_has_exactly_the_item_members(candidate: dict[str, Any]) -> Iterator[Violation]:
    for path, item in _items(candidate):
        yield from exact_members(item, ITEM_MEMBERS, path)


def action_is_known_or_null(candidate: dict[str, Any]) -> Iterator[Violation]:
    for path, item in _items(candidate):
        if "action" in item and item["action"] is not None and item["action"] not in ACTIONS:
            yield f"{path}/action", f"action must be one of {', '.join(ACTIONS)} or null, got {_show(item['action'])}."


def target_is_null_or_text(candidate: dict[str, Any]) -> Iterator[Violation]:
    for path, item in _items(candidate):
        if "target" in item:
            yield from _nullable_text(item["target"], f"{path}/target", "target")


def item_requirements_hold_texts(candidate: dict[str, Any]) -> Iterator[Violation]:
    for path, item in _items(candidate):
        if "requirements" in item:
            yield from _texts(item["requirements"], f"{path}/requirements", "requirements")


def blockers_has_all_four_members(candidate: dict[str, Any]) -> Iterator[Violation]:
    # spec: R-COR-004, R-COR-005 -- all four blocker members are required, even when empty.
    for path, item in _items(candidate):
        if "blockers" in item and not isinstance(item["blockers"], dict):
            yield f"{path}/blockers", "blockers must be an object."
    for path, blockers in _blockers(candidate):
        yield from exact_members(blockers, BLOCKER_MEMBERS, path)


def blocker_reasons_are_null_or_text(candidate: dict[str, Any]) -> Iterator[Violation]:
    for path, blockers in _blockers(candidate):
        for name in ("clarificationReason", "confirmationReason", "conditionReason"):
            if name in blockers:
                yield from _nullable_text(blockers[name], f"{path}/{name}", name)


def questions_are_well_formed(candidate: dict[str, Any]) -> Iterator[Violation]:
    # spec: R-COR-007 -- each question is {question, options} with non-blank texts.
    for path, blockers in _blockers(candidate):
        questions = blockers.get("questions", [])
        if not isinstance(questions, list):
            yield f"{path}/questions", "questions must be an array."
            continue
        for index, question in enumerate(questions):
            qpath = f"{path}/questions/{index}"
            if not isinstance(question, dict):
                yield qpath, "each question must be an object with question and options."
                continue
            yield from exact_members(question, QUESTION_MEMBERS, qpath)
            if "question" in question and not _is_text(question["question"]):
                yield f"{qpath}/question", "question must be a non-blank string."
            if "options" in question:
                yield from _texts(question["options"], f"{qpath}/options", "options")


def questions_present_exactly_with_clarification(candidate: dict[str, Any]) -> Iterator[Violation]:
    # spec: R-COR-006 -- a clarification reason needs a question, and a question a reason.
    for path, blockers in _blockers(candidate):
        questions = blockers.get("questions")
        reason = blockers.get("clarificationReason")
        if not isinstance(questions, list):
            continue
        if reason is not None and not questions:
            yield f"{path}/questions", "clarificationReason is set, so at least one question is required."
        if reason is None and questions:
            yield f"{path}/clarificationReason", "questions are present, so clarificationReason is required."


def null_action_needs_clarification(candidate: dict[str, Any]) -> Iterator[Violation]:
    # spec: R-COR-008 -- only an item that asks for clarification may leave action null.
    for path, item in _items(candidate):
        if "action" in item and item["action"] is None:
            blockers = item.get("blockers")
            if not isinstance(blockers, dict) or blockers.get("clarificationReason") is None:
                yield f"{path}/action", "action is null, so a clarificationReason and a question are required."


CORE_RULES: Final[dict[str, Rule]] = {
    rule.__name__: rule
    for rule in (
        root_has_exactly_the_core_members,
        normalized_input_is_text,
        primary_intent_is_null_or_text,
        global_lists_hold_texts,
        intents_is_an_array_of_objects,
        intent_has_exactly_the_item_members,
        action_is_known_or_null,
        target_is_null_or_text,
        item_requirements_hold_texts,
        blockers_has_all_four_members,
        blocker_reasons_are_null_or_text,
        questions_are_well_formed,
        questions_present_exactly_with_clarification,
        null_action_needs_clarification,
    )
}


def core_violations(candidate: Any) -> list[Violation]:
    if not isinstance(candidate, dict):
        return [("", "the core candidate must be a JSON object.")]
    return sorted({v for rule in CORE_RULES.values() for v in rule(candidate)})


# --- assembly (seed 001) --------------------------------------------------------------------


def item_status(blockers: dict[str, Any]) -> tuple[str, str | None]:
    """spec: R-RES-038, R-RES-039 -- status by priority, reasons joined by a newline.

    needs_clarification > awaiting_confirmation > conditional > ready; the reason lists
    every present reason in the order clarification, confirmation, condition.
    """
    clarification = blockers["clarificationReason"]
    confirmation = blockers["confirmationReason"]
    condition = blockers["conditionReason"]
    if clarification is not None:
        status = "needs_clarification"
    elif confirmation is not None:
        status = "awaiting_confirmation"
    elif condition is not None:
        status = "conditional"
    else:
        return "ready", None
    reasons = [r for r in (clarification, confirmation, condition) if r is not None]
    return status, "\n".join(reasons)


def assemble_item(index: int, item: dict[str, Any]) -> dict[str, Any]:
    blockers = item["blockers"]
    status, reason = item_status(blockers)
    out: dict[str, Any] = {
        "id": f"i{index + 1}",  # spec: R-RES-026 -- i1, i2, ... in result order
        "action": item["action"],
        "target": item["target"],
        "requirements": list(item["requirements"]),
        "status": status,
    }
    if reason is not None:  # spec: R-RES-032 -- reason omitted for ready
        out["reason"] = reason
    if status == "needs_clarification":  # spec: R-RES-033 -- clarification only here
        out["clarification"] = [{"question": q["question"], "options": list(q["options"])} for q in blockers["questions"]]
    return out


def assemble_result(original_input: str, candidate: dict[str, Any]) -> dict[str, Any]:
    """The default IntentResult, seven root members in the seeds' order, data initialised to {}."""
    return {
        "input": original_input,  # spec: R-RES-015, R-COR-003 -- kept exactly as received
        "normalizedInput": candidate["normalizedInput"],
        "primaryIntent": candidate["primaryIntent"],
        "requirements": list(candidate["requirements"]),
        "intents": [assemble_item(i, item) for i, item in enumerate(candidate["intents"])],
        "prohibitions": list(candidate["prohibitions"]),
        "data": {},
    }
