"""A host on the TypeScript SDK v2's Client passes the whole catalogue in both eras (issue 37, item 1).

``tests/node/ts_v2_host.mjs`` is ts_host.mjs on ``@modelcontextprotocol/client``, negotiating
(``auto``). The judge pins its server to one era (``--era``), over stdio and over HTTP: the
host must end up speaking that era and break no rule, not even the reference host's choices.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.host.host_support import CATALOGUE, NODE, NODE_DIR, judge_here
from tests.proven_sdks import check_row

pytestmark = pytest.mark.skipif(not NODE.exists(), reason="node and the TypeScript SDK are not installed")

HOST = f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ts_v2_host.mjs'))}"
REACH = {"stdio": ["--command", f"{HOST} --server {{server}}"], "HTTP": ["--http", "--command", f"{HOST} --url {{url}}"]}


@pytest.mark.parametrize("era", ["2026", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "HTTP"])
def test_the_v2_host_passes_every_scenario_in_the_era_the_judge_pins(transport: str, era: str, tmp_path: Path,
                                                                      fork_socket: str | None) -> None:  # fmt: skip
    report_file = tmp_path / "report.json"
    *how, command = REACH[transport]
    done = judge_here(fork_socket, *how, command + " --model {model} --request {request}", "--era", era, "--level", "reference",
                     "--json", str(report_file))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    assert report["eraAsked"] == era and report["era"] == era
    assert len(report["scenarios"]) == len(list(CATALOGUE.glob("*.json")))
    assert [v for s in report["scenarios"] for v in s["violations"]] == []
    check_row("ts_v2_host.mjs", transport, era, (s["status"] for s in report["scenarios"]))
