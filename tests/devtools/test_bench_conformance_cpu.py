"""The bench's CPU weighing of a ``--jobs 1`` run (issue 27): what it counts and what it concludes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from intentref.devtools.bench_conformance import cpu_seconds, scaling_ceiling

# CPU seconds the child below burns: enough to stand well clear of a clock tick's resolution.
CHILD_BURN_S = 0.4


def test_the_ceiling_is_the_cpus_over_the_cpus_a_run_keeps_busy() -> None:
    ceiling = scaling_ceiling(cpu=17.0, wall=10.0, cpus=2)
    assert ceiling.busy == pytest.approx(1.7)
    assert ceiling.most == pytest.approx(2 / 1.7)
    assert ceiling.describe() == "1.70 of 2 CPUs busy → at most 1.18x here"
    assert scaling_ceiling(cpu=5.0, wall=10.0, cpus=2).most == pytest.approx(4.0)
    # A run busier than the machine (a noisy reading) leaves no speed-up, not a slow-down.
    assert scaling_ceiling(cpu=21.0, wall=10.0, cpus=2).most == 1.0
    with pytest.raises(ValueError):
        scaling_ceiling(cpu=1.0, wall=0.0, cpus=2)


def test_cpu_seconds_count_a_child_process_once_it_is_reaped() -> None:
    before = cpu_seconds()
    burn = f"import time\nend = time.process_time() + {CHILD_BURN_S}\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # run() waits: the child is reaped
    assert cpu_seconds() - before >= CHILD_BURN_S


def test_a_bundled_run_leaves_no_process_unreaped() -> None:
    # A descendant nobody waits for is lost to RUSAGE_CHILDREN (and the figure).  In a process
    # that is a subreaper, every orphan comes to it: after the run there must be none, though
    # the zygote forked a server for every run of its own.
    script = textwrap.dedent("""
        import ctypes, json, os
        PR_SET_CHILD_SUBREAPER = 36
        assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        from intentref.devtools import bench_conformance
        from intentref.suite.cases.fixtures import load_cases
        cases = [case for case in load_cases() if case.bridge_options][:12]
        measured = bench_conformance._measure("reference", cases, 1)
        leftovers = []
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                leftovers.append("a child still running")
                break
            leftovers.append(pid)
        print(json.dumps({"leftovers": leftovers, "cpu": measured.cpu, "wall": measured.wall,
                          "tally": dict(measured.tally)}))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["leftovers"] == []
    assert found["tally"].get("passed", 0) >= 10
    assert found["cpu"] > 0 and found["wall"] > 0


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU pinning on this system")
def test_the_pinned_run_runs_on_one_cpu_with_the_default_it_gives() -> None:
    from intentref.devtools import bench_conformance

    per_case = bench_conformance._measure_on_one_cpu("in-process", "normative")  # raises unless 1 CPU, --jobs 1
    assert 0 < per_case < 1


def test_a_pinned_run_that_fails_says_so() -> None:
    from intentref.devtools import bench_conformance

    with pytest.raises(RuntimeError, match="pinned run failed"):
        bench_conformance._measure_on_one_cpu("no-such-kind", "normative")
