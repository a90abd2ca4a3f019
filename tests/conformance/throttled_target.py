"""The reference in process, on a CPU it must share under a cgroup quota: a busy CI runner.

When it opens its first run, the process running the cases joins the cgroup v1 named by
``INTENTREF_TEST_CGROUP`` (made by the test, with a CPU quota) and forks processes that
spin in the same cgroup, so they share the quota as a runner's steps share a busy
machine's CPUs with other work. It joins after start-up, so that the imports are not what
is slowed down. The test kills what is left in the cgroup when the run is over.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from intentref.suite.targets.base import InProcessTarget, Run

COMPETITORS = 1  # takes its share of the quota: the cases' process gets half of it


def _spin(parent: int) -> None:
    """Spin until the process that forked this one is gone, holding none of its descriptors
    (a pipe kept open here would keep its reader waiting)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, 65536)
    turns = 0
    while True:
        turns += 1
        if turns % 100_000 == 0 and os.getppid() != parent:
            os._exit(0)


class ThrottledTarget(InProcessTarget):
    def __init__(self) -> None:
        super().__init__()
        self.name = "reference (in-process, throttled)"
        self._group = Path(os.environ["INTENTREF_TEST_CGROUP"])
        self._joined = False

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        if not self._joined:
            self._joined = True
            (self._group / "cgroup.procs").write_text(str(os.getpid()))
            parent = os.getpid()
            for _ in range(COMPETITORS):  # in the same cgroup, sharing its quota
                if os.fork() == 0:
                    _spin(parent)
        return super().open(instances, bridge_options)


def target() -> ThrottledTarget:
    return ThrottledTarget()
