"""Hostile input to ``intent-runtime-mcp``: configuration files and stdio lines (issue: hostile clients).

Every case here was an attack on the command that used to end in a traceback, unbounded
reading or silence; each is now one configuration-fault line and status 2 (D-MCP-013,
D-MCP-017), or a JSON-RPC error reply on the wire (D-MCP-018).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from intentref.mcp.cli import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH
from intentref.mcp.stdio import MAX_LINE_BYTES
from mcp_support import RawStdio, ServerProcess, call, script, script_env, stdio_params

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_INSTANCES = REPO / "conformance" / "instances.json"
FAULT_LINE = re.compile(r"^intent-runtime-mcp: configuration fault: (?P<where>[^#\n]*)#(?P<pointer>\S*): (?P<code>[A-Z_]+): .+\n$")


def run_cli(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [script(), *args], stdin=subprocess.DEVNULL, capture_output=True, env=script_env(), timeout=timeout
    )


def assert_one_fault_line(done: subprocess.CompletedProcess[bytes], file: str, code: str) -> re.Match[str]:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr[-2000:]
    assert done.stdout == b""
    assert "Traceback" not in stderr
    found = FAULT_LINE.match(stderr)
    assert found is not None, stderr[-2000:]
    assert found["where"] == file
    assert found["code"] == code
    return found


# --------------------------------------------------------------------------- configuration


def test_a_config_nested_100000_levels_is_one_line(tmp_path: Path) -> None:
    """spec: D-MCP-017 -- was a RecursionError traceback with status 1."""
    path = tmp_path / "deep.json"
    path.write_text('{"instances":' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    assert_one_fault_line(run_cli("--config", str(path)), str(path), "LIMIT_EXCEEDED")


@pytest.mark.parametrize("depth", [200, 500])
def test_a_deeply_nested_schema_is_one_line(tmp_path: Path, depth: int) -> None:
    """spec: D-MCP-017 -- 500 levels (1,000 JSON levels) pass the parser's own guard; 200 reach
    the depth check, which names the first value past the limit."""
    schema = '{"type":"object","properties":{"a":' * depth + '{"type":"string"}' + "}}" * depth
    path = tmp_path / "deep-schema.json"
    path.write_text('{"instances":{"x":{"language":"en","schema":' + schema + "}}}", encoding="utf-8")
    found = assert_one_fault_line(run_cli("--config", str(path)), str(path), "LIMIT_EXCEEDED")
    if depth == 200:
        # The schema sits 3 levels down and each "properties/a" adds 2: the first value past
        # MAX_CONFIG_DEPTH is the first whose depth 3 + 2 * pairs exceeds it.
        pairs = (MAX_CONFIG_DEPTH - 3) // 2 + 1
        assert found["pointer"] == "/instances/x/schema" + "/properties/a" * pairs


def test_a_config_just_past_the_depth_limit_names_the_first_too_deep_value(tmp_path: Path) -> None:
    """spec: D-MCP-017 -- MAX_CONFIG_DEPTH is the limit: one level more is refused at that value."""
    path = tmp_path / "deep.json"
    # The root is depth 0, instances' value depth 1: MAX_CONFIG_DEPTH + 1 arrays put the
    # innermost one past the limit.
    nested = "[" * (MAX_CONFIG_DEPTH + 1) + "]" * (MAX_CONFIG_DEPTH + 1)
    path.write_text('{"instances":' + nested + "}", encoding="utf-8")
    found = assert_one_fault_line(run_cli("--config", str(path)), str(path), "LIMIT_EXCEEDED")
    assert found["pointer"] == "/instances" + "/0" * MAX_CONFIG_DEPTH
    # One level less reaches the usual shape check instead.
    path.write_text('{"instances":' + nested[1:-1] + "}", encoding="utf-8")
    found = assert_one_fault_line(run_cli("--config", str(path)), str(path), "CONFIG_INVALID")
    assert found["pointer"] == "/instances"


@pytest.mark.parametrize("kind", ["/dev/zero", "directory", "fifo"])
def test_only_a_regular_file_is_read(tmp_path: Path, kind: str) -> None:
    """spec: D-MCP-017 -- /dev/zero was read until MemoryError; a FIFO would wait for a writer."""
    if kind == "/dev/zero":
        file = "/dev/zero"
    elif kind == "directory":
        file = str(tmp_path)
    else:
        file = str(tmp_path / "fifo")
        os.mkfifo(file)
    started = time.monotonic()
    found = assert_one_fault_line(run_cli("--config", file, timeout=20), file, "CONFIG_INVALID")
    assert "regular file" in found.string
    assert time.monotonic() - started < 15


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """spec: D-MCP-017 -- a sparse file of a gigabyte is refused from its size, not read whole."""
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(1 << 30)
    found = assert_one_fault_line(run_cli("--config", str(path)), str(path), "LIMIT_EXCEEDED")
    assert str(MAX_CONFIG_BYTES) in found.string
    # One byte past the limit is enough; the limit itself is still read (and then judged as JSON).
    path.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    assert_one_fault_line(run_cli("--config", str(path)), str(path), "LIMIT_EXCEEDED")
    path.write_bytes(b" " * MAX_CONFIG_BYTES)
    assert_one_fault_line(run_cli("--config", str(path)), str(path), "CONFIG_INVALID")


def test_a_non_string_comment_is_a_fault(tmp_path: Path) -> None:
    """spec: D-MCP-016 -- only a string $comment is a note."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"$comment": 1, "instances": {"a": {"language": "en"}}}), encoding="utf-8")
    found = assert_one_fault_line(run_cli("--config", str(path)), str(path), "CONFIG_INVALID")
    assert found["pointer"] == "/$comment"


def test_conformance_instances_are_served_over_stdio() -> None:
    """spec: D-MCP-016 -- conformance/instances.json, top-level $comment included, loads and serves."""
    assert isinstance(json.loads(CONFORMANCE_INSTANCES.read_text(encoding="utf-8"))["$comment"], str)

    async def main() -> None:
        async with Client(stdio_params(CONFORMANCE_INSTANCES), mode="legacy") as client:
            reply = await call(client, "intent_prepare", {"instance": "order", "input": "查询订单 000123"})
            assert reply["kind"] == "task", reply

    anyio.run(main)


def test_conformance_instances_are_served_over_http() -> None:
    """spec: D-MCP-016 -- the same file over --http, in the 2026-07-28 era."""
    server = ServerProcess("--config", str(CONFORMANCE_INSTANCES), "--http", "127.0.0.1:0", stdin=subprocess.DEVNULL)
    try:
        url = server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)").group(1)

        async def main() -> None:
            async with Client(url) as client:
                reply = await call(client, "intent_prepare", {"instance": "english", "input": "hello"})
                assert reply["kind"] == "task", reply

        anyio.run(main)
    finally:
        assert server.stop() == 0, server.stderr
    assert "$comment" not in server.stderr  # allowed silently, not warned about


# --------------------------------------------------------------------------- stdio lines


def _peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]


def _next_line(server: RawStdio, seen: int, timeout: float = 20.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(server.lines) > seen:
            return json.loads(server.lines[seen])  # type: ignore[no-any-return]
        time.sleep(0.01)
    raise AssertionError(f"no reply; stderr:\n{server.stderr}")


@pytest.mark.parametrize("modern", [False, True], ids=["2025-handshake", "2026-07-28"])
def test_a_line_that_is_not_json_gets_a_parse_error_with_id_null(config_file: Path, modern: bool) -> None:
    """spec: D-MCP-018 -- JSON-RPC -32700, id null; the connection goes on."""
    server = RawStdio("--config", str(config_file))
    try:
        server.handshake(modern=modern)
        seen = len(server.lines)
        assert server.proc.stdin is not None
        for garbage in (b"this is not json", b"{\"jsonrpc\": \"2.0\", \"id\": 1,", b"\xff\xfe\x00"):
            server.proc.stdin.write(garbage + b"\n")
            server.proc.stdin.flush()
            reply = _next_line(server, seen)
            seen += 1
            assert reply["id"] is None
            assert reply["error"]["code"] == -32700  # type: ignore[index]
        listed = server.request("tools/list", {}, modern=modern)
        assert len(listed["result"]["tools"]) == 3
        server.close_stdin()
        assert server.finish() == 0, server.stderr
        server.assert_stdout_is_protocol()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def test_an_overlong_line_is_skipped_without_being_held(config_file: Path) -> None:
    """spec: D-MCP-018 -- a line past MAX_LINE_BYTES is answered -32600 and not kept in memory."""
    server = RawStdio("--config", str(config_file))
    try:
        server.handshake(modern=False)
        before = _peak_rss_kib(server.proc.pid)
        seen = len(server.lines)
        assert server.proc.stdin is not None
        chunk = b"x" * (1 << 20)
        for _ in range(4 * MAX_LINE_BYTES // len(chunk)):  # 64 MiB in one line
            server.proc.stdin.write(chunk)
        server.proc.stdin.write(b"\n")
        server.proc.stdin.flush()
        reply = _next_line(server, seen)
        assert reply["id"] is None
        assert reply["error"]["code"] == -32600  # type: ignore[index]
        assert str(MAX_LINE_BYTES) in reply["error"]["message"]  # type: ignore[index]
        grown_mib = (_peak_rss_kib(server.proc.pid) - before) / 1024
        # Up to MAX_LINE_BYTES is held before the line is known to be too long; holding the
        # whole line (as the SDK's framing did) would add its 64 MiB at least twice over.
        assert grown_mib < 2 * MAX_LINE_BYTES / (1 << 20), f"peak RSS grew by {grown_mib:.0f} MiB"
        listed = server.request("tools/list", {}, modern=False)
        assert len(listed["result"]["tools"]) == 3
        server.close_stdin()
        assert server.finish() == 0, server.stderr
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


# --------------------------------------------------------------------------- binding


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]", "192.0.2.1", "example.com"])
def test_a_non_loopback_bind_needs_allow_remote(config_file: Path, host: str) -> None:
    """spec: D-MCP-019 -- refused with one line and status 2 before anything is bound."""
    done = run_cli("--config", str(config_file), "--http", f"{host}:0")
    stderr = done.stderr.decode()
    assert done.returncode == 2
    assert stderr.count("\n") == 1, stderr
    assert "--allow-remote" in stderr and "not a loopback address" in stderr
    assert "serving" not in stderr


def test_allow_remote_warns_before_anything_else(tmp_path: Path) -> None:
    """spec: D-MCP-019, D-MCP-035 -- the warning comes first; a broken file keeps the test from binding 0.0.0.0."""
    path = tmp_path / "config.json"
    path.write_text("{", encoding="utf-8")
    done = run_cli("--config", str(path), "--http", "0.0.0.0:0", "--allow-remote", "--allow-unauthenticated")
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2
    assert len(lines) == 2, lines
    assert lines[0].startswith("intent-runtime-mcp: warning: serving on 0.0.0.0")
    assert "nothing authenticates peers" in lines[0]
    assert lines[1].startswith("intent-runtime-mcp: configuration fault: ")


def test_loopback_binds_need_no_flag_and_get_no_warning(config_file: Path) -> None:
    """spec: D-MCP-019 -- every loopback form is served as before, silently."""
    from intentref.mcp.cli import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.0.2.1", "example.com", "localhost.example"))
    server = ServerProcess("--config", str(config_file), "--http", "127.0.0.1:0", stdin=subprocess.DEVNULL)
    try:
        server.wait_for_stderr(r"serving streamable HTTP at http://127\.0\.0\.1:\d+/mcp")
    finally:
        assert server.stop() == 0
    assert "warning" not in server.stderr
