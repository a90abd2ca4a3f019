"""MCP benchmark: a round trip of the accept tool against a no-op tool, same server, same run.

``python -m intentref.devtools.bench_mcp --config FILE`` serves stdio like
``intent-runtime-mcp --config FILE`` plus two tools added through ``extra_tools``
(D-MCP-015): ``bench_noop`` returns a fixed tiny result, ``bench_replay`` a data-task result
built once at start (the same bytes both ways as the measured accept, without Bridge work).
``mcp.Client`` drives it in both eras, one connection each: ours is the accept of seed 000's
core candidate on a freshly prepared job, the floor ``bench_noop``, the protocol's own round
trip.  The ratio is what the adapter and the Bridge add to a tool call; target: at most 1.25x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, PREPARE_TOOL
from intentref.devtools.examples import ORDER_CORE, ORDER_INPUT, ORDER_SCHEMA
from intentref.devtools.figure import Figure

if TYPE_CHECKING:
    from intentref.mcp.server import ExtraTool

TARGET = 1.25
ERAS = (("auto", "2026-07-28"), ("legacy", "2025 handshake"))
CORE_TEXT = json.dumps(ORDER_CORE, ensure_ascii=False, separators=(",", ":"))
BENCH_INSTANCE: Final = "orders"
BENCH_NOOP_TOOL: Final = "bench_noop"
BENCH_REPLAY_TOOL: Final = "bench_replay"
_NOOP_REPLY: Final[dict[str, Any]] = {"kind": "result", "result": {}}


# --------------------------------------------------------------------------- the bench server


def bench_tools(instances: Mapping[str, Any], instance: str = BENCH_INSTANCE) -> list[ExtraTool]:
    """The two floors as ``ExtraTool``s over ``instances`` (D-MCP-015)."""
    from intentref.bridge import create_intent_bridge, retained_json
    from intentref.mcp.server import MCP_TOOLS, ExtraTool, tool_result

    noop_result = tool_result(dict(_NOOP_REPLY))
    bridge = create_intent_bridge({"instances": dict(instances)})
    try:
        session = bridge.connect()
        task = session.prepare({"instance": instance, "input": ORDER_INPUT})
        data_task = session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE_TEXT})
        if data_task.get("kind") != "task" or data_task.get("stage") != "data":
            raise RuntimeError(f"the seed core candidate did not give a data task: {data_task}")
        replay_result = tool_result(data_task, retained_json(data_task))
    finally:
        bridge.close()
    return [
        ExtraTool(
            {"name": BENCH_NOOP_TOOL, "description": "Benchmark floor: does nothing, returns a fixed result.",
             "inputSchema": {"type": "object"}},
            lambda arguments: noop_result,
        ),
        ExtraTool(
            {"name": BENCH_REPLAY_TOOL, "description": "Benchmark floor: returns a data-task result built at start.",
             "inputSchema": {"type": "object"}, "outputSchema": MCP_TOOLS[0]["outputSchema"]},
            lambda arguments: replay_result,
        ),
    ]  # fmt: skip


async def _serve(config_file: str) -> None:
    from intentref.mcp.cli import build_instances, dispose_instances
    from intentref.mcp.server import serve_intent_mcp

    instances = build_instances(config_file)
    try:
        service = await serve_intent_mcp({"instances": instances}, extra_tools=bench_tools(instances))
        try:
            await service.wait_closed()
        finally:
            await service.close()
    finally:
        dispose_instances(instances)


def serve_main(argv: Sequence[str] | None = None) -> int:
    """``python -m intentref.devtools.bench_mcp --config FILE``: the bench server over stdio, until end of input."""
    parser = argparse.ArgumentParser(prog="python -m intentref.devtools.bench_mcp")
    parser.add_argument("--config", required=True, metavar="FILE")
    asyncio.run(_serve(parser.parse_args(argv).config))
    return 0


# --------------------------------------------------------------------------- the measurement


def _reply(result: Any) -> dict[str, Any]:
    reply = result.structured_content
    if not isinstance(reply, dict):
        raise RuntimeError(f"a tool result without structuredContent: {result!r}")
    return reply


async def _timed(calls: list[Callable[[], Awaitable[Any]]]) -> tuple[float, list[Any]]:
    """Seconds per call of running ``calls`` one after another, and their results."""
    results = []
    started = time.perf_counter()
    for call in calls:
        results.append(await call())
    return (time.perf_counter() - started) / len(calls), results


async def _measure(config_file: Path, mode: str, smoke: bool) -> tuple[float, float, float]:
    from mcp import Client, StdioServerParameters

    batch, rounds = (10, 2) if smoke else (200, 9)
    params = StdioServerParameters(  # the whole environment, so the server imports intentref as we do
        command=sys.executable, args=["-m", "intentref.devtools.bench_mcp", "--config", str(config_file)],
        env=dict(os.environ),
    )
    async with Client(params, mode=mode) as client:
        listed = await client.list_tools()  # the client caches output schemas from here on
        if BENCH_NOOP_TOOL not in [tool.name for tool in listed.tools]:
            raise RuntimeError(f"the bench server did not serve {BENCH_NOOP_TOOL}")

        async def prepare() -> dict[str, Any]:
            reply = _reply(
                await client.call_tool(PREPARE_TOOL, {"instance": BENCH_INSTANCE, "input": ORDER_INPUT})
            )
            if reply.get("kind") != "task" or reply.get("stage") != "core":
                raise RuntimeError(f"{PREPARE_TOOL} did not give a core task: {reply}")
            return reply

        def accept(task: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
            args = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE_TEXT}
            return lambda: client.call_tool(ACCEPT_TOOL, args)

        def noop() -> Awaitable[Any]:
            return client.call_tool(BENCH_NOOP_TOOL, {})

        async def accept_round() -> float:
            tasks = [await prepare() for _ in range(batch)]  # outside the timing
            seconds, results = await _timed([accept(task) for task in tasks])
            for result in results:
                reply = _reply(result)
                if reply.get("kind") != "task" or reply.get("stage") != "data":
                    raise RuntimeError(f"the core accept did not give a data task: {reply}")
                # Release the job (outside the timing) so maxJobs never fills up.
                await client.call_tool(CANCEL_TOOL, {"jobId": reply["jobId"]})
            return seconds

        async def replay_round() -> float:
            # Same arguments as an accept; replies a data task of the same size.
            args = {"jobId": "-", "stepToken": "-", "candidateText": CORE_TEXT}
            seconds, results = await _timed([lambda: client.call_tool(BENCH_REPLAY_TOOL, args)] * batch)
            if any(_reply(result).get("stage") != "data" for result in results):
                raise RuntimeError(f"{BENCH_REPLAY_TOOL} did not repeat the data task")
            return seconds

        async def noop_round() -> float:
            seconds, results = await _timed([noop for _ in range(batch)])
            if any(_reply(result).get("kind") != "result" for result in results):
                raise RuntimeError(f"{BENCH_NOOP_TOOL} returned something else")
            return seconds

        await noop_round()  # warm every path: validators, lazy imports, caches
        timed: dict[Callable[[], Awaitable[float]], list[float]] = {accept_round: [], noop_round: [], replay_round: []}
        for index in range(rounds + 1):
            # Alternate which side goes first, so drift within a round favours neither.
            for side in (noop_round, accept_round, replay_round) if index % 2 else (accept_round, replay_round, noop_round):
                timed[side].append(await side())
    # Round 0 was the warm-up of the accept and replay paths.
    ours, floor, same_bytes = (statistics.median(seconds[1:]) for seconds in timed.values())
    return ours, floor, same_bytes


def bench_accept_round_trip(smoke: bool = False, mode: str = "auto", era: str = "2026-07-28") -> Figure:
    import anyio

    with tempfile.TemporaryDirectory(prefix="intentref-bench-mcp-") as directory:
        config_file = Path(directory) / "instances.json"
        config = {"instances": {BENCH_INSTANCE: {"language": "zh-CN", "schema": ORDER_SCHEMA}}}
        config_file.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
        ours, floor, same_bytes = anyio.run(_measure, config_file, mode, smoke)
    return Figure(
        f"mcp {ACCEPT_TOOL} round trip (stdio, {era})",
        ours,
        floor,
        "s/call",
        TARGET,
        f"mcp.Client over stdio ({era}): {ACCEPT_TOOL} of the seed core candidate (-> data task) "
        f"vs {BENCH_NOOP_TOOL} on the same reference server process; diagnostic: vs {BENCH_REPLAY_TOOL} "
        f"(same bytes both ways, {same_bytes * 1e3:.3f} ms/call) {ours / same_bytes:.2f}x; "
        f"{BENCH_REPLAY_TOOL} alone is {same_bytes / floor:.2f}x {BENCH_NOOP_TOOL} (the SDK carrying the "
        "data task, before any Bridge work)",
    )


def figures(smoke: bool) -> list[Figure]:
    return [bench_accept_round_trip(smoke, mode, era) for mode, era in ERAS]


if __name__ == "__main__":  # pragma: no cover - the bench server's own process
    sys.exit(serve_main())
