"""The conformance speed figure for ``intentref bench`` (issue 5: >= 100 cases/s over stdio).

What is measured is the main job exactly as ``intentref conformance`` runs it: every case
of the bundled fixtures against the bundled reference server over real stdio (its default
target: server processes forked from a pre-imported zygote, four shared processes for the
cases without Bridge options (D-CNF-012) and one per case with options), in each protocol era.  The
rate counts from the moment the first case is done, so the one-off start-up (the SDK's
imports, the first server process) is left out, as the issue asks; every later server
process a case needs is inside the measurement.

The requirement is an absolute rate, so the figure's floor is the budget it implies,
0.01 s per case, with a target ratio of 1.0: ratio <= 1 exactly when the suite runs at
>= 100 cases/s.  The same cases in-process (the Bridge called directly, no MCP, no pipes)
are measured in the same run as the peer and printed in the figure's description: the
stdio/in-process ratio is what the transport costs, not a target of its own.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from intentref.devtools.figure import Figure

BUDGET_SECONDS_PER_CASE = 0.01  # issue 5: at least 100 cases per second
SMOKE_CASES = 25


def _measure(target: Any, cases: list[Any]) -> tuple[float, float, Counter[str]]:
    """(seconds per case after the first, seconds to the first case, outcome tally)."""
    from intentref.suite.conformance.runner import execute

    first: list[float] = []

    def on_outcome(case: Any, outcome: Any) -> None:
        if not first:
            first.append(time.perf_counter())

    started = time.perf_counter()
    try:
        outcomes = execute(cases, target, on_outcome=on_outcome)
    finally:
        target.close()
    ended = time.perf_counter()
    per_case = (ended - first[0]) / max(len(cases) - 1, 1) if first else float("inf")
    return per_case, (first[0] - started) if first else 0.0, Counter(o.outcome for o in outcomes)


def _tally(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "unsupported", "errored") if counts[k])


def figures(smoke: bool) -> list[Figure]:
    from intentref.suite.conformance.fixtures import load_cases
    from intentref.suite.conformance.mcp_targets import StdioTarget
    from intentref.suite.conformance.targets import InProcessTarget

    cases = load_cases()
    if smoke:  # a few cases of the shared run: proves the figure works, means nothing
        cases = [case for case in cases if not case.bridge_options and "setup" not in case.data][:SMOKE_CASES]
    peer, _, peer_counts = _measure(InProcessTarget(), cases)
    out = []
    for era in ("2026", "legacy"):
        per_case, startup, counts = _measure(StdioTarget.reference(era), cases)
        out.append(Figure(
            f"conformance suite over stdio ({era}), after start-up",
            per_case,
            BUDGET_SECONDS_PER_CASE,
            "s/case",
            1.0,
            f"{len(cases)} cases against the reference over stdio ({era}, forked servers): "
            f"{1 / per_case:.0f} cases/s after {startup:.1f} s of start-up ({_tally(counts)}), vs the "
            f"100 cases/s budget (0.01 s/case); peer: the same cases in-process at {1 / peer:.0f} cases/s "
            f"({_tally(peer_counts)}), stdio/in-process = {per_case / peer:.1f}x",
        ))  # fmt: skip
    return out
