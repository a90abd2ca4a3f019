"""Executing a selection of cases against a target, one run per configuration.

Cases without Bridge options share one run (one server process over stdio); a case that
sets options gets a fresh run of its own, so capacity counts start from zero and no
other case's records can be evicted by it.

A target that says it can (``parallel_runs`` > 1, the stdio target) has its cases with
runs of their own executed on worker threads (D-CNF-011), and its shared cases dealt
round-robin over ``shared_runs`` shared runs, each on its own thread (D-CNF-012): no case
shares a Bridge, a job or a token with a case of another run, and most of a case's time is
spent waiting for its server.  Outcomes are returned, and reported, in case order either way.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from intentref.suite.conformance.capabilities import CAPABILITIES
from intentref.suite.conformance.fixtures import Case
from intentref.suite.conformance.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome, run_case
from intentref.suite.conformance.targets import (
    ConfigRejected,
    Run,
    ServerExited,
    Target,
    TargetCannotStart,
    TargetUnsupported,
    load_instances,
)
from intentref.suite.conformance.values import History, match

_OPEN_ATTEMPTS = 3


class Executor:
    """Runs cases one at a time, keeping the shared run open between them.

    ``execute`` drives it over a list; the pytest plugin drives it one item at a time.
    """

    def __init__(self, target: Target, instances: dict[str, Any] | None = None) -> None:
        self.target = target
        self.instances = load_instances() if instances is None else instances
        self._shared: Run | None = None
        self._open_failures: list[str] = []  # consecutive failures to start the shared run

    def run(self, case: Case) -> CaseOutcome:
        outcome = _one(case, self.target, self.instances)
        if outcome is not None:
            return outcome
        if self._shared is None:  # needs the shared run
            if len(self._open_failures) >= _OPEN_ATTEMPTS:
                # A target that cannot start at all should not cost a start-up per case.
                return CaseOutcome(case.id, ERRORED, detail=self._open_failures[-1])
            try:
                self._shared = self.target.open(self.instances, {})
            except TargetUnsupported as exc:
                return CaseOutcome(case.id, UNSUPPORTED, detail=exc.reason)
            except TargetCannotStart:
                raise
            except (ServerExited, ConfigRejected) as exc:
                # D-CNF-013: with the suite's own instances no case can be the reason; stop the run.
                raise TargetCannotStart(_shared_start_failure(exc)) from None
            except Exception as exc:
                self._open_failures.append(f"could not start the shared run: {exc}")
                return CaseOutcome(case.id, ERRORED, detail=self._open_failures[-1])
            self._open_failures.clear()
        outcome = run_case(case.data, self._shared, self.target.transport)
        if outcome.outcome == ERRORED:
            # A broken shared run (say, a crashed server) must not fail every later case.
            _close_quietly(self._shared)
            self._shared = None
        return outcome

    def plan(self, cases: Iterable[Case]) -> None:
        """Tell a target that can start runs ahead (``expect_runs``) which ones are coming."""
        expect = getattr(self.target, "expect_runs", None)
        if expect is not None:
            expect(planned_runs(cases, self.target, self.instances))

    def close(self) -> None:
        if self._shared is not None:
            _close_quietly(self._shared)
            self._shared = None


def execute(
    cases: Iterable[Case],
    target: Target,
    on_outcome: Callable[[Case, CaseOutcome], None] | None = None,
    instances: dict[str, Any] | None = None,
    parallel_runs: int | None = None,
) -> list[CaseOutcome]:
    """Run ``cases`` against ``target``; ``on_outcome`` hears of each as it ends (from any thread).

    ``parallel_runs`` (default: the target's own ``parallel_runs``, else 1) bounds how many
    cases with runs of their own execute at once beside the shared run.
    """
    executor = Executor(target, instances)
    cases = list(cases)
    executor.plan(cases)
    workers = getattr(target, "parallel_runs", 1) if parallel_runs is None else parallel_runs
    outcomes: list[CaseOutcome | None] = [None] * len(cases)
    lock = threading.Lock()

    def finish(index: int, outcome: CaseOutcome) -> None:
        outcomes[index] = outcome
        if on_outcome is not None:
            with lock:  # progress displays are not thread-safe
                on_outcome(cases[index], outcome)

    try:
        if workers <= 1:
            for index, case in enumerate(cases):
                finish(index, executor.run(case))
        else:
            _execute_in_parallel(cases, executor, workers, finish)
    finally:
        executor.close()
    return [outcome for outcome in outcomes if outcome is not None]


def _execute_in_parallel(cases: list[Case], executor: Executor, workers: int,
                         finish: Callable[[int, CaseOutcome], None]) -> None:  # fmt: skip
    target, instances = executor.target, executor.instances

    stop = threading.Event()  # D-CNF-013: set when the target cannot start; queued cases then do nothing

    def own(index: int) -> None:
        if stop.is_set():
            return
        try:
            outcome = _one(cases[index], target, instances)
        except TargetCannotStart:
            stop.set()
            raise
        assert outcome is not None  # only cases that need no shared run are sent here
        finish(index, outcome)

    shards = max(1, getattr(target, "shared_runs", 1))
    executors = [executor] + [Executor(target, instances) for _ in range(shards - 1)]

    def shared_shard(shard: int, indices: list[int]) -> None:
        for index in indices:
            if stop.is_set():
                return
            try:
                outcome = executors[shard].run(cases[index])
            except TargetCannotStart:
                stop.set()
                raise
            finish(index, outcome)

    pending: list[Future[None]] = []
    try:
        with ThreadPoolExecutor(max_workers=workers + shards - 1, thread_name_prefix="intentref-case") as pool:
            shared = []
            for index, case in enumerate(cases):
                # Submitted in case order: the target started their servers in that order (plan).
                if _unsupported(case, target, instances) is None and _own_instances(case, instances) is not None:
                    pending.append(pool.submit(own, index))
                else:
                    shared.append(index)
            # D-CNF-012: the shared cases dealt round-robin over `shards` shared runs.
            for shard in range(1, shards):
                pending.append(pool.submit(shared_shard, shard, shared[shard::shards]))
            shared_shard(0, shared[0::shards])
            for future in pending:
                future.result()  # re-raise a fixture error from a worker
    finally:
        for extra in executors[1:]:
            extra.close()


def _unsupported(case: Case, target: Target, instances: dict[str, Any]) -> str | None:
    if case.transport == "mcp" and target.transport != "mcp":
        return "checks the MCP envelope; the target is not MCP"
    options = case.bridge_options
    reason = target.unsupported(options)
    if reason is not None:  # D-CNF-030: say what the case needs before why the target lacks it
        return f"needs Bridge option(s) {', '.join(options)}: {reason}"
    case_reason = getattr(target, "unsupported_case", None)
    if case_reason is not None:
        reason = case_reason(case.data)  # sessions or setup the target cannot reproduce
    if reason is None:  # D-CNF-030: a configuration member the seeds do not fix
        reason = CAPABILITIES.reason(case.data, target, instances)
    return reason


def _own_instances(case: Case, instances: dict[str, Any]) -> dict[str, Any] | None:
    """The instances of the run a case needs for itself, or None when it joins the shared run."""
    setup = case.data.get("setup")
    if setup is None and not case.bridge_options:
        return None
    return dict(setup["instances"]) if setup is not None else instances


def planned_runs(cases: Iterable[Case], target: Target, instances: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The (instances, options) of every run of its own the cases will open, in order."""
    runs = []
    for case in cases:
        own = _own_instances(case, instances)
        if own is not None and _unsupported(case, target, instances) is None:
            runs.append((own, case.bridge_options))
    return runs


def _one(case: Case, target: Target, instances: dict[str, Any]) -> CaseOutcome | None:
    reason = _unsupported(case, target, instances)
    if reason is not None:
        return CaseOutcome(case.id, UNSUPPORTED, detail=reason)
    own_instances = _own_instances(case, instances)
    if own_instances is None:
        return None
    options = case.bridge_options
    setup = case.data.get("setup")
    try:
        run = target.open(own_instances, options)
    except TargetUnsupported as exc:
        return CaseOutcome(case.id, UNSUPPORTED, detail=exc.reason)
    except TargetCannotStart:
        raise  # D-CNF-013: the command itself cannot run; every other case would fail the same way
    except ConfigRejected as rejected:
        if setup is not None and "expect" in setup:
            return _setup_outcome(case, setup["expect"], rejected.error)
        return CaseOutcome(case.id, ERRORED, detail=f"the target refused the configuration: {rejected.error}")
    except Exception as exc:
        return CaseOutcome(case.id, ERRORED, detail=f"could not start a run with {options}: {exc}")
    try:
        if setup is not None and "expect" in setup:
            return _setup_outcome(case, setup["expect"], {"ok": True})
        return run_case(case.data, run, target.transport)
    finally:
        _close_quietly(run)


def _shared_start_failure(exc: Exception) -> str:
    if isinstance(exc, ConfigRejected):
        error = exc.error
        code = f"{error['code']}: " if error.get("code") else ""
        return f"the target refused the suite's own instances (conformance/instances.json): {code}{error.get('message', '')}"
    return f"{exc}, started with the suite's own instances (conformance/instances.json)"


def _setup_outcome(case: Case, expected: Any, actual: Any) -> CaseOutcome:
    mismatches = [f"setup {m}" for m in match(expected, actual, "", History())]
    return CaseOutcome(case.id, FAILED if mismatches else PASSED, mismatches=mismatches)


def _close_quietly(run: Run) -> None:
    # A run that fails to close has already told us what it could.
    with contextlib.suppress(Exception):
        run.close()
