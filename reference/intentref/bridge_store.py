"""The Bridge's ledger of jobs: every record it keeps, the rules that keep them, and the replies it retains.

The state every session of one Bridge shares (``JobStore``): records, used steps, retained
replies, the capacity budget, reclamation and the legacy clocks.  The sessions
(``intentref.bridge``) call the store, which never calls them back.  Each Bridge decision
(D-BRG-*) is a ``JobStore`` method of its own; a decision variant swaps some of them
(``intentref.suite.alterations.alteration.extend``), never a flag read inside a rule.

Decisions cited as ``D-BRG-NNN`` are written down in ``spec/decisions-bridge.md``.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import math
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple, Protocol, TypeVar

from intentref.core.errors import IntentParseError, error, self_issue
from intentref.core.job import Job, Outcome
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import (
    DEFAULT_MAX_JOBS,
    DEFAULT_MAX_REPLAY_BYTES,
    DEFAULT_MAX_REPLAY_ENTRIES,
    MAX_OPTION_VALUE,
)
from intentref.core.policy import Policy
from intentref.core.task import Task
from intentref.core.writer import Writer
from intentref.intent import Intent, config_error

BridgeReply = dict[str, Any]
Clock = Callable[[], float]
T = TypeVar("T")

# spec: R-CAP-001 -- the BridgeConfig's capacity and TTL members (D-BRG-014).
CAPACITY_OPTIONS: Final = ("maxJobs", "maxReplayEntries", "maxReplayBytes")
TTL_OPTIONS: Final = ("jobTtlMs", "replayTtlMs")
_DEFAULTS: Final = {
    "maxJobs": DEFAULT_MAX_JOBS,
    "maxReplayEntries": DEFAULT_MAX_REPLAY_ENTRIES,
    "maxReplayBytes": DEFAULT_MAX_REPLAY_BYTES,
    "jobTtlMs": 0,  # spec: R-CAP-003 -- no time-based expiry unless asked for
    "replayTtlMs": 0,
}

# D-BRG-006: 16 random bytes = 128 bits, written as 22 URL-safe characters.
TOKEN_BYTES: Final = 16
# D-BRG-011: each used step keeps the SHA-256 digest of its candidate text.
DIGEST_BYTES: Final = hashlib.sha256().digest_size

# D-BRG-003: one message for "never existed", "another session's" and "reclaimed", so the
# answer cannot tell a caller which of them it is.
NOT_FOUND_MESSAGE: Final = "No job with this jobId belongs to this session."
CONFLICT_MESSAGE: Final = "stepToken is not the job's current step, or that step was already submitted with a different candidateText."


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class BridgeOptions:
    """A checked BridgeConfig (spec: R-CAP-001)."""

    instances: Mapping[str, Intent]
    max_jobs: int
    max_replay_entries: int
    max_replay_bytes: int
    job_ttl_ms: int
    replay_ttl_ms: int


class JobOwner(Protocol):
    """What the store needs of a session (``intentref.bridge.JobOwner``): the jobs it holds."""

    _job_ids: set[str]

    @property
    def closed(self) -> bool: ...


# --------------------------------------------------------------------------- replies


def error_reply(exc: IntentParseError, writer: Writer) -> BridgeReply:
    """The one place an IntentParseError becomes a BridgeReply (spec: R-RPY-004)."""
    return {"kind": "error", "error": writer.error(exc)}


def _task_reply(job_id: str, token: str, task: Task, expires_at: str | None, writer: Writer) -> BridgeReply:
    # spec: R-RPY-002 -- the members in the seed's order; expiresAt last and only with a TTL.
    reply: BridgeReply = {"kind": "task", "jobId": job_id, "stepToken": token, "stage": task.stage,
                          **writer.model_request(task)}  # fmt: skip
    if expires_at is not None:  # spec: R-RPY-008, R-RPY-009
        reply["expiresAt"] = expires_at
    return reply


def _outcome_reply(job_id: str, outcome: Outcome, expires_at: str | None,
                   writer: Writer) -> tuple[BridgeReply, str | None]:  # fmt: skip
    """The reply to a judged submission, and the new stepToken when it is a task."""
    if outcome.task is not None:
        token = _new_token()  # spec: R-LIF-011 -- every new step has its own token
        return _task_reply(job_id, token, outcome.task, expires_at, writer), token
    if outcome.result is not None:
        return {"kind": "result", "result": outcome.result}, None
    assert outcome.failure is not None
    return error_reply(outcome.failure, writer), None


def stored_reply(reply: BridgeReply) -> bytes:
    """The retained form of a reply: its compact JSON as UTF-8 (D-BRG-007, D-BRG-011).

    Bytes, not str: a str of mostly-ASCII text with some Chinese is held at two bytes a
    character, so the UTF-8 form is both what maxReplayBytes counts and what memory holds.
    ``surrogatepass`` keeps a lone surrogate (a repair task may quote one) as three bytes.
    """
    return dumps_compact(reply).encode("utf-8", "surrogatepass")


class _RetainedReply(dict[str, Any]):
    """A reply decoded from its retained bytes, still holding that compact JSON (D-BRG-021)."""

    __slots__ = ("json_text",)
    json_text: str


def fresh_reply(stored: bytes) -> BridgeReply:
    # Every caller gets its own objects: a retained reply must not change because one caller
    # edited what it was given, and no reply may alias the core's shared schema objects.
    # The text is decoded with surrogatepass, the mirror of stored_reply.
    text = stored.decode("utf-8", "surrogatepass")
    reply = _RetainedReply(json.loads(text))
    reply.json_text = text
    return reply


def retained_json(reply: BridgeReply) -> str | None:
    """The compact JSON ``reply`` was decoded from, when it came straight from a Bridge call.

    D-BRG-021: an adapter that sends a reply as JSON text (the MCP envelope) can send this
    instead of encoding the reply again.  It is exact only while the reply is unedited, so
    only the code that received the reply from the Bridge should use it.
    """
    return reply.json_text if isinstance(reply, _RetainedReply) else None


def bridge_error(code: str, path: str | None, message: str) -> IntentParseError:
    """An error of stage bridge whose one issue files its own code at ``path``."""
    return error(code, "bridge", message, [self_issue(code, path, message)])


def not_found_error() -> IntentParseError:
    return bridge_error("BRIDGE_JOB_NOT_FOUND", "/jobId", NOT_FOUND_MESSAGE)


def _limit(path: str | None, message: str) -> IntentParseError:
    return bridge_error("LIMIT_EXCEEDED", path, message)


# --------------------------------------------------------------------------- tokens and time


def _new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_bytes(token: str) -> bytes:
    # compare_digest refuses non-ASCII str; a caller's token may hold anything, even a lone
    # surrogate, so both sides are compared as bytes (D-BRG-006).
    return token.encode("utf-8", "surrogatepass")


def candidate_digest(candidate_text: str) -> bytes:
    # D-BRG-007: the exact submitted string, lone surrogates included (spec: R-IDM-002).
    return hashlib.sha256(candidate_text.encode("utf-8", "surrogatepass")).digest()


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def iso_timestamp(epoch_ms: float) -> str:
    """``new Date(epoch_ms).toISOString()``: UTC, milliseconds, a trailing Z (spec: R-RPY-009)."""
    moment = _EPOCH + timedelta(milliseconds=math.floor(epoch_ms))
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


# --------------------------------------------------------------------------- the store


class UsedStep(NamedTuple):
    """One used stepToken: what was submitted (by digest) and what it was answered."""

    token: bytes
    digest: bytes
    reply: bytes  # the retained reply, as stored_reply wrote it


class JobRecord:
    """Everything the Bridge keeps about one job (spec: R-CAP-008 -- one record per job)."""

    __slots__ = ("end", "expires_at", "job", "job_id", "nbytes", "owner", "steps", "token")

    def __init__(self, job_id: str, owner: JobOwner, job: Job, token: str, task_bytes: int,
                 expires_at: str | None) -> None:  # fmt: skip
        # task_bytes: the first task reply's JSON size, counted while the job is active.
        self.job_id = job_id
        self.owner = owner
        self.job: Job | None = job  # None once terminal: the Job's memory goes with it
        self.token = token_bytes(token)  # the current step's token; the last one once terminal
        self.expires_at = expires_at
        self.steps: list[UsedStep] = []
        # The terminal reply of a job that ended without a submission (cancel, expiry).
        self.end: bytes | None = None
        self.nbytes = task_bytes

    @property
    def active(self) -> bool:
        return self.job is not None

    def terminal_reply(self) -> bytes:
        if self.end is not None:
            return self.end
        return self.steps[-1].reply  # ended by its last submission


def _record_bytes(steps: list[UsedStep], task_bytes: int, end: bytes | None) -> int:
    # D-BRG-011: exactly what maxReplayBytes counts for one record.
    return (
        sum(DIGEST_BYTES + len(step.reply) for step in steps) + task_bytes + (0 if end is None else len(end))
    )


def _find_step(steps: list[UsedStep], token: bytes) -> UsedStep | None:
    found = None
    for step in steps:  # every used token is compared, so timing says nothing about which matched
        if hmac.compare_digest(step.token, token):
            found = step
    return found


def _fork(job: Job) -> Job:
    """A copy of ``job`` that can judge one submission while the original stays untouched.

    D-BRG-010: the core mutates only a Job's own attributes and the containers they hold
    directly (``repairs_used``), so a shallow copy with fresh top-level containers is a
    complete snapshot at a fraction of ``copy.deepcopy``'s cost.
    """
    clone = copy.copy(job)
    for name, value in vars(job).items():
        if isinstance(value, dict | list | set):
            setattr(clone, name, copy.copy(value))
    return clone


class JobStore:
    """The state every session of one Bridge shares (spec: R-CAP-005, R-CAP-006), and its rules."""

    def __init__(self, options: BridgeOptions, clock: Clock, wall_clock: Clock, policy: Policy) -> None:
        self.options = options
        self.policy = policy
        self.clock = clock
        self.wall_clock = wall_clock
        self.closed = False
        self.records: dict[str, JobRecord] = {}
        # Active job ids in creation order, with their monotonic deadline (0: none).  One TTL
        # for all jobs makes creation order deadline order, so expiry pops from the front.
        self.active: OrderedDict[str, float] = OrderedDict()
        # Terminal job ids in termination order, with the time they ended: reclamation and the
        # replay TTL both pop from the front, O(1) each (spec: R-CAP-011, D-BRG-013).
        self.terminal: OrderedDict[str, float] = OrderedDict()
        self.active_bytes = 0
        self.total_bytes = 0

    # --- reading the BridgeConfig (D-BRG-014, D-LIM-001) -----------------------------------

    @classmethod
    def read_options(cls, config: Mapping[str, Any], policy: Policy) -> list[int]:
        """The capacity options then the TTLs, in BridgeConfig order; the first fault is raised."""
        wanted = [(name, 1) for name in CAPACITY_OPTIONS] + [(name, 0) for name in TTL_OPTIONS]
        return [cls.read_option(config, name, minimum, policy) for name, minimum in wanted]

    @classmethod
    def read_option(cls, config: Mapping[str, Any], name: str, minimum: int, policy: Policy) -> int:
        defaults = {**_DEFAULTS, "maxJobs": policy.default_max_jobs, "maxReplayEntries": policy.default_max_replay_entries,
                    "maxReplayBytes": policy.default_max_replay_bytes}  # fmt: skip
        value = config.get(name, defaults[name])
        # D-BRG-014: bool is an int subclass and a float is not an integer to Python, so both are
        # refused even when integral; a JavaScript host never writes 3.0 (JSON.stringify gives 3).
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_OPTION_VALUE:
            raise config_error(f"/{name}", f"{name} must be an integer from {minimum} to {MAX_OPTION_VALUE}.")
        return value

    # --- reading ---------------------------------------------------------------------------

    def lookup(self, session: JobOwner, job_id: str) -> JobRecord | None:
        record = self.records.get(job_id)
        # spec: R-BRG-014, R-BRG-015 -- another session's job is, to this one, no job at all.
        if record is None or record.owner is not session:
            return None
        return record

    def missing(self, session: JobOwner, job_id: str) -> IntentParseError:
        """The answer for a job ``session`` does not hold: not found, however it went (D-BRG-003)."""
        return not_found_error()

    def stats(self) -> dict[str, int]:
        return {"activeJobs": len(self.active), "records": len(self.records), "replayBytes": self.total_bytes}

    # --- time ------------------------------------------------------------------------------

    def sweep(self) -> float:
        """Apply the legacy TTLs up to now (D-BRG-016); returns now.

        Every prepare, accept and cancel starts here.
        """
        now = self.clock()
        if self.options.job_ttl_ms:
            self.expire_jobs(now)
        if self.options.replay_ttl_ms:
            while self.terminal:
                job_id, ended_at = next(iter(self.terminal.items()))
                if now < ended_at + self.options.replay_ttl_ms:
                    break
                self.replay_expired(job_id)
        return now

    def expire_jobs(self, now: float) -> None:
        """D-BRG-016: an active job past its deadline ends BRIDGE_JOB_EXPIRED and keeps its record."""
        while self.active:
            job_id, deadline = next(iter(self.active.items()))
            if now < deadline:
                break
            record = self.records[job_id]
            assert record.job is not None
            self.end(record, record.job.end("BRIDGE_JOB_EXPIRED", None, "bridge"), now)

    def replay_expired(self, job_id: str) -> None:
        """D-BRG-016: a record the replay TTL ends is dropped, and answers like any unknown job."""
        self.drop(job_id)

    def deadline_after(self, record: JobRecord, now: float) -> tuple[str | None, float]:
        """D-BRG-016: (expiresAt, monotonic deadline) of a job's next task: its prepare's, kept."""
        return record.expires_at, self.active[record.job_id]

    # --- admission -------------------------------------------------------------------------

    def open_job(self, session: JobOwner, start: Callable[[], Job], now: float) -> bytes:
        """D-BRG-012: the request is judged (``start``) before capacity is checked, so a bad
        request gets the same answer however busy the Bridge is; returns the first task reply."""
        return self.admit(session, start(), now)

    def check_room(self) -> None:
        """Refuse a new job when active jobs fill maxJobs or maxReplayEntries (D-BRG-012)."""
        options = self.options
        if len(self.active) >= options.max_jobs:  # spec: R-CAP-007, R-CAP-012
            raise _limit(None, f"the Bridge already holds maxJobs ({options.max_jobs}) active jobs.")
        if len(self.active) >= options.max_replay_entries:  # only terminal records can make room
            raise _limit(None, f"active jobs fill maxReplayEntries ({options.max_replay_entries}).")

    def admit(self, session: JobOwner, job: Job, now: float) -> bytes:
        """Register ``job`` and return its first task reply (stored form), or raise LIMIT_EXCEEDED."""
        options = self.options
        self.check_room()
        job_id = _new_token()
        token = _new_token()
        expires_at = None
        deadline = 0.0
        if options.job_ttl_ms:
            expires_at = iso_timestamp(self.wall_clock() + options.job_ttl_ms)
            deadline = now + options.job_ttl_ms
        first = stored_reply(_task_reply(job_id, token, job.task, expires_at, self.policy.writer))
        # counted while active; the task itself is not replayable
        size = self.record_size(len(first))
        if self.active_bytes + size > options.max_replay_bytes:  # spec: R-CAP-012
            raise _limit(None, f"the new job does not fit maxReplayBytes ({options.max_replay_bytes}) "
                               "beside the active jobs.")  # fmt: skip
        # Feasible: from here on nothing can fail, so reclaiming for it is never wasted.
        record = JobRecord(job_id, session, job, token, size, expires_at)
        self.records[job_id] = record
        self.active[job_id] = deadline
        session._job_ids.add(job_id)
        self.active_bytes += size
        self.total_bytes += size
        self.reclaim()
        return first

    # --- sizes (D-BRG-010, D-BRG-011) -------------------------------------------------------

    def record_size(self, content_bytes: int) -> int:
        """D-BRG-011: maxReplayBytes counts the retained content only."""
        return content_bytes

    def step_size_checked(self, record: JobRecord, candidate_text: str, step_reply: bytes, exact_size: int) -> int:
        """D-BRG-010: a step that keeps the job active must fit with its exact size."""
        return exact_size

    # --- used and unknown tokens (D-BRG-007, D-BRG-008) -------------------------------------

    def replay(self, record: JobRecord, step: UsedStep) -> bytes:
        """D-BRG-007: a used token with the identical candidate gets the retained reply, byte for byte."""
        return step.reply

    def conflict(self, record: JobRecord, token: bytes, step: UsedStep | None) -> IntentParseError:
        """D-BRG-008: a used token with another candidate, or a token that is not the open step's,
        is BRIDGE_STEP_CONFLICT (``step`` is the used step the token names, if any)."""
        return bridge_error("BRIDGE_STEP_CONFLICT", "/stepToken", CONFLICT_MESSAGE)

    def open_step_of_ended_job(self, record: JobRecord) -> bytes:
        """D-BRG-008: the step that was open when the job was cancelled or expired is answered
        with how the job ended."""
        return record.terminal_reply()

    # --- submissions -----------------------------------------------------------------------

    def answer(self, record: JobRecord, step_token: str, candidate_text: str, now: float) -> BridgeReply:
        """A submission for one of the record's steps: replayed, a conflict, or judged."""
        token = token_bytes(step_token)
        digest = candidate_digest(candidate_text)
        used = _find_step(record.steps, token)
        if used is not None:
            if hmac.compare_digest(used.digest, digest):
                return fresh_reply(self.replay(record, used))  # spec: R-IDM-001
            raise self.conflict(record, token, used)  # spec: R-IDM-003
        if not hmac.compare_digest(record.token, token):
            raise self.conflict(record, token, None)  # spec: R-IDM-004, R-LIF-005 -- terminal jobs too
        if record.job is None:
            return fresh_reply(self.open_step_of_ended_job(record))
        return self.submit(record, candidate_text, token, digest, now)

    def submit(self, record: JobRecord, candidate_text: str, token: bytes, digest: bytes, now: float) -> BridgeReply:
        """Judge a submission for the record's current step, committing only if it fits."""
        assert record.job is not None
        trial = _fork(record.job)
        outcome = trial.submit(candidate_text)
        if outcome.rejection is not None:
            # spec: R-CAP-013, R-LIF-009 -- an oversized candidate is not a used step (D-BRG-009).
            return self.refuse(record, token, digest, outcome.rejection)
        expires_at, deadline = self.deadline_after(record, now) if outcome.task is not None else (record.expires_at, 0.0)
        reply, token_after = _outcome_reply(record.job_id, outcome, expires_at, self.policy.writer)
        step = UsedStep(token, digest, stored_reply(reply))
        steps = [*record.steps, step]
        # An active job's record also counts its current task (the task material).
        new_task_bytes = len(step.reply) if token_after is not None else 0
        new_size = self.record_size(_record_bytes(steps, new_task_bytes, None))
        checked_size = self.step_size_checked(record, candidate_text, step.reply, new_size)
        # D-BRG-010: a step that keeps the job active must fit beside the other active ones;
        # terminal records do not count, they can be reclaimed (spec: R-CAP-011, R-CAP-013).
        # D-BRG-020: a step that ends the job is never refused for the budget, which is no
        # limit on results (spec: R-CAP-010); if even alone it does not fit, reclaim() drops
        # the just-ended record at once, after its reply is given.
        fits = self.active_bytes - record.nbytes + checked_size <= self.options.max_replay_bytes
        if token_after is not None and not fits:
            return self.refuse(record, token, digest, _limit(
                "/candidateText", "the reply to this candidate does not fit maxReplayBytes "
                f"({self.options.max_replay_bytes}); the step stays open."))  # fmt: skip
        record.steps = steps
        self._resize(record, new_size)
        if token_after is not None:
            record.job = trial
            record.token = token_bytes(token_after)
            if deadline != self.active[record.job_id]:
                record.expires_at = expires_at
                self.active[record.job_id] = deadline
                self.active.move_to_end(record.job_id)  # one TTL: renewal keeps deadline order
        else:
            self._to_terminal(record, now)
        self.reclaim()
        return fresh_reply(step.reply)

    def refuse(self, record: JobRecord, token: bytes, digest: bytes, exc: IntentParseError) -> BridgeReply:
        """A refused submission: the step stays open (spec: R-CAP-013).  D-BRG-009: it is not a
        used step, and nothing of it is kept."""
        return error_reply(exc, self.policy.writer)

    def end(self, record: JobRecord, exc: IntentParseError, now: float) -> bytes:
        """Make an active job terminal with ``exc`` (cancel, expiry); returns the stored reply."""
        record.end = stored_reply(error_reply(exc, self.policy.writer))
        self._resize(record, self.record_size(_record_bytes(record.steps, 0, record.end)))
        self._to_terminal(record, now)
        # The ended record may have grown (a long detail); active bytes shrank, so reclaiming
        # terminal records always restores the budget.
        self.reclaim()
        return record.end

    def _resize(self, record: JobRecord, new_size: int) -> None:
        # Called while the record is still in its old state, so active_bytes follows it.
        delta = new_size - record.nbytes
        record.nbytes = new_size
        self.total_bytes += delta
        if record.active:
            self.active_bytes += delta

    def _to_terminal(self, record: JobRecord, now: float) -> None:
        del self.active[record.job_id]
        self.active_bytes -= record.nbytes
        record.job = None
        self.terminal[record.job_id] = now

    # --- reclaiming ------------------------------------------------------------------------

    def reclaim(self) -> None:
        """Drop terminal records, oldest-terminated first, until both budgets hold (R-CAP-011)."""
        options = self.options
        while self.terminal and (
            self.total_bytes > options.max_replay_bytes or len(self.records) > options.max_replay_entries
        ):
            job_id = self.next_to_reclaim()
            del self.terminal[job_id]
            self._forget(job_id)

    def next_to_reclaim(self) -> str:
        """D-BRG-013: the terminal record that ended first (O(1): ``terminal`` is in that order)."""
        return next(iter(self.terminal))

    def drop(self, job_id: str) -> None:
        """Forget a job whatever its state (reclaimed, session closed, replay TTL)."""
        record = self.records.get(job_id)
        if record is None:
            return
        if record.active:
            del self.active[job_id]
            self.active_bytes -= record.nbytes
        else:
            del self.terminal[job_id]
        self._forget(job_id)

    def _forget(self, job_id: str) -> None:
        record = self.records.pop(job_id)
        self.total_bytes -= record.nbytes
        record.owner._job_ids.discard(job_id)

    # --- closed sessions (D-BRG-004, D-BRG-005) ---------------------------------------------

    def read_call(self, session: JobOwner, read: Callable[[], T]) -> T:
        """D-BRG-004: an accept or cancel reads its parameters (``read``) first; on a closed
        session it then answers BRIDGE_JOB_NOT_FOUND: the jobs went with the session (spec: R-IDM-005)."""
        parameters = read()
        if session.closed:
            raise not_found_error()
        return parameters

    def close_session(self, session: JobOwner) -> None:
        """D-BRG-005: closing a session forgets every job it holds, active or retained (spec: R-LIF-012)."""
        for job_id in list(session._job_ids):
            self.drop(job_id)

