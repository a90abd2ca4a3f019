"""The seed's order example (seed 000 "回复类型" / "data 候选"), shared by benchmarks and tests.

One definition of the order schema, its input, its two complete candidates and the data
candidate that misses the order number, so that the benchmarks measure exactly the flow
the tests check and no test writes the seed out again.
"""

from __future__ import annotations

from typing import Any

ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"orderId": {"type": "string", "description": "当前请求中的订单编号，保留前导零。"}},
    "required": ["orderId"],
    "additionalProperties": False,
}
ORDER_CORE: dict[str, Any] = {
    "normalizedInput": "查询订单 000123。",
    "primaryIntent": "查询订单 000123",
    "requirements": [],
    "prohibitions": [],
    "intents": [
        {
            "action": "query",
            "target": "订单 000123",
            "requirements": [],
            "blockers": {"clarificationReason": None, "questions": [], "confirmationReason": None, "conditionReason": None},
        }
    ],
}
ORDER_DATA: dict[str, Any] = {
    "data": {"orderId": "000123"},
    "evidence": [{"path": "/data/orderId", "mode": "exact", "sources": [{"sourceId": "input", "quote": "000123"}]}],
    "descriptionChecks": [
        {
            "path": "/data/orderId",
            "verdict": "satisfied",
            "explanation": "输入明确提供精确订单编号。",
            "sources": [{"sourceId": "input", "quote": "000123"}],
        }
    ],
    "fieldResults": [{"path": "/data/orderId", "status": "extracted", "explanation": "输入明确提供编号。"}],
    "issues": [],
}
# seed 000 "data 候选": the required order number is missing -> DATA_EXTRACTION_FAILED.
ORDER_DATA_MISSING: dict[str, Any] = {
    "data": {},
    "evidence": [],
    "descriptionChecks": [],
    "fieldResults": [{"path": "/data/orderId", "status": "issue", "explanation": "没有提供订单编号。"}],
    "issues": [
        {
            "code": "DATA_REQUIRED_MISSING",
            "category": "business_information",
            "path": "/data/orderId",
            "message": "请提供订单编号。",
        }
    ],
}
ORDER_INPUT = "查询订单 000123"
