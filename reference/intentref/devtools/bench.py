"""``intentref bench``: every performance ratio the project tracks, measured in one run.

Each benchmark measures our cost and a floor (or a peer) in the same process and the same
run, and reports the ratio against its target; absolute times vary by machine, ratios
much less.  ``--smoke`` runs each with tiny sizes to prove it still works (CI does this);
its figures mean nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_INPUT, ORDER_SCHEMA
from intentref.devtools.figure import Figure


def per_call(fn: Callable[[int], float | None], calls: int, repeats: int = 5) -> float:
    """Median seconds per call of ``fn(calls)`` (which makes ``calls`` calls, and may return the
    seconds it timed itself, leaving out its set-up) over repeats."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        timed = fn(calls)
        samples.append((time.perf_counter() - started if timed is None else timed) / calls)
    return statistics.median(samples)


def bench_core_accept(smoke: bool = False) -> Figure:
    """Issue 2: the two accept steps of the seed order flow against json + sha256 + json."""
    from intentref.intent import Intent

    intent = Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})
    core_text = json.dumps(ORDER_CORE, ensure_ascii=False)
    data_text = json.dumps(ORDER_DATA, ensure_ascii=False)
    calls = 50 if smoke else 3_000
    # Warm the validator cache and every lazy import outside the measurement.
    warm = intent.start({"input": ORDER_INPUT})
    warm.submit(core_text)
    warm.submit(data_text)

    def ours(n: int) -> float:
        jobs = [intent.start({"input": ORDER_INPUT}) for _ in range(n)]
        started = time.perf_counter()
        for job in jobs:
            job.submit(core_text)
            job.submit(data_text)
        return time.perf_counter() - started

    def floor(n: int) -> None:
        for _ in range(n):
            for text in (core_text, data_text):
                value = json.loads(text)
                hashlib.sha256(text.encode("utf-8")).digest()
                json.dumps(value, ensure_ascii=False)

    return Figure(
        "core accept (seed order: core + data)",
        per_call(ours, calls),
        per_call(floor, calls),
        "s/flow",
        8.0,
        "Job.submit of the seed core and data candidates vs json.loads + sha256 + json.dumps of the same texts",
    )


# Benchmarks that run only when named with --only: the soak takes half a minute of two
# servers and an abuser process, which is no part of a routine bench run (D-MCP-024).
OPT_IN = frozenset({"soak"})


# Each benchmark module's ``figures(smoke)``, by the name --only takes.
BENCH_MODULES = {"bridge": "bench_bridge", "mcp": "bench_mcp", "soak": "soak",
                 "conformance": "bench_conformance", "host": "bench_host"}  # fmt: skip


def _registry() -> dict[str, Callable[[bool], list[Figure]]]:
    benches: dict[str, Callable[[bool], list[Figure]]] = {"core": lambda smoke: [bench_core_accept(smoke)]}
    for name, module in BENCH_MODULES.items():
        benches[name] = importlib.import_module(f"intentref.devtools.{module}").figures
    return benches


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            names = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    from intentref.suite.execution.cpus import usable_cpus

    usable = usable_cpus()  # what the default --jobs follows (taskset, cpuset, a cgroup's quota)
    cpus = f"{os.cpu_count()} CPUs" + (f" ({usable} usable here)" if usable != os.cpu_count() else "")
    return f"{platform.system()} {platform.release()}, {cpu}, {cpus}, Python {platform.python_version()}"


def main(smoke: bool = False, only: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"machine: {machine_line()}")
    figures: list[Figure] = []
    for name, bench in _registry().items():
        if (name in only) if only else (name not in OPT_IN):
            figures.extend(bench(smoke))
    table = Table(title="intentref benchmarks" + (" (smoke: figures not meaningful)" if smoke else ""))
    for column in ("benchmark", "ours", "floor/peer", "ratio", "target", ""):
        table.add_column(column)
    for f in figures:
        table.add_row(f.name, f"{f.ours:.3g} {f.unit}", f"{f.floor:.3g} {f.unit}", f"{f.ratio:.2f}x", f"<= {f.target:.3g}x",
                      "ok" if f.ok else "OVER")  # fmt: skip
    console.print(table)
    for f in figures:
        console.print(f"  {f.name}: {f.what}")
    print(json.dumps({"machine": machine_line(), "figures": [f.to_json() for f in figures]}, ensure_ascii=False))
    # Smoke runs only prove the benchmarks work; real runs fail when a ratio is over target.
    return 0 if smoke or all(f.ok for f in figures) else 1
