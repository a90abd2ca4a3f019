"""Seed flows through the real core and Bridge, over stdio and HTTP, in both eras.

Each scenario is a host loop as seed 000 "完整 Bridge 流程" describes it, written against
the tool results a real SDK Client receives.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from intentref.devtools.examples import ORDER_DATA_MISSING
from mcp_support import (
    ERAS,
    ORDER_CORE,
    ORDER_DATA,
    ORDER_INPUT,
    accept,
    call,
    order_flow,
    prepare_order,
    stdio_params,
)

Scenario = Callable[[Client], Awaitable[None]]


async def seed_order_flow(client: Client) -> None:
    final = await order_flow(client)
    assert final["result"]["intents"][0]["status"] == "ready"


async def repair(client: Client) -> None:
    core_task = await prepare_order(client)
    broken = {
        **ORDER_CORE,
        "intents": [{k: v for k, v in ORDER_CORE["intents"][0].items() if k != "blockers"}],
    }
    repair_task = await accept(client, core_task, broken)
    # seed 000 "payload 内容": no separate repair stage; the core repair is a core task.
    assert repair_task["kind"] == "task", repair_task
    assert repair_task["stage"] == "core"
    assert repair_task["jobId"] == core_task["jobId"]
    assert repair_task["stepToken"] != core_task["stepToken"]
    assert "repair" in json.loads(repair_task["payload"])
    data_task = await accept(client, repair_task, ORDER_CORE)
    assert data_task["kind"] == "task" and data_task["stage"] == "data", data_task
    final = await accept(client, data_task, ORDER_DATA)
    assert final["kind"] == "result"
    assert final["result"]["data"] == {"orderId": "000123"}


async def extraction_error(client: Client) -> None:
    core_task = await prepare_order(client, "查询订单")
    data_task = await accept(client, core_task, {**ORDER_CORE, "normalizedInput": "查询订单。"})
    assert data_task["kind"] == "task" and data_task["stage"] == "data", data_task
    failed = await accept(client, data_task, ORDER_DATA_MISSING)
    assert failed["kind"] == "error"
    assert failed["error"]["code"] == "DATA_EXTRACTION_FAILED"
    assert failed["error"]["stage"] == "data"
    assert "partialResult" in failed["error"]
    assert [i["code"] for i in failed["error"]["issues"]] == ["DATA_REQUIRED_MISSING"]


async def cancel(client: Client) -> None:
    task = await prepare_order(client)
    ended = await call(
        client, "intent_cancel", {"jobId": task["jobId"], "outcome": "refusal", "detail": "不处理"}
    )
    assert ended["kind"] == "error"  # isError true: the cancel worked (R-CAN-010)
    assert ended["error"]["code"] == "MODEL_REFUSED"
    again = await call(client, "intent_cancel", {"jobId": task["jobId"]})
    assert again == ended  # spec: R-CAN-008 -- a retained job answers with its terminal reply
    late = await accept(client, task, ORDER_CORE)
    assert late["kind"] == "error"
    gone = await call(client, "intent_cancel", {"jobId": "no-such-job"})
    assert gone["error"]["code"] == "BRIDGE_JOB_NOT_FOUND"


async def replay(client: Client) -> None:
    core_task = await prepare_order(client)
    first = await accept(client, core_task, ORDER_CORE)
    second = await accept(client, core_task, ORDER_CORE)  # same token, identical text
    assert second == first  # spec: R-IDM-001
    final = await accept(client, first, ORDER_DATA)
    assert await accept(client, first, ORDER_DATA) == final


async def conflict(client: Client) -> None:
    core_task = await prepare_order(client)
    data_task = await accept(client, core_task, ORDER_CORE)
    assert data_task["kind"] == "task"
    other = await accept(client, core_task, {**ORDER_CORE, "primaryIntent": "查看订单 000123"})
    assert other["kind"] == "error"
    assert other["error"]["code"] == "BRIDGE_STEP_CONFLICT"  # spec: R-IDM-003
    final = await accept(client, data_task, ORDER_DATA)  # the conflict left the job alone
    assert final["kind"] == "result"


async def no_action_envelope(client: Client) -> None:
    """R-ENV-004: the seed's complete envelope for an input without a valid action."""
    task = await call(
        client, "intent_prepare", {"instance": "default", "input": "订单编号是 000123。", "fields": []}
    )
    assert task["kind"] == "task" and task["stage"] == "core", task
    candidate = {
        "normalizedInput": "提供订单编号 000123，未提出操作请求。",
        "primaryIntent": None,
        "requirements": [],
        "prohibitions": [],
        "intents": [],
    }
    args = {
        "jobId": task["jobId"],
        "stepToken": task["stepToken"],
        "candidateText": json.dumps(candidate, ensure_ascii=False),
    }
    result = await client.call_tool("intent_accept", args)
    envelope = result.model_dump(
        by_alias=True, mode="json", exclude_none=True, include={"content", "structured_content", "is_error"}
    )
    assert envelope == {
        "content": [
            {
                "type": "text",
                "text": '{"kind":"result","result":{"input":"订单编号是 000123。","normalizedInput":"提供订单编号 000123，未提出操作请求。","primaryIntent":null,"requirements":[],"intents":[],"prohibitions":[],"data":{}}}',
            }
        ],
        "structuredContent": {
            "kind": "result",
            "result": {
                "input": "订单编号是 000123。",
                "normalizedInput": "提供订单编号 000123，未提出操作请求。",
                "primaryIntent": None,
                "requirements": [],
                "intents": [],
                "prohibitions": [],
                "data": {},
            },
        },
        "isError": False,
    }


async def context_sources(client: Client) -> None:
    """spec: R-TSK-005, R-TSK-006 -- both context forms cross the MCP boundary intact."""
    messages = [{"role": "user", "content": "我想查订单"}, {"role": "assistant", "content": "请提供编号"}]
    task = await call(
        client, "intent_prepare", {"instance": "orders", "input": ORDER_INPUT, "context": messages}
    )
    assert task["kind"] == "task", task
    payload = json.loads(task["payload"])
    assert [m["sourceId"] for m in payload["context"]] == ["context:0", "context:1"]
    assert [m["role"] for m in payload["context"]] == ["user", "assistant"]
    text = await call(
        client, "intent_prepare", {"instance": "orders", "input": ORDER_INPUT, "context": "之前在聊订单"}
    )
    assert text["kind"] == "task", text
    [source] = json.loads(text["payload"])["context"]
    assert (source["sourceId"], source["role"], source["content"]) == (
        "context:0",
        "background",
        "之前在聊订单",
    )


SCENARIOS: dict[str, Scenario] = {
    "order": seed_order_flow,
    "repair": repair,
    "extraction-error": extraction_error,
    "cancel": cancel,
    "replay": replay,
    "conflict": conflict,
    "no-action-envelope": no_action_envelope,
    "context": context_sources,
}


def _run(target: Any, mode: str, scenario: Scenario) -> None:
    async def main() -> None:
        async with Client(target, mode=mode) as client:
            await scenario(client)

    anyio.run(main)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_over_stdio(config_file: Path, mode: str, version: str, name: str) -> None:
    _run(stdio_params(config_file), mode, SCENARIOS[name])


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_over_http(http_url: str, mode: str, version: str, name: str) -> None:
    _run(http_url, mode, SCENARIOS[name])
