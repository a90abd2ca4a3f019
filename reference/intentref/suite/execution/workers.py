"""The runner's work spread over worker processes, each with an interpreter of its own (D-CNF-054).

The parent plans every target's cases (``plan.make_plan``), cuts them into units, starts
``jobs`` workers (``pool.Workers``: forked, they inherit the plans and the imported modules),
hands the units out one at a time and reads the results as they come, so one report is
written in case order.  Threads stay only for waiting on IO: inside a worker, the runs of their
own wait for their servers on ``OWN_RUNS_AT_ONCE`` threads beside the long-lived one.  Each
worker builds a target from its spec (``registry.TargetSpec``) when it first takes a unit of
it; a worker that dies takes only the cases it was running with it: they are ``errored``.

A target's own time (``Work.seconds``) is the time a worker spent with at least one of its
units running, summed over the workers (``Busy``), as ``jobs=1`` does by timing the target's
whole run: summed unit by unit instead, one second of a worker would count up to
``OWN_RUNS_AT_ONCE + 1`` times.  ``jobs`` defaults to the CPUs this process may use
(``intentref.suite.execution.cpus``); ``jobs=1`` runs everything here, with no worker at all.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Final

from intentref.suite.cases.capabilities import CAPABILITIES, Support
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import ERRORED, UNSUPPORTED, CaseOutcome
from intentref.suite.cases.values import FixtureError
from intentref.suite.execution.cpus import usable_cpus
from intentref.suite.execution.plan import Plan, Unit, make_plan
from intentref.suite.execution.pool import Gone, Workers
from intentref.suite.execution.runner import Executor, run_units
from intentref.suite.targets.base import OWN_RUNS_AT_ONCE, Target, TargetCannotStart, load_instances
from intentref.suite.targets.registry import TargetSpec

# Longest a worker's runs of their own wait for its long-lived run to answer its first case.
LONG_LIVED_HEAD_START: Final = 10.0
# How long the parent waits for a worker's news before it checks the time limit again.
_POLL_SECONDS: Final = 0.2


def default_jobs() -> int:
    """The CPUs this process may use: its affinity, within its cgroups' CPU quota (``intentref.suite.execution.cpus``)."""
    return usable_cpus()


@dataclass
class Work:
    """One target's share of a run: its spec, its cases and their plan."""

    key: str  # names the target in units and results
    spec: TargetSpec
    cases: list[Case]
    plan: Plan | None = None
    isolate: bool = False
    instances: dict[str, Any] | None = None
    # Filled in by plan_work, from the target it builds to plan:
    name: str = ""
    transport: str = ""
    lanes: int = 1  # its long-lived runs that may serve cases side by side (Target.long_lived_lanes)
    # Filled in as the run goes:
    outcomes: dict[int, CaseOutcome] = field(default_factory=dict)
    seconds: float = 0.0  # its own time: a worker's seconds with any of its units running, summed over workers
    error: str | None = None  # the target could not start at all
    era: str | None = None  # the MCP era a worker negotiated
    probed: dict[str, Support] = field(default_factory=dict)  # capabilities probed by plan_work


class Busy:
    """The seconds in which at least one unit of a target runs, per target (its own time in one worker).

    ``end`` returns the seconds of the busy stretch that the target's last running unit closes
    (0.0 while others of its units run on); ``running`` is the time so far of a stretch still open.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._open: dict[str, tuple[int, float]] = {}  # target -> (its units running, since when)
        self._lock = threading.Lock()

    def begin(self, key: str) -> None:
        with self._lock:
            count, since = self._open.get(key, (0, self._clock()))
            self._open[key] = (count + 1, since)

    def end(self, key: str) -> float:
        with self._lock:
            count, since = self._open[key]
            if count > 1:
                self._open[key] = (count - 1, since)
                return 0.0
            del self._open[key]
            return self._clock() - since

    def running(self, key: str) -> float:
        with self._lock:
            found = self._open.get(key)
            return 0.0 if found is None else self._clock() - found[1]


def plan_work(works: Sequence[Work]) -> None:
    """Plan each target's cases, with a target built here to be asked.

    A target that declares no capabilities is probed here, once, when a case needs one
    (D-CNF-030): the workers are told what it found instead of each probing again (over
    stdio a probe is a server process of its own).
    """
    for work in works:
        target = work.spec.build()
        try:
            instances = work.instances or load_instances()
            work.probed = CAPABILITIES.probe_for(work.cases, target, instances)
            work.plan = make_plan(work.cases, target, instances, isolate=work.isolate)
            work.name, work.transport, work.lanes = target.name, target.transport, target.long_lived_lanes
        finally:
            target.close()


def _built(work_spec: TargetSpec, probed: dict[str, Support]) -> Target:
    """A target of ``work_spec`` that knows what the parent's probe found."""
    target = work_spec.build()
    CAPABILITIES.remember(target, probed)
    return target


def run_works(works: Sequence[Work], jobs: int, on_outcome: Callable[[Work, int, CaseOutcome], None] | None = None,
              *, stop_on_cannot_start: bool = True, deadline: float | None = None,
              deadline_reason: str = "the time limit ran out before this case was answered") -> None:  # fmt: skip
    """Run every ``Work`` (planned by ``plan_work``) over ``jobs`` workers; outcomes land in each Work.

    ``stop_on_cannot_start``: a target that cannot start stops the whole run (``conformance``,
    D-CNF-013) or only its own cases (``matrix``, which reports it in its column).
    ``deadline`` (``time.monotonic()``): what has not been answered by then is ``errored``
    with ``deadline_reason``; a run with a deadline always uses worker processes, which can
    be stopped in the middle of a case.
    """
    units: list[Unit] = []
    by_key = {work.key: work for work in works}
    for work in works:
        assert work.plan is not None, "plan_work first"
        for planned in work.plan.cases:
            if planned.unsupported is not None:
                _report(work, planned.index, CaseOutcome(planned.id, UNSUPPORTED, detail=planned.unsupported), on_outcome)
        units.extend(work.plan.units(work.key, first=len(units), jobs=jobs))
    if not units:
        return
    if jobs <= 1 and deadline is None:
        _run_here(works, units, on_outcome, stop_on_cannot_start)
        return
    _Pool(by_key, units, jobs, on_outcome, stop_on_cannot_start, deadline, deadline_reason).run()


def _report(work: Work, index: int, outcome: CaseOutcome,
            on_outcome: Callable[[Work, int, CaseOutcome], None] | None) -> None:  # fmt: skip
    outcome.replies = []  # reports do not read them, and they would cross a pipe
    work.outcomes[index] = outcome
    if on_outcome is not None:
        on_outcome(work, index, outcome)


# --------------------------------------------------------------------------- one process


def _run_here(works: Sequence[Work], units: list[Unit], on_outcome: Any, stop_on_cannot_start: bool) -> None:
    lock = threading.Lock()
    for work in works:
        mine = [unit for unit in units if unit.spec_key == work.key]
        if not mine:
            continue
        started = time.perf_counter()
        target = _built(work.spec, work.probed)
        assert work.plan is not None
        executor = Executor(target, work.instances, isolate=work.isolate, plan=work.plan)

        def report(index: int, outcome: CaseOutcome, work: Work = work) -> None:
            with lock:
                _report(work, index, outcome, on_outcome)

        try:
            run_units(executor, mine, report)
        except TargetCannotStart as exc:
            if stop_on_cannot_start:
                raise
            work.error = str(exc)
        finally:
            executor.close()
            target.close()
            work.era = target.era_in_force()
            work.seconds += time.perf_counter() - started


# --------------------------------------------------------------------------- worker processes


class _Pool:
    def __init__(self, works: dict[str, Work], units: list[Unit], jobs: int, on_outcome: Any,
                 stop_on_cannot_start: bool, deadline: float | None, deadline_reason: str) -> None:  # fmt: skip
        self.works = works
        self.deadline_reason = deadline_reason
        self.units = {unit.number: unit for unit in units}
        self.jobs = min(jobs, len(units))
        self.on_outcome = on_outcome
        self.stop_on_cannot_start = stop_on_cannot_start
        self.deadline = deadline
        self.running: dict[int, set[int]] = {number: set() for number in range(self.jobs)}  # units taken, unfinished
        self.waiting: list[int] = sorted(self.units)  # units no worker has taken yet
        # Per worker, the time of each target's busy stretch still open, as the workers count
        # its own time: what fair shares add to the seconds its finished stretches took.
        self.busy: dict[int, Busy] = {number: Busy(time.monotonic) for number in range(self.jobs)}

    def run(self) -> None:
        specs = {key: (work.spec, work.plan, work.instances, work.isolate, work.probed)
                 for key, work in self.works.items()}  # fmt: skip
        with Workers(self.jobs, _worker_main, specs, self.units) as workers:
            while workers.running:
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    self._abandon(self.deadline_reason)
                    return
                for number, message in workers.heard(_POLL_SECONDS):
                    if isinstance(message, Gone):
                        self._worker_gone(number, message.status)
                    else:
                        self._heard(workers, number, message)

    def _next_unit(self, long_lived: bool, slot: int = 0) -> int | None:
        """The unit a worker thread takes next: fair shares of worker time (D-CNF-054).

        The target that has had the least worker time so far (open busy stretches counted to
        now) goes next, so a slow implementation never holds back a fast one.  A long-lived
        thread takes runs of their own when no long-lived unit waits; the thread of slot ``n`` > 0
        takes runs of their own first, then long-lived units of a target with more than ``n`` lanes.
        """
        used = {key: work.seconds + sum(busy.running(key) for busy in self.busy.values())
                for key, work in self.works.items()}  # fmt: skip
        for wanted in ((True, False) if long_lived else (False, True)):
            waiting = [u for u in self.waiting if (self.units[u].config is not None) == wanted
                       and (not wanted or long_lived or slot < self.works[self.units[u].spec_key].lanes)]  # fmt: skip
            if waiting:
                # min by time used; the first waiting unit of that target (plans are in case order)
                chosen = min(waiting, key=lambda u: (used[self.units[u].spec_key], u))
                self.waiting.remove(chosen)
                return chosen
        return None

    def _heard(self, workers: Workers, number: int, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "outcome":
            _, key, index, outcome = message
            _report(self.works[key], index, outcome, self.on_outcome)
        elif kind == "want":
            _, slot, long_lived = message
            unit = self._next_unit(long_lived, slot)
            if unit is not None:
                self.running[number].add(unit)
                self.busy[number].begin(self.units[unit].spec_key)
            workers.send(number, (slot, unit))
        elif kind == "finished":
            _, unit, seconds = message
            self.running[number].discard(unit)
            self.busy[number].end(self.units[unit].spec_key)
            self.works[self.units[unit].spec_key].seconds += seconds
        elif kind == "era":
            self.works[message[1]].era = message[2]
        elif kind == "cannot-start":
            _, key, text = message
            work = self.works[key]
            if work.error is None:
                work.error = text
            if self.stop_on_cannot_start:
                raise TargetCannotStart(text)
        elif kind == "fixture-error":
            raise FixtureError(message[1])
        elif kind == "crash":
            raise RuntimeError(f"a worker process broke: {message[1]}")

    def _worker_gone(self, number: int, status: int | None) -> None:
        lost = self.running.pop(number, set())
        for unit_number in lost:
            unit = self.units[unit_number]
            work = self.works[unit.spec_key]
            work.seconds += self.busy[number].end(unit.spec_key)  # its worker can no longer say
            for index in unit.indices:
                if index not in work.outcomes:
                    assert work.plan is not None
                    detail = f"the worker process running this case died (exit status {status})"
                    _report(work, index, CaseOutcome(work.plan.cases[index].id, ERRORED, detail=detail), self.on_outcome)

    def _abandon(self, reason: str) -> None:
        for work in self.works.values():
            assert work.plan is not None
            for planned in work.plan.cases:
                if planned.index not in work.outcomes:
                    _report(work, planned.index, CaseOutcome(planned.id, ERRORED, detail=reason), self.on_outcome)


def _worker_main(pipe: Connection, specs: dict[str, Any], units: dict[int, Unit]) -> None:
    """A worker: ask the parent for units until none is left; send every outcome back as it ends.

    Its main thread runs long-lived units (then, when none waits, runs of their own);
    ``OWN_RUNS_AT_ONCE`` threads beside it run only runs of their own, whose time is mostly a
    server starting.  One reader thread hands the parent's answers to the thread that asked.
    """
    lock = threading.Lock()
    stop = threading.Event()
    long_lived_up = threading.Event()  # set when the main thread's first case is done
    executors: dict[str, tuple[Target, Executor]] = {}
    cannot_start: dict[str, str] = {}
    answers: dict[int, queue.SimpleQueue[int | None]] = {slot: queue.SimpleQueue() for slot in range(OWN_RUNS_AT_ONCE + 1)}
    busy = Busy()

    def tell(*message: Any) -> None:
        with lock:
            pipe.send(message)

    def read_answers() -> None:
        try:
            while True:
                slot, unit_number = pipe.recv()
                answers[slot].put(unit_number)
        except (EOFError, OSError):  # the parent is gone or done: nobody waits for more
            for waiting in answers.values():
                waiting.put(None)

    def executor_for(key: str) -> Executor | None:
        with lock:
            if key in cannot_start:
                return None
            if key not in executors:
                spec, plan, instances, isolate, probed = specs[key]
                target = _built(spec, probed)
                executors[key] = (target, Executor(target, instances, isolate=isolate, plan=plan))
            return executors[key][1]

    def do(unit_number: int, slot: int) -> None:
        unit = units[unit_number]
        busy.begin(unit.spec_key)

        def report(index: int, outcome: CaseOutcome) -> None:
            tell("outcome", unit.spec_key, index, _slim(outcome))
            long_lived_up.set()

        try:
            executor = executor_for(unit.spec_key)
            if executor is not None:
                executor.run_unit(unit, report, slot)  # a long-lived unit on this slot's lane
        except TargetCannotStart as exc:
            with lock:
                cannot_start[unit.spec_key] = str(exc)
            tell("cannot-start", unit.spec_key, str(exc))
        finally:
            tell("finished", unit_number, busy.end(unit.spec_key))

    def take(slot: int) -> None:
        try:
            if slot != 0:
                # Runs of their own start once the long-lived run answers: its server's start-up
                # then has the CPUs to itself instead of racing four others (D-CNF-054).
                long_lived_up.wait(LONG_LIVED_HEAD_START)
            while not stop.is_set():
                tell("want", slot, slot == 0)
                unit_number = answers[slot].get()
                if unit_number is None or units[unit_number].config is None:
                    long_lived_up.set()  # no long-lived unit left for this worker
                if unit_number is None:
                    return
                do(unit_number, slot)
        except FixtureError as exc:
            stop.set()
            tell("fixture-error", str(exc))
        except BaseException:
            stop.set()
            tell("crash", traceback.format_exc(limit=8))

    threading.Thread(target=read_answers, daemon=True).start()
    threads = [threading.Thread(target=take, args=(slot,), daemon=True) for slot in range(1, OWN_RUNS_AT_ONCE + 1)]
    for thread in threads:
        thread.start()
    take(0)
    for thread in threads:
        thread.join()
    for key, (target, executor) in executors.items():
        with contextlib.suppress(Exception):
            executor.close()
        era = target.era_in_force()
        with contextlib.suppress(Exception):
            target.close()
        if era is not None:
            tell("era", key, era)
    pipe.close()


def _slim(outcome: CaseOutcome) -> CaseOutcome:
    outcome.replies = []
    return outcome


# --------------------------------------------------------------------------- one target


def execute(cases: Sequence[Case], spec: TargetSpec, *, jobs: int | None = None, isolate: bool = False,
            on_outcome: Callable[[Case, CaseOutcome], None] | None = None,
            instances: dict[str, Any] | None = None) -> tuple[list[CaseOutcome], Work]:  # fmt: skip
    """Run ``cases`` against the target of ``spec`` over ``jobs`` workers; outcomes in case order."""
    jobs = default_jobs() if jobs is None else jobs
    work = Work("target", spec, list(cases), isolate=isolate, instances=instances)
    with shared_resources([work]):
        plan_work([work])

        def heard(_work: Work, index: int, outcome: CaseOutcome) -> None:
            if on_outcome is not None:
                on_outcome(work.cases[index], outcome)

        run_works([work], jobs, heard)
    outcomes = [work.outcomes[index] for index in sorted(work.outcomes)]
    return outcomes, work


@contextlib.contextmanager
def shared_resources(works: Sequence[Work]) -> Any:
    """What the workers share, started once here: the reference zygote, when a target forks from it."""
    wanted = [work for work in works if work.spec.forks_reference]
    if not wanted:
        yield
        return
    from intentref.suite.targets.zygote import Zygote

    zygote = Zygote(max(3 * max(work.spec.timeout for work in wanted), 60.0))
    try:
        for work in wanted:
            work.spec = work.spec.with_resources(zygote=zygote.socket)
        yield
    finally:
        zygote.close()
