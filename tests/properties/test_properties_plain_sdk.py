"""The properties against a server on the Python SDK's plain low-level ``Server``.

A file of its own: one long run, which ``--dist loadfile`` can then give the worker that
is not running the rest of tests/properties.  The smoke profile and 300 campaign calls take
every property and both of the paths below (seed 1: 35 refusals, 9 lone surrogates lost); the
ci profile's 2,000 calls over stdio cost several times the CPU and prove nothing more here.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys


def test_the_properties_pass_at_normative_level_on_a_server_built_on_the_plain_sdk(tmp_path: pathlib.Path) -> None:
    # spec: D-CNF-053, D-CNF-055 -- the Bridge behind the Python SDK's low-level server, whose
    # stdio transport drops a request holding a lone surrogate unanswered and whose input
    # schemas refuse malformed calls before the Bridge sees them: it follows the seeds, so no
    # normative property fails, and both paths were really taken (their counts are not 0).
    out = tmp_path / "figures.json"
    server = pathlib.Path(__file__).resolve().parents[1] / "outside" / "plain_sdk_server.py"
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "properties", "--stdio", f"{sys.executable} {server}",
                           "--level", "normative", "--seed", "1", "--profile", "smoke", "--calls", "300",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(out.read_text("utf-8"))
    assert figures["passed"] and figures["normativeFailures"] == 0, figures["failedProperties"]
    assert figures["campaignCalls"] == 300 and figures["propertyCalls"] > 200
    assert figures["protocolRefusals"] > 0 and figures["loneSurrogatesLost"] > 0
    # What a server may decide otherwise is still reported, at reference level, with its decisions.
    assert figures["referenceFailures"] > 0 and "D-REQ-003" in figures["decisionsDiffering"]
