"""The reference on a machine too busy for a case's timing: some accepts reach it late (D-CNF-058).

``late_first_run``: only the first run's first accept waits, as when a CI runner's CPUs were
busy for a moment; ``late_every_run``: every run's first accept waits as long, as on a
machine that stays too slow. The wait is real time, as a busy machine's would be.
"""

from __future__ import annotations

import time
from typing import Any

from intentref.suite.targets.base import InProcessTarget, Reply, Run, Session

LATE_SECONDS = 1.4  # past CAP-0063's jobTtlMs of 1000 ms, well within five times it


class _LateSession:
    def __init__(self, inner: Session, run: _LateRun) -> None:
        self._inner = inner
        self._run = run
        self.prepare = inner.prepare
        self.cancel = inner.cancel
        self.close = inner.close

    def accept(self, request: Any) -> Reply:
        if self._run.late:
            self._run.late = False
            time.sleep(self._run.seconds)
        return self._inner.accept(request)

    def release(self) -> None:
        self._inner.release()


class _LateRun:
    def __init__(self, inner: Run, late: bool, seconds: float) -> None:
        self._inner = inner
        self.late = late
        self.seconds = seconds

    def connect(self) -> Session:
        return _LateSession(self._inner.connect(), self)  # type: ignore[return-value]

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class LateTarget(InProcessTarget):
    def __init__(self, every_run: bool, seconds: float) -> None:
        super().__init__()
        self.name = "late reference"
        self._every_run = every_run
        self._seconds = seconds
        self._runs = 0

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        self._runs += 1
        late = self._every_run or self._runs == 1
        return _LateRun(super().open(instances, bridge_options), late, self._seconds)  # type: ignore[return-value]


def late_first_run() -> LateTarget:
    return LateTarget(every_run=False, seconds=LATE_SECONDS)


def late_every_run() -> LateTarget:
    # Late past five times CAP-0063's TTL: at the wider timing the job has expired too.
    return LateTarget(every_run=True, seconds=5 * 1.0 + 0.5)
