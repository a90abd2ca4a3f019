"""The host rules as code: one small function per rule, registered by ID in ``RULES``.

Each rule reads one ``Run`` (what the host did in one scenario run) and yields a
``Violation`` per place it is broken.  ``R-HST-…`` rules are seed 000's host rules
(spec/requirements.md, normative); ``D-HST-001`` is the host contract (level ``contract``);
the other ``D-HST-…`` rules are what the reference host does where the seed leaves a host
free (spec/decisions-host.md, level ``reference``).  R-HST-011 compares two runs and lives
in ``compare_wordings``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES as DETAIL_LIMIT  # seed 000 "工具与 session 方法"
from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, PREPARE_TOOL
from intentref.suite.host.trace import Call, ModelRun, Run

REFUSAL_EXIT: Final = 3
INCOMPLETE_EXIT: Final = 4
REPLY_KINDS: Final = ("task", "result", "error")


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str  # the call or model run, or "outcome"
    message: str

    @property
    def level(self) -> str:
        return level_of(self.rule)


def level_of(rule: str) -> str:
    if rule.startswith("R-"):
        return "normative"
    return "contract" if rule == "D-HST-001" else "reference"


# --------------------------------------------------------------------------- reading a run


def same_candidate(submitted: Any, produced: str) -> bool:
    """D-HST-002: equal as JSON values when both parse, else equal as text."""
    if not isinstance(submitted, str):
        return False
    try:
        # Canonical text, not ==: to Python 1 == true, to JSON they are two values.
        return _canonical(json.loads(submitted)) == _canonical(json.loads(produced))
    except (ValueError, RecursionError):
        return submitted == produced


def _canonical(value: Any) -> str:
    return json.dumps(_numbers_as_javascript(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _numbers_as_javascript(value: Any) -> Any:
    # 1.0 and 1 are one number to JavaScript, whose JSON.stringify of a parsed 1.0 gives 1:
    # a host in JavaScript that re-serialises a candidate has not changed it.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_numbers_as_javascript(item) for item in value]
    if isinstance(value, dict):
        return {key: _numbers_as_javascript(item) for key, item in value.items()}
    return value


def utf8_prefix(text: str, limit: int = DETAIL_LIMIT) -> str:
    """The longest prefix of ``text`` that fits ``limit`` UTF-8 bytes without splitting a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def utf8_size(value: Any) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0


def is_task(reply: Any) -> bool:
    return isinstance(reply, dict) and reply.get("kind") == "task"


def served_task_before(run: Run, index: int) -> Call | None:
    """The last call before timeline position ``index`` whose reply was a task."""
    for event in reversed(run.timeline[:index]):
        if isinstance(event, Call) and is_task(event.reply):
            return event
    return None


def latest_task_on(run: Run, index: int, connection: str, job_id: Any) -> dict[str, Any] | None:
    """The latest task the service returned for ``job_id`` on ``connection`` before ``index``."""
    for event in reversed(run.timeline[:index]):
        if isinstance(event, Call) and event.connection == connection and is_task(event.reply):
            assert event.reply is not None
            if event.reply.get("jobId") == job_id:
                return event.reply
    return None


def job_known_on(run: Run, index: int) -> dict[Any, str]:
    """jobId -> the connection whose reply first carried it, for replies before ``index``."""
    owners: dict[Any, str] = {}
    for event in run.timeline[:index]:
        if isinstance(event, Call) and is_task(event.reply):
            assert event.reply is not None
            owners.setdefault(event.reply.get("jobId"), event.connection)
    return owners


def model_run_before(run: Run, index: int) -> tuple[int, ModelRun] | None:
    for position in range(index - 1, -1, -1):
        event = run.timeline[position]
        if isinstance(event, ModelRun):
            return position, event
    return None


def job_of_model_run(run: Run, index: int) -> Any:
    task = served_task_before(run, index)
    return task.reply.get("jobId") if task is not None and task.reply is not None else None


def next_action(run: Run, index: int, job_id: Any) -> tuple[int, Call | ModelRun] | None:
    """What the host did next about ``job_id`` after position ``index``: a call for it, or a model run."""
    for position in range(index + 1, len(run.timeline)):
        event = run.timeline[position]
        if isinstance(event, ModelRun):
            return position, event
        if event.job_id == job_id or (event.tool == PREPARE_TOOL):
            return position, event
    return None


def what_followed(following: tuple[int, Call | ModelRun] | None) -> str:
    """What the host did next, in words: a message says what a host did, not only what it did not."""
    if following is None:
        return "it did nothing more for that job"
    event = following[1]
    if isinstance(event, ModelRun):
        return f"it ran its model ({event.where()})"
    if event.tool == PREPARE_TOOL:
        return "it prepared a new job instead"
    if event.tool == ACCEPT_TOOL:
        return "it submitted again without asking its model"
    return f"it called {event.tool} on that job instead"


def reached_server(run: Run) -> bool:
    """Whether the host reached the judge's server at all in ``run``: a connection or a call."""
    return bool(run.connections) or bool(run.calls)


def printed_reply(run: Run) -> Any:
    """What the host printed on exit 0, parsed, or the string itself when it is not JSON."""
    text = run.host_stdout.strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a host's output is not ours to trust: nested past Python's limit, say
        return text


def served_replies(run: Run) -> list[dict[str, Any]]:
    return [call.reply for call in run.calls if isinstance(call.reply, dict)]


def job_was_active_after(run: Run, index: int, job_id: Any) -> bool:
    """Whether ``job_id`` was still active after the last call before ``index`` on its connection."""
    owner = job_known_on(run, index).get(job_id)
    for event in reversed(run.timeline[:index]):
        if isinstance(event, Call) and event.connection == owner:
            return job_id in event.active
    return False


# --------------------------------------------------------------------------- the rules

Rule = Callable[[Run], Iterator[Violation]]
RULES: dict[str, Rule] = {}


def rule(ident: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        RULES[ident] = function
        return function

    return register


@rule("R-HST-001")
def model_given_actual_task(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, ModelRun):
            continue
        served = served_task_before(run, index)
        if served is None:
            yield Violation("R-HST-001", event.where(), "the model ran before the service returned any task")
        elif event.task is None:
            yield Violation(
                "R-HST-001", event.where(), "the model was given text that is not the task's JSON"
            )
        elif event.task != served.reply:
            differing = sorted(k for k in {*event.task, *served.reply} if event.task.get(k) != served.reply.get(k)) \
                if isinstance(event.task, dict) and served.reply else ["the whole task"]  # fmt: skip
            yield Violation("R-HST-001", event.where(),
                            f"the model was not given the latest task served (differs in {', '.join(differing)})")  # fmt: skip


@rule("R-HST-002")
def refusal_cancelled_as_refusal(run: Run) -> Iterator[Violation]:
    yield from _cancel_outcome_after(run, REFUSAL_EXIT, "refusal", "R-HST-002", "a refusal")


@rule("R-HST-003")
def incomplete_cancelled_as_incomplete(run: Run) -> Iterator[Violation]:
    yield from _cancel_outcome_after(run, INCOMPLETE_EXIT, "incomplete", "R-HST-003", "an incomplete output")


def _cancel_outcome_after(run: Run, status: int, outcome: str, ident: str, what: str) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, ModelRun) or event.exit != status:
            continue
        job_id = job_of_model_run(run, index)
        if job_id is None:
            continue  # R-HST-001 reports a model run without a task
        following = next_action(run, index, job_id)
        if following is None:
            if job_was_active_after(run, index, job_id):
                yield Violation(
                    ident, event.where(), f"after {what} the host stopped without cancelling the job"
                )
            continue
        _, action = following
        if isinstance(action, Call) and action.tool == CANCEL_TOOL:
            given = action.arguments.get("outcome", "cancelled")
            if given != outcome:
                yield Violation(ident, action.where(run.connection_order),
                                f"{what} was cancelled with outcome {json.dumps(given)}, not {json.dumps(outcome)}")  # fmt: skip


@rule("R-HST-004")
def nothing_submitted_without_candidate(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, Call) or event.tool != ACCEPT_TOOL:
            continue
        before = model_run_before(run, index)
        if before is not None and before[1].exit != 0:
            kind = {REFUSAL_EXIT: "refused", INCOMPLETE_EXIT: "was incomplete"}.get(before[1].exit, "failed")
            text = event.arguments.get("candidateText")
            shown = "an empty string" if text == "" else f"{utf8_size(text)} bytes"
            yield Violation("R-HST-004", event.where(run.connection_order),
                            f"submitted {shown} although the model {kind} ({before[1].where()})")  # fmt: skip


@rule("R-HST-005")
def tokens_stay_on_their_connection(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, Call) or event.tool not in (ACCEPT_TOOL, CANCEL_TOOL):
            continue
        owners = job_known_on(run, index)
        owner = owners.get(event.job_id)
        if owner is not None and owner != event.connection:
            yield Violation("R-HST-005", event.where(run.connection_order),
                            "used a jobId issued on another connection")  # fmt: skip


@rule("R-HST-006")
def cancel_detail_fits(run: Run) -> Iterator[Violation]:
    for event in run.calls:
        if event.tool == CANCEL_TOOL and utf8_size(event.arguments.get("detail")) > DETAIL_LIMIT:
            yield Violation("R-HST-006", event.where(run.connection_order),
                            f"cancel detail of {utf8_size(event.arguments.get('detail'))} UTF-8 bytes (at most {DETAIL_LIMIT})")  # fmt: skip


@rule("R-HST-007")
def latest_tokens_used(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, Call) or event.tool != ACCEPT_TOOL:
            continue
        owners = job_known_on(run, index)
        if owners.get(event.job_id, event.connection) != event.connection:
            continue  # another connection's job: R-HST-005
        latest = latest_task_on(run, index, event.connection, event.job_id)
        if latest is None:
            yield Violation(
                "R-HST-007", event.where(run.connection_order), "submitted for a jobId no reply carried"
            )
        elif event.arguments.get("stepToken") != latest.get("stepToken"):
            earlier = any(
                isinstance(e, Call) and is_task(e.reply) and e.reply and e.reply.get("stepToken") == event.arguments.get("stepToken")
                for e in run.timeline[:index]
            )  # fmt: skip
            why = "an earlier task's stepToken" if earlier else "a stepToken no reply carried"
            yield Violation("R-HST-007", event.where(run.connection_order),
                            f"submitted with {why}, not the latest task's")  # fmt: skip


@rule("R-HST-008")
def stop_at_result(run: Run) -> Iterator[Violation]:
    finished: set[Any] = set()
    for event in run.calls:
        if event.tool == ACCEPT_TOOL and event.job_id in finished:
            yield Violation(
                "R-HST-008", event.where(run.connection_order), "submitted again after the job's result"
            )
        if isinstance(event.reply, dict) and event.reply.get("kind") == "result" and event.job_id is not None:
            finished.add(event.job_id)


@rule("R-HST-009")
def outcome_is_a_served_reply(run: Run) -> Iterator[Violation]:
    if run.faulted or run.host_exit != 0:
        return  # after a protocol-layer fault R-HST-012 judges the outcome
    printed = printed_reply(run)
    if (
        isinstance(printed, dict)
        and printed.get("kind") in ("result", "error")
        and printed not in served_replies(run)
    ):
        yield Violation(
            "R-HST-009", "outcome", f"printed a {printed.get('kind')} reply the service never returned"
        )


@rule("R-HST-010")
def size_rejection_resubmitted_on_same_task(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not (isinstance(event, Call) and event.tool == ACCEPT_TOOL and _size_rejected(event)):
            continue
        following = next((e for e in run.timeline[index + 1:] if isinstance(e, Call) and e.job_id == event.job_id
                          and e.tool == ACCEPT_TOOL), None)  # fmt: skip
        if following is not None and following.arguments.get("stepToken") != event.arguments.get("stepToken"):
            yield Violation("R-HST-010", following.where(run.connection_order),
                            "resubmitted after a size rejection with another stepToken than the rejected one")  # fmt: skip


def _size_rejected(call: Call) -> bool:
    reply = call.reply
    if not (isinstance(reply, dict) and reply.get("kind") == "error" and call.job_id in call.active):
        return False
    error = reply.get("error") or {}
    issues = error.get("issues") or []
    return error.get("code") == "LIMIT_EXCEEDED" and any(
        isinstance(i, dict) and i.get("path") in ("/candidateText", None) for i in issues
    )  # fmt: skip


@rule("R-HST-012")
def protocol_failures_handled(run: Run) -> Iterator[Violation]:
    if not run.faulted:
        return
    fault = next(call for call in run.calls if call.fault)
    where = fault.where(run.connection_order)
    if run.timed_out:
        yield Violation("R-HST-012", where, f"after a {fault.fault} the host did not come to an end")
    elif run.host_exit == 0:
        printed = printed_reply(run)
        if printed not in served_replies(run):
            yield Violation(
                "R-HST-012",
                where,
                f"after a {fault.fault} the host reported an outcome the service never returned",
            )


@rule("R-HST-013")
def stopping_releases_jobs(run: Run) -> Iterator[Violation]:
    for connection in run.connections.values():
        if connection.closed or connection.pid not in run.left_running:
            continue
        calls = [call for call in run.calls if call.connection == connection.name]
        active = calls[-1].active if calls else []
        if active:
            where = calls[-1].where(run.connection_order)
            yield Violation("R-HST-013", where, f"the host exited and left {len(active)} active job(s) on a server "
                                                f"it kept running (pid {connection.pid}): neither cancelled nor closed")  # fmt: skip


@rule("R-HST-014")
def complete_candidate_submitted(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, Call) or event.tool != ACCEPT_TOOL:
            continue
        before = model_run_before(run, index)
        if before is not None and before[1].exit != 0:
            continue  # R-HST-004
        served = served_task_before(run, index)
        if before is None or (served is not None and run.timeline.index(served) > before[0]):
            yield Violation("R-HST-014", event.where(run.connection_order),
                            "submitted a candidate the model did not produce for this task")  # fmt: skip
        elif not same_candidate(event.arguments.get("candidateText"), before[1].stdout):
            yield Violation("R-HST-014", event.where(run.connection_order),
                            f"the submitted text is not the complete candidate of {before[1].where()}")  # fmt: skip


@rule("R-HST-015")
def produced_candidate_submitted(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, ModelRun) or event.exit != 0:
            continue
        job_id = job_of_model_run(run, index)
        if job_id is None or not job_was_active_after(run, index, job_id):
            continue
        following = next_action(run, index, job_id)
        if following is None:
            yield Violation(
                "R-HST-015", event.where(), "the host stopped without submitting the candidate it was given"
            )
        elif isinstance(following[1], Call) and following[1].tool == CANCEL_TOOL:
            yield Violation("R-HST-015", following[1].where(run.connection_order),
                            "cancelled the job instead of submitting the candidate it was given")  # fmt: skip


@rule("R-HST-016")
def loop_runs_to_its_end(run: Run) -> Iterator[Violation]:
    """spec: R-HST-016 -- seed 000 (完整 Bridge 流程): the loop stops at a result or an error.
    Judged only where nothing gave the host a reason to stop: every model run answered, no call
    was faulted, the host ended on its own; a candidate it held and never submitted is R-HST-015's."""
    if run.timed_out or run.faulted or not reached_server(run) or any(m.exit != 0 for m in run.model_runs):
        return
    if not run.calls:
        yield Violation("R-HST-016", "outcome", f"the host connected, prepared no job and exited with status {run.host_exit}")
        return
    last = len(run.timeline) - 1 - next(i for i, e in enumerate(reversed(run.timeline)) if isinstance(e, Call))
    call = run.timeline[last]
    assert isinstance(call, Call)
    task = call.reply
    if task is not None and is_task(task) and not any(isinstance(e, ModelRun) for e in run.timeline[last + 1:]):
        yield Violation("R-HST-016", call.where(run.connection_order),
                        f"the host stopped on this {task.get('stage')} task: it ran no model for it, submitted "
                        f"nothing and exited with status {run.host_exit}")  # fmt: skip


@rule("D-HST-001")
def host_contract(run: Run) -> Iterator[Violation]:
    if not reached_server(run):  # it cannot be judged by what it did: it did nothing (issue 38)
        ended = "was stopped at the time limit" if run.timed_out else f"exited with status {run.host_exit}"
        yield Violation("D-HST-001", "outcome", f"the host never reached the server: it {ended}")
        return
    if run.timed_out and not run.faulted:
        yield Violation("D-HST-001", "outcome", "the host did not exit within the time limit")
    if run.host_exit == 0:
        printed = printed_reply(run)
        if not (isinstance(printed, dict) and printed.get("kind") in ("result", "error")):
            yield Violation(
                "D-HST-001", "outcome", "exited 0 without printing a result or error BridgeReply as JSON"
            )


@rule("D-HST-003")
def failing_model_cancelled(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not isinstance(event, ModelRun) or event.exit in (0, REFUSAL_EXIT, INCOMPLETE_EXIT):
            continue
        job_id = job_of_model_run(run, index)
        following = next_action(run, index, job_id)
        action = following[1] if following else None
        if not (isinstance(action, Call) and action.tool == CANCEL_TOOL
                and action.arguments.get("outcome", "cancelled") == "cancelled"):  # fmt: skip
            yield Violation(
                "D-HST-003",
                event.where(),
                "after a failing model the job was not cancelled with outcome cancelled",
            )
        if run.host_exit == 0:
            yield Violation(
                "D-HST-003", "outcome", "after a failing model the host exited 0 instead of non-zero"
            )


@rule("D-HST-004")
def size_rejection_retried(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if isinstance(event, Call) and event.tool == ACCEPT_TOOL and _size_rejected(event):
            following = next_action(run, index, event.job_id)
            if following is None or not isinstance(following[1], ModelRun):
                yield Violation("D-HST-004", event.where(run.connection_order),
                                f"after a size rejection the host did not ask its model again for that job: "
                                f"{what_followed(following)}")  # fmt: skip


@rule("D-HST-005")
def protocol_failure_cancels(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not (isinstance(event, Call) and event.fault):
            continue
        if event.active and event.tool != CANCEL_TOOL:  # a faulted cancel was the host's release already
            job_id = event.active[0]
            following = next_action(run, index, job_id)
            action = following[1] if following else None
            if not (isinstance(action, Call) and action.tool == CANCEL_TOOL and action.job_id == job_id):
                yield Violation("D-HST-005", event.where(run.connection_order),
                                "after a protocol-layer failure the active job was not cancelled")  # fmt: skip
        if run.host_exit == 0:
            yield Violation("D-HST-005", "outcome", "after a protocol-layer failure the host exited 0")
        return


@rule("D-HST-006")
def long_detail_cut_as_prefix(run: Run) -> Iterator[Violation]:
    for index, event in enumerate(run.timeline):
        if not (isinstance(event, Call) and event.tool == CANCEL_TOOL and "detail" in event.arguments):
            continue
        before = model_run_before(run, index)
        if before is None or before[1].exit not in (REFUSAL_EXIT, INCOMPLETE_EXIT):
            continue
        detail = event.arguments.get("detail")
        if utf8_size(detail) <= DETAIL_LIMIT and detail != utf8_prefix(before[1].stdout):
            yield Violation("D-HST-006", event.where(run.connection_order),
                            "the detail is not the model's reason cut to 2048 UTF-8 bytes at a character boundary")  # fmt: skip


def outcome_of(run: Run) -> tuple[str, str | None]:
    """How the host ended: ("result" | "error" | "no reply" | "did not exit" | "not a reply", error code)."""
    if run.timed_out:
        return "did not exit", None
    if run.host_exit != 0:
        return "no reply", None
    printed = printed_reply(run)
    if not isinstance(printed, dict) or printed.get("kind") not in REPLY_KINDS:
        return "not a reply", None
    kind = str(printed["kind"])
    error = printed.get("error")
    code = error.get("code") if kind == "error" and isinstance(error, dict) else None
    return kind, code if isinstance(code, str) else None


def expected_outcome(run: Run, expect: dict[str, Any]) -> Iterator[Violation]:
    """D-HST-009: the outcome the scenario says the reference host reaches."""
    if run.timed_out:
        return  # D-HST-001 or R-HST-012 reports it
    wanted, wanted_code = expect.get("outcome"), expect.get("code")
    got, code = outcome_of(run)
    if got != wanted or (wanted == "error" and wanted_code not in (None, code)):
        shown = f"{got} {code}" if code else got
        wanted_shown = f"{wanted} {wanted_code}" if wanted_code else str(wanted)
        yield Violation("D-HST-009", "outcome", f"ended with {shown}; the reference host ends with {wanted_shown}")


def judge_run(run: Run, expect: dict[str, Any] | None = None) -> list[Violation]:
    found: list[Violation] = []
    for function in RULES.values():
        found.extend(function(run))
    if expect is not None:
        found.extend(expected_outcome(run, expect))
    return found


# --------------------------------------------------------------------------- R-HST-011


def action_signature(run: Run) -> list[str]:
    """What the host did, with everything a wording cannot change and nothing it can."""
    signature: list[str] = []
    for index, event in enumerate(run.timeline):
        if isinstance(event, ModelRun):
            signature.append(f"model run {event.number + 1}")
            continue
        if event.tool == ACCEPT_TOOL:
            before = model_run_before(run, index)
            source = (
                before[1].where()
                if before and same_candidate(event.arguments.get("candidateText"), before[1].stdout)
                else "other text"
            )
            latest = latest_task_on(run, index, event.connection, event.job_id)
            token = (
                "latest token"
                if latest and latest.get("stepToken") == event.arguments.get("stepToken")
                else "other token"
            )
            signature.append(f"accept {source}, {token}")
        elif event.tool == CANCEL_TOOL:
            signature.append(f"cancel {event.arguments.get('outcome', 'cancelled')}")
        else:
            signature.append(event.tool)
    kind, code = outcome_of(run)
    signature.append(f"ended with {kind} {code or ''}".strip())
    return signature


def compare_wordings(reference: Run, alternate: Run) -> list[Violation]:
    first, second = action_signature(reference), action_signature(alternate)
    if first == second:
        return []
    step = next(
        (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
        min(len(first), len(second)),
    )
    did_a = first[step] if step < len(first) else "nothing more"
    did_b = second[step] if step < len(second) else "nothing more"
    return [Violation("R-HST-011", f"step {step + 1}",
                      f"with the reference wording the host did {json.dumps(did_a)}, with another wording {json.dumps(did_b)}")]  # fmt: skip
