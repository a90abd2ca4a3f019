"""A job does not survive the server process: after a restart it is not found (R-IDM-007)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from mcp_support import ORDER_CORE, accept, prepare_order, stdio_params


def test_a_job_from_before_a_restart_is_not_found(config_file: Path) -> None:
    # spec: R-IDM-007 R-IDM-005 -- the Bridge keeps jobs in memory only.
    async def main() -> dict[str, Any]:
        async with Client(stdio_params(config_file)) as first:
            task = await prepare_order(first)
        async with Client(stdio_params(config_file)) as second:  # a new process
            return await accept(second, task, ORDER_CORE)

    reply = anyio.run(main)
    assert reply["kind"] == "error"
    assert (reply["error"]["code"], reply["error"]["stage"]) == ("BRIDGE_JOB_NOT_FOUND", "bridge")
