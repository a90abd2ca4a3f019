"""Time never turns into a verdict (D-CNF-058; issue 38).

The cases that sleep against a Bridge's legacy TTLs (CAP-0062 .. CAP-0067) need their steps
to reach the Bridge about when they mean to. These tests make steps late in real time, as a
busy machine does, and check that the verdict is the one a machine with time to spare
gives: the case runs again with wider timing, or is unsupported with the reason; a real
failure still fails. The last one throttles a real run with a cgroup CPU quota.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.cases.fixtures import load_cases
from intentref.suite.cases.script import shortest_ttl_ms, with_wider_timing
from intentref.suite.execution import cpus

ROOT = Path(__file__).resolve().parents[2]
TIMED = sorted(c.id for c in load_cases() if shortest_ttl_ms(c.data) is not None)


def _run(target: str, *only: str, timeout: float = 300, preexec: Any = None, tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    selection = [arg for pattern in only for arg in ("--only", pattern)]
    done = subprocess.run(
        [sys.executable, "-m", "intentref.cli", "conformance", *target.split(), "--jobs", "1", "--json", str(report),
         *selection],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False, preexec_fn=preexec,
    )  # fmt: skip
    assert report.exists(), done.stderr[-2000:]
    return {c["id"]: c for c in json.loads(report.read_text("utf-8"))["cases"]}


def test_the_timed_cases_are_those_that_sleep_against_a_positive_ttl() -> None:
    # CAP-0060 and CAP-0061 sleep too, but with no TTL set: no lateness can change their verdict.
    assert TIMED == ["CAP-0062", "CAP-0063", "CAP-0064", "CAP-0065", "CAP-0066", "CAP-0067", "RPY-0017"]
    case = next(c for c in load_cases() if c.id == "CAP-0063").data
    wider = with_wider_timing(case, 5)
    assert wider["bridge"]["jobTtlMs"] == 5000 and case["bridge"]["jobTtlMs"] == 1000
    assert [s["ms"] for s in wider["steps"] if s["op"] == "sleep"] == [6500]
    assert [s for s in wider["steps"] if s["op"] != "sleep"] == [s for s in case["steps"] if s["op"] != "sleep"]


def test_a_case_whose_step_ran_late_once_runs_again_and_passes(tmp_path: Path) -> None:
    # The first accept reaches the Bridge 1.4 s after the prepare: past the 1000 ms TTL.
    outcome = _run("--target python:tests.conformance.late_target:late_first_run", "CAP-0063", tmp_path=tmp_path)["CAP-0063"]
    # It runs again at five times the timing and passes; only a machine so busy that the wider
    # run is 1.25 s late too makes it unsupported, with the reason. Never failed.
    if outcome["outcome"] == "unsupported":
        assert "too busy for the case's timing" in outcome["detail"], outcome
    else:
        assert outcome["outcome"] == "passed", outcome
        assert "run again at 5 times its TTLs and sleeps" in outcome["detail"] and "D-CNF-058" in outcome["detail"]


def test_a_case_late_at_every_timing_is_unsupported_with_the_reason(tmp_path: Path) -> None:
    outcome = _run("--target python:tests.conformance.late_target:late_every_run", "CAP-0063", tmp_path=tmp_path)["CAP-0063"]
    assert outcome["outcome"] == "unsupported", outcome
    assert "too busy for the case's timing" in outcome["detail"] and "D-CNF-058" in outcome["detail"]


def test_a_real_failure_fails_at_any_timing(tmp_path: Path) -> None:
    # This variant answers an expired job with another code (D-ERR-005): wrong at any timing.
    # On time it is judged as it ran; late, it runs again wider and fails the same way, so
    # the verdict does not depend on how busy this machine is.
    outcome = _run("--target variant:other-codes", "CAP-0063", tmp_path=tmp_path)["CAP-0063"]
    assert outcome["outcome"] == "failed", outcome
    assert outcome["failedStep"] == 3 and "BRIDGE_JOB_EXPIRED" in outcome["mismatches"][0], outcome
    ran_again = "D-CNF-058" in outcome["detail"]
    assert not ran_again or "run again at 5 times its TTLs and sleeps" in outcome["detail"], outcome


def _cpu_cgroup() -> Path | None:
    mount = cpus._mounts(Path("/proc/self/mountinfo").read_text("utf-8")).get("cpu")
    return None if mount is None else mount.point


def test_the_timed_cases_under_a_cpu_quota_give_the_quiet_verdicts(tmp_path: Path) -> None:
    """A real cgroup v1 CPU quota of 1 % of one CPU, shared by the process running the cases and
    processes that spin (tests/conformance/throttled_target.py). How late a throttled step is
    answered is the kernel's to say, so this checks the verdicts, not that a case ran again;
    the late targets above make the lateness certain."""
    mount = _cpu_cgroup()
    group = None if mount is None else mount / f"intentref-slow-{uuid.uuid4().hex[:8]}"
    try:
        assert group is not None
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("1000")
    except (AssertionError, OSError) as exc:
        pytest.skip(f"cannot make a cgroup v1 with a CPU quota here: {exc!r}")
    os.environ["INTENTREF_TEST_CGROUP"] = str(group)
    try:
        throttled = _run("--target python:tests.conformance.throttled_target:target --level all", *TIMED,
                         timeout=900, tmp_path=tmp_path)  # fmt: skip
    finally:
        del os.environ["INTENTREF_TEST_CGROUP"]
        stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        for _ in range(100):
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.05)
    assert set(throttled) == set(TIMED)
    assert all(c["outcome"] in ("passed", "unsupported") for c in throttled.values()), throttled
    assert all("D-CNF-058" in c["detail"] for c in throttled.values() if c["outcome"] == "unsupported")
    # The quota was really enforced on the run: the kernel held its processes back.
    assert int(stat["nr_throttled"]) > 0 and int(stat["throttled_time"]) > 0, stat
