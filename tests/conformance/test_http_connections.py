"""How the runner connects to an HTTP server: kept alive, unless the server holds replies back (D-CNF-056).

Real servers on 127.0.0.1: the reference's own (which sends at once, D-MCP-029), and the
reference's app served by an embedder's uvicorn on a socket it bound itself
(``tests/outside/embedded_http_server.py``), whose connections keep Nagle's algorithm on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from intentref.suite.targets.base import load_instances
from intentref.suite.targets.mcp_http import (
    HELD_BACK_SECONDS,
    PROBE_TIMEOUT,
    HttpReference,
    HttpTarget,
    probe_keep_alive,
)
from tests.conformance.ci_support import serving

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = ROOT / "tests" / "outside" / "embedded_http_server.py"
INSTANCES = ROOT / "conformance" / "instances.json"


@pytest.fixture
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference's app behind a plain uvicorn on a socket from ``socket.create_server``."""
    with serving([sys.executable, str(EMBEDDED), "--config", str(INSTANCES)],
                 tmp_path_factory.mktemp("embedded") / "stderr.txt") as url:  # fmt: skip
        yield url


def test_a_server_holding_replies_back_gets_a_connection_per_request(embedded_url: str) -> None:
    """spec: D-CNF-056 -- about 40 ms a reply on a kept-alive connection: found, said, and avoided."""
    connections = probe_keep_alive(embedded_url, timeout=10)
    assert not connections.keep_alive
    assert connections.held_back >= HELD_BACK_SECONDS
    finding = connections.finding()
    assert finding is not None and "TCP_NODELAY" in finding and "a connection per request" in finding
    target = HttpTarget(embedded_url)  # probes on its own, once, for findings and connections alike
    try:
        found = target.findings()
        assert len(found) == 1 and found[0].startswith("the server held each reply on a kept-alive connection")
        assert not target.keep_alive().keep_alive
    finally:
        target.close()


def test_the_run_says_what_it_found_and_judges_as_usual(embedded_url: str, tmp_path: Path) -> None:
    """spec: D-CNF-056 -- one note before the run, the same line in the report, every verdict as usual."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", "--http", embedded_url, "--only", "TSK-*",
         "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "held each reply on a kept-alive connection back" in notes[0]
    document = json.loads(report.read_text("utf-8"))
    assert document["runInfo"]["findings"] == [notes[0].removeprefix("note: ")]
    outcomes = {case["outcome"] for case in document["cases"]}
    assert outcomes == {"passed"} and document["cases"]


def test_the_reference_server_keeps_its_connections() -> None:
    """spec: D-CNF-056, D-MCP-029 -- a server that sends at once is connected to as hosts connect."""
    server = HttpReference(load_instances())
    try:
        connections = probe_keep_alive(server.url, timeout=10)
        assert connections.keep_alive, connections
        assert connections.finding() is None
        target = HttpTarget(server.url)
        try:
            assert target.findings() == []
        finally:
            target.close()
    finally:
        server.close()


def test_a_server_that_cannot_be_reached_is_left_to_the_first_connection() -> None:
    """spec: D-CNF-056 -- the probe says nothing of its own; the first real connection says what is wrong."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    connections = probe_keep_alive(f"http://127.0.0.1:{port}/mcp", timeout=2)
    assert connections.keep_alive and connections.held_back == 0.0


def test_a_server_that_leaves_the_ping_unanswered_costs_one_short_wait() -> None:
    """spec: D-CNF-056 -- a listener that never replies holds the probe up for PROBE_TIMEOUT, not --timeout."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # connections complete in its backlog, unanswered
        started = time.monotonic()
        connections = probe_keep_alive(f"http://127.0.0.1:{silent.getsockname()[1]}/mcp", timeout=60)
        waited = time.monotonic() - started
    assert connections.keep_alive and connections.held_back == 0.0
    assert PROBE_TIMEOUT <= waited < 60
