"""How many CPUs this process may use: its affinity, and the CPU limit of its cgroups.

``os.sched_getaffinity`` honours ``taskset`` and a cpuset but not a CPU *quota* (``docker run
--cpus 2``), so a worker per affine CPU could mean 64 workers in a 2-CPU pod.  The default
``--jobs`` is the smaller of the two (D-CNF-054): the affinity, and the tightest quota over
its period (rounded up) of the process's cgroup and its ancestors', in cgroup v2 (``cpu.max``)
or v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), read from ``/proc/self``.  A file that
cannot be read or parsed means no limit, never an error.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PROC_SELF = Path("/proc/self")


@dataclass(frozen=True)
class _Mount:
    root: str  # the part of the hierarchy the mount shows
    point: Path  # where it is mounted


def _mounts(mountinfo: str) -> dict[str, _Mount]:
    """The cgroup mounts: ``"v2"`` for the unified one, ``"cpu"`` for a v1 one carrying the cpu controller."""
    found: dict[str, _Mount] = {}
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        parts, described = fields.split(), tail.split()
        if len(parts) < 5 or len(described) < 3:
            continue
        kind, options = described[0], described[2].split(",")
        mount = _Mount(parts[3], Path(parts[4].replace("\\040", " ")))
        if kind == "cgroup2":
            found.setdefault("v2", mount)
        elif kind == "cgroup" and "cpu" in options:
            found.setdefault("cpu", mount)
    return found


def _directories(mount: _Mount, path: str) -> list[Path]:
    """The directories of ``path`` (as /proc/self/cgroup names it) and its ancestors under ``mount``."""
    relative = PurePosixPath(path)
    root = PurePosixPath(mount.root)
    if relative.is_relative_to(root):
        relative = PurePosixPath("/") / relative.relative_to(root)
    out = [mount.point / str(relative).lstrip("/")]
    out += [mount.point / str(parent).lstrip("/") for parent in relative.parents]
    return out


def _v2_limit(directory: Path) -> float | None:
    quota, _, period = (directory / "cpu.max").read_text("ascii").strip().partition(" ")
    return None if quota == "max" else int(quota) / int(period or "100000")


def _v1_limit(directory: Path) -> float | None:
    quota = int((directory / "cpu.cfs_quota_us").read_text("ascii"))
    period = int((directory / "cpu.cfs_period_us").read_text("ascii"))
    return None if quota <= 0 or period <= 0 else quota / period


def cgroup_cpu_limit(proc: Path = PROC_SELF) -> float | None:
    """The CPUs this process's cgroups allow it (quota over period), or None when nothing limits it."""
    try:
        mounts = _mounts((proc / "mountinfo").read_text("utf-8", "replace"))
        memberships = (proc / "cgroup").read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for line in memberships:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and not controllers and "v2" in mounts:
            mount, read = mounts["v2"], _v2_limit
        elif "cpu" in controllers.split(",") and "cpu" in mounts:
            mount, read = mounts["cpu"], _v1_limit
        else:
            continue
        for directory in _directories(mount, path):
            try:
                limit = read(directory)
            except (OSError, ValueError):
                continue
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def usable_cpus(proc: Path = PROC_SELF) -> int:
    """The CPUs this process may use: its affinity, no more than its cgroups' CPU limit (rounded up)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux: no affinity, no cgroups
        return max(1, os.cpu_count() or 1)
    limit = cgroup_cpu_limit(proc)
    if limit is not None:
        cpus = min(cpus, math.ceil(limit))
    return max(1, cpus)
