"""Fair capacity over HTTP, both eras: no client locks out the others (D-MCP-020, D-MCP-021).

Real servers (the console script on 127.0.0.1), real SDK clients.  In the 2026-07-28 era a
client is its peer address, so the hoarding client connects from 127.0.0.2 (still the
loopback interface; the server listens on 127.0.0.1 only).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_support import (
    ERAS,
    ORDER_CORE,
    ORDER_DATA,
    ServerProcess,
    accept,
    call,
    order_flow,
    prepare_order,
    script,
    script_env,
)

QUOTA = 3
MAX_JOBS = 8  # the Bridge's own limit: without the quota one client would take all 8
HOARDER_ADDRESS = "127.0.0.2"


def start_server(config_file: Path, *flags: str) -> tuple[ServerProcess, str]:
    server = ServerProcess(
        "--config", str(config_file), "--http", "127.0.0.1:0", "--max-jobs", str(MAX_JOBS), *flags,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return server, server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)").group(1)


@pytest.fixture
def quota_server(config_file: Path) -> Iterator[str]:
    server, url = start_server(config_file, "--max-jobs-per-client", str(QUOTA))
    try:
        yield url
    finally:
        assert server.stop() == 0, server.stderr


@contextlib.asynccontextmanager
async def client_from(url: str, mode: str, source: str = "127.0.0.1") -> AsyncIterator[Client]:
    """An SDK client whose TCP connections leave from ``source`` (a loopback address)."""
    transport = httpx2.AsyncHTTPTransport(local_address=source)
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults (create_mcp_http_client)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def hoard(client: Client) -> list[dict[str, Any]]:
    """Prepare until refused; return the tasks held."""
    tasks = []
    for _ in range(MAX_JOBS + 1):
        reply = await call(client, "intent_prepare", {"instance": "orders", "input": "查询订单 000123"})
        if reply["kind"] != "task":
            assert reply["error"]["code"] == "LIMIT_EXCEEDED", reply
            assert "per-client limit" in reply["error"]["message"]
            return tasks
        tasks.append(reply)
    raise AssertionError("the client was never refused")


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_a_hoarding_client_does_not_lock_out_another(quota_server: str, mode: str, version: str) -> None:
    """While one client holds all it can, another's full flow completes; the first's jobs still work."""
    hoarder_source = HOARDER_ADDRESS if version == "2026-07-28" else "127.0.0.1"

    async def main() -> None:
        async with client_from(quota_server, mode, hoarder_source) as hoarder:
            assert hoarder.protocol_version == version
            held = await hoard(hoarder)
            assert len(held) == QUOTA
            async with client_from(quota_server, mode) as other:
                await order_flow(other)
                await order_flow(other)  # the quota is per client, and the other's jobs ended
            # The hoarder's own jobs keep working while it stays active.
            for task in held:
                data_task = await accept(hoarder, task, ORDER_CORE)
                assert data_task["kind"] == "task" and data_task["stage"] == "data", data_task
                final = await accept(hoarder, data_task, ORDER_DATA)
                assert final["kind"] == "result", final
            # Finished jobs no longer count: it may prepare again.
            assert len(await hoard(hoarder)) == QUOTA

    anyio.run(main)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_cancelling_frees_quota(quota_server: str, mode: str, version: str) -> None:
    async def main() -> None:
        async with client_from(quota_server, mode) as client:
            held = await hoard(client)
            cancelled = await call(client, "intent_cancel", {"jobId": held[0]["jobId"]})
            assert cancelled["kind"] == "error" and cancelled["error"]["code"] == "MODEL_ABORTED", cancelled
            await prepare_order(client)  # room for exactly one more
            refused = await call(client, "intent_prepare", {"instance": "orders", "input": "x"})
            assert refused["kind"] == "error" and refused["error"]["code"] == "LIMIT_EXCEEDED"

    anyio.run(main)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_jobs_without_progress_are_reclaimed(config_file: Path, mode: str, version: str) -> None:
    """An abandoned job is cancelled after --job-idle-seconds; its client reads how it ended."""
    server, url = start_server(config_file, "--max-jobs-per-client", str(QUOTA), "--job-idle-seconds", "1")

    async def main() -> None:
        async with client_from(url, mode) as client:
            held = await hoard(client)
            assert len(held) == QUOTA
            await anyio.sleep(0.6)
            kept = await accept(client, held[0], ORDER_CORE)  # progress: this job stays
            assert kept["kind"] == "task", kept
            await anyio.sleep(0.6)  # the other two have now been idle for 1.2 s
            fresh = await prepare_order(client)  # reclaimed before this call: room again
            late = await accept(client, held[1], ORDER_CORE)
            assert late["kind"] == "error" and late["error"]["code"] == "MODEL_ABORTED", late
            assert "no progress for 1 s" in late["error"]["message"] + str(late["error"].get("issues"))
            final = await accept(client, kept, ORDER_DATA)
            assert final["kind"] == "result", final
            assert (await accept(client, fresh, ORDER_CORE))["kind"] == "task"

    try:
        anyio.run(main)
    finally:
        assert server.stop() == 0, server.stderr


def test_http_only_flags_are_refused_for_stdio(config_file: Path) -> None:
    """spec: D-MCP-021 -- the quota and idle limit are HTTP options; over stdio they are a usage error."""
    for flag, value in (("--max-jobs-per-client", "3"), ("--job-idle-seconds", "1")):
        done = subprocess.run(
            [script(), "--config", str(config_file), flag, value],
            stdin=subprocess.DEVNULL, capture_output=True, env=script_env(), timeout=30,
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.decode() == f"intent-runtime-mcp: error: {flag} applies to --http only; stdio has one client.\n"


def test_a_stateless_job_id_is_a_bearer_capability_for_that_job_only(quota_server: str) -> None:
    """spec: D-MCP-020 -- in the 2026-07-28 era a jobId (with its stepToken) is what grants a job.

    Another client presenting it acts on that job; a made-up or altered id reaches nothing,
    and a jobId never reaches another job.
    """

    async def main() -> None:
        async with client_from(quota_server, "auto", HOARDER_ADDRESS) as owner:
            first = await prepare_order(owner)
            second = await prepare_order(owner)
        async with client_from(quota_server, "auto") as stranger:
            altered = first["jobId"][:-1] + ("A" if first["jobId"][-1] != "A" else "B")
            for job_id in (altered, "x" * 22):
                missing = await call(stranger, "intent_cancel", {"jobId": job_id})
                assert missing["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", missing
            # Holding first's jobId and stepToken is holding the job...
            moved = await accept(stranger, first, ORDER_CORE)
            assert moved["kind"] == "task" and moved["jobId"] == first["jobId"]
            # ...and only that job: the second is untouched by it.
            cancelled = await call(stranger, "intent_cancel", {"jobId": first["jobId"]})
            assert cancelled["error"]["code"] == "MODEL_ABORTED"
        async with client_from(quota_server, "auto", HOARDER_ADDRESS) as owner:
            assert (await accept(owner, second, ORDER_CORE))["kind"] == "task"

    anyio.run(main)
