"""A target whose every call takes a while: the matrix's time limit must cut it (D-CNF-041)."""

from __future__ import annotations

import time
from typing import Any

from intentref.suite.targets.base import InProcessTarget, Reply, Run, Session

CALL_SECONDS = 0.3


class _SlowSession:
    def __init__(self, inner: Session) -> None:
        self._inner = inner

    def prepare(self, request: Any) -> Reply:
        time.sleep(CALL_SECONDS)
        return self._inner.prepare(request)

    def accept(self, request: Any) -> Reply:
        time.sleep(CALL_SECONDS)
        return self._inner.accept(request)

    def cancel(self, request: Any) -> Reply:
        time.sleep(CALL_SECONDS)
        return self._inner.cancel(request)

    def close(self) -> None:
        self._inner.close()


class _SlowRun:
    def __init__(self, inner: Run) -> None:
        self._inner = inner

    def connect(self) -> Session:
        return _SlowSession(self._inner.connect())

    def close(self) -> None:
        self._inner.close()


class SlowTarget(InProcessTarget):
    name = "slow reference"

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        return _SlowRun(super().open(instances, bridge_options))


def target() -> SlowTarget:
    return SlowTarget()
