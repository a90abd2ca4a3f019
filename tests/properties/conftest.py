"""Child runs of ``intentref properties`` for test_properties_command.py, started early.

The three runs (in-process, over stdio, against a deliberately broken target) are the
slowest part of this folder; they start when the session begins, if any collected test
uses them, so that they overlap with the other tests instead of following them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from intentref.suite.alterations import faulty

FAULT_NAMES = [name for name, fault in faulty.FAULTS.items() if not fault.envelope_only]


class Started:
    """``intentref properties`` running in a child process; ``result()`` waits for it."""

    def __init__(self, *args: str, pythonpath: pathlib.Path | None = None) -> None:
        env = {**os.environ, "COLUMNS": "200"}
        if pythonpath is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
        # One pytest process each: the three runs already share the CPUs, and a second process
        # would cost one more start for modules the first runs as well.
        self.proc = subprocess.Popen([sys.executable, "-m", "intentref.cli", "properties", *args, "--jobs", "1"], env=env,
                                     text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        self._done: tuple[int, str, str] | None = None

    def result(self) -> tuple[int, str, str]:
        if self._done is None:
            out, err = self.proc.communicate(timeout=170)
            self._done = (self.proc.returncode, out, err)
        return self._done


@pytest.fixture(scope="session")
def broken_module(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A module of Targets, each the reference with one rule broken (intentref.suite.alterations.faulty)."""
    folder = tmp_path_factory.mktemp("broken")
    lines = ["from intentref.suite.alterations.faulty import faulty_target\n"]
    lines += [f"def {name}():\n    return faulty_target({name!r})\n" for name in FAULT_NAMES]
    (folder / "broken_targets.py").write_text("".join(lines), "utf-8")
    return folder


@pytest.fixture(scope="session")
def runs(broken_module: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("runs")
    started = {
        "in-process": Started("--in-process", "--seed", "1", "--calls", "300", "--json", str(folder / "in.json")),
        "stdio": Started("--stdio", "reference", "--profile", "smoke", "--seed", "2", "--calls", "100",
                         "--json", str(folder / "stdio.json")),
        "reason_order": Started("--python", "broken_targets:reason_order", "-k", "status_reason", "--seed", "3",
                                "--calls", "0", "--cases-out", str(folder / "cases.json"), pythonpath=broken_module),
    }  # fmt: skip
    yield started, folder
    for run in started.values():
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()


@pytest.fixture(scope="session", autouse=True)
def _start_runs_early(request: pytest.FixtureRequest) -> None:
    if any("runs" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("runs")
