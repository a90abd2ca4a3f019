"""One measured figure of a benchmark: ours against its floor, and the ratio allowed.

Its own module so that the benchmark families (``bench_bridge``, ``bench_mcp``, ``soak``,
``bench_conformance``) and ``bench``, which collects them, all import it from below;
``bench`` no longer defines what the modules it imports depend on (issue 18: no circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Figure:
    name: str
    ours: float
    floor: float
    unit: str
    target: float  # the ratio must not exceed this
    what: str  # one line: what was compared with what

    @property
    def ratio(self) -> float:
        return self.ours / self.floor if self.floor else float("inf")

    @property
    def ok(self) -> bool:
        return self.ratio <= self.target

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "ours": self.ours, "floor": self.floor, "unit": self.unit,
            "ratio": round(self.ratio, 3), "target": self.target, "ok": self.ok, "what": self.what,
        }  # fmt: skip
