"""Fixtures for the MCP adapter tests (helpers live in mcp_support.py)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_support import CONFIG, ServerProcess


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "intent-runtime.json"
    path.write_text(json.dumps(CONFIG, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``intent-runtime-mcp --http 127.0.0.1:0`` per test module; yields its /mcp URL."""
    path = tmp_path_factory.mktemp("http") / "intent-runtime.json"
    path.write_text(json.dumps(CONFIG, ensure_ascii=False), encoding="utf-8")
    server = ServerProcess("--config", str(path), "--http", "127.0.0.1:0")
    try:
        url = server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)").group(1)
        yield url
    finally:
        code = server.stop(signal.SIGTERM)
        assert server.proc.stdout is not None
        leaked = server.proc.stdout.read()
        assert code == 0, server.stderr
        assert leaked == b"", f"HTTP mode wrote to stdout: {leaked[:200]!r}"
