"""The target under test and the Hypothesis profiles of the property suite.

The target comes from ``--intentref-properties-target SPEC`` (or ``--intentref-target``
when the conformance pytest plugin registers it, or ``INTENTREF_PROPERTIES_TARGET``):
``in-process`` (the default), ``stdio:COMMAND``, ``http:URL``, ``harness:COMMAND`` or
``python:MODULE:ATTR``.  Any target but the in-process reference is checked
differentially: each reply is compared with the reference's for the same inputs, and a
difference fails with a ready-to-add conformance case (``--intentref-no-differential``
turns that off).

Profiles: ``intentref-ci`` (default), ``intentref-long``, and ``intentref-smoke`` (a few
examples, for slow transports); choose one with ``--hypothesis-profile`` or
``INTENTREF_PROPERTIES_PROFILE``.  With ``INTENTREF_PROPERTIES_STATS=FILE`` the call
counters are written to FILE as JSON when the session ends.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from intentref import properties as ip
from intentref.suite.properties.targets import STATS, close_runs, make_target
from intentref.suite.targets.registry import ERAS

# No "explain" phase: it re-runs a failing example many times to annotate it, which a
# slow transport turns into minutes; the shrunk example and the conformance case suffice.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.function_scoped_fixture]  # fmt: skip
settings.register_profile("intentref-ci", max_examples=30, deadline=None, database=None, print_blob=True,
                          suppress_health_check=_QUIET, stateful_step_count=30, phases=_PHASES)  # fmt: skip
settings.register_profile("intentref-smoke", max_examples=4, deadline=None, database=None, print_blob=True,
                          suppress_health_check=_QUIET, stateful_step_count=12, phases=_PHASES)  # fmt: skip
settings.register_profile("intentref-long", max_examples=400, deadline=None, database=None, print_blob=True,
                          suppress_health_check=list(HealthCheck), stateful_step_count=80, phases=_PHASES)  # fmt: skip
settings.load_profile(os.environ.get("INTENTREF_PROPERTIES_PROFILE", "intentref-ci"))

# Hypothesis shrinks one failure for up to 5 minutes.  Against a target over a slow
# transport that diverges in several properties, that alone would exceed the ci profile's
# 3-minute budget; a shorter shrink still gives a small case.  The setting is internal to
# Hypothesis (no public one exists), so it is only lowered where it is found.
SHRINK_SECONDS = {"intentref-ci": 30, "intentref-smoke": 10}


def _limit_shrinking(profile: str) -> None:
    from hypothesis.internal.conjecture import engine

    if profile in SHRINK_SECONDS and isinstance(getattr(engine, "MAX_SHRINKING_SECONDS", None), int):
        engine.MAX_SHRINKING_SECONDS = SHRINK_SECONDS[profile]

TARGET_OPTION = "--intentref-properties-target"
ERA_OPTION = "--intentref-properties-era"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("intentref-properties", "intentref property suite")
    # A name of our own: the conformance plugin's --intentref-target may be registered too.
    group.addoption(TARGET_OPTION, default=None, metavar="SPEC",
                    help="in-process (default), stdio:COMMAND, http:URL, harness:COMMAND or python:MODULE:ATTR")  # fmt: skip
    group.addoption(ERA_OPTION, choices=ERAS, default="auto",
                    help="MCP era of the target: auto (negotiated, default), 2026 or legacy")  # fmt: skip
    group.addoption("--intentref-no-differential", action="store_true", default=False,
                    help="do not compare the target's replies with the in-process reference")  # fmt: skip


def _spec(config: pytest.Config) -> str:
    spec = config.getoption(TARGET_OPTION)
    if spec is None:
        try:  # registered by intentref.conformance.pytest_plugin, when loaded
            spec = config.getoption("--intentref-target")
        except ValueError:
            spec = None
    return str(spec or os.environ.get("INTENTREF_PROPERTIES_TARGET") or "in-process")


@pytest.fixture(scope="session")
def intentref_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    spec = _spec(request.config)
    target = make_target(spec, request.config.getoption(ERA_OPTION))
    other = target.transport != "in-process" or spec.startswith("python:")
    if other and not request.config.getoption("--intentref-no-differential"):
        target = ip.DifferentialTarget(target)
    yield target
    close_runs()
    target.close()


@pytest.fixture
def example(intentref_target: Any) -> Any:
    """``example(**kwargs)`` opens an ``ip.Example`` on the target, skipping what it cannot run."""

    def make(**kwargs: Any) -> ip.Example:
        return ip.Example(intentref_target, **kwargs)

    return make


def pytest_configure(config: pytest.Config) -> None:
    _limit_shrinking(str(config.getoption("hypothesis_profile", None) or
                         os.environ.get("INTENTREF_PROPERTIES_PROFILE", "intentref-ci")))  # fmt: skip
    # SIGTERM ends the run as Ctrl-C does, so the session still finishes and writes its
    # counters and outcomes (``intentref properties`` forwards its own SIGTERM here).  Only
    # in a run the CLI started: other runners (mutmut, CI) keep SIGTERM's usual meaning.
    if os.environ.get("INTENTREF_PROPERTIES_STATS") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _divergences(exc: BaseException) -> list[ip.Divergence]:
    if isinstance(exc, BaseExceptionGroup):
        return [d for inner in exc.exceptions for d in _divergences(inner)]
    return [exc] if isinstance(exc, ip.Divergence) else []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # A divergence's final (shrunk) example carries a conformance case: collect it for the CLI,
    # and each failure's level (D-CNF-021): normative, or reference with its decisions.
    report = yield
    if call.excinfo is None or call.excinfo.errisinstance((pytest.skip.Exception,)):
        return report
    path = os.environ.get("INTENTREF_PROPERTIES_CASES")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            for divergence in _divergences(call.excinfo.value):
                handle.write(json.dumps(divergence.case, ensure_ascii=True) + "\n")
    outcomes = os.environ.get("INTENTREF_PROPERTIES_OUTCOMES")
    if outcomes and not call.excinfo.errisinstance(KeyboardInterrupt):
        level, decisions = ip.failure_level(call.excinfo.value)
        marked = item.get_closest_marker("decided")
        if marked is not None:
            # The whole test rests on these decisions: any failure is reference level, and a
            # failure that names its own decisions (a DecidedAssertion) keeps just those.
            level, decisions = "reference", decisions or tuple(marked.args)
        with open(outcomes, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"test": item.nodeid, "level": level, "decisions": list(decisions)}) + "\n")
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("INTENTREF_PROPERTIES_STATS")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(dict(STATS), handle, indent=1, sort_keys=True)
