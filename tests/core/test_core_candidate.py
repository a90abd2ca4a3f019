"""The core candidate contract, one rule broken at a time, and the assembly rules of seed 001."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentref import Intent, IntentParseError
from intentref.core.core_candidate import CORE_RULES, INTENT_CORE_SCHEMA, core_violations, item_status
from tests.conftest import ORDER_CORE, dumps, scripted

NO_BLOCKERS = {"clarificationReason": None, "questions": [], "confirmationReason": None, "conditionReason": None}


def _item(**changes):
    item = copy.deepcopy(ORDER_CORE["intents"][0])
    item.update(changes)
    return item


def _with(path, value):
    """ORDER_CORE with the member at ``path`` (a tuple of keys) set to value, or deleted for DELETE."""
    candidate = copy.deepcopy(ORDER_CORE)
    node = candidate
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return candidate


DELETE = object()
B = ("intents", 0, "blockers")

# (name, broken candidate, the pointer the violation must name, the rule that must catch it)
BROKEN = [
    ("missing normalizedInput", _with(("normalizedInput",), DELETE), "/normalizedInput", "root_has_exactly_the_core_members"),
    ("extra root member", _with(("id",), "i1"), "/id", "root_has_exactly_the_core_members"),
    ("blank normalizedInput", _with(("normalizedInput",), "  "), "/normalizedInput", "normalized_input_is_text"),
    ("blank primaryIntent", _with(("primaryIntent",), "\n"), "/primaryIntent", "primary_intent_is_null_or_text"),
    ("numeric primaryIntent", _with(("primaryIntent",), 3), "/primaryIntent", "primary_intent_is_null_or_text"),
    ("blank requirement", _with(("requirements",), ["ok", " "]), "/requirements/1", "global_lists_hold_texts"),
    ("prohibitions not a list", _with(("prohibitions",), "none"), "/prohibitions", "global_lists_hold_texts"),
    ("intents not a list", _with(("intents",), {}), "/intents", "intents_is_an_array_of_objects"),
    ("intent not an object", _with(("intents",), ["query"]), "/intents/0", "intents_is_an_array_of_objects"),
    ("intent without target", _with(("intents", 0, "target"), DELETE), "/intents/0/target", "intent_has_exactly_the_item_members"),
    ("intent with status", _with(("intents", 0, "status"), "ready"), "/intents/0/status", "intent_has_exactly_the_item_members"),
    ("unknown action", _with(("intents", 0, "action"), "create"), "/intents/0/action", "action_is_known_or_null"),
    ("blank target", _with(("intents", 0, "target"), ""), "/intents/0/target", "target_is_null_or_text"),
    ("blank item requirement", _with(("intents", 0, "requirements"), [""]), "/intents/0/requirements/0", "item_requirements_hold_texts"),
    ("blockers missing", _with(("intents", 0, "blockers"), DELETE), "/intents/0/blockers", "intent_has_exactly_the_item_members"),
    ("blockers not an object", _with(B, []), "/intents/0/blockers", "blockers_has_all_four_members"),
    ("blocker member missing", _with((*B, "conditionReason"), DELETE), "/intents/0/blockers/conditionReason", "blockers_has_all_four_members"),
    ("blank confirmation reason", _with((*B, "confirmationReason"), " "), "/intents/0/blockers/confirmationReason", "blocker_reasons_are_null_or_text"),
    ("questions not a list", _with((*B, "questions"), {}), "/intents/0/blockers/questions", "questions_are_well_formed"),
    ("question without options", _with(B, {**NO_BLOCKERS, "clarificationReason": "?", "questions": [{"question": "哪个？"}]}),
     "/intents/0/blockers/questions/0/options", "questions_are_well_formed"),
    ("blank option", _with(B, {**NO_BLOCKERS, "clarificationReason": "?", "questions": [{"question": "哪个？", "options": [" "]}]}),
     "/intents/0/blockers/questions/0/options/0", "questions_are_well_formed"),
    ("reason without question", _with((*B, "clarificationReason"), "不明确"), "/intents/0/blockers/questions", "questions_present_exactly_with_clarification"),
    ("question without reason", _with((*B, "questions"), [{"question": "哪个？", "options": []}]),
     "/intents/0/blockers/clarificationReason", "questions_present_exactly_with_clarification"),
    ("null action without clarification", _with(("intents", 0, "action"), None), "/intents/0/action", "null_action_needs_clarification"),
]


@pytest.mark.parametrize(("name", "candidate", "pointer", "rule"), BROKEN, ids=[b[0] for b in BROKEN])
def test_each_core_rule_broken_alone(name, candidate, pointer, rule):
    # spec: R-COR-004 R-COR-005 R-COR-006 R-COR-007 R-COR-008 R-COR-009 R-ERR-025
    assert core_violations(ORDER_CORE) == []
    found = list(CORE_RULES[rule](candidate))
    assert pointer in [path for path, _ in found], found
    intent = Intent({"language": "zh-CN", "repairAttempts": 0})
    with pytest.raises(IntentParseError) as caught:
        intent.parse({"input": "查询订单 000123", "fields": []}, scripted([dumps(candidate)]))
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == ("MODEL_OUTPUT_INVALID", "core")
    assert pointer in [issue["path"] for issue in err["issues"]]
    assert "partialResult" not in err  # the core never succeeded (spec: R-ERR-011)


def test_every_core_rule_is_exercised_by_a_broken_candidate():
    assert {b[3] for b in BROKEN} == set(CORE_RULES)


def test_a_contract_fault_gets_one_repair_then_fails():
    # spec: R-ERR-026 R-ERR-027 R-TSK-009 R-TSK-010 R-TSK-011 -- default one repair per stage; the repair stays a core task.
    bad = dumps(_with(("normalizedInput",), " "))
    executor = scripted([bad, bad])
    with pytest.raises(IntentParseError) as caught:
        Intent({"language": "zh-CN"}).parse({"input": "查询订单 000123", "fields": []}, executor)
    assert caught.value.code == "MODEL_OUTPUT_INVALID"
    first, second = executor.requests
    assert "repair" not in json.loads(first["payload"])
    repair = json.loads(second["payload"])["repair"]
    assert repair["attempt"] == 1 and repair["maxAttempts"] == 1
    assert repair["previousCandidate"] == bad
    assert [i["path"] for i in repair["issues"]] == ["/normalizedInput"]
    assert second["format"] == first["format"]


def test_a_repaired_candidate_succeeds():
    executor = scripted([dumps(_with(("intents", 0, "action"), "create")), dumps(ORDER_CORE)])
    result = Intent({"language": "zh-CN"}).parse({"input": "查询订单 000123", "fields": []}, executor)
    assert result["intents"][0]["action"] == "query" and len(executor.requests) == 2


@pytest.mark.parametrize("attempts", [0, 2, 3])
def test_repair_attempts_are_configurable(attempts):
    bad = dumps(_with(("normalizedInput",), " "))
    executor = scripted([bad] * (attempts + 1))
    with pytest.raises(IntentParseError):
        Intent({"repairAttempts": attempts}).parse({"input": "x", "fields": []}, executor)
    assert len(executor.requests) == attempts + 1


# --- status priority and reasons (seed 001 "动作字段与状态") -----------------------------------

COMBINATIONS = list(itertools.product([False, True], repeat=3))


@pytest.mark.parametrize(("clarify", "confirm", "condition"), COMBINATIONS)
def test_status_and_reason_for_every_blocker_combination(clarify, confirm, condition):
    # spec: R-RES-037 R-RES-038 R-RES-039 R-RES-032 R-RES-033
    blockers = {
        "clarificationReason": "C1" if clarify else None,
        "questions": [{"question": "Q?", "options": ["a", "b"]}] if clarify else [],
        "confirmationReason": "C2" if confirm else None,
        "conditionReason": "C3" if condition else None,
    }
    candidate = _with(B, blockers)
    item = Intent().parse({"input": "x"}, scripted([dumps(candidate)]))["intents"][0]
    expected_status = (
        "needs_clarification" if clarify else "awaiting_confirmation" if confirm else "conditional" if condition else "ready"
    )
    assert item["status"] == expected_status
    reasons = [r for r, on in (("C1", clarify), ("C2", confirm), ("C3", condition)) if on]
    if reasons:
        assert item["reason"] == "\n".join(reasons)
    else:
        assert "reason" not in item
    if clarify:
        assert item["clarification"] == [{"question": "Q?", "options": ["a", "b"]}]
    else:
        assert "clarification" not in item
    assert list(item)[:5] == ["id", "action", "target", "requirements", "status"]


texts = st.text(min_size=1).filter(lambda s: s.strip() != "")


@given(st.none() | texts, st.none() | texts, st.none() | texts)
def test_status_priority_holds_for_any_texts(clarify, confirm, condition):
    status, reason = item_status(
        {"clarificationReason": clarify, "questions": [], "confirmationReason": confirm, "conditionReason": condition}
    )
    present = [r for r in (clarify, confirm, condition) if r is not None]
    assert (reason is None) == (not present)
    if present:
        assert reason == "\n".join(present)
    order = ["needs_clarification", "awaiting_confirmation", "conditional"]
    firsts = [s for s, r in zip(order, (clarify, confirm, condition), strict=True) if r is not None]
    assert status == (firsts[0] if firsts else "ready")


@given(st.integers(min_value=1, max_value=12))
def test_ids_number_items_from_one_in_order(count):
    # spec: R-RES-026
    candidate = copy.deepcopy(ORDER_CORE)
    candidate["intents"] = [_item(target=f"t{i}") for i in range(count)]
    result = Intent().parse({"input": "x"}, scripted([dumps(candidate)]))
    assert [i["id"] for i in result["intents"]] == [f"i{n}" for n in range(1, count + 1)]
    assert [i["target"] for i in result["intents"]] == [f"t{n}" for n in range(count)]


def test_input_is_kept_byte_for_byte():
    # spec: R-RES-015 -- spaces and newlines are preserved.
    raw = "  查询订单 000123\n\t"
    result = Intent().parse({"input": raw}, scripted([dumps(ORDER_CORE)]))
    assert result["input"] == raw


def test_the_intent_core_schema_accepts_the_seed_candidate_and_rejects_broken_ones():
    import jsonschema

    validator = jsonschema.Draft7Validator(INTENT_CORE_SCHEMA)
    assert validator.is_valid(ORDER_CORE)
    structural = [b for b in BROKEN if b[3] not in ("questions_present_exactly_with_clarification", "null_action_needs_clarification")]
    for name, candidate, _pointer, _rule in structural:
        assert not validator.is_valid(candidate), name
