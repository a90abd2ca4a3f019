"""Normative cases that catch what a server built the usual way gets wrong (D-CNF-059; issue 38).

* ``tests/outside/typed_mcpserver.py``: the reference Bridge behind the Python SDK's
  high-level ``MCPServer`` with typed tool parameters. The SDK reads a text argument as JSON
  when the parameter is not typed plain ``str``; the text arguments that read as JSON
  (D-CNF-059) must catch it, and nothing else may: every other case of those areas passes.
* ``tests/outside/plain_sdk_server.py``: the same Bridge on the SDK's low-level ``Server``,
  which hands arguments over as they came: it passes the same cases.
* ``tests/outside/blank_quote_server.py``: a stand-in that reads a blank quote as an empty
  one; a normative case must catch it, while the empty-quote cases still pass on it.

Each server runs as an outside command through the CLI, as an implementer runs the suite.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from intentref.suite.cases.fixtures import load_cases

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ROOT / "tests" / "outside"

# The cases D-CNF-059 lists, read from the decision itself so that the two cannot drift.
_DECISION = (ROOT / "spec" / "decisions-conformance.md").read_text("utf-8").split("#### D-CNF-059")[1].split("\n#### ")[0]


def _listed(text: str) -> set[str]:
    listed: set[str] = set()
    for first, last in re.findall(r"\b([A-Z]{3}-\d{4})(?:\.\.([A-Z]{3}-\d{4}))?", text):
        area, low = first.split("-")
        high = int(last.split("-")[1]) if last else int(low)
        listed.update(f"{area}-{n:04d}" for n in range(int(low), high + 1))
    return listed


PITFALL_CASES = _listed(_DECISION)
BLANK_QUOTE_CASES = {c.id for c in load_cases() if "blank quote" in c.data["description"]}


def _run(server: str, tmp_path: Path, *only: str) -> dict[str, dict[str, Any]]:
    report = tmp_path / f"{server}.json"
    selection = [arg for pattern in only for arg in ("--only", pattern)]
    subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", "--level", "normative", "--jobs", "1",
         "--stdio", f"{sys.executable} {OUTSIDE / server} --config {{config}}", "--json", str(report), *selection],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert report.exists(), f"no report from the run against {server}"
    return {c["id"]: c for c in json.loads(report.read_text("utf-8"))["cases"]}


def test_the_decision_lists_nine_normative_cases_that_exist() -> None:
    cases = {c.id: c.data for c in load_cases()}
    assert len(PITFALL_CASES) == 9
    assert all(cases[case_id]["level"] == "normative" for case_id in PITFALL_CASES)
    assert len(BLANK_QUOTE_CASES) == 2 and all(cases[i]["level"] == "normative" for i in BLANK_QUOTE_CASES)


def test_a_typed_mcpserver_fails_exactly_the_text_arguments_that_read_as_json(tmp_path: Path) -> None:
    # Every normative case of the three areas the pitfall touches: the SDK's decoding must
    # show in the pitfall cases and nowhere else, so the rest of the server is sound.
    outcomes = _run("typed_mcpserver.py", tmp_path, "TSK-*", "CAN-*", "FLD-*")
    not_passed = {case_id for case_id, c in outcomes.items() if c["outcome"] in ("failed", "errored")}
    assert not_passed == PITFALL_CASES, sorted(not_passed ^ PITFALL_CASES)


def test_a_low_level_server_passes_the_same_cases(tmp_path: Path) -> None:
    outcomes = _run("plain_sdk_server.py", tmp_path, *sorted(PITFALL_CASES | BLANK_QUOTE_CASES))
    assert set(outcomes) == PITFALL_CASES | BLANK_QUOTE_CASES
    assert {c["outcome"] for c in outcomes.values()} == {"passed"}, {i: c["detail"] for i, c in outcomes.items()}


def test_a_server_that_reads_a_blank_quote_as_empty_fails_a_normative_case(tmp_path: Path) -> None:
    empty_quote = {c.id for c in load_cases() if "with an empty quote" in c.data["description"] and c.level == "normative"}
    outcomes = _run("blank_quote_server.py", tmp_path, *sorted(BLANK_QUOTE_CASES | empty_quote))
    assert {outcomes[i]["outcome"] for i in BLANK_QUOTE_CASES} == {"failed"}
    assert empty_quote and {outcomes[i]["outcome"] for i in empty_quote} == {"passed"}
