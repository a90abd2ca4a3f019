"""The published JSON Schemas are the pydantic models' own, and both agree with the core."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from intentref import Intent, IntentParseError
from intentref.cli import main
from intentref.core import models
from intentref.core.core_candidate import INTENT_CORE_SCHEMA
from tests.conftest import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA, ROOT, dumps, scripted
from tests.core.test_core_candidate import BROKEN


def _published(name):
    return json.loads((ROOT / "spec/schemas" / f"{name}.schema.json").read_text("utf-8"))


def _validator(name):
    return jsonschema.Draft202012Validator(_published(name))


def test_published_schemas_are_generated_from_the_models():
    assert main(["schemas", "--check", "--out", str(ROOT / "spec/schemas")]) == 0
    for name in models.WIRE_TYPES:
        assert _published(name) == models.json_schema(name)


def test_check_detects_a_stale_schema(tmp_path):
    assert main(["schemas", "--out", str(tmp_path)]) == 0
    path = tmp_path / "intent-result.schema.json"
    path.write_text(path.read_text("utf-8").replace('"input"', '"inputs"', 1), "utf-8")
    assert main(["schemas", "--check", "--out", str(tmp_path)]) == 1


def test_every_seed_result_is_valid_in_schema_and_model(seed_results):
    # spec: R-RES-005 R-RES-012 R-RES-013
    validator = _validator("intent-result")
    for example in seed_results:
        validator.validate(example["result"])
        models.adapter("intent-result").validate_python(example["result"])
        models.adapter("core-candidate").validate_python(example["core"])
        _validator("core-candidate").validate(example["core"])
        if "data" in example:
            models.adapter("data-candidate").validate_python(example["data"])
            _validator("data-candidate").validate(example["data"])


@pytest.mark.parametrize(
    "mutation",
    [
        lambda r: r["intents"][0].__setitem__("reason", "x"),  # ready carries no reason
        lambda r: r["intents"][0].__setitem__("status", "done"),
        lambda r: r["intents"][0].__setitem__("id", "i0"),
        lambda r: r.pop("data"),
        lambda r: r.__setitem__("extra", 1),
        lambda r: r.__setitem__("normalizedInput", " "),
    ],
)
def test_broken_results_are_rejected_by_schema_and_model(seed_results, mutation):
    result = copy.deepcopy(seed_results[0]["result"])
    mutation(result)
    assert not _validator("intent-result").is_valid(result)
    with pytest.raises(Exception):  # noqa: B017 -- pydantic's ValidationError
        models.adapter("intent-result").validate_python(result)


def test_core_rules_schema_and_model_agree_on_structural_faults():
    # The task's intent_core schema, the published schema and the pydantic model must
    # reject every structurally broken candidate the core rejects.
    task_schema = jsonschema.Draft7Validator(INTENT_CORE_SCHEMA)
    published = _validator("core-candidate")
    cross_member = {"questions_present_exactly_with_clarification", "null_action_needs_clarification"}
    for name, candidate, _pointer, rule in BROKEN:
        if rule in cross_member:
            continue
        assert not task_schema.is_valid(candidate), name
        assert not published.is_valid(candidate), name
        with pytest.raises(Exception):  # noqa: B017
            models.adapter("core-candidate").validate_python(candidate)
    assert task_schema.is_valid(ORDER_CORE) and published.is_valid(ORDER_CORE)


def test_errors_validate_and_omit_absent_members():
    # spec: R-ERR-006 R-ERR-010 R-ERR-011
    validator = _validator("serialized-intent-error")
    with pytest.raises(IntentParseError) as blank:
        Intent().parse({"input": " "}, scripted([]))
    validator.validate(blank.value.to_json())
    assert "partialResult" not in blank.value.to_json()
    assert not validator.is_valid({**blank.value.to_json(), "partialResult": None})
    data = copy.deepcopy(ORDER_DATA)
    data.update(data={}, evidence=[], descriptionChecks=[])
    data["fieldResults"][0]["status"] = "issue"
    data["issues"] = [{"code": "DATA_REQUIRED_MISSING", "category": "business_information", "path": "/data/orderId", "message": "缺"}]
    with pytest.raises(IntentParseError) as extraction:
        Intent({"schema": ORDER_SCHEMA}).parse({"input": "查询订单"}, scripted([dumps(ORDER_CORE), dumps(data)]))
    validator.validate(extraction.value.to_json())
    models.adapter("serialized-intent-error").validate_python(extraction.value.to_json())


def test_seed_bridge_reply_examples_validate():
    # spec: R-RPY-010 R-RPY-012 R-RPY-013 -- the three reply examples of seed 000.
    validator = _validator("bridge-reply")
    task = {
        "kind": "task", "jobId": "j", "stepToken": "t", "stage": "data", "instructions": "…",
        "payload": "{}", "format": {"kind": "json_object"},
    }  # fmt: skip
    validator.validate(task)
    validator.validate({"kind": "error", "error": {"code": "INPUT_INVALID", "stage": "input",
                                                   "message": "input must contain non-whitespace text.", "issues": []}})  # fmt: skip
    assert not validator.is_valid({**task, "expiresAt": None})
    assert not validator.is_valid({**task, "kind": "done"})
    assert not validator.is_valid({"kind": "result"})
