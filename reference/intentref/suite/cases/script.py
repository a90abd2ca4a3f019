"""Running one case: its steps in order against one run of a target.

A case *fails* when a reply does not match its expectation, *errors* when the target
breaks (a crash, a timeout, a reply that is not a BridgeReply at all), and is
*unsupported* when the target cannot make the run the case needs.

A step that expects the call to be refused as malformed also passes when the protocol
layer refused it instead of the implementation (D-CNF-055); the case goes on, that step
with no reply, and its outcome says which steps were refused so.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from intentref.mcp.replies import is_bridge_reply
from intentref.suite.cases.headline import kind_headline
from intentref.suite.cases.values import FixtureError, History, Mismatch, Unresolved, generate, match
from intentref.suite.targets import recording
from intentref.suite.targets.base import ProtocolRefusal, Reply, Run, Session, TargetUnsupported

PASSED, FAILED, UNSUPPORTED, ERRORED = "passed", "failed", "unsupported", "errored"


@dataclass
class CaseOutcome:
    case_id: str
    outcome: str
    mismatches: list[Mismatch] = field(default_factory=list)
    failed_step: int | None = None
    detail: str = ""
    seconds: float = 0.0
    replies: list[Any] = field(default_factory=list)
    # How late a step was answered at most, against the time the case meant it to run (the
    # sleeps before it), in milliseconds: what a timing precondition is judged by (D-CNF-058).
    late_ms: float = 0.0
    # With --trace, a failed or errored case's messages to and from the target (D-CNF-064).
    trace: dict[str, Any] | None = None
    # With --repeat, each repetition's outcome when they differ (D-CNF-065).
    flaky: list[str] = field(default_factory=list)
    # With --era both, the era it was judged in (D-CNF-070); "" in a run of one era.
    era: str = ""


# spec: D-CNF-058 -- a case that sleeps against a Bridge's legacy TTLs has a timing
# precondition: its steps must reach the Bridge about when the case meant them to. Only the
# positive TTLs set time limits (0 disables one, R-CAP-003).
TTL_OPTIONS = ("jobTtlMs", "replayTtlMs")


def shortest_ttl_ms(case: dict[str, Any]) -> int | None:
    """The shortest positive TTL of a case that sleeps, or None: the case has no timing precondition."""
    if not any(step["op"] == "sleep" for step in case["steps"]):
        return None
    options = case.get("bridge", {})
    ttls = [options[name] for name in TTL_OPTIONS if isinstance(options.get(name), int) and options[name] > 0]
    return min(ttls) if ttls else None


def with_wider_timing(case: dict[str, Any], factor: int) -> dict[str, Any]:
    """The same case with its TTLs and sleeps ``factor`` times as long: the same order of events."""
    options = dict(case.get("bridge", {}))
    for name in TTL_OPTIONS:
        if isinstance(options.get(name), int) and options[name] > 0:
            options[name] *= factor
    steps = [{**step, "ms": step["ms"] * factor} if step["op"] == "sleep" else step for step in case["steps"]]
    return {**case, "bridge": options, "steps": steps}


class TargetBroke(Exception):
    """The target did not answer as a target must (crash, timeout, non-reply)."""



# spec: D-CNF-055 -- seed 000 (调用错误与任务状态): "SDK/协议参数校验或连接异常还可能直接抛出":
# parameter validation may throw instead of answering with a BridgeReply.  The code a Bridge
# gives a malformed call is INPUT_INVALID (R-BRG-019, seed 004); an SDK's input schema can
# only refuse what a Bridge would refuse with it.
MALFORMED_CALL_CODE = "INPUT_INVALID"


def refusal_allowed(expect: Any) -> bool:
    """Whether a call expected to answer ``expect`` may be refused by the protocol layer (D-CNF-055):
    ``expect`` is an error reply whose code may be ``INPUT_INVALID`` (or any code).

    The one rule for every caller: a case step passes its written expectation; the property
    engine passes the reply the reference gave to the same call (a literal reply is an
    expectation too), or what the tool's published input schema predicts when no reference
    runs beside the target.
    """
    if not isinstance(expect, dict):
        return False
    if "$error" in expect:
        error = expect["$error"]
    elif expect.get("kind") == "error":
        error = expect.get("error")
    else:
        return False
    if not isinstance(error, dict) or "code" not in error:
        return True
    return not match(error["code"], MALFORMED_CALL_CODE, "", History())


def run_case(case: dict[str, Any], run: Run, transport: str) -> CaseOutcome:
    started = time.perf_counter()
    history = History()
    sessions: dict[str, Session] = {}
    outcome = CaseOutcome(case["id"], PASSED)
    refused: list[str] = []  # steps the protocol layer refused where a refusal is allowed
    index = 0
    meant_ms = 0.0  # when the case means the current step to run, after its first one
    recorder = recording.Recorder(transport) if recording.enabled() else None  # spec: D-CNF-064
    try:
        for index, step in enumerate(case["steps"]):
            op = step["op"]
            name = step.get("session", "main")
            if op == "sleep":
                meant_ms += step["ms"]
                time.sleep(step["ms"] / 1000)
                history.replies.append(None)
                history.texts.append(None)
                continue
            if op == "close":
                if name in sessions:
                    closing = sessions.pop(name)
                    closing.close()
                    recording.detach(closing)
                history.replies.append(None)
                history.texts.append(None)
                continue
            if name not in sessions:
                sessions[name] = run.connect()
                if recorder is not None:
                    sessions[name] = recorder.attach(sessions[name], name)
            try:
                args = generate(step["args"], history)
            except Unresolved as exc:
                outcome.outcome, outcome.failed_step = FAILED, index
                outcome.mismatches = [Mismatch(None, reason=str(exc), where=f"step {index}")]
                break
            try:
                reply: Reply = getattr(sessions[name], op)(args)
            except ProtocolRefusal as exc:
                outcome.late_ms = max(outcome.late_ms, (time.perf_counter() - started) * 1000 - meant_ms)
                if not refusal_allowed(step["expect"]):
                    raise
                refused.append(f"step {index} ({op}) refused by the protocol layer, as seed 000 allows "
                               f"(D-CNF-055): {exc.detail}")  # fmt: skip
                history.replies.append(None)
                history.texts.append(None)
                continue
            # The reply is in: how late the call was answered against when the case meant it.
            outcome.late_ms = max(outcome.late_ms, (time.perf_counter() - started) * 1000 - meant_ms)
            if not is_bridge_reply(reply.value):
                raise TargetBroke(f"step {index} ({op}) returned something that is not a BridgeReply: {reply.value!r:.300}")
            mismatches = [m.at(f"step {index} ({op})") for m in match(step["expect"], reply.value, "", history)]
            headline = kind_headline(step["expect"], reply.value, history) if mismatches else None
            if headline is not None:  # D-CNF-031: another kind of reply is said first, in plain words
                mismatches.insert(0, headline.at(f"step {index} ({op})"))
            envelope = reply.envelope if "envelope" in step else None
            if envelope is not None:
                mismatches += [m.at(f"step {index} envelope") for m in match(step["envelope"], envelope, "", history)]
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
                session.release()
            recording.detach(session)
    if refused and outcome.outcome in (PASSED, FAILED) and not outcome.detail:
        outcome.detail = "; ".join(refused)
    outcome.replies = history.replies
    if recorder is not None and outcome.outcome in (FAILED, ERRORED):  # nothing kept for a case that passed
        outcome.trace = recorder.document()
    outcome.seconds = time.perf_counter() - started
    return outcome
