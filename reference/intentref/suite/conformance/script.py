"""Running one case: its steps in order against one run of a target.

A case *fails* when a reply does not match its expectation, *errors* when the target
breaks (a crash, a timeout, a reply that is not a BridgeReply at all), and is
*unsupported* when the target cannot make the run the case needs.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from intentref.suite.conformance.headline import kind_headline
from intentref.suite.conformance.targets import ProtocolRefusal, Reply, Run, Session, TargetUnsupported
from intentref.suite.conformance.values import FixtureError, History, Unresolved, generate, match

PASSED, FAILED, UNSUPPORTED, ERRORED = "passed", "failed", "unsupported", "errored"


@dataclass
class CaseOutcome:
    case_id: str
    outcome: str
    mismatches: list[str] = field(default_factory=list)
    failed_step: int | None = None
    detail: str = ""
    seconds: float = 0.0
    replies: list[Any] = field(default_factory=list)


class TargetBroke(Exception):
    """The target did not answer as a target must (crash, timeout, non-reply)."""


def _is_reply(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("task", "result", "error")


def run_case(case: dict[str, Any], run: Run, transport: str) -> CaseOutcome:
    started = time.perf_counter()
    history = History()
    sessions: dict[str, Session] = {}
    outcome = CaseOutcome(case["id"], PASSED)
    try:
        for index, step in enumerate(case["steps"]):
            op = step["op"]
            name = step.get("session", "main")
            if op == "sleep":
                time.sleep(step["ms"] / 1000)
                history.replies.append(None)
                history.texts.append(None)
                continue
            if op == "close":
                if name in sessions:
                    sessions.pop(name).close()
                history.replies.append(None)
                history.texts.append(None)
                continue
            if name not in sessions:
                sessions[name] = run.connect()
            try:
                args = generate(step["args"], history)
            except Unresolved as exc:
                outcome.outcome, outcome.failed_step = FAILED, index
                outcome.mismatches = [f"step {index}: {exc}"]
                break
            reply: Reply = getattr(sessions[name], op)(args)
            if not _is_reply(reply.value):
                raise TargetBroke(f"step {index} ({op}) returned something that is not a BridgeReply: {reply.value!r:.300}")
            mismatches = [f"step {index} ({op}) {m}" for m in match(step["expect"], reply.value, "", history)]
            headline = kind_headline(step["expect"], reply.value, history) if mismatches else None
            if headline is not None:  # D-CNF-031: another kind of reply is said first, in plain words
                mismatches.insert(0, f"step {index} ({op}): {headline}")
            envelope = reply.envelope if "envelope" in step else None
            if envelope is not None:
                mismatches += [f"step {index} envelope {m}" for m in match(step["envelope"], envelope, "", history)]
            history.replies.append(reply.value)
            history.texts.append(reply.text)
            if mismatches:
                outcome.outcome, outcome.failed_step, outcome.mismatches = FAILED, index, mismatches
                break
    except FixtureError:
        raise
    except TargetBroke as exc:
        outcome.outcome, outcome.detail = ERRORED, str(exc)
    except ProtocolRefusal as exc:  # no fixture allows one yet: the target did not answer the step
        outcome.outcome, outcome.detail = ERRORED, f"step {index}: refused by the protocol layer: {exc.detail}"
    except TargetUnsupported as exc:  # e.g. a value the transport cannot carry
        outcome.outcome, outcome.detail = UNSUPPORTED, exc.reason
        outcome.mismatches, outcome.failed_step = [], None
    except Exception as exc:  # the target's adapter raised: the target broke, not the case
        outcome.outcome, outcome.detail = ERRORED, f"{type(exc).__name__}: {exc}"
    finally:
        for session in sessions.values():
            # Closing after a broken step must not hide the outcome.  The case is over:
            # release() lets a target keep an expensive connection for the next case
            # (D-CNF-002); an explicit close step above really closes.
            with contextlib.suppress(Exception):
                getattr(session, "release", session.close)()
    outcome.replies = history.replies
    outcome.seconds = time.perf_counter() - started
    return outcome
