"""The CPUs a run may use: affinity, and a cgroup's CPU quota (D-CNF-054)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from intentref.suite.execution import cpus

V1_MOUNT = "35 24 0:30 {root} {point} rw,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
V2_MOUNT = "30 23 0:26 {root} {point} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def _proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo, "utf-8")
    (proc / "cgroup").write_text(cgroup, "utf-8")
    return proc


def _write(directory: Path, **files: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("__", ".")).write_text(text + "\n", "ascii")


def test_a_v2_quota_on_an_ancestor_limits_the_cpus(tmp_path: Path) -> None:
    point = tmp_path / "cgroup"
    _write(point / "kubepods" / "pod1", cpu__max="250000 100000")  # 2.5 CPUs
    _write(point / "kubepods" / "pod1" / "box", cpu__max="max 100000")  # no limit of its own
    proc = _proc(tmp_path, V2_MOUNT.format(root="/", point=point), "0::/kubepods/pod1/box\n")
    assert cpus.cgroup_cpu_limit(proc) == pytest.approx(2.5)


def test_the_tightest_of_the_cgroups_wins(tmp_path: Path) -> None:
    point = tmp_path / "cgroup"
    _write(point / "a", cpu__max="400000 100000")
    _write(point / "a" / "b", cpu__max="150000 100000")
    proc = _proc(tmp_path, V2_MOUNT.format(root="/", point=point), "0::/a/b\n")
    assert cpus.cgroup_cpu_limit(proc) == pytest.approx(1.5)


def test_a_v1_quota_seen_through_a_container_namespace(tmp_path: Path) -> None:
    # The mount shows only the container's part of the hierarchy; /proc/self/cgroup names the whole path.
    point = tmp_path / "cpu,cpuacct"
    _write(point, cpu__cfs_quota_us="200000", cpu__cfs_period_us="100000")
    mountinfo = V1_MOUNT.format(root="/docker/abc", point=point)
    proc = _proc(tmp_path, mountinfo, "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n")
    assert cpus.cgroup_cpu_limit(proc) == pytest.approx(2.0)


def test_no_quota_and_unreadable_files_mean_no_limit(tmp_path: Path) -> None:
    point = tmp_path / "cpu"
    _write(point, cpu__cfs_quota_us="-1", cpu__cfs_period_us="100000")
    _write(point / "broken", cpu__cfs_quota_us="garbage", cpu__cfs_period_us="100000")
    proc = _proc(tmp_path, V1_MOUNT.format(root="/", point=point), "4:cpu,cpuacct:/broken\n")
    assert cpus.cgroup_cpu_limit(proc) is None
    assert cpus.cgroup_cpu_limit(tmp_path / "no-such-proc") is None


def test_usable_cpus_round_a_quota_up_and_never_exceed_the_affinity(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    point = tmp_path / "cgroup"
    _write(point, cpu__max="50000 100000")  # half a CPU: one worker, not none
    assert cpus.usable_cpus(_proc(tmp_path, V2_MOUNT.format(root="/", point=point), "0::/\n")) == 1
    (point / "cpu.max").write_text(f"{(affinity + 8) * 100000} 100000\n", "ascii")
    assert cpus.usable_cpus(tmp_path / "proc") == affinity


def _cpu_cgroup_v1() -> Path | None:
    mount = cpus._mounts(Path("/proc/self/mountinfo").read_text("utf-8")).get("cpu")
    return None if mount is None else mount.point


def test_a_run_in_a_one_cpu_cgroup_defaults_to_one_worker() -> None:
    """spec: D-CNF-054 -- a real cgroup with a quota of one CPU, as docker run --cpus 1 makes."""
    mount = _cpu_cgroup_v1()
    group = None if mount is None else mount / f"intentref-test-{uuid.uuid4().hex[:8]}"
    try:
        assert group is not None
        group.mkdir()
        (group / "cpu.cfs_quota_us").write_text("100000")
    except (AssertionError, OSError) as exc:
        pytest.skip(f"cannot make a cgroup v1 with a CPU quota here: {exc!r}")
    try:
        code = "from intentref.suite.execution.workers import default_jobs; print(default_jobs())"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                              preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))  # fmt: skip
        assert done.stdout.strip() == "1"
        outside = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
        assert outside.stdout.strip() == str(len(os.sched_getaffinity(0)))
    finally:
        group.rmdir()
