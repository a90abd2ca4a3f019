"""Before a run: does a server configured elsewhere serve the suite's instances, and (``--era
both``) does a server speak the era asked?

A server started by the runner gets the suite's instances in its ``{config}``; one that is
already running (``--http``) has its own configuration.  Without this check a server that
lacks them answers every case ``BRIDGE_INSTANCE_NOT_FOUND`` and the run reports dozens of
failures that say nothing about the implementation (D-CNF-013).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Final

from intentref.suite.targets.base import EraRefused, Target, load_instances
from intentref.suite.targets.registry import TargetSpec

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


def era_refusal(spec: TargetSpec) -> str | None:
    """Why the server does not speak ``spec``'s pinned era, in one line (D-CNF-071), or None.

    One connection in that era; any other failure is left to the run, which reports it as a run
    of one era does.
    """
    if spec.forks_reference:
        return None  # the bundled reference speaks both eras; asking would start a zygote of its own
    target = spec.build()
    try:
        connect_once(target)
    except EraRefused as exc:
        return exc.answered
    except Exception:
        return None
    finally:
        target.close()
    return None


def connect_once(target: Target) -> None:
    """A run with the suite's instances and one connection on it, closed again: whatever keeps
    the target from serving a first case is raised here."""
    run = target.open(load_instances(), {})
    try:
        run.connect().close()
    finally:
        run.close()
