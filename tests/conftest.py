"""Shared helpers for the test suite (no fixtures that hide what a test checks)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Hypothesis profiles: "ci" is the default fast run; INTENTREF_LONG=1 selects "long".
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=5_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile("long" if __import__("os").environ.get("INTENTREF_LONG") == "1" else "ci")

# The seed order example: one definition, shared with the benchmarks.
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA  # noqa: E402, F401


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def scripted(texts: Iterable[str]) -> Callable[[dict[str, Any]], str]:
    """An executor that answers each model request with the next text, recording requests."""
    queue = list(texts)
    requests: list[dict[str, Any]] = []

    def executor(request: dict[str, Any]) -> str:
        requests.append(request)
        if not queue:
            raise AssertionError("the job asked for more steps than the script holds")
        return queue.pop(0)

    executor.requests = requests  # type: ignore[attr-defined]
    return executor


@pytest.fixture
def seed_results() -> list[dict[str, Any]]:
    return json.loads((ROOT / "tests/core/data/seed_results.json").read_text("utf-8"))
