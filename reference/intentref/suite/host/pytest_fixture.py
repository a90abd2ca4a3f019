"""A pytest fixture for judging a host coroutine in process (``inprocess``).

In a conftest.py::

    from intentref.suite.host.pytest_fixture import host_judge  # noqa: F401

then in a test::

    def test_my_host_follows_the_rules(host_judge):
        verdict = host_judge(my_host, "HST-004")
        assert verdict.lines() == []
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from intentref.suite.host.inprocess import HostCoroutine, judge_in_process
from intentref.suite.host.judge import ScenarioVerdict as Verdict


@pytest.fixture
def host_judge() -> Callable[..., Verdict]:
    def judge(host: HostCoroutine, scenario: dict[str, Any] | str, timeout: float = 30.0) -> Verdict:
        return judge_in_process(host, scenario, timeout)

    return judge
