"""Shared helpers for the test suite (no fixtures that hide what a test checks)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Hypothesis profiles: "ci" is the default fast run; INTENTREF_LONG=1 selects "long".
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=5_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile("long" if __import__("os").environ.get("INTENTREF_LONG") == "1" else "ci")

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


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def scripted(texts: Iterable[str]) -> Callable[[dict[str, Any]], str]:
    """An executor that answers each model request with the next text, recording requests."""
    queue = list(texts)
    requests: list[dict[str, Any]] = []

    def executor(request: dict[str, Any]) -> str:
        requests.append(request)
        if not queue:
            raise AssertionError("the job asked for more steps than the script holds")
        return queue.pop(0)

    executor.requests = requests  # type: ignore[attr-defined]
    return executor


@pytest.fixture
def seed_results() -> list[dict[str, Any]]:
    return json.loads((ROOT / "tests/core/data/seed_results.json").read_text("utf-8"))
