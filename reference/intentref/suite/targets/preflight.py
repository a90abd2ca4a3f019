"""Before a run against a server configured elsewhere: does it serve the suite's instances?

A server started by the runner gets the suite's instances in its ``{config}``; one that is
already running (``--http``) has its own configuration.  Without this check a server that
lacks them answers every case ``BRIDGE_INSTANCE_NOT_FOUND`` and the run reports dozens of
failures that say nothing about the implementation (D-CNF-013).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Final

from intentref.suite.targets.base import Target

# What the probe asks each instance to prepare; any input a configured instance accepts will do.
PROBE_INPUT: Final = "intentref conformance: instance check"


def missing_instances(target: Target, names: Sequence[str]) -> list[str]:
    """The names among ``names`` the target's server answers ``BRIDGE_INSTANCE_NOT_FOUND`` for.

    One prepare per name on one session; a job it starts is cancelled at once, so the run
    that follows finds nothing of the probe still active.  A connection that cannot be made
    raises ``TargetCannotStart`` (from the target) before any name is tried.
    """
    if not names:
        return []
    run = target.open({}, {})
    try:
        session = run.connect()
        missing = []
        try:
            for name in names:
                reply: Any = session.prepare({"instance": name, "input": PROBE_INPUT}).value
                if not isinstance(reply, dict):
                    continue  # not a BridgeReply: the cases will say what is wrong with it
                if reply.get("kind") == "error" and reply.get("error", {}).get("code") == "BRIDGE_INSTANCE_NOT_FOUND":
                    missing.append(name)
                elif reply.get("kind") == "task" and isinstance(reply.get("jobId"), str):
                    session.cancel({"jobId": reply["jobId"]})
        finally:
            with contextlib.suppress(Exception):
                session.close()
        return missing
    finally:
        with contextlib.suppress(Exception):
            run.close()
