"""``intent-runtime-mcp`` as a process: configuration faults, shutdown, stdout purity."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_support import CONFIG, ORDER_SCHEMA, RawStdio, ServerProcess, script, script_env

ORDERS = {"language": "zh-CN", "schema": ORDER_SCHEMA}


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [script(), *args], stdin=subprocess.DEVNULL, capture_output=True, env=script_env(), timeout=timeout
    )


# (file content, or None for a missing file; the JSON Pointer reported; the code)
FAULTS: list[tuple[str | None, str, str]] = [
    (None, "", "CONFIG_INVALID"),
    ("{", "", "CONFIG_INVALID"),
    ("[]", "", "CONFIG_INVALID"),
    (json.dumps({"instances": {"orders": ORDERS}, "instance": {}}), "/instance", "CONFIG_INVALID"),
    (json.dumps({}), "/instances", "CONFIG_INVALID"),
    (json.dumps({"instances": ["orders"]}), "/instances", "CONFIG_INVALID"),
    (json.dumps({"instances": {"orders": "zh-CN"}}), "/instances/orders", "CONFIG_INVALID"),
    (
        json.dumps({"instances": {"a/b~c": {"language": " "}}}),
        "/instances/a~1b~0c/language",
        "CONFIG_INVALID",
    ),
    (
        json.dumps({"instances": {"orders": {**ORDERS, "colour": 1}}}),
        "/instances/orders/colour",
        "CONFIG_INVALID",
    ),
    (
        json.dumps({"instances": {"orders": {"schema": {"type": "string"}}}}),
        "/instances/orders/schema/type",
        "SCHEMA_UNSUPPORTED",
    ),
    (
        json.dumps(
            {"instances": {"orders": {"schema": {"type": "object", "properties": {"n": {"$ref": "#/x"}}}}}}
        ),
        "/instances/orders/schema/properties/n/$ref",
        "SCHEMA_UNSUPPORTED",
    ),
]


# spec: R-SRV-005 -- the file is {"instances": {NAME: IntentConfig}} (as JSON, D-MCP-012);
# anything else is refused before serving.
@pytest.mark.parametrize(("content", "pointer", "code"), FAULTS)
def test_configuration_faults_exit_2_with_one_line(
    tmp_path: Path, content: str | None, pointer: str, code: str
) -> None:
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_cli("--config", str(path))
    assert done.returncode == 2
    assert done.stdout == b""  # spec: R-SRV-009
    lines = done.stderr.decode("utf-8").splitlines()
    assert len(lines) == 1, lines
    # spec: D-MCP-013 -- FILE#POINTER: CODE: message
    prefix = f"intent-runtime-mcp: configuration fault: {path}#{pointer}"
    assert lines[0].startswith(prefix), lines[0]
    assert f": {code}: " in lines[0]


def test_a_bad_capacity_option_is_a_fault_of_its_flag(config_file: Path) -> None:
    done = run_cli("--config", str(config_file), "--max-jobs", "0")
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode("utf-8").splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("intent-runtime-mcp: configuration fault: --max-jobs: CONFIG_INVALID: "), (
        lines[0]
    )


def test_usage_errors_exit_2() -> None:
    done = run_cli()
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"--config" in done.stderr


def test_option_named_members_of_the_file_are_ignored(tmp_path: Path) -> None:
    """spec: R-SRV-010 -- the file's maxJobs/transport are not read (D-MCP-012)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "maxJobs": 1, "transport": "http"}), encoding="utf-8")
    server = RawStdio("--config", str(path))
    try:
        server.handshake(modern=False)
        args = {"instance": "orders", "input": "查询订单 000123"}
        for _ in range(2):  # maxJobs 1 would refuse the second active job
            reply = server.request("tools/call", {"name": "intent_prepare", "arguments": args}, modern=False)
            assert reply["result"]["structuredContent"]["kind"] == "task", reply
        server.close_stdin()
        assert server.finish() == 0
        assert "maxJobs" in server.stderr and "ignored" in server.stderr
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


# The command run in a child interpreter whose Intent.dispose reports itself on stderr:
# the only way to see, from outside, that the command released what it built.
_DISPOSE_PROBE = """
import sys
import intentref.intent
original = intentref.intent.Intent.dispose
def dispose(self):
    print("intentref-probe: disposed", file=sys.stderr, flush=True)
    original(self)
intentref.intent.Intent.dispose = dispose
from intentref.mcp.cli import main
sys.exit(main(sys.argv[1:]))
"""
_LIST_2026 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


@pytest.mark.parametrize("how", ["end-of-input", "SIGTERM"])
def test_the_command_disposes_the_instances_it_built(config_file: Path, how: str) -> None:
    """spec: R-SRV-007, R-SRV-008 -- every instance of the file is disposed at shutdown."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _DISPOSE_PROBE, "--config", str(config_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=script_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    if how == "SIGTERM":
        proc.stdin.write(json.dumps(_LIST_2026).encode() + b"\n")
        proc.stdin.flush()
        assert b'"intent_prepare"' in proc.stdout.readline()  # serving: now stop it
        proc.send_signal(signal.SIGTERM)
    # communicate() closes stdin: end of input for the first case, a no-op once stopped.
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert err.decode().count("intentref-probe: disposed") == len(CONFIG["instances"])


@pytest.mark.parametrize("modern", [False, True], ids=["2025-handshake", "2026-07-28"])
def test_end_of_input_ends_cleanly_and_stdout_is_protocol_only(config_file: Path, modern: bool) -> None:
    server = RawStdio("--config", str(config_file))
    try:
        server.handshake(modern=modern)
        listed = server.request("tools/list", {}, modern=modern)
        assert [t["name"] for t in listed["result"]["tools"]] == [
            "intent_prepare",
            "intent_accept",
            "intent_cancel",
        ]
        args = {"instance": "orders", "input": "查询订单 000123"}
        server.request("tools/call", {"name": "intent_prepare", "arguments": args}, modern=modern)
        server.request("tools/call", {"name": "intent_accept", "arguments": {"jobId": 1}}, modern=modern)
        server.send("this is not JSON")  # the SDK drops it; nothing of it may reach stdout
        server.request("tools/list", {}, modern=modern)
        server.close_stdin()
        assert server.finish() == 0
        server.assert_stdout_is_protocol()
        assert "Traceback" not in server.stderr
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_exit_signals_end_cleanly_while_the_pipe_is_open(config_file: Path, signum: int) -> None:
    server = RawStdio("--config", str(config_file))
    try:
        server.handshake(modern=False)
        args = {"instance": "orders", "input": "查询订单 000123"}
        reply = server.request("tools/call", {"name": "intent_prepare", "arguments": args}, modern=False)
        assert reply["result"]["structuredContent"]["kind"] == "task"
        assert server.stop(signum) == 0  # stdin still open: the stop must not wait for it
        server.assert_stdout_is_protocol()
        assert "Traceback" not in server.stderr
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_http_mode_ends_cleanly_on_signals(config_file: Path, signum: int) -> None:
    server = ServerProcess("--config", str(config_file), "--http", "127.0.0.1:0", stdin=subprocess.DEVNULL)
    try:
        server.wait_for_stderr(r"serving streamable HTTP at http://127\.0\.0\.1:\d+/mcp")
        assert server.stop(signum) == 0
        assert server.proc.stdout is not None
        assert server.proc.stdout.read() == b""
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def test_http_mode_ignores_end_of_input(config_file: Path) -> None:
    # Over HTTP stdin is not the protocol; a closed stdin (a daemon) must not stop serving.
    server = ServerProcess("--config", str(config_file), "--http", "127.0.0.1:0", stdin=subprocess.DEVNULL)
    try:
        server.wait_for_stderr(r"serving streamable HTTP at")
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.proc.wait(timeout=1.5)
        assert server.proc.poll() is None, server.stderr
        assert server.stop() == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
