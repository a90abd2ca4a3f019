"""The in-process conformance cases, one pytest item per case id.

This is the view of the suite mutation testing needs: mutmut maps each pytest item to the
reference functions it runs, so a mutant is checked only against the cases that reach the
mutated function, and a killed mutant names the case that caught it.  Each item runs its
case exactly as ``intentref conformance --in-process`` does (``runner.execute`` against
the bundled reference Bridge in this process), so a pass here is a pass there.

On top of the case's own expectations, every reply the case received and every
configuration error it provoked must pass the checks every reply must pass
(``wire_checks``: the published wire schemas, the D-ERR-001 table, non-blank messages).
"""

from __future__ import annotations

from typing import Any

import pytest
from wire_checks import error_faults, reply_faults

from intentref.suite.cases.fixtures import Case, load_cases
from intentref.suite.cases.script import PASSED, UNSUPPORTED
from intentref.suite.execution.runner import execute
from intentref.suite.targets.base import ConfigRejected, InProcessTarget, Run

# The in-process target has no MCP envelope to check: the envelope cases run over MCP in
# tests/conformance (test_targets, test_outside_servers), not here as skips.
CASES = [case for case in load_cases() if case.transport != "mcp"]


class RecordingTarget(InProcessTarget):
    """The in-process target, keeping the configuration errors a case provokes."""

    def __init__(self) -> None:
        super().__init__()
        self.config_errors: list[Any] = []

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        try:
            return super().open(instances, bridge_options)
        except ConfigRejected as rejected:
            self.config_errors.append(rejected.error)
            raise


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_conformance_case(case: Case) -> None:
    target = RecordingTarget()
    [outcome] = execute([case], target)
    assert outcome.outcome != UNSUPPORTED, f"{case.id}: unexpectedly unsupported in-process: {outcome.detail}"
    assert outcome.outcome == PASSED, "\n".join([f"{case.id}: {outcome.outcome} {outcome.detail}", *map(str, outcome.mismatches)])
    # spec: R-RPY-001 R-RPY-002 R-RPY-003 R-RPY-004 R-ERR-005 R-ERR-006 D-ERR-001 D-ERR-006
    faults = [f"step {index}: {fault}" for index, reply in enumerate(outcome.replies) if reply is not None
              for fault in reply_faults(reply)]  # fmt: skip
    faults += [fault for err in target.config_errors for fault in error_faults(err, "configuration error")]
    assert not faults, "\n".join([f"{case.id}: replies that break the wire rules", *faults])
