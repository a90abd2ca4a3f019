"""Executing a plan of cases against a target, in this process (``workers`` spreads it over several).

``plan.make_plan`` says where each case runs: on a long-lived run (``SUITE`` or ``POOLED``),
which an ``Executor`` holds open from case to case, or on a run of its own.  When a case is
over its sessions are released and every job it left active is ended, so the next case starts
with nothing of this one's still held (D-CNF-002); a long-lived run that broke
(``Run.left_behind``: a crash, a hang, a job it would not end) is replaced, so a failure costs
the case it happened in and no other.

A configuration case (``setup.expect``) is judged by what the target lets one observe
(D-CNF-051): an error it carries is matched as written; a server that exits before it answers
has refused the configuration; a server that starts anyway must answer a prepare on each such
instance with an error of the expected code (or not serve it at all).
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from intentref.mcp.replies import is_bridge_reply
from intentref.suite.cases.capabilities import unsupported_reason
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import (
    ERRORED,
    FAILED,
    PASSED,
    UNSUPPORTED,
    CaseOutcome,
    run_case,
    shortest_ttl_ms,
    with_wider_timing,
)
from intentref.suite.cases.values import History, Mismatch, match
from intentref.suite.execution.plan import POOLED, SUITE, Plan, PlannedCase, Unit, make_plan
from intentref.suite.targets.base import (
    OWN_RUNS_AT_ONCE,
    ConfigRejected,
    Run,
    ServerExited,
    Target,
    TargetCannotStart,
    TargetUnsupported,
    load_instances,
)

_OPEN_ATTEMPTS: Final = 3
# What a configuration case asks each instance when the server starts although the seeds say
# it must refuse the configuration (D-CNF-051): any input an instance accepts will do.
PROBE_INPUT: Final = "intentref conformance: instance check"

OnOutcome = Callable[[Case, CaseOutcome], None]

# --------------------------------------------------------------------------- the executor


class Executor:
    """A target's cases, one at a time or from several threads, its long-lived runs kept open.

    Each long-lived run belongs to one *lane* (a target has ``long_lived_lanes`` of them) and is
    used by one thread at a time: every long-lived unit of lane ``n`` goes to the same thread.
    """

    def __init__(self, target: Target, instances: dict[str, Any] | None = None, *, isolate: bool = False,
                 plan: Plan | None = None) -> None:  # fmt: skip
        self.target = target
        self.instances = load_instances() if instances is None else instances
        self.isolate = isolate
        self._plan = plan
        self._by_id: dict[str, PlannedCase] = {p.id: p for p in plan.cases} if plan is not None else {}
        self._runs: dict[tuple[str, int], Run] = {}  # (configuration, lane) -> its long-lived run
        self._open_failures: dict[str, list[str]] = {}
        self._exited: dict[str, ServerExited] = {}  # configuration -> how its server would not start
        self._pool_refused: str | None = None  # why the pooled configuration was refused (then: SUITE)
        self._lock = threading.Lock()

    # --- planning ----------------------------------------------------------------------

    def plan(self, cases: Iterable[Case]) -> Plan:
        """Plan ``cases`` (once) and tell the target which runs of their own come, in order."""
        self._plan = make_plan(list(cases), self.target, self.instances, isolate=self.isolate)
        self._by_id = {p.id: p for p in self._plan.cases}
        own = [p for unit in self._plan.units() if unit.config is None for p in (self._plan.cases[i] for i in unit.indices)]
        self.target.expect_runs([_own_configuration(p.case, self.instances) for p in own])
        return self._plan

    def planned(self, case: Case) -> PlannedCase:
        found = self._by_id.get(case.id)
        if found is None:  # a case nobody planned (the plugin's own item order): plan it alone
            found = make_plan([case], self.target, self.instances, isolate=self.isolate).cases[0]
            if found.config == POOLED:
                # No pooled configuration is planned for a case alone: one with instances of its
                # own gets a run of its own, any other the suite's instances.
                found.config, found.case = (None, case) if "setup" in case.data else (SUITE, case)
            self._by_id[case.id] = found
        return found

    # --- running -------------------------------------------------------------------------

    def run(self, case: Case) -> CaseOutcome:
        return self.run_planned(self.planned(case))

    def run_planned(self, planned: PlannedCase, lane: int = 0) -> CaseOutcome:
        if planned.unsupported is not None:
            return CaseOutcome(planned.id, UNSUPPORTED, detail=planned.unsupported)
        reason = unsupported_reason(planned.case, self.target, self.instances, probe=True)
        if reason is not None:  # D-CNF-030: a probed capability the target lacks
            return CaseOutcome(planned.id, UNSUPPORTED, detail=reason)
        if planned.config is None:
            return self._own_in_time(planned.case)
        return self._on_long_lived(planned, lane)

    def run_unit(self, unit: Unit, report: Callable[[int, CaseOutcome], None], lane: int = 0) -> None:
        """Run ``unit``'s cases in order; a long-lived unit on the long-lived run of ``lane``."""
        assert self._plan is not None
        for index in unit.indices:
            report(index, self.run_planned(self._plan.cases[index], lane))

    def close(self) -> None:
        while self._runs:
            _, run = self._runs.popitem()
            _close_quietly(run)

    # --- a long-lived run ------------------------------------------------------------------

    def _on_long_lived(self, planned: PlannedCase, lane: int = 0) -> CaseOutcome:
        key = planned.config
        assert key is not None
        if key == POOLED and self._pool_refused is not None:
            return self._without_pool(planned, lane)
        run = self._runs.get((key, lane))
        if run is None:
            failures = self._open_failures.setdefault(key, [])
            if len(failures) >= _OPEN_ATTEMPTS:  # a target that cannot start should not cost a start-up per case
                return CaseOutcome(planned.id, ERRORED, detail=failures[-1])
            try:
                run = self._open_long_lived(key)
            except TargetUnsupported as exc:
                return CaseOutcome(planned.id, UNSUPPORTED, detail=exc.reason)
            except (ServerExited, ConfigRejected) as exc:
                if key == POOLED:
                    # This implementation refuses the merged configuration: every case goes
                    # back to the run it would have had without pooling (D-CNF-050).
                    self._pool_refused = _describe_refusal(exc)
                    return self._without_pool(planned, lane)
                raise TargetCannotStart(_suite_refused(exc)) from None  # D-CNF-013
            except TargetCannotStart:
                raise
            except Exception as exc:
                failures.append(f"could not start the run of the suite's instances: {type(exc).__name__}: {exc}")
                return CaseOutcome(planned.id, ERRORED, detail=failures[-1])
            failures.clear()
            self._runs[key, lane] = run
        run.new_case()
        setup = planned.case.data.get("setup")
        if setup is not None and "expect" in setup:  # an accepted configuration, merged into this run
            return _setup_outcome(planned.id, setup["expect"], {"ok": True})
        outcome = run_case(planned.case.data, run, self.target.transport)
        left = run.left_behind()
        if outcome.outcome == ERRORED or left:
            # A broken run must not fail every later case: the next one gets a new run.
            if left and outcome.outcome != ERRORED:
                outcome.detail = (outcome.detail + " " if outcome.detail else "") + (
                    f"(the run was replaced after this case: {left[0]})")
            del self._runs[key, lane]
            _close_quietly(run)
        return outcome

    def _open_long_lived(self, key: str) -> Run:
        assert self._plan is not None or key == SUITE
        if self._plan is not None and key in self._plan.configurations:
            configuration = self._plan.configurations[key]
            return self.target.open(dict(configuration.instances), dict(configuration.options))
        return self.target.open(dict(self.instances), {})

    def _without_pool(self, planned: PlannedCase, lane: int) -> CaseOutcome:
        if "setup" in planned.case.data:
            original = planned.original if planned.original is not None else planned.case
            outcome = self._own(original)
        else:
            outcome = self._on_long_lived(PlannedCase(planned.index, planned.case, SUITE), lane)
        return outcome

    # --- a run of its own ------------------------------------------------------------------

    def _own_in_time(self, case: Case) -> CaseOutcome:
        """spec: D-CNF-058 -- time never turns into a verdict.

        A case that sleeps against a TTL and did not pass while its steps ran late (by at
        least ``LATE_SHARE`` of its shortest TTL) did not have the timing it needs: it runs
        again with its TTLs and sleeps ``WIDER_TIMING`` times as long. That run's verdict
        stands; if it ran late too, the case is unsupported with the reason, never failed.
        """
        outcome = self._own(case)
        ttl_ms = shortest_ttl_ms(case.data)
        if ttl_ms is None or outcome.outcome in (PASSED, UNSUPPORTED) or outcome.late_ms < ttl_ms * LATE_SHARE:
            return outcome
        first_late = outcome.late_ms
        wider = Case(case.area, case.file, with_wider_timing(case.data, WIDER_TIMING))
        again = self._own(wider)
        again.seconds += outcome.seconds
        if again.outcome not in (PASSED, UNSUPPORTED) and again.late_ms >= ttl_ms * WIDER_TIMING * LATE_SHARE:
            return CaseOutcome(
                case.id, UNSUPPORTED, seconds=again.seconds,
                detail=(f"this machine was too busy for the case's timing: its steps ran {first_late:.0f} ms late "
                        f"against a TTL of {ttl_ms} ms, and {again.late_ms:.0f} ms late at {WIDER_TIMING} times "
                        f"its TTLs and sleeps (D-CNF-058)"))  # fmt: skip
        note = (f"run again at {WIDER_TIMING} times its TTLs and sleeps: the first run's steps were "
                f"{first_late:.0f} ms late against a TTL of {ttl_ms} ms (D-CNF-058)")
        again.detail = f"{again.detail}; {note}" if again.detail else note
        return again

    def _own(self, case: Case) -> CaseOutcome:
        instances, options = _own_configuration(case, self.instances)
        setup = case.data.get("setup")
        expect = setup.get("expect", _NO_EXPECTATION) if setup is not None else _NO_EXPECTATION
        # A server that would not start with a configuration will not start with it again:
        # several cases that expect the same configuration refused share one observation
        # (D-CNF-051), instead of a process start each.
        key = json.dumps([instances, options], sort_keys=True, ensure_ascii=True)
        try:
            exited = self._exited.get(key)
            if exited is not None:
                raise exited
            try:
                run = self.target.open(instances, options)
            except ServerExited as fresh:
                self._exited[key] = fresh
                raise
        except TargetUnsupported as exc:
            return CaseOutcome(case.id, UNSUPPORTED, detail=exc.reason)
        except TargetCannotStart:
            raise  # D-CNF-013: the command itself cannot run; every other case would fail the same way
        except ConfigRejected as rejected:
            if expect is not _NO_EXPECTATION:
                return _setup_outcome(case.id, expect, rejected.error)
            return CaseOutcome(case.id, ERRORED, detail=f"the target refused the configuration: {rejected.error}")
        except ServerExited as exited:
            if expect is not _NO_EXPECTATION:
                return _refused_outcome(case.id, expect, str(exited))
            return CaseOutcome(case.id, ERRORED, detail=f"could not start a run with {options or 'no options'}: {exited}")
        except Exception as exc:
            return CaseOutcome(case.id, ERRORED, detail=f"could not start a run with {options or 'no options'}: {exc}")
        try:
            if expect is not _NO_EXPECTATION:
                return _accepted_outcome(case, expect, run)
            return run_case(case.data, run, self.target.transport)
        finally:
            _close_quietly(run)


_NO_EXPECTATION: Final = object()

# spec: D-CNF-058 -- steps a quarter of the shortest TTL late have lost the margin a case's
# sleeps leave around its TTLs (1300 ms against 1000: 30 %), and five times the timing gives
# a step five times the slack; a real failure fails again at any timing.
LATE_SHARE: Final = 0.25
WIDER_TIMING: Final = 5


def _own_configuration(case: Case, instances: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    setup = case.data.get("setup")
    return (dict(setup["instances"]) if setup is not None else dict(instances)), case.bridge_options


# --------------------------------------------------------------------------- repetitions (--repeat)

# spec: D-CNF-065 -- which repetition stands for a flaky case in the report: one that went
# wrong, so its mismatches and trace are there to read.
_STANDS_FOR: Final = (ERRORED, FAILED, PASSED, UNSUPPORTED)


def merge_repetitions(repetitions: Sequence[Sequence[CaseOutcome]]) -> list[CaseOutcome]:
    """One outcome per case from several full runs of the same selection (D-CNF-065).

    A case with the same outcome every time keeps its first repetition's outcome; one whose
    outcome changed is *flaky*: it keeps the outcome of a repetition that went worst
    (``_STANDS_FOR``) with every repetition's outcome listed in ``flaky``.  A case missing
    from a repetition (a run stopped early) is judged on the repetitions that have it.
    """
    by_id: dict[str, list[CaseOutcome]] = {}
    for outcomes in repetitions:
        for outcome in outcomes:
            by_id.setdefault(outcome.case_id, []).append(outcome)
    merged = []
    for seen in by_id.values():
        said = [outcome.outcome for outcome in seen]
        if len(set(said)) == 1:
            merged.append(seen[0])
            continue
        standing = min(seen, key=lambda outcome: _STANDS_FOR.index(outcome.outcome))
        standing.flaky = said
        merged.append(standing)
    return merged


# --------------------------------------------------------------------------- configuration cases


def _setup_outcome(case_id: str, expected: Any, actual: Any) -> CaseOutcome:
    mismatches = [m.at("setup") for m in match(expected, actual, "", History())]
    return CaseOutcome(case_id, FAILED if mismatches else PASSED, mismatches=mismatches)


def _expects_refusal(expected: Any) -> bool:
    return bool(match(expected, {"ok": True}, "", History()))


def _refused_outcome(case_id: str, expected: Any, how: str) -> CaseOutcome:
    """The server would not start with this configuration; nothing more can be seen (D-CNF-051)."""
    if not _expects_refusal(expected):
        return CaseOutcome(case_id, FAILED, mismatches=[
            Mismatch(None, reason=f"the configuration should be accepted; {how}", where="setup")])
    return CaseOutcome(case_id, PASSED, detail=f"judged by the refusal alone ({how}); the transport "
                                               "carries no configuration error (D-CNF-051)")  # fmt: skip


def _accepted_outcome(case: Case, expected: Any, run: Run) -> CaseOutcome:
    """The target took the configuration: right when it should, and otherwise only if it will not serve it."""
    if not _expects_refusal(expected):
        return _setup_outcome(case.id, expected, {"ok": True})
    code = _expected_code(expected)
    served: list[str] = []
    session = run.connect()
    try:
        for name in case.data["setup"]["instances"]:
            value = session.prepare({"instance": name, "input": PROBE_INPUT}).value
            error = value.get("error") if is_bridge_reply(value) and value["kind"] == "error" else None
            got = error.get("code") if isinstance(error, dict) else None
            if got == "BRIDGE_INSTANCE_NOT_FOUND" or (got is not None and (code is None or not match(code, got, "", History()))):
                continue  # not served, or refused at its first use with the expected code
            if is_bridge_reply(value) and value["kind"] == "task" and isinstance(value.get("jobId"), str):
                with contextlib.suppress(Exception):
                    session.cancel({"jobId": value["jobId"]})
            served.append(f"{name!r} (a prepare answered {_brief(value)})")
    finally:
        with contextlib.suppress(Exception):
            session.close()
    if not served:
        return CaseOutcome(case.id, PASSED, detail="the configuration was accepted, but every prepare on its "
                                                   "instances is refused as it should be (D-CNF-051)")  # fmt: skip
    return CaseOutcome(case.id, FAILED, mismatches=[
        Mismatch(None, reason=f"the configuration should be refused, and the target serves {', '.join(served)}",
                 where="setup"),
        *(m.at("setup") for m in match(expected, {"ok": True}, "", History())),
    ])


def _expected_code(expected: Any) -> Any:
    """The matcher of the error code a configuration case expects (inside ``$subset`` too), or None."""
    while isinstance(expected, dict) and "$subset" in expected:
        expected = expected["$subset"]
    return expected.get("code") if isinstance(expected, dict) else None


def _brief(value: Any) -> str:
    if is_bridge_reply(value) and value["kind"] == "error" and isinstance(value.get("error"), dict):
        return f"error {value['error'].get('code')}"
    return str(value.get("kind")) if isinstance(value, dict) else repr(value)[:80]


def _describe_refusal(exc: Exception) -> str:
    if isinstance(exc, ConfigRejected):
        return f"refused: {exc.error.get('code') or ''} {exc.error.get('message', '')}".strip()
    return str(exc)


def _suite_refused(exc: Exception) -> str:
    if isinstance(exc, ConfigRejected):
        error = exc.error
        code = f"{error['code']}: " if error.get("code") else ""
        return f"the target refused the suite's own instances (conformance/instances.json): {code}{error.get('message', '')}"
    return f"{exc}, started with the suite's own instances (conformance/instances.json)"


def _close_quietly(run: Run) -> None:
    # A run that fails to close has already told us what it could.
    with contextlib.suppress(Exception):
        run.close()


# --------------------------------------------------------------------------- in this process


def execute(
    cases: Iterable[Case],
    target: Target,
    on_outcome: OnOutcome | None = None,
    instances: dict[str, Any] | None = None,
    *,
    isolate: bool = False,
) -> list[CaseOutcome]:
    """Run ``cases`` against ``target`` in this process; ``on_outcome`` hears of each as it ends.

    ``workers.execute`` does the same over worker processes for a target given by its spec.
    """
    executor = Executor(target, instances, isolate=isolate)
    cases = list(cases)
    plan = executor.plan(cases)
    outcomes: list[CaseOutcome | None] = [None] * len(cases)
    lock = threading.Lock()

    def report(index: int, outcome: CaseOutcome) -> None:
        outcomes[index] = outcome
        if on_outcome is not None:
            with lock:  # progress displays are not thread-safe
                on_outcome(cases[index], outcome)

    try:
        for planned in plan.cases:
            if planned.unsupported is not None:
                report(planned.index, CaseOutcome(planned.id, UNSUPPORTED, detail=planned.unsupported))
        run_units(executor, plan.units(), report)
    finally:
        executor.close()
    return [outcome for outcome in outcomes if outcome is not None]


def run_units(executor: Executor, units: Sequence[Unit], report: Callable[[int, CaseOutcome], None],
              stop: threading.Event | None = None) -> None:  # fmt: skip
    """The long-lived units on this thread (and its lanes' threads), the runs of their own beside them."""
    stop = stop or threading.Event()
    own: queue.SimpleQueue[Unit] = queue.SimpleQueue()
    long_lived: queue.SimpleQueue[Unit] = queue.SimpleQueue()
    for unit in units:
        (long_lived if unit.config is not None else own).put(unit)
    failures: list[BaseException] = []

    def take_own() -> None:
        while not stop.is_set():
            try:
                unit = own.get_nowait()
            except queue.Empty:
                return
            try:
                executor.run_unit(unit, report)
            except BaseException as exc:  # TargetCannotStart, a fixture error: stop everything
                failures.append(exc)
                stop.set()
                return

    def take_long_lived(lane: int) -> None:
        try:
            while not stop.is_set():
                try:
                    unit = long_lived.get_nowait()
                except queue.Empty:
                    break
                executor.run_unit(unit, report, lane)
            take_own()  # then help with the runs of their own
        except BaseException as exc:
            failures.append(exc)
            stop.set()

    lanes = max(1, min(executor.target.long_lived_lanes, long_lived.qsize()))
    threads = min(OWN_RUNS_AT_ONCE, own.qsize())
    with ThreadPoolExecutor(max_workers=max(1, threads + lanes - 1), thread_name_prefix="intentref-own") as pool:
        futures = [pool.submit(take_own) for _ in range(threads)]
        futures += [pool.submit(take_long_lived, lane) for lane in range(1, lanes)]
        take_long_lived(0)
        for future in futures:
            future.result()
    if failures:
        raise failures[0]
