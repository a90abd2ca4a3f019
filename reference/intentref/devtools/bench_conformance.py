"""The conformance suite's speed figures for ``intentref bench``, all measured in one run.

Every figure runs the suite exactly as ``intentref conformance`` runs it (``workers.execute``
over a parsed target spec, the same plan and worker processes) and counts cases per second
from the moment the first case is done, so the one-off start-up (the SDK's imports, the first
server process) is left out.

* **The budget** (issue 5): every case against the bundled reference over stdio, at least
  100 cases/s (0.01 s per case, ratio 1.0).
* **An outside command against the bundled path** (issue 22): the normative level against
  ``stdio:intent-runtime-mcp --config {config}`` (a process per run, nothing forked) against
  the bundled target, whose servers fork from a pre-imported zygote (D-CNF-006): ratio <= 2.
  Its description adds the outside server's cost of refusing a configuration (D-CNF-051) and
  the bundled target started cold (``--cold-start``): what the fork path alone is worth.
* **HTTP against stdio** (issue 27): ratio <= 1.25, over the normative level and like for
  like on exactly the cases HTTP ran (it runs none with Bridge options or instances of its own).
* **Scaling** (issue 27): each of those at the default ``--jobs`` against ``--jobs 1``
  (target 1.8x where there are two CPUs), the ``--jobs 1`` run also weighed in CPU seconds
  over wall seconds (``scaling_ceiling``); and the default run pinned to one CPU, as
  ``taskset -c`` pins it, against all of them: whether the suite's speed grows with the machine.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intentref.devtools.figure import Figure

BUDGET_SECONDS_PER_CASE = 0.01  # issue 5: at least 100 cases per second
OUTSIDE_TARGET = 2.0  # issue 22: an outside command at >= 50 % of the bundled reference's cases/s
HTTP_TARGET = 1.25  # issue 27: HTTP at >= 80 % of stdio's cases/s
SCALING_TARGET = 1 / 1.8  # issue 27: the default --jobs at >= 1.8x the cases/s of --jobs 1
SMOKE_CASES = 25
SERVER = "intent-runtime-mcp"


def _outside_command() -> str:
    """The reference as an outside implementer's command: its console script, beside this Python."""
    script = Path(sys.executable).parent / SERVER
    return f"{script if script.exists() else shutil.which(SERVER) or SERVER} --config {{config}}"


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of every descendant reaped so far
    (``workers.execute`` returns only once the zygote and every server are reaped)."""
    return sum(usage.ru_utime + usage.ru_stime
               for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))  # fmt: skip


@dataclass(frozen=True)
class Ceiling:
    """What one run's CPU use says about the speed-up more worker processes can give."""

    busy: float  # CPUs the run kept busy on average: its CPU seconds over its wall seconds
    cpus: int  # CPUs this process may use
    most: float  # the largest speed-up possible here: cpus / busy

    def describe(self) -> str:
        return f"{self.busy:.2f} of {self.cpus} CPUs busy → at most {self.most:.2f}x here"


def scaling_ceiling(cpu: float, wall: float, cpus: int) -> Ceiling:
    """The speed-up ``cpus`` CPUs allow a run that used ``cpu`` CPU seconds in ``wall`` seconds:
    more workers cannot make the same cases cost less CPU, so at most ``cpus / busy``."""
    if wall <= 0 or cpu <= 0 or cpus < 1:
        raise ValueError(f"a run needs positive wall and CPU seconds and at least one CPU: {cpu=} {wall=} {cpus=}")
    busy = cpu / wall
    return Ceiling(busy, cpus, max(1.0, cpus / busy))


@dataclass(frozen=True)
class Measured:
    per_case: float  # seconds per case after the first
    startup: float  # seconds to the first case
    tally: Counter[str]
    wall: float  # the whole run, start-up included
    cpu: float  # CPU seconds of the whole run: this process and every process it started
    ran: list[Any]  # the cases the target ran (not unsupported)


def _measure(spec_text: str, cases: list[Any], jobs: int | None, cold_start: bool = False) -> Measured:
    from intentref.suite.execution import workers
    from intentref.suite.targets import registry

    first: list[float] = []

    def on_outcome(case: Any, outcome: Any) -> None:
        if not first:
            first.append(time.perf_counter())

    cpu_before = cpu_seconds()
    started = time.perf_counter()
    spec = registry.parse(spec_text, cold_start=cold_start)
    outcomes, _ = workers.execute(cases, spec, jobs=jobs, on_outcome=on_outcome)
    ended = time.perf_counter()
    cpu = cpu_seconds() - cpu_before
    per_case = (ended - first[0]) / max(len(cases) - 1, 1) if first else float("inf")
    ran = [case for case, outcome in zip(cases, outcomes, strict=True) if outcome.outcome != "unsupported"]
    return Measured(per_case, (first[0] - started) if first else 0.0, Counter(o.outcome for o in outcomes),
                    ended - started, cpu, ran)  # fmt: skip


def _first_cpu() -> set[int]:
    return {min(os.sched_getaffinity(0))} if hasattr(os, "sched_getaffinity") else set()


def _measure_on_one_cpu(spec_text: str, level: str) -> float:
    """Seconds per case of the default run of ``level`` in a child pinned to one CPU (as ``taskset -c``)."""
    one = _first_cpu()
    if not one:
        raise RuntimeError("this system cannot pin a process to a CPU")
    done = subprocess.run(
        [sys.executable, "-m", "intentref.devtools.bench_conformance", "--one-cpu", spec_text, level],
        preexec_fn=lambda: os.sched_setaffinity(0, one),  # inherited by everything the run starts
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the pinned run failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if (found["cpus"], found["jobs"]) != (1, 1):
        raise RuntimeError(f"the pinned run was not on one CPU: {found}")
    return float(found["per_case"])


def _tally(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "unsupported", "errored") if counts[k])


def _refusal_seconds() -> float:
    """The outside server's own time to refuse a configuration the seeds reject (median of 5)."""
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "refused.json"
        config.write_text('{"instances": {"x": {"schema": {"type": "object"}}}}', "utf-8")
        command = _outside_command().replace("{config}", str(config)).split()
        times = []
        for _ in range(5):
            started = time.perf_counter()
            subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=30)
            times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def figures(smoke: bool) -> list[Figure]:
    from intentref.suite.cases.fixtures import load_cases, select
    from intentref.suite.execution.workers import default_jobs

    every = load_cases()
    normative = select(every, "normative", [], [])
    if smoke:  # a few cases of the shared run: proves the figures work, means nothing
        every, normative = ([c for c in cases if not c.bridge_options and "setup" not in c.data][:SMOKE_CASES]
                            for cases in (every, normative))  # fmt: skip
    jobs = default_jobs()
    out: list[Figure] = []

    budget = _measure("reference", every, None)
    per_case, startup, counts = budget.per_case, budget.startup, budget.tally
    out.append(Figure(
        "conformance suite over stdio (bundled reference), after start-up",
        per_case, BUDGET_SECONDS_PER_CASE, "s/case", 1.0,
        f"{len(every)} cases, {jobs} worker processes: {1 / per_case:.0f} cases/s after {startup:.1f} s of "
        f"start-up ({_tally(counts)}), vs the 100 cases/s budget (0.01 s/case)",
    ))  # fmt: skip

    rates: dict[tuple[str, int | None], float] = {}
    tallies: dict[str, Counter[str]] = {}
    ceilings: dict[str, Ceiling] = {}
    http_ran: list[Any] = []
    targets = (("bundled", "bundled reference over stdio", "reference"),
               ("outside", "outside stdio command", f"stdio:{_outside_command()}"),
               ("http", "bundled reference over HTTP", "http-reference"))  # fmt: skip
    for name, _, spec in targets:
        for run_jobs in (None, 1):
            measured = _measure(spec, normative, run_jobs)
            rates[name, run_jobs] = measured.per_case
            tallies.setdefault(name, measured.tally)
            if run_jobs == 1:
                ceilings[name] = scaling_ceiling(measured.cpu, measured.wall, jobs)
            if name == "http" and run_jobs is None:
                http_ran = measured.ran
    # Like for like: over streamable HTTP a server configured elsewhere runs no case that sets
    # Bridge options or instances of its own (the legacy TTL cases among them, whose waits are
    # real time), so the per-case figures above divide different work.  The same server over
    # stdio is also timed on exactly the cases HTTP ran.
    same_http = _measure("http-reference", http_ran, None).per_case if http_ran else float("inf")
    same_stdio = _measure("reference", http_ran, None).per_case if http_ran else float("inf")
    refusal = _refusal_seconds()
    # The same server without the fork path, on the cases an outside command can be asked (no
    # Bridge options: a command with no placeholder for them), so both start the same servers.
    askable = [case for case in normative if not case.bridge_options]
    cold = _measure("reference", askable, None, cold_start=True).per_case
    warm = _measure("reference", askable, None).per_case
    out.append(Figure(
        "normative suite: an outside stdio command vs the bundled reference",
        rates["outside", None], rates["bundled", None], "s/case", OUTSIDE_TARGET,
        f"{len(normative)} normative cases against `{SERVER} --config {{config}}` as an outside command "
        f"({1 / rates['outside', None]:.0f} cases/s; {_tally(tallies['outside'])}) vs the bundled target, "
        f"whose servers fork from a pre-imported zygote ({1 / rates['bundled', None]:.0f} cases/s; "
        f"{_tally(tallies['bundled'])}): {rates['bundled', None] / rates['outside', None]:.0%} of its speed; "
        f"the outside server itself takes {refusal * 1000:.0f} ms to refuse a configuration at start. "
        f"On the {len(askable)} cases a command without option placeholders can be asked, the bundled "
        f"target runs at {1 / warm:.0f} cases/s with its fork path and {1 / cold:.0f} without it "
        f"(--cold-start: servers started as the outside command's are)",
    ))  # fmt: skip
    out.append(Figure(
        "normative suite: HTTP vs stdio (bundled reference)",
        rates["http", None], rates["bundled", None], "s/case", HTTP_TARGET,
        f"the bundled reference over streamable HTTP, a server per worker ({1 / rates['http', None]:.0f} cases/s; "
        f"{_tally(tallies['http'])}) vs over stdio ({1 / rates['bundled', None]:.0f} cases/s): "
        f"{rates['bundled', None] / rates['http', None]:.0%}",
    ))  # fmt: skip
    out.append(Figure(
        "normative suite: HTTP vs stdio on the same cases (bundled reference)",
        same_http, same_stdio, "s/case", HTTP_TARGET,
        f"the {len(http_ran)} normative cases HTTP runs, over HTTP ({1 / same_http:.0f} cases/s) and over "
        f"stdio ({1 / same_stdio:.0f} cases/s): {same_stdio / same_http:.0%}",
    ))  # fmt: skip
    for name, label, _ in targets:
        speedup = rates[name, 1] / rates[name, None]
        out.append(Figure(
            f"scaling: --jobs {jobs} vs --jobs 1, {label}",
            rates[name, None], rates[name, 1], "s/case", SCALING_TARGET if jobs >= 2 else 1.0,
            f"{1 / rates[name, None]:.0f} cases/s with {jobs} worker processes vs {1 / rates[name, 1]:.0f} with one "
            f"(its whole run: {ceilings[name].describe()}): {speedup:.2f}x on {jobs} CPU{'s' if jobs != 1 else ''}"
            + ("" if jobs >= 2 else " (one CPU: no speed-up to ask for)"),
        ))  # fmt: skip
    if jobs < 2 or smoke or not _first_cpu():
        return out  # one CPU: nothing to pin away; a smoke run: the pinned runs prove nothing
    for name, label, spec in targets:
        pinned = _measure_on_one_cpu(spec, "normative")
        speedup = pinned / rates[name, None]
        out.append(Figure(
            f"scaling with the machine: {jobs} CPUs vs 1, {label}",
            rates[name, None], pinned, "s/case", SCALING_TARGET,
            f"the default run on all {jobs} CPUs ({1 / rates[name, None]:.0f} cases/s) vs the same command pinned "
            f"to one, as taskset -c pins it ({1 / pinned:.0f} cases/s, one worker process): {speedup:.2f}x",
        ))  # fmt: skip
    return out


def _one_cpu_main(spec_text: str, level: str) -> None:
    """The pinned child of ``_measure_on_one_cpu``: one default run, its seconds per case as JSON."""
    from intentref.suite.cases.fixtures import load_cases, select
    from intentref.suite.execution.workers import default_jobs

    measured = _measure(spec_text, select(load_cases(), level, [], []), None)
    print(json.dumps({"per_case": measured.per_case, "cpus": len(os.sched_getaffinity(0)), "jobs": default_jobs()}))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one-cpu":
        _one_cpu_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: python -m intentref.devtools.bench_conformance --one-cpu SPEC LEVEL (used by intentref bench)")
