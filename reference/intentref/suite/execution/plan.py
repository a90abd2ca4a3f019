"""Which run each case goes to: the plan the runner executes (D-CNF-050).

A case runs either on a *long-lived run*, one configuration kept open from case to case
(each case cancelling whatever it left active, D-CNF-002), or on a *run of its own*, which it
needs when its expected answer depends on a new Bridge: it sets Bridge options (capacity
counts from zero, TTLs), or its configuration is expected to be refused at construction.

There are at most two long-lived configurations: ``SUITE``, exactly the suite's instances
(``conformance/instances.json``), for the cases that name no instances of their own; and
``POOLED``, on targets whose runs cost a process start (``Target.long_lived_runs``): the suite's
instances *and* the own instances of every case that needs nothing else of a new Bridge, each
under a name of its own (``NAME@CASE-ID``) the case is rewritten to prepare on.  The cases of
``SUITE`` run there too, except those whose answer may name the configured instances (a
prepare on an unconfigured instance lists them, D-ERR-003).  ``--isolate`` gives every case a
run of its own.  Nothing here opens a run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from intentref.suite.cases.capabilities import unsupported_reason
from intentref.suite.cases.fixtures import Case
from intentref.suite.targets.base import Target

SUITE: Final = "suite"
POOLED: Final = "pooled"
# Cases per unit of work on a long-lived run: small enough that the workers finish together,
# large enough that taking a unit costs nothing beside running it.
LONG_UNIT_CASES: Final = 24
# Cases per unit of runs of their own: the runs of one unit are started ahead together.
OWN_UNIT_CASES: Final = 4
_SEPARATOR: Final = "@"


@dataclass(frozen=True)
class Configuration:
    key: str
    instances: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlannedCase:
    """One case of the selection: where it runs and, when it was renamed, as what."""

    index: int
    case: Case  # the case as it runs (its own instances renamed when pooled)
    config: str | None  # the long-lived configuration it runs on; None: a run of its own
    unsupported: str | None = None  # decided before any run opens
    sleeps_ms: int = 0
    original: Case | None = None  # the case as written, when ``case`` is its renamed copy

    @property
    def id(self) -> str:
        return self.case.id


@dataclass(frozen=True)
class Unit:
    """A piece of work a worker takes: cases of one long-lived configuration, or runs of their own."""

    number: int
    spec_key: str  # which target (the matrix plans many)
    config: str | None
    indices: tuple[int, ...]


@dataclass
class Plan:
    cases: list[PlannedCase]
    configurations: dict[str, Configuration]
    suite_instances: dict[str, Any]

    def units(self, spec_key: str = "", first: int = 0, jobs: int = 1) -> list[Unit]:
        """The cases as units: runs of their own first (longest sleeps first), then long-lived ones."""
        own = sorted((p for p in self.cases if p.unsupported is None and p.config is None),
                     key=lambda p: (-p.sleeps_ms, p.index))  # fmt: skip
        units: list[Unit] = []
        # A case that sleeps is a unit of its own: its wait is real time, which the threads of
        # runs of their own can spend side by side; four sleepers in one unit waited one after
        # another, and that unit alone set the length of the whole bundled run.
        for planned in own:
            if planned.sleeps_ms:
                units.append(Unit(first + len(units), spec_key, None, (planned.index,)))
        for chunk in _chunks([p.index for p in own if not p.sleeps_ms], OWN_UNIT_CASES):
            units.append(Unit(first + len(units), spec_key, None, chunk))
        for key in self.configurations:
            members = [p.index for p in self.cases if p.unsupported is None and p.config == key]
            size = max(4, min(LONG_UNIT_CASES, -(-len(members) // max(1, 4 * jobs))))
            for chunk in _chunks(members, size):
                units.append(Unit(first + len(units), spec_key, key, chunk))
        return units


def _chunks(items: Sequence[int], size: int) -> Iterator[tuple[int, ...]]:
    for start in range(0, len(items), size):
        yield tuple(items[start:start + size])


def make_plan(cases: Sequence[Case], target: Target, suite_instances: dict[str, Any], *, isolate: bool = False) -> Plan:
    planned: list[PlannedCase] = []
    pooled_instances: dict[str, Any] = {}
    pooling = target.long_lived_runs and not isolate
    for index, case in enumerate(cases):
        reason = unsupported_reason(case, target, suite_instances, probe=False)
        sleeps = sum(int(s.get("ms", 0)) for s in case.data["steps"] if s["op"] == "sleep")
        if reason is not None:
            planned.append(PlannedCase(index, case, None, reason))
            continue
        config: str | None = None
        runs_as = case
        if not isolate and not case.bridge_options:
            setup = case.data.get("setup")
            if setup is None:
                config = POOLED if pooling and not _names_unconfigured(case, suite_instances) else SUITE
            elif pooling and _poolable(case):
                runs_as = _renamed(case)
                pooled_instances.update(runs_as.data["setup"]["instances"])
                config = POOLED
        planned.append(PlannedCase(index, runs_as, config, None, sleeps, case if runs_as is not case else None))
    configurations: dict[str, Configuration] = {}
    if any(p.config == SUITE for p in planned):
        configurations[SUITE] = Configuration(SUITE, dict(suite_instances))
    if any(p.config == POOLED for p in planned):
        configurations[POOLED] = Configuration(POOLED, {**suite_instances, **pooled_instances})
    return Plan(planned, configurations, suite_instances)


def _prepared_names(case: Case) -> Iterator[Any]:
    for step in case.data["steps"]:
        if step["op"] == "prepare":
            args = step.get("args")
            yield args.get("instance") if isinstance(args, dict) else None


def _names_unconfigured(case: Case, instances: dict[str, Any]) -> bool:
    """Whether the case prepares on a name its configuration lacks: the answer may list them."""
    return any(not isinstance(name, str) or name not in instances for name in _prepared_names(case))


def _poolable(case: Case) -> bool:
    """A case with its own instances that needs nothing else of a new Bridge (D-CNF-050)."""
    setup = case.data["setup"]
    own = setup["instances"]
    if "expect" in setup:
        # Only an accepted configuration shares a run: a refused one would refuse them all.
        return bool(setup["expect"] == {"ok": True})
    if any(_SEPARATOR in name for name in own) or _names_unconfigured(case, own):
        return False
    quoted = {json.dumps(name, ensure_ascii=False) for name in own}
    # An expectation that could name an instance would see the new name instead.
    return not any(q in text for q in quoted for text in _texts(case.data["steps"]))


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "args":
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def pooled_name(name: str, case_id: str) -> str:
    return f"{name}{_SEPARATOR}{case_id}"


def _renamed(case: Case) -> Case:
    """The case with its own instances under names of their own, prepared on by those names."""
    data = copy.deepcopy(case.data)
    own = data["setup"]["instances"]
    names = {name: pooled_name(name, case.id) for name in own}
    data["setup"]["instances"] = {names[name]: config for name, config in own.items()}
    data["instances"] = [names.get(name, name) for name in data.get("instances", [])]
    for step in data["steps"]:
        args = step.get("args")
        if step["op"] == "prepare" and isinstance(args, dict) and isinstance(args.get("instance"), str):
            args["instance"] = names.get(args["instance"], args["instance"])
    return Case(case.area, case.file, data)
