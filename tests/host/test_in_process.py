"""The in-process form: a host coroutine judged with an MCP client in memory and the scripted model.

``in_process_host`` is the seed's loop written against that form (no subprocess at all); it
must pass the catalogue, and the same loop with the first task's tokens kept must fail on
R-HST-007 — the in-process judge reads what the coroutine did exactly as the command does.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from intentref.suite.host.judge import catalogue_paths, load_scenario

DETAIL_LIMIT = 2048


async def in_process_host(client: Any, model: Any, request: dict[str, Any], *, stale: bool = False) -> dict[str, Any] | None:
    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, arguments)  # a JSON-RPC error raises: no reply (R-HST-012)
        reply = result.structured_content
        if not isinstance(reply, dict) or reply.get("kind") not in ("task", "result", "error"):
            raise RuntimeError("not a BridgeReply")
        return reply

    first: dict[str, Any] | None = None
    task: dict[str, Any] | None = None
    try:
        reply = await call("intent_prepare", request)
        while reply["kind"] == "task":
            task = reply
            first = first or task
            for _ in range(4):  # the first answer, then up to three after a size rejection
                answer = await model(task)
                if answer.status in (3, 4):
                    detail = answer.text.encode("utf-8")[:DETAIL_LIMIT].decode("utf-8", "ignore")
                    outcome = "refusal" if answer.status == 3 else "incomplete"
                    return await call("intent_cancel", {"jobId": task["jobId"], "outcome": outcome, "detail": detail})
                if answer.status != 0:
                    raise RuntimeError("the model failed")
                tokens = first if stale else task
                reply = await call("intent_accept", {"jobId": tokens["jobId"], "stepToken": tokens["stepToken"],
                                                     "candidateText": answer.text})  # fmt: skip
                error = reply.get("error") or {}
                sized = error.get("code") == "LIMIT_EXCEEDED" and any(
                    i.get("path") in (None, "/candidateText") for i in error.get("issues", [])
                )
                if not sized:
                    break
        return reply
    except Exception:
        if task is not None:
            with contextlib.suppress(Exception):  # the release is best effort
                await call("intent_cancel", {"jobId": task["jobId"], "outcome": "cancelled"})
        return None


SCENARIOS = [load_scenario(path) for path in catalogue_paths()]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_an_in_process_host_passes_every_scenario(host_judge, scenario):
    verdict = host_judge(in_process_host, scenario)
    assert verdict.lines("reference") == []
    assert verdict.runs and all(run.host_exit is not None and run.calls for run in verdict.runs)


def test_an_in_process_host_that_keeps_the_first_tokens_fails_on_r_hst_007(host_judge):
    async def stale_host(client: Any, model: Any, request: dict[str, Any]) -> dict[str, Any] | None:
        return await in_process_host(client, model, request, stale=True)

    verdict = host_judge(stale_host, "HST-004")
    rules = {line.split(" ", 1)[0] for line in verdict.lines()}
    assert rules == {"R-HST-007"}
    assert verdict.failed()
