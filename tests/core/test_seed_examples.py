"""Every result example of seed 001 and every error example of seed 004, through the API path."""

from __future__ import annotations

import copy
import json

import pytest

from intentref import Intent, IntentDataError, IntentParseError
from tests.conftest import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA, dumps, scripted

# spec: R-EXM-001 R-EXM-002 R-EXM-003 R-EXM-004 R-EXM-005 R-EXM-006 R-EXM-007 R-EXM-008
# spec: R-EXM-009 R-EXM-010 R-EXM-011 R-EXM-012 R-EXM-013 R-EXM-014 R-EXM-015


def test_there_are_fifteen_result_examples(seed_results):
    assert len(seed_results) == 15
    assert len({e["heading"] for e in seed_results}) == 15


@pytest.mark.parametrize("index", range(15))
def test_result_example_reproduces_whole(seed_results, index):
    example = seed_results[index]
    steps = [dumps(example["core"])] + ([dumps(example["data"])] if "data" in example else [])
    executor = scripted(steps)
    result = Intent(example["config"]).parse(example["request"], executor)
    assert result == example["result"]
    # The seven root members, in the seeds' order (spec: R-RES-005).
    assert list(result) == ["input", "normalizedInput", "primaryIntent", "requirements", "intents", "prohibitions", "data"]
    assert len(executor.requests) == len(steps)


def test_order_data_task_payload_is_the_seed_example_byte_for_byte():
    # spec: R-RPY-010, R-TSK-004, R-RPY-011 -- the data payload of seed 000 "回复类型", reproduced exactly.
    seed_payload = (
        '{"structuredLanguage":"zh-CN","currentInput":"查询订单 000123","context":[],"schemaReference":{"type":"object",'
        '"properties":{"orderId":{"type":"string","description":"当前请求中的订单编号，保留前导零。"}},"required":["orderId"],'
        '"additionalProperties":false},"checkedDefault":{"input":"查询订单 000123","normalizedInput":"查询订单 000123。",'
        '"primaryIntent":"查询订单 000123","requirements":[],"intents":[{"id":"i1","action":"query","target":"订单 000123",'
        '"requirements":[],"status":"ready"}],"prohibitions":[],"data":{}},"selectedSchema":{"type":"object","properties":'
        '{"orderId":{"type":"string","description":"当前请求中的订单编号，保留前导零。"}},"required":["orderId"],'
        '"additionalProperties":false},"selectedFields":["orderId"]}'
    )
    executor = scripted([dumps(ORDER_CORE), dumps(ORDER_DATA)])
    Intent({"language": "zh-CN", "schema": ORDER_SCHEMA}).parse({"input": "查询订单 000123", "fields": ["orderId"]}, executor)
    core_request, data_request = executor.requests
    assert data_request["payload"] == seed_payload
    assert data_request["format"] == {"kind": "json_object"}
    assert core_request["format"]["kind"] == "json_schema" and core_request["format"]["name"] == "intent_core"
    assert isinstance(core_request["format"]["schema"], dict)
    assert json.loads(core_request["payload"]) == {"structuredLanguage": "zh-CN", "currentInput": "查询订单 000123", "context": []}


def test_blank_input_is_the_seed_input_invalid_example():
    # spec: R-ERR-017 -- seed 004's INPUT_INVALID example, whole.
    with pytest.raises(IntentParseError) as caught:
        Intent({"language": "zh-CN"}).parse({"input": " \n\t "}, scripted([]))
    assert caught.value.to_json() == {
        "code": "INPUT_INVALID",
        "stage": "input",
        "message": "input must contain non-whitespace text.",
        "issues": [],
    }
    assert not isinstance(caught.value, IntentDataError)


def test_missing_order_id_is_the_seed_extraction_example():
    # spec: R-ERR-019 -- seed 004's DATA_EXTRACTION_FAILED example, whole.
    core = copy.deepcopy(ORDER_CORE)
    core.update(normalizedInput="查询订单。", primaryIntent="查询订单")
    core["intents"][0]["target"] = "订单"
    data = {
        "data": {},
        "evidence": [],
        "descriptionChecks": [],
        "fieldResults": [{"path": "/data/orderId", "status": "issue", "explanation": "没有提供订单编号。"}],
        "issues": [
            {"code": "DATA_REQUIRED_MISSING", "category": "business_information", "path": "/data/orderId", "message": "请提供订单编号。"}
        ],
    }
    intent = Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})
    with pytest.raises(IntentDataError) as caught:
        intent.parse({"input": "查询订单", "fields": ["orderId"]}, scripted([dumps(core), dumps(data)]))
    assert caught.value.to_json() == {
        "code": "DATA_EXTRACTION_FAILED",
        "stage": "data",
        "message": "Selected extension information cannot satisfy the definition.",
        "issues": [
            {"code": "DATA_REQUIRED_MISSING", "category": "business_information", "path": "/data/orderId", "message": "请提供订单编号。"}
        ],
        "partialResult": {
            "input": "查询订单",
            "normalizedInput": "查询订单。",
            "primaryIntent": "查询订单",
            "requirements": [],
            "intents": [{"id": "i1", "action": "query", "target": "订单", "requirements": [], "status": "ready"}],
            "prohibitions": [],
            "data": {},
        },
    }
    assert caught.value.partialResult == caught.value.to_json()["partialResult"]
