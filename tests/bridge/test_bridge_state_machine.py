"""A Hypothesis state machine: several sessions against a plain model of the Bridge.

The model is written from the decisions (spec/decisions-bridge.md), not from bridge.py: it
keeps jobs as dicts, judges candidates with its own deep copy of a core Job (the core is
the part under test elsewhere), predicts every reply, and recomputes the byte count from
the replies it has seen.  Invariants: the Bridge's counters equal the model's, no active
job ever disappears except by closing its session, every replay is identical to the byte,
and another session's job is not found.

The default run takes at least 2,000 steps; INTENTREF_LONG=1 selects a profile of at least
50,000 steps.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from bridge_helpers import CORE_TEXT, DATA_MISSING_TEXT, DATA_TEXT, ORDER_CORE, ORDER_SCHEMA, wire
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from intentref import Intent
from intentref.bridge import BridgeClosedError, BridgeSession, create_intent_bridge
from intentref.core.job import Job
from intentref.core.limits import MAX_CANDIDATE_BYTES
from intentref.core.task import Task
from intentref.core.writer import REFERENCE_WRITER

LONG = os.environ.get("INTENTREF_LONG") == "1"
MIN_STEPS = 50_000 if LONG else 2_000
SETTINGS = settings(
    max_examples=1_200 if LONG else 60,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
    derandomize=not LONG,  # the default run is the same every time; the long one explores
)

TOKEN_LENGTH = 22  # D-BRG-006
DIGEST = 32  # D-BRG-011
PLACEHOLDER = "x" * TOKEN_LENGTH
OVERSIZE = '"' + "x" * MAX_CANDIDATE_BYTES + '"'
CANDIDATES = {
    "core": CORE_TEXT,
    "core-reformatted": json.dumps(ORDER_CORE, ensure_ascii=False, indent=1),
    "data": DATA_TEXT,
    "data-missing": DATA_MISSING_TEXT,
    "bad-json": "{",
    "big-bad-json": "{" + "y" * 6_000,
    "oversize": OVERSIZE,
}
# Repeats weight the draws towards requests that open jobs.
INPUTS = ["查询订单 000123", "查询订单 000123", "查询订单 000123", "查询订单", "  "]
INSTANCES = ["order", "order", "plain", "missing"]
MAX_SESSIONS = 8


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _task(job_id: str, token: str, task: Task) -> dict[str, Any]:
    # The shadow jobs are the reference's own, so the reference's writer writes their tasks.
    return {"kind": "task", "jobId": job_id, "stepToken": token, "stage": task.stage,
            **REFERENCE_WRITER.model_request(task)}  # fmt: skip


@dataclass
class MJob:
    job_id: str
    owner: int
    shadow: Job | None  # the model's own core Job while active
    token: str
    task_text: str  # wire form of the current task reply while active
    steps: dict[str, tuple[str, str]] = field(default_factory=dict)  # token -> (candidate, reply wire)
    end_text: str | None = None  # terminal reply when ended without a submission

    @property
    def active(self) -> bool:
        return self.shadow is not None

    def nbytes(self) -> int:
        total = sum(DIGEST + _size(reply) for _, reply in self.steps.values())
        if self.active:
            total += _size(self.task_text)
        if self.end_text is not None:
            total += _size(self.end_text)
        return total

    def terminal_text(self) -> str:
        if self.end_text is not None:
            return self.end_text
        return self.steps[self.token][1]


class BridgeMachine(RuleBasedStateMachine):
    steps_run = 0
    seen: Counter[str] = Counter()  # which branches the run reached, checked at the end

    def __init__(self) -> None:
        super().__init__()
        self.intents = {
            "order": Intent({"language": "zh-CN", "schema": ORDER_SCHEMA, "repairAttempts": 1}),
            "plain": Intent({"language": "zh-CN", "repairAttempts": 0}),
        }
        self.sessions: list[BridgeSession] = []
        self.closed: set[int] = set()
        self.jobs: dict[str, MJob] = {}  # retained records
        self.gone: list[MJob] = []  # jobs the model has dropped: they must be not found
        self.terminal: OrderedDict[str, None] = OrderedDict()  # termination order
        # Insertion-ordered (a dict, not a set): tokens are random, so any order derived from
        # their values would make Hypothesis draw differently on a replay.
        self.tokens_seen: dict[str, None] = {}

    # --- set-up ----------------------------------------------------------------------------

    @initialize(
        # Hypothesis leans towards the first choice and towards 0: common cases go first.
        max_jobs=st.sampled_from([3, 2, 1, 4]),
        max_entries=st.sampled_from([4, 6, 2, 1, 3, 5]),
        # A fresh core task is about 3.9 kB, a data step about 7 kB (two copies of a data task).
        max_bytes=st.sampled_from([10**7, 60_000, 25_000, 14_000, 9_000, 4_500]),
    )
    def build(self, max_jobs: int, max_entries: int, max_bytes: int) -> None:
        self.max_jobs, self.max_entries, self.max_bytes = max_jobs, max_entries, max_bytes
        self.bridge = create_intent_bridge({"instances": self.intents, "maxJobs": max_jobs,
                                            "maxReplayEntries": max_entries, "maxReplayBytes": max_bytes})  # fmt: skip
        self.sessions = [self.bridge.connect(), self.bridge.connect()]

    def _count(self) -> None:
        BridgeMachine.steps_run += 1

    def _saw(self, branch: str) -> None:
        BridgeMachine.seen[branch] += 1

    # --- model helpers ---------------------------------------------------------------------

    def _active(self) -> list[MJob]:
        return [job for job in self.jobs.values() if job.active]

    def _active_bytes(self) -> int:
        return sum(job.nbytes() for job in self._active())

    def _total_bytes(self) -> int:
        return sum(job.nbytes() for job in self.jobs.values())

    def _reclaim(self) -> None:
        while self.terminal and (self._total_bytes() > self.max_bytes or len(self.jobs) > self.max_entries):
            job_id, _ = self.terminal.popitem(last=False)
            self.gone.append(self.jobs.pop(job_id))
            self._saw("reclaimed")

    def _new_token(self, token: str) -> None:
        assert len(token) == TOKEN_LENGTH
        assert token not in self.tokens_seen
        self.tokens_seen[token] = None

    def _pick_job(self, data: st.DataObject) -> tuple[str, MJob | None]:
        """Mostly a retained job, sometimes a dropped one, rarely one never issued."""
        roll = data.draw(st.integers(0, 9))
        retained = list(self.jobs.values())
        if retained and roll <= 6:
            job = data.draw(st.sampled_from(retained[::-1]))  # the newest first
        elif self.gone and roll <= 8:
            job = data.draw(st.sampled_from(self.gone))
        else:
            return "never-issued-job-id-0000", None
        return job.job_id, job

    def _open(self) -> list[int]:
        return [i for i in range(len(self.sessions)) if i not in self.closed]

    def _pick_session(self, data: st.DataObject, job: MJob | None) -> int:
        """Mostly the job's owner, sometimes another open session, rarely a closed one."""
        roll = data.draw(st.integers(0, 9))
        if roll == 9 or not self._open():
            return data.draw(st.integers(0, len(self.sessions) - 1))
        if roll >= 7 or job is None:
            return data.draw(st.sampled_from(self._open()))
        return job.owner

    # --- rules -----------------------------------------------------------------------------

    @precondition(lambda self: len(self.sessions) < MAX_SESSIONS and len(self._open()) < 3)
    @rule()
    def connect(self) -> None:
        self._count()
        self.sessions.append(self.bridge.connect())

    @precondition(lambda self: len(self._open()) >= 2)
    @rule(data=st.data())
    def close_session(self, data: st.DataObject) -> None:
        self._count()
        index = data.draw(st.sampled_from(self._open()))
        self.sessions[index].close()
        self.closed.add(index)
        for job_id in [j for j, job in self.jobs.items() if job.owner == index]:
            self.terminal.pop(job_id, None)
            self.gone.append(self.jobs.pop(job_id))

    @rule(data=st.data(), instance=st.sampled_from(INSTANCES), text=st.sampled_from(INPUTS))
    def prepare(self, data: st.DataObject, instance: str, text: str) -> None:
        self._count()
        index = self._pick_session(data, None)
        session = self.sessions[index]
        request = {"instance": instance, "input": text}
        if index in self.closed:
            try:
                session.prepare(request)
            except BridgeClosedError:
                return
            raise AssertionError("prepare on a closed session must raise")
        reply = session.prepare(request)
        if instance == "missing":
            assert reply["error"]["code"] == "BRIDGE_INSTANCE_NOT_FOUND"
            return
        if not text.strip():
            assert reply["error"]["code"] == "INPUT_INVALID" and reply["error"]["stage"] == "input"
            return
        shadow = self.intents[instance].start({"input": text})
        size = _size(wire(_task(PLACEHOLDER, PLACEHOLDER, shadow.task)))
        active = len(self._active())
        if (
            active >= self.max_jobs
            or active >= self.max_entries
            or self._active_bytes() + size > self.max_bytes
        ):
            assert reply["kind"] == "error", reply
            assert reply["error"]["code"] == "LIMIT_EXCEEDED" and reply["error"]["stage"] == "bridge"
            self._saw("limit: prepare")
            return
        assert reply["kind"] == "task", reply
        assert reply == _task(reply["jobId"], reply["stepToken"], shadow.task)
        self._new_token(reply["jobId"])
        self._new_token(reply["stepToken"])
        self.jobs[reply["jobId"]] = MJob(reply["jobId"], index, shadow, reply["stepToken"], wire(reply))
        self._reclaim()

    @precondition(lambda self: bool(self.jobs or self.gone))
    @rule(data=st.data(), kind=st.sampled_from(["fitting", "fitting", "fitting", *CANDIDATES]))
    def accept(self, data: st.DataObject, kind: str) -> None:
        self._count()
        job_id, job = self._pick_job(data)
        index = self._pick_session(data, job)
        token_choice = data.draw(
            st.sampled_from(["current", "current", "current", "used", "foreign", "invented"])
        )
        token = "invented-token-0000000"
        if job is not None and token_choice == "current":
            token = job.token
        elif job is not None and token_choice == "used" and job.steps:
            token = data.draw(st.sampled_from(list(job.steps)))
        elif token_choice == "foreign" and self.tokens_seen:
            token = data.draw(st.sampled_from(list(self.tokens_seen)))
        if kind == "fitting":  # the valid candidate for the job's stage, so that jobs finish
            stage = job.shadow.stage if job is not None and job.shadow is not None else "core"
            kind = "core" if stage == "core" else "data"
        text = CANDIDATES[kind]
        if job is not None and token in job.steps and data.draw(st.integers(0, 3)) < 3:
            text = job.steps[token][0]  # an identical resubmission
        reply = self.sessions[index].accept({"jobId": job_id, "stepToken": token, "candidateText": text})
        self._judge_accept(reply, index, job_id, token, text)

    @precondition(lambda self: any(job.owner not in self.closed for job in self._active()))
    @rule(data=st.data(), kind=st.sampled_from(["fitting"] * 6 + ["data-missing", "bad-json", "oversize"]))
    def advance(self, data: st.DataObject, kind: str) -> None:
        """The owner answers an active job's open step, mostly with the valid candidate.

        Without it, finishing needs several lucky draws of accept in a row, and results (then
        their replays and cancels), oversize candidates and faults on a live step would be too
        rare to be checked on every run.
        """
        self._count()
        job = data.draw(st.sampled_from([job for job in self._active() if job.owner not in self.closed]))
        assert job.shadow is not None
        if kind == "fitting":
            kind = "core" if job.shadow.stage == "core" else "data"
        text = CANDIDATES[kind]
        reply = self.sessions[job.owner].accept({"jobId": job.job_id, "stepToken": job.token, "candidateText": text})
        self._judge_accept(reply, job.owner, job.job_id, job.token, text)

    @precondition(lambda self: any(job.steps for job in self.jobs.values()))
    @rule(data=st.data())
    def resubmit(self, data: st.DataObject) -> None:
        """An identical resubmission of some used step by its owner: the replay path."""
        self._count()
        job = data.draw(st.sampled_from([job for job in self.jobs.values() if job.steps]))
        token = data.draw(st.sampled_from(list(job.steps)))
        text = job.steps[token][0]
        reply = self.sessions[job.owner].accept(
            {"jobId": job.job_id, "stepToken": token, "candidateText": text}
        )
        self._judge_accept(reply, job.owner, job.job_id, token, text)

    def _judge_accept(self, reply: dict[str, Any], index: int, job_id: str, token: str, text: str) -> None:
        job = self.jobs.get(job_id)
        if index in self.closed or job is None or job.owner != index:
            assert reply["kind"] == "error" and reply["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", reply
            if index in self.closed:
                self._saw("accept: closed session")
            elif job is None:
                self._saw("accept: not found")
            else:
                self._saw("accept: foreign")
            return
        if token in job.steps:
            candidate, stored = job.steps[token]
            if candidate == text:
                assert wire(reply) == stored  # the replay is identical to the byte
                self._saw(f"replay: {reply['kind']}")
            else:
                assert reply["error"]["code"] == "BRIDGE_STEP_CONFLICT", reply
                self._saw("conflict: used token")
            return
        if token != job.token:
            assert reply["error"]["code"] == "BRIDGE_STEP_CONFLICT", reply
            self._saw("conflict: other token")
            return
        if job.shadow is None:
            assert wire(reply) == job.terminal_text()
            self._saw("accept: open step of an ended job")
            return
        self._judge_submission(reply, job, text)

    def _judge_submission(self, reply: dict[str, Any], job: MJob, text: str) -> None:
        assert job.shadow is not None
        if len(text.encode("utf-8")) > MAX_CANDIDATE_BYTES:
            assert reply["error"]["code"] == "LIMIT_EXCEEDED", reply
            assert reply["error"]["stage"] == job.shadow.stage
            self._saw("limit: oversize")
            return
        trial = copy.deepcopy(job.shadow)
        outcome = trial.submit(text)
        if outcome.task is not None:
            predicted: dict[str, Any] = _task(job.job_id, PLACEHOLDER, outcome.task)
        elif outcome.result is not None:
            predicted = {"kind": "result", "result": outcome.result}
        else:
            assert outcome.failure is not None
            predicted = {"kind": "error", "error": outcome.failure.to_json()}
        size = _size(wire(predicted))
        new_size = job.nbytes() - (_size(job.task_text)) + DIGEST + size + (size if outcome.task else 0)
        if self._active_bytes() - job.nbytes() + new_size > self.max_bytes:
            assert reply["kind"] == "error", reply
            assert reply["error"]["code"] == "LIMIT_EXCEEDED" and reply["error"]["stage"] == "bridge"
            self._saw("limit: step does not fit")
            return
        self._saw(f"submit: {predicted['kind']}")
        if outcome.task is not None:
            assert reply["kind"] == "task"
            self._new_token(reply["stepToken"])
            assert reply == {**predicted, "stepToken": reply["stepToken"]}
        else:
            assert reply == predicted
        job.steps[job.token] = (text, wire(reply))
        if outcome.task is not None:
            job.shadow = trial
            job.token = reply["stepToken"]
            job.task_text = wire(reply)
        else:
            job.shadow = None
            self.terminal[job.job_id] = None
        self._reclaim()

    @precondition(lambda self: bool(self.jobs or self.gone))
    @rule(
        data=st.data(),
        outcome=st.sampled_from([None, "cancelled", "refusal", "incomplete"]),
        detail=st.sampled_from([None, "", "用户停止", "中" * 682, "中" * 683]),
    )
    def cancel(self, data: st.DataObject, outcome: str | None, detail: str | None) -> None:
        self._count()
        job_id, job = self._pick_job(data)
        ended = [job for job in self.jobs.values() if not job.active]
        if ended and data.draw(st.integers(0, 2)) == 0:  # often a finished job: R-CAN-008
            job = data.draw(st.sampled_from(ended))
            job_id = job.job_id
        index = self._pick_session(data, job)
        request: dict[str, Any] = {"jobId": job_id}
        if outcome is not None:
            request["outcome"] = outcome
        if detail is not None:
            request["detail"] = detail
        reply = self.sessions[index].cancel(request)
        if detail is not None and len(detail.encode("utf-8")) > 2048:
            assert reply["error"]["code"] == "INPUT_INVALID" and reply["error"]["stage"] == "bridge"
            return
        job = self.jobs.get(job_id)
        if index in self.closed or job is None or job.owner != index:
            assert reply["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", reply
            return
        if job.shadow is None:
            assert wire(reply) == job.terminal_text()
            self._saw(f"cancel: terminal {reply['kind']}")
            return
        expected = job.shadow.cancel(outcome or "cancelled", detail)
        assert reply == {"kind": "error", "error": expected.to_json()}
        job.shadow = None
        job.end_text = wire(reply)
        self.terminal[job_id] = None
        self._reclaim()

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def counters_match_the_model(self) -> None:
        if not hasattr(self, "bridge"):
            return
        stats = self.bridge.stats()
        assert stats == {"activeJobs": len(self._active()), "records": len(self.jobs),
                         "replayBytes": self._total_bytes()}  # fmt: skip
        assert stats["activeJobs"] <= self.max_jobs
        assert stats["records"] <= self.max_entries
        assert stats["replayBytes"] <= self.max_bytes

    @invariant()
    def no_active_job_is_evicted(self) -> None:
        # The model drops an active job only when its session closes; the Bridge must agree.
        assert all(not job.active for job in self.gone if job.owner not in self.closed)
        if hasattr(self, "bridge"):
            retained = self.bridge._store.records  # a read-only peek, for the invariant only
            assert all(job.job_id in retained for job in self._active())
            assert all(job.job_id not in retained for job in self.gone)
            # A session holds the ids of exactly its retained jobs: a reclaimed or dropped
            # record leaves nothing behind in its owner, so close() releases only its own (D-BRG-005).
            for index, session in enumerate(self.sessions):
                owned = {job.job_id for job in self.jobs.values() if job.owner == index}
                assert set(session._job_ids) == owned  # a read-only peek, as above


EXPECTED_BRANCHES = {
    "accept: foreign", "accept: not found", "replay: task", "replay: result", "replay: error",
    "conflict: used token", "conflict: other token", "accept: open step of an ended job", "limit: oversize",
    "limit: step does not fit", "submit: task", "submit: result", "submit: error", "reclaimed",
    "limit: prepare", "cancel: terminal result", "cancel: terminal error",
}  # fmt: skip


def test_bridge_state_machine() -> None:
    BridgeMachine.steps_run = 0
    BridgeMachine.seen.clear()
    run_state_machine_as_test(BridgeMachine, settings=SETTINGS)
    print(f"{BridgeMachine.steps_run} steps;", dict(sorted(BridgeMachine.seen.items())))
    assert BridgeMachine.steps_run >= MIN_STEPS, BridgeMachine.steps_run
    # A run that never reaches a branch checks nothing about it.
    assert set(BridgeMachine.seen) >= EXPECTED_BRANCHES, EXPECTED_BRANCHES - set(BridgeMachine.seen)
