"""Valid candidates: core candidates with any blockers, data candidates with exact evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from intentref.core import jsonpointer
from intentref.core.core_candidate import ACTIONS
from intentref.suite.generators.draw import Draw
from intentref.suite.generators.schemas import leaves, object_value, strings_from
from intentref.suite.generators.texts import sentence, word

BLOCKER_NAMES: Final = ("clarificationReason", "confirmationReason", "conditionReason")


def blockers(d: Draw, combination: tuple[bool, bool, bool] | None = None) -> dict[str, Any]:
    """The four blocker members; ``combination`` says which reasons are present."""
    present = combination or (d.boolean(), d.boolean(), d.boolean())
    reasons = {name: (sentence(d) if on else None) for name, on in zip(BLOCKER_NAMES, present, strict=True)}
    questions = []
    if reasons["clarificationReason"] is not None:  # spec: R-COR-006
        questions = [{"question": sentence(d), "options": [word(d) for _ in range(d.integer(0, 2))]}
                     for _ in range(d.integer(1, 2))]  # fmt: skip
    return {"clarificationReason": reasons["clarificationReason"], "questions": questions,
            "confirmationReason": reasons["confirmationReason"], "conditionReason": reasons["conditionReason"]}  # fmt: skip


def intent_item(d: Draw, combination: tuple[bool, bool, bool] | None = None) -> dict[str, Any]:
    block = blockers(d, combination)
    action: str | None = d.choice(ACTIONS)
    if block["clarificationReason"] is not None and d.integer(0, 3) == 0:
        action = None  # spec: R-COR-008 -- only with a clarification
    return {"action": action, "target": d.choice([None, sentence(d)]), "requirements": texts(d), "blockers": block}


def texts(d: Draw, most: int = 2) -> list[str]:
    return [sentence(d) for _ in range(d.integer(0, most))]


def core_candidate(d: Draw, items: int | None = None,
                   combinations: Sequence[tuple[bool, bool, bool]] | None = None) -> dict[str, Any]:  # fmt: skip
    """A valid core candidate (spec: R-COR-001 .. R-COR-009)."""
    if combinations is not None:
        intents = [intent_item(d, c) for c in combinations]
    else:
        intents = [intent_item(d) for _ in range(d.integer(0, 3) if items is None else items)]
    return {
        "normalizedInput": sentence(d),
        "primaryIntent": d.choice([sentence(d), None]),
        "requirements": texts(d),
        "prohibitions": texts(d),
        "intents": intents,
    }


# --------------------------------------------------------------------------- data candidates


def payload_sources(payload: dict[str, Any]) -> dict[str, str]:
    """sourceId -> text, as the task payload names them (spec: R-TSK-005, R-TSK-006)."""
    out = {"input": str(payload["currentInput"])}
    for entry in payload.get("context", []):
        out[str(entry["sourceId"])] = str(entry["content"])
    return out


def quote_from(d: Draw, text: str) -> str:
    start = d.integer(0, max(0, len(text) - 1))
    return text[start : start + d.integer(1, 8)] or text


def _source_for(text: str, sources: dict[str, str]) -> str | None:
    for source_id, content in sources.items():
        if text in content:
            return source_id
    return None


def _citation(d: Draw, sources: dict[str, str]) -> list[dict[str, str]]:
    # The input is never blank, so a quote from it always exists.
    return [{"sourceId": "input", "quote": quote_from(d, sources["input"])}]


def evidence_for(d: Draw, data: dict[str, Any], sources: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per leaf: exact when the value is a quotable string, semantic otherwise."""
    entries = []
    for path, leaf in leaves(data):
        where = _source_for(leaf, sources) if isinstance(leaf, str) and leaf else None
        if where is not None:  # spec: R-DAT-011, R-DAT-012
            entries.append({"path": path, "mode": "exact", "sources": [{"sourceId": where, "quote": leaf}]})
        else:  # spec: R-DAT-013
            entries.append({"path": path, "mode": "semantic", "sources": _citation(d, sources)})
    return entries


def data_candidate(d: Draw, payload: dict[str, Any], data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A valid data candidate for a data task (spec: R-DAT-002 .. R-DAT-017, R-SRC-010, R-SRC-011).

    ``data`` is what to return (a plan's data); without it, values are drawn from the
    selected schema, with strings cut from the task's sources.
    """
    sources = payload_sources(payload)
    selected: list[str] = list(payload["selectedFields"])
    selected_schema: dict[str, Any] = payload["selectedSchema"]
    if data is None:
        data = object_value(d, selected_schema, strings_from(list(sources.values())))
    checks = []
    if isinstance(selected_schema.get("description"), str) and selected_schema["description"].strip():
        checks.append(_check(d, "/data", sources))
    for name in selected:
        described = selected_schema["properties"][name].get("description") if isinstance(
            selected_schema["properties"][name], dict) else None  # fmt: skip
        if name in data and isinstance(described, str) and described.strip():
            checks.append(_check(d, "/data/" + jsonpointer.escape_token(name), sources))
    results = []
    for name in selected:
        status = "extracted" if name in data else d.choice(["not_provided", "not_applicable"])
        results.append({"path": "/data/" + jsonpointer.escape_token(name), "status": status, "explanation": sentence(d)})
    return {"data": data, "evidence": evidence_for(d, data, sources), "descriptionChecks": checks,
            "fieldResults": results, "issues": []}  # fmt: skip


def _check(d: Draw, path: str, sources: dict[str, str]) -> dict[str, Any]:
    return {"path": path, "verdict": "satisfied", "explanation": sentence(d), "sources": _citation(d, sources)}
