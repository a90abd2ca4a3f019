"""Bridge benchmarks, as importable functions returning figures (the CLI wiring is separate).

``bench_accept_retained()``: a core accept with 100,000 retained records takes at most 1.2
times as long as with 100 (reclamation and lookup are O(1), spec: R-CAP-011, D-BRG-013).
``bench_memory()``: after 200,000 jobs, a fresh subprocess's VmRSS is at most 3 x maxReplayBytes
+ that of the same process with no jobs (Linux only).
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from typing import Any, Final

from intentref.bridge import BridgeSession, create_intent_bridge
from intentref.core.limits import MAX_OPTION_VALUE
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_INPUT, ORDER_SCHEMA
from intentref.devtools.figure import Figure
from intentref.intent import Intent

# The seed order example (seed 000 "回复类型", "core 候选", "data 候选").
CORE_TEXT: Final = json.dumps(ORDER_CORE, ensure_ascii=False)
DATA_TEXT: Final = json.dumps(ORDER_DATA, ensure_ascii=False)

MIB: Final = 1024 * 1024
LATENCY_TARGET: Final = 1.2
MEMORY_FACTOR: Final = 3


def _order_intent() -> Intent:
    return Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})


def _accept(session: BridgeSession, task: dict[str, Any], text: str) -> dict[str, Any]:
    return session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": text})


def _run_job(session: BridgeSession, kind: str) -> None:
    """One job to its end: "full" (core + data -> result), "core" (fields [] -> result), "cancel"."""
    fields: dict[str, Any] = {"fields": []} if kind == "core" else {}
    task = session.prepare({"instance": "order", "input": ORDER_INPUT, **fields})
    if task["kind"] != "task":
        raise RuntimeError(f"prepare failed: {task}")
    if kind == "cancel":
        session.cancel({"jobId": task["jobId"]})
        return
    reply = _accept(session, task, CORE_TEXT)
    if kind == "full":
        reply = _accept(session, reply, DATA_TEXT)
    if reply["kind"] != "result":
        raise RuntimeError(f"the seed flow did not succeed: {reply}")


# --------------------------------------------------------------------------- latency


class _Filled:
    """A Bridge holding `retained` terminal records of finished core jobs, ready to time."""

    def __init__(self, retained: int) -> None:
        # maxReplayEntries = retained + 1: once filled, every new job reclaims exactly one
        # record, so the timed accept runs in the steady state with `retained` records.
        self.retained = retained
        self.bridge = create_intent_bridge({"instances": {"order": _order_intent()},
                                            "maxReplayEntries": retained + 1,
                                            "maxReplayBytes": MAX_OPTION_VALUE})  # fmt: skip
        self.session = self.bridge.connect()
        start = time.perf_counter()
        for _ in range(retained):
            _run_job(self.session, "core")
        self.fill_seconds = time.perf_counter() - start
        self.timings: list[int] = []

    def batch(self, samples: int) -> None:
        for _ in range(samples):
            task = self.session.prepare({"instance": "order", "input": ORDER_INPUT, "fields": []})
            start = time.perf_counter_ns()
            reply = _accept(self.session, task, CORE_TEXT)
            self.timings.append(time.perf_counter_ns() - start)
            if reply["kind"] != "result":
                raise RuntimeError(f"the core accept did not succeed: {reply}")

    def figures(self) -> dict[str, Any]:
        timings = sorted(self.timings)
        stats = self.bridge.stats()
        return {
            "retained": self.retained,
            "records": stats["records"],
            "samples": len(timings),
            "fillSeconds": round(self.fill_seconds, 2),
            "medianUs": round(statistics.median(timings) / 1000, 1),
            "meanUs": round(statistics.fmean(timings) / 1000, 1),
            "p95Us": round(timings[int(len(timings) * 0.95)] / 1000, 1),
        }


def bench_accept_retained(
    small: int = 100, large: int = 100_000, rounds: int = 25, batch: int = 200
) -> dict[str, Any]:
    """Median latency of a full core accept (fresh job each time) with `large` vs `small` retained.

    Both Bridges are timed in alternating batches in one process, so a change of machine load
    falls on both alike.  The cyclic GC stays on: its cost over a large heap is measured too.
    """
    runs = [_Filled(small), _Filled(large)]
    for _ in range(rounds):
        for run in runs:
            run.batch(batch)
    small_run, large_run = (run.figures() for run in runs)
    for run in runs:
        run.bridge.close()
    ratio = large_run["medianUs"] / small_run["medianUs"]
    return {
        "small": small_run,
        "large": large_run,
        "ratio": round(ratio, 3),
        "target": LATENCY_TARGET,
        "ok": ratio <= LATENCY_TARGET,
    }


# --------------------------------------------------------------------------- memory


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def memory_child(jobs: int, max_replay_bytes: int, kind: str) -> dict[str, Any]:
    """Run in the subprocess: the RSS after `jobs` jobs of `kind` (0 jobs: the baseline)."""
    bridge = create_intent_bridge({"instances": {"order": _order_intent()}, "maxReplayBytes": max_replay_bytes,
                                   "maxReplayEntries": MAX_OPTION_VALUE})  # fmt: skip
    session = bridge.connect()
    start = time.perf_counter()
    for _ in range(jobs):
        _run_job(session, kind)
    seconds = time.perf_counter() - start
    gc.collect()
    stats = bridge.stats()
    return {"kind": kind, "jobs": jobs, "seconds": round(seconds, 1), "rssKiB": _rss_kib(), **stats}


def _in_subprocess(jobs: int, max_replay_bytes: int, kind: str) -> dict[str, Any]:
    code = (
        "import json, sys\n"
        "from intentref.devtools.bench_bridge import memory_child\n"
        f"print(json.dumps(memory_child({jobs}, {max_replay_bytes}, {kind!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def bench_memory(jobs: int = 200_000, max_replay_bytes: int = 64 * MIB,
                 kinds: tuple[str, ...] = ("full", "cancel")) -> dict[str, Any]:  # fmt: skip
    """RSS after `jobs` jobs per kind, against MEMORY_FACTOR x budget + the empty process.

    maxReplayEntries is at its maximum so the byte budget alone bounds retention; "cancel" jobs
    (0.1 kB each) are where per-record overhead not counted in maxReplayBytes matters most.
    """
    baseline = _in_subprocess(0, max_replay_bytes, "full")
    limit_kib = (MEMORY_FACTOR * max_replay_bytes) // 1024 + baseline["rssKiB"]
    runs = {}
    for kind in kinds:
        run = _in_subprocess(jobs, max_replay_bytes, kind)
        run["rssMiB"] = round(run["rssKiB"] / 1024, 1)
        run["overBaselinePerBudget"] = round(
            (run["rssKiB"] - baseline["rssKiB"]) * 1024 / max_replay_bytes, 2
        )
        run["ok"] = run["rssKiB"] <= limit_kib
        runs[kind] = run
    return {
        "budgetMiB": max_replay_bytes / MIB,
        "baselineRssMiB": round(baseline["rssKiB"] / 1024, 1),
        "limitMiB": round(limit_kib / 1024, 1),
        "runs": runs,
        "ok": all(run["ok"] for run in runs.values()),
    }


def figures(smoke: bool = False) -> list[Figure]:
    """The two Bridge figures for ``intentref bench`` (smoke: tiny sizes, figures meaningless)."""
    if smoke:
        latency = bench_accept_retained(small=10, large=200, rounds=2, batch=10)
        memory = bench_memory(jobs=200, max_replay_bytes=64 * 1024, kinds=("full",))
    else:
        latency = bench_accept_retained()
        memory = bench_memory()
    out = [
        Figure("bridge accept, 100k vs 100 retained", latency["large"]["medianUs"] / 1e6,
               latency["small"]["medianUs"] / 1e6, "s/accept", LATENCY_TARGET,
               "median core accept with 100,000 retained terminal records vs with 100, alternating batches"),
    ]  # fmt: skip
    budget_mib = memory["budgetMiB"]
    for kind, run in memory["runs"].items():
        # Ratio of the RSS to its allowance (3 x budget + the empty process): target 1.
        out.append(Figure(f"bridge RSS after {run['jobs']:,} {kind} jobs", run["rssKiB"] / 1024,
                          memory["limitMiB"], "MiB", 1.0,
                          f"RSS vs {MEMORY_FACTOR} x maxReplayBytes ({budget_mib:g} MiB) + empty process "
                          f"({memory['baselineRssMiB']} MiB)"))  # fmt: skip
    return out


if __name__ == "__main__":  # pragma: no cover - a manual entry; `intentref bench` is the usual one
    print(json.dumps({"acceptRetained": bench_accept_retained(), "memory": bench_memory()}, indent=2))
