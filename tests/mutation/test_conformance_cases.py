"""The in-process conformance cases, one pytest item per case id.

This is the view of the suite mutation testing needs: mutmut maps each pytest item to the
reference functions it runs, so a mutant is checked only against the cases that reach the
mutated function, and a killed mutant names the case that caught it.  Each item runs its
case exactly as ``intentref conformance --in-process`` does (``runner.execute`` against
the bundled reference Bridge in this process), so a pass here is a pass there.
"""

from __future__ import annotations

import pytest

from intentref.conformance.fixtures import Case, load_cases
from intentref.conformance.runner import execute
from intentref.conformance.script import PASSED, UNSUPPORTED
from intentref.conformance.targets import InProcessTarget

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_conformance_case(case: Case) -> None:
    [outcome] = execute([case], InProcessTarget())
    if outcome.outcome == UNSUPPORTED:
        # Only the MCP-envelope cases: the in-process target has no envelope to check.
        assert case.transport == "mcp", f"{case.id}: unexpectedly unsupported in-process: {outcome.detail}"
        pytest.skip(outcome.detail)
    assert outcome.outcome == PASSED, "\n".join([f"{case.id}: {outcome.outcome} {outcome.detail}", *outcome.mismatches])
