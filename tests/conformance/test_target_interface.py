"""The runner's ``Target`` / ``Run`` / ``Session`` is one explicit interface (issue 23).

Every member the runner calls is declared on the base classes with a documented default,
so the runner calls it directly; the one place that looks members up by name is
``registry.as_target``, which adapts a user's object that is not a ``Target``.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
from typing import Any

import pytest

from intentref.suite.targets.base import InProcessTarget, Run, Session, Target, load_instances
from intentref.suite.targets.mcp import HttpTarget, StdioTarget
from intentref.suite.targets.registry import as_target

SUITE = pathlib.Path(__file__).resolve().parents[2] / "reference" / "intentref" / "suite"
# The adapter of duck-typed user targets: looking members up by name is its whole job.
ADAPTER = SUITE / "targets" / "registry.py"


def _interface_members() -> set[str]:
    return {name for cls in (Target, Run, Session) for name in vars(cls) if not name.startswith("__")}


def _lookups_by_name(source: str) -> list[tuple[int, str]]:
    """``getattr(x, "name", …)`` and ``hasattr(x, "name")`` calls with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):  # fmt: skip
            found.append((node.lineno, node.args[1].value))
    return found


def test_the_interface_declares_what_the_runner_calls() -> None:
    members = _interface_members()
    for name in ("open", "close", "unsupported", "unsupported_case", "expect_runs", "capabilities",
                 "long_lived_runs", "configured_elsewhere", "separate_sessions", "negotiate", "era_in_force",
                 "connect", "new_case", "left_behind", "begin_example", "prepare", "accept", "cancel",
                 "release"):  # fmt: skip
        assert name in members, name


def test_no_suite_module_but_the_adapter_looks_up_an_interface_member_by_name() -> None:
    members = _interface_members() | {"name", "transport"}
    offenders = [
        f"{path.relative_to(SUITE)}:{line} {name}"
        for path in sorted(SUITE.rglob("*.py"))
        if path != ADAPTER
        for line, name in _lookups_by_name(path.read_text(encoding="utf-8"))
        if name in members
    ]
    assert offenders == []


def test_the_scan_finds_a_lookup_by_name() -> None:
    source = 'x = getattr(target, "expect_runs", None)\nif hasattr(run, "begin_example"):\n    pass\n'
    assert _lookups_by_name(source) == [(1, "expect_runs"), (2, "begin_example")]


class _Minimal(Target):
    """A target that declares only what it must: ``open``."""

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        return InProcessTarget().open(instances, bridge_options)


def test_the_defaults_of_a_target_that_declares_nothing_else() -> None:
    target = _Minimal()
    assert target.negotiate() is None and target.era_in_force() is None
    assert target.capabilities is None  # probed, not assumed (D-CNF-030)
    assert target.unsupported({"maxJobs": 1}) is None and target.unsupported_case({"steps": []}) is None
    assert target.separate_sessions and not target.long_lived_runs and not target.configured_elsewhere
    target.expect_runs([({}, {})])  # nothing to start ahead: no error
    run = target.open(load_instances(), {})
    run.begin_example(("R-BRG-006",))
    assert run.left_behind() == []
    run.close()


def test_mcp_targets_tell_their_era_without_connecting() -> None:
    # Nothing listens on port 9: a connection attempt would raise.
    assert HttpTarget("http://127.0.0.1:9/mcp", era="legacy").era_in_force() == "legacy"
    assert HttpTarget("http://127.0.0.1:9/mcp", era="auto").era_in_force() == "auto"
    assert HttpTarget("http://127.0.0.1:9/mcp", era="2026").negotiate() == "2026"
    stdio = StdioTarget("no-such-server --config {config}", era="2026")
    try:
        assert stdio.era_in_force() == "2026"
    finally:
        stdio.close()


def test_a_duck_typed_target_gets_the_defaults() -> None:
    class Duck:
        def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Any:
            return InProcessTarget().open(instances, bridge_options)

    target = as_target(Duck())
    assert target.negotiate() is None and target.era_in_force() is None and target.name == "Duck"
    run = target.open(load_instances(), {})
    run.begin_example()
    session = run.connect()
    assert isinstance(session, Session)
    session.release()
    run.close()


def test_a_warm_server_is_a_named_record_taken_by_its_configuration() -> None:
    from intentref.suite.targets.mcp import _run_key, _Started

    assert [f.name for f in dataclasses.fields(_Started)] == ["key", "config", "argv", "connection"]
    target = StdioTarget.reference(era="legacy")
    try:
        instances = load_instances()
        target.expect_runs([(instances, {})])
        [warm] = list(target._warm)
        assert warm.key == _run_key(instances, {}) and any(warm.config in arg for arg in warm.argv)
        with pytest.raises(dataclasses.FrozenInstanceError):
            warm.key = "another"  # type: ignore[misc]
        run = target.open(instances, {})  # takes the warm server instead of starting another
        assert not target._warm
        try:
            reply = run.connect().prepare({"instance": "default", "input": "hello"})
            assert reply.value["kind"] in ("task", "error")
        finally:
            run.close()
    finally:
        target.close()
