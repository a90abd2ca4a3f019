"""A server that answers one case wrongly on every other run: what ``--repeat`` calls flaky (D-CNF-065).

The reference in process, except that the prepare of ``FLIPPED_INPUT`` (BRG-0001's order query)
comes back as a ``data`` task instead of a ``core`` one on every second such prepare.  The
count is kept in the file that ``ALTERNATING_COUNTER`` names, so it goes on across the worker
processes and the runs of ``--repeat``: runs 1, 2, 3 answer right, wrong, right, and the test
that uses it cannot flake itself.  Any other call is the reference's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from intentref.suite.targets.base import InProcessTarget, Reply, Run, Session

FLIPPED_INPUT = "查询订单 000123"
COUNTER_VARIABLE = "ALTERNATING_COUNTER"


def _nth_time() -> int:
    """How many times the flipped prepare has been asked, this one included."""
    counter = Path(os.environ[COUNTER_VARIABLE])
    count = int(counter.read_text("utf-8") or "0") + 1 if counter.exists() else 1
    counter.write_text(str(count), "utf-8")
    return count


class _AlternatingSession(Session):
    def __init__(self, inner: Session) -> None:
        self._inner = inner

    def prepare(self, request: Any) -> Reply:
        reply = self._inner.prepare(request)
        if isinstance(request, dict) and request.get("input") == FLIPPED_INPUT and _nth_time() % 2 == 0:
            return Reply({**reply.value, "stage": "data"})
        return reply

    def accept(self, request: Any) -> Reply:
        return self._inner.accept(request)

    def cancel(self, request: Any) -> Reply:
        return self._inner.cancel(request)

    def close(self) -> None:
        self._inner.close()

    def release(self) -> None:
        self._inner.release()


class _AlternatingRun:
    def __init__(self, inner: Run) -> None:
        self._inner = inner

    def connect(self) -> Session:
        return _AlternatingSession(self._inner.connect())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AlternatingTarget(InProcessTarget):
    def __init__(self) -> None:
        super().__init__()
        self.name = "reference, BRG-0001 wrong on every other run"

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        return _AlternatingRun(super().open(instances, bridge_options))  # type: ignore[return-value]


def alternating() -> AlternatingTarget:
    return AlternatingTarget()
