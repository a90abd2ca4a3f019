"""The pytest plugin inside another project: pytest runs in a subprocess over a tmp dir.

The counts pytest prints must be the runner's own: one item per case, passed as the
runner passes it, unsupported as a skip whose reason says so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from intentref.suite.alterations.faulty import faulty_target
from intentref.suite.cases.fixtures import load_cases, select
from intentref.suite.cases.script import FAILED, PASSED, UNSUPPORTED
from intentref.suite.execution.runner import Executor, execute
from intentref.suite.targets.base import InProcessTarget


def pytest_in(folder: Path, *args: str, autoload: bool = True) -> subprocess.CompletedProcess[str]:
    # Only this plugin matters here; Hypothesis's alone takes seconds to import.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # then only -p loads it
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip


def counts(output: str) -> dict[str, int]:
    last = output.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?)", last)}


def test_plugin_runs_every_case_as_an_item(tmp_path: Path) -> None:
    cases = load_cases()
    with ThreadPoolExecutor(1) as pool:  # the subprocess mostly waits; count meanwhile
        running = pool.submit(pytest_in, tmp_path, "-p", "intentref.conformance.pytest_plugin", "--intentref-target",
                              "in-process", "-q", "-rs", autoload=False)  # fmt: skip
        expected = Counter(o.outcome for o in execute(cases, InProcessTarget()))
        result = running.result()
    got = counts(result.stdout)
    assert got.get("passed", 0) == expected[PASSED], result.stdout[-3000:]
    assert got.get("skipped", 0) == expected[UNSUPPORTED]
    assert got.get("failed", 0) == expected[FAILED]
    assert sum(got.values()) == len(cases)  # one item per case
    # An unsupported case is a skip that says so.
    assert "unsupported: checks the MCP envelope" in result.stdout


def test_plugin_selection_markers_and_node_ids(tmp_path: Path) -> None:
    normative = [c.id for c in select(load_cases(), "normative", ["CAN-*"], [])]
    with ThreadPoolExecutor(2) as pool:
        # Autoloaded through the pytest11 entry point: -m on the plugin's markers...
        by_marker = pool.submit(pytest_in, tmp_path, "--intentref-target", "in-process", "-m",
                                "intentref_can and intentref_normative", "--collect-only", "-q")  # fmt: skip
        # ...and the plugin's own level option.
        by_level = pool.submit(pytest_in, tmp_path, "--intentref-target", "in-process", "--intentref-level",
                               "normative", "-k", "CAN", "--collect-only", "-q")  # fmt: skip
        for result in (by_marker.result(), by_level.result()):
            listed = [line for line in result.stdout.splitlines() if re.fullmatch(r"[A-Z]{3}-\d{4}", line)]
            assert listed == normative, result.stdout[-2000:]  # node id = case id


def test_plugin_stays_out_of_a_run_without_the_option(tmp_path: Path) -> None:
    (tmp_path / "test_own.py").write_text("def test_own():\n    assert True\n", "utf-8")
    result = pytest_in(tmp_path, "-q")
    assert counts(result.stdout) == {"passed": 1}, result.stdout


def test_project_supplies_its_own_target_fixture(tmp_path: Path) -> None:
    # A broken implementation through the overridable fixture: its failures show the mismatches.
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest
        from intentref.suite.alterations.faulty import faulty_target

        @pytest.fixture(scope="session")
        def intentref_target():
            return faulty_target("ids_from_zero")
    """), "utf-8")  # fmt: skip
    result = pytest_in(tmp_path, "--intentref", "-x", "-q")
    assert counts(result.stdout).get("failed") == 1, result.stdout[-2000:]
    failed = re.search(r"^FAILED ([A-Z]{3}-\d{4})\b", result.stdout, re.M)
    assert failed is not None, result.stdout[-2000:]
    # The same case through the runner, in this process: pytest showed its mismatch list.
    case = next(c for c in load_cases() if c.id == failed.group(1))
    executor = Executor(faulty_target("ids_from_zero"))
    try:
        outcome = executor.run(case)
    finally:
        executor.close()
    assert outcome.outcome == FAILED
    assert f"{case.id} failed at step {outcome.failed_step}" in result.stdout
    for mismatch in outcome.mismatches:
        assert str(mismatch).split(": ")[0] in result.stdout


def test_plugin_stops_the_session_when_the_target_cannot_start(tmp_path: Path) -> None:
    # D-CNF-013: one line and status 3, not one error per case.
    result = pytest_in(tmp_path, "-p", "intentref.conformance.pytest_plugin", "--intentref-target",
                       "stdio:no-such-command-here --config {config}", "-q", autoload=False)  # fmt: skip
    assert result.returncode == 3, result.stdout[-2000:]
    assert "intentref: the target cannot start: cannot run 'no-such-command-here'" in result.stdout + result.stderr
    assert "errors" not in result.stdout.splitlines()[-1]
