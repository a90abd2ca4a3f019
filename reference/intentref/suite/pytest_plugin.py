"""The conformance suite as pytest items, for another project's own test run.

    pytest --intentref-target "stdio:node server.js --config {config}"
    pytest --intentref-target in-process --intentref-level normative -k CAP

Registered as the ``intentref`` pytest11 entry point; it adds nothing to a run without
``--intentref-target`` (or an ``intentref_target`` fixture and ``--intentref``).  Each
case is one item whose node id is the case id, marked ``intentref``, ``intentref_<level>``
and ``intentref_<area>`` (lower case).  An unsupported case is skipped with a reason
starting ``unsupported:``; a failure shows the mismatch list.

A project supplies its own Target by overriding the session fixture::

    @pytest.fixture(scope="session")
    def intentref_target():
        return MyTarget()       # closed by the project, not by the plugin
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from intentref.suite.targets.options import spec_in_child
from intentref.suite.targets.registry import DEFAULT_TIMEOUT, ERAS, as_target, described
from intentref.suite.usage import UsageError

_SUITE = "intentref"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("intentref", "intentref conformance suite")
    group.addoption("--intentref-target", metavar="TARGET", default=None,
                    help=f"run the intentref conformance cases against TARGET: {described()}")  # fmt: skip
    group.addoption("--intentref", action="store_true", default=False,
                    help="collect the conformance cases for a project-supplied intentref_target fixture")  # fmt: skip
    group.addoption("--intentref-era", choices=ERAS, default="auto",
                    help="MCP era for stdio/http targets: auto (negotiated, D-CNF-052), 2026 or legacy")  # fmt: skip
    group.addoption("--intentref-level", choices=("normative", "all"), default="all", help="normative: seed-required cases only")
    group.addoption("--intentref-timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds one answer may take (default {DEFAULT_TIMEOUT:g})")  # fmt: skip


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("intentref_target") or config.getoption("intentref"))


def pytest_configure(config: pytest.Config) -> None:
    # Registered always, so --strict-markers projects can name them in -m expressions.
    config.addinivalue_line("markers", "intentref: an intentref conformance case")
    for level in ("normative", "reference"):
        config.addinivalue_line("markers", f"intentref_{level}: an intentref conformance case of level {level}")


class ConformanceSuite(pytest.Collector):
    """The parent of every case item; its items are made by the plugin, not collected from files."""

    def collect(self) -> list[pytest.Item]:
        return []


class ConformanceCase(pytest.Function):
    """One fixture case; the node id is the case id itself."""

    case: Any = None

    @classmethod
    def for_case(cls, parent: ConformanceSuite, case: Any) -> ConformanceCase:
        item: ConformanceCase = cls.from_parent(parent, name=case.id, callobj=_run_case)
        item.case = case
        item._id = type(item._id).parse(case.id)  # the case id alone, not "::BRG-0001"
        for marker in ("intentref", f"intentref_{case.level}", f"intentref_{case.area.lower()}"):
            item.add_marker(marker)
        return item

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.case.id} ({self.case.file}): {self.case.data['description']}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # type: ignore[call-arg]


class CaseFailed(Exception):
    """A case that failed or errored; its text is the report pytest shows."""


def _run_case(request: pytest.FixtureRequest, _intentref_executor: Any) -> None:
    from intentref.suite.cases.script import ERRORED, FAILED, UNSUPPORTED
    from intentref.suite.targets.base import TargetCannotStart

    item = request.node
    case = item.case
    try:
        outcome = _intentref_executor.run(case)
    except TargetCannotStart as exc:
        # D-CNF-013: no case can be blamed, so the session stops with one line (status 3).
        pytest.exit(f"intentref: the target cannot start: {exc}", returncode=3)
    if outcome.outcome == UNSUPPORTED:
        pytest.skip(f"unsupported: {outcome.detail}")
    if outcome.outcome == FAILED:
        lines = [f"{case.id} failed at step {outcome.failed_step}:", *(f"  {m}" for m in outcome.mismatches)]
        raise CaseFailed("\n".join(lines))
    if outcome.outcome == ERRORED:
        raise CaseFailed(f"{case.id} errored (the target broke): {outcome.detail}")


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselection, which then applies to these items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _enabled(config):
        return
    from intentref.suite.cases.fixtures import load_cases, select

    cases = select(load_cases(), config.getoption("intentref_level"), [], [])
    for area in sorted({case.area for case in cases}):  # known only once the fixtures are read
        config.addinivalue_line("markers", f"intentref_{area.lower()}: an intentref conformance case of area {area}")
    suite = ConformanceSuite.from_parent(session, name=_SUITE)
    made = [ConformanceCase.for_case(suite, case) for case in cases]
    # What a collector would report: the terminal's "collected N items" then counts them.
    config.hook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, list(made)))
    items.extend(made)


@pytest.fixture(scope="session")
def intentref_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The Target the cases run against: from --intentref-target; override it to supply your own."""
    spec = request.config.getoption("intentref_target")
    if not spec:
        raise pytest.UsageError("override the intentref_target fixture or give --intentref-target TARGET")
    try:
        target = spec_in_child(spec, request.config.getoption("intentref_era"),
                               request.config.getoption("intentref_timeout")).build()  # fmt: skip
    except UsageError as exc:
        raise pytest.UsageError(f"--intentref-target {spec}: {exc}") from None
    try:
        yield target
    finally:
        target.close()


@pytest.fixture(scope="session")
def _intentref_executor(request: pytest.FixtureRequest, intentref_target: Any) -> Iterator[Any]:
    from intentref.suite.execution.runner import Executor
    from intentref.suite.targets.base import Target

    # An overriding fixture may hand any object with open and close (its runs duck-typed too).
    executor = Executor(intentref_target if isinstance(intentref_target, Target) else as_target(intentref_target))
    # The selected cases, so a target that starts servers ahead knows which ones are due.
    executor.plan([item.case for item in request.session.items if isinstance(item, ConformanceCase)])
    try:
        yield executor
    finally:
        executor.close()
