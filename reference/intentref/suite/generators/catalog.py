"""The instances every property run serves: instances.json and schemas generated from a fixed seed."""

from __future__ import annotations

import functools
from typing import Any, Final

from intentref.suite.generators.draw import RandomDraw
from intentref.suite.generators.schemas import schema
from intentref.suite.targets.base import Target, load_instances

CATALOG_SEED: Final = 20_240_601
CATALOG_SIZE: Final = 12


def generated_instances(seed: int = CATALOG_SEED, count: int = CATALOG_SIZE) -> dict[str, Any]:
    """``gen-00`` .. : generated schemas (keys with ~, /, ~1 and ""), fixed by the seed.

    They join the instances of every shared run, so a stdio target serves all of them from
    one process while Hypothesis varies requests and candidates over them.
    """
    draw = RandomDraw(seed)
    out: dict[str, Any] = {
        # The first one holds every escaping edge case at the top level and nested.
        "gen-00": {"language": "en", "repairAttempts": 0, "schema": {
            "type": "object",
            "properties": {
                "~": {"type": "string"}, "/": {"type": "string"}, "~1": {"type": "string"}, "": {"type": "string"},
                "~0/": {"type": "object", "properties": {"a/b": {"type": "string"}, "~": {"type": "integer"},
                                                          "": {"type": "array", "items": {"type": "string"}}},
                        "required": ["a/b"], "additionalProperties": False},
            },
            "required": ["~1"],
            "additionalProperties": False,
        }},
    }  # fmt: skip
    for index in range(1, count):
        out[f"gen-{index:02d}"] = {"language": draw.choice(["en", "zh-CN"]), "repairAttempts": draw.integer(0, 2),
                                   "schema": schema(draw)}  # fmt: skip
    return out


@functools.cache
def _catalog() -> dict[str, Any]:
    return {**load_instances(), **generated_instances()}


def catalog_instances(target: Any = None) -> dict[str, Any]:
    """The instances every shared run serves: instances.json plus ``generated_instances``.

    A target whose server is configured already (HTTP) serves instances.json alone.
    """
    if target is not None and target.configured_elsewhere:
        return load_instances()
    return _catalog()


def separate_sessions(target: Target) -> bool:
    """False where every connection shares one Bridge session (HTTP, 2026-07-28 era: D-MCP-003)."""
    return target.separate_sessions


def available(target: Any, names: list[str]) -> list[str]:
    """The ``names`` the target serves (generated ones only where it takes instances)."""
    served = catalog_instances(target)
    return [name for name in names if name in served]
