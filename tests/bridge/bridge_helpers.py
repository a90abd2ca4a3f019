"""Shared material for the Bridge tests: the seed order example and small utilities.

Plain functions rather than fixtures so that the Hypothesis state machine can use them too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from intentref import Intent
from intentref.bridge import BridgeSession, IntentBridge, create_intent_bridge
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_DATA_MISSING, ORDER_INPUT, ORDER_SCHEMA

# seed 000 "回复类型" / "core 候选" / "data 候选": the order example, one definition (devtools/examples.py).
CORE_TEXT = json.dumps(ORDER_CORE, ensure_ascii=False)
DATA_TEXT = json.dumps(ORDER_DATA, ensure_ascii=False)
DATA_MISSING_TEXT = json.dumps(ORDER_DATA_MISSING, ensure_ascii=False)
CHECKED_DEFAULT: dict[str, Any] = {
    "input": ORDER_INPUT,
    "normalizedInput": "查询订单 000123。",
    "primaryIntent": "查询订单 000123",
    "requirements": [],
    "intents": [
        {"id": "i1", "action": "query", "target": "订单 000123", "requirements": [], "status": "ready"}
    ],
    "prohibitions": [],
    "data": {},
}
ORDER_RESULT: dict[str, Any] = {**CHECKED_DEFAULT, "data": {"orderId": "000123"}}
# seed 000 "回复类型": the data task payload, character for character.
SEED_DATA_PAYLOAD = (
    '{"structuredLanguage":"zh-CN","currentInput":"查询订单 000123","context":[],"schemaReference":{"type":"object",'
    '"properties":{"orderId":{"type":"string","description":"当前请求中的订单编号，保留前导零。"}},"required":["orderId"],'
    '"additionalProperties":false},"checkedDefault":{"input":"查询订单 000123","normalizedInput":"查询订单 000123。",'
    '"primaryIntent":"查询订单 000123","requirements":[],"intents":[{"id":"i1","action":"query","target":"订单 000123",'
    '"requirements":[],"status":"ready"}],"prohibitions":[],"data":{}},"selectedSchema":{"type":"object","properties":'
    '{"orderId":{"type":"string","description":"当前请求中的订单编号，保留前导零。"}},"required":["orderId"],'
    '"additionalProperties":false},"selectedFields":["orderId"]}'
)
TASK_KEYS = ["kind", "jobId", "stepToken", "stage", "instructions", "payload", "format"]


def order_intent(**config: Any) -> Intent:
    return Intent({"language": "zh-CN", "schema": ORDER_SCHEMA, **config})


def make_bridge(instances: dict[str, Intent] | None = None, *, clock: Callable[[], float] | None = None,
                wall_clock: Callable[[], float] | None = None, **options: Any) -> IntentBridge:  # fmt: skip
    config: dict[str, Any] = {"instances": instances or {"default": order_intent()}, **options}
    return create_intent_bridge(config, clock=clock, wall_clock=wall_clock)


def prepare(session: BridgeSession, instance: str = "default", **request: Any) -> dict[str, Any]:
    return session.prepare({"instance": instance, "input": ORDER_INPUT, **request})


def accept(
    session: BridgeSession, task: dict[str, Any], text: str, token: str | None = None
) -> dict[str, Any]:
    return session.accept(
        {
            "jobId": task["jobId"],
            "stepToken": task["stepToken"] if token is None else token,
            "candidateText": text,
        }
    )


def wire(reply: Any) -> str:
    """The reply as the MCP text content carries it: the comparison for 'identical to the byte'."""
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":"))


def code(reply: dict[str, Any]) -> str:
    assert reply["kind"] == "error", reply
    return str(reply["error"]["code"])


class FakeClock:
    """A clock the test moves by hand (milliseconds)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms
