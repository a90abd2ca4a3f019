"""Decision variants made inside the Bridge: capacity, reclamation, sessions, the legacy TTLs.

Each swaps functions of ``intentref.bridge_store.JobStore`` (``store``), changes a policy value
or rewrites calls at the boundary.  State only another reading needs is kept by the override
that needs it (``_kept``), never by the reference.  Every alternative is one seed 000 also
allows; the comment on each says why.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from intentref.bridge import CAPACITY_OPTIONS, DEFAULT_OUTCOME, DIGEST_BYTES, TTL_OPTIONS, BridgeReply
from intentref.bridge_store import (
    JobOwner,
    JobRecord,
    JobStore,
    UsedStep,
    candidate_digest,
    fresh_reply,
    iso_timestamp,
    not_found_error,
    stored_reply,
    token_bytes,
)
from intentref.core.errors import IntentParseError, Issue, error, self_issue
from intentref.core.job import Job
from intentref.core.policy import Policy
from intentref.core.wire import CANCEL_ENDING_CODES
from intentref.suite.alterations._variant_policy import Reference
from intentref.suite.alterations.alteration import Alteration, Memory, error_of, policy_changes

T = TypeVar("T")

EXPIRED_MESSAGE = "The retained replies of this job expired (replayTtlMs)."


def _kept(store: JobStore, name: str, empty: Callable[[], T]) -> T:
    """State one variant keeps beside the store's own, made on first use (the reference keeps none)."""
    state = vars(store)
    if name not in state:
        state[name] = empty()
    return state[name]  # type: ignore[no-any-return]


def _input_fault(path: str, message: str) -> IntentParseError:
    return error("INPUT_INVALID", "bridge", message, [Issue("INPUT_INVALID", "input", path, message)])


# --------------------------------------------------------------------------- requests


def _absent_input_is_blank(op: str, request: Any, memory: Memory) -> Any:
    if op == "prepare" and isinstance(request, dict) and "input" not in request:
        request["input"] = ""
    return request


# --------------------------------------------------------------------------- tokens


def _uuid_for(token: Any, memory: Memory) -> Any:
    if not isinstance(token, str):
        return token
    mapped = memory.setdefault("uuid_of", {})
    if token not in mapped:
        mapped[token] = str(uuid.uuid4())
        memory.setdefault("token_of", {})[mapped[token]] = token
    return mapped[token]


def _uuid_tokens_in(op: str, request: Any, memory: Memory) -> Any:
    if op in ("accept", "cancel") and isinstance(request, dict):
        known = memory.get("token_of", {})
        for member in ("jobId", "stepToken"):
            value = request.get(member)
            if isinstance(value, str) and value in known:
                request[member] = known[value]
    return request


def _uuid_tokens_out(op: str, request: Any, reply: BridgeReply, memory: Memory) -> BridgeReply:
    if reply.get("kind") == "task":
        # The same reference token always maps to the same UUID, so a replayed task is the
        # same reply again (D-BRG-007 holds through the rewrite).
        reply["jobId"] = _uuid_for(reply.get("jobId"), memory)
        reply["stepToken"] = _uuid_for(reply.get("stepToken"), memory)
    return reply


# --------------------------------------------------------------------------- configuration


def _integral_float_option(reference: Reference, cls: type[JobStore], config: Mapping[str, Any], name: str,
                           minimum: int, policy: Policy) -> int:  # fmt: skip
    value = config.get(name)
    if isinstance(value, float) and value.is_integer():
        config = {**config, name: int(value)}  # 3.0 is the safe integer 3, as to JavaScript
    answer: int = reference(cls, config, name, minimum, policy)
    return answer


def _every_faulty_option(reference: Reference, cls: type[JobStore], config: Mapping[str, Any],
                         policy: Policy) -> list[int]:  # fmt: skip
    # Every faulty option is named, one issue each.
    wanted = [(name, 1) for name in CAPACITY_OPTIONS] + [(name, 0) for name in TTL_OPTIONS]
    values: list[int] = []
    faults: list[IntentParseError] = []
    for name, minimum in wanted:
        try:
            values.append(cls.read_option(config, name, minimum, policy))
        except IntentParseError as exc:
            faults.append(exc)
    if len(faults) == 1:
        raise faults[0]
    if faults:
        issues = [issue for exc in faults for issue in exc.issues]
        raise error("CONFIG_INVALID", "config", f"{len(faults)} Bridge config options are invalid.", issues)
    return values


# --------------------------------------------------------------------------- sessions


# D-BRG-004 / D-BRG-005 drop a closed session's records and answer BRIDGE_JOB_NOT_FOUND.  The
# seeds require closing to release the active jobs (#调用错误与任务状态) and say the original
# job *may* then be BRIDGE_JOB_NOT_FOUND (#重复提交与冲突); ending them and keeping the records
# until capacity reclaims them releases them too.
def _closed_session_answers(reference: Reference, store: JobStore, session: JobOwner, read: Callable[[], T]) -> T:
    return read()  # the closed session still answers for the records it kept


def _close_keeping_records(reference: Reference, store: JobStore, session: JobOwner) -> None:
    # The active jobs end as a cancel would end them, and every record stays, terminal, until
    # it is reclaimed.
    now = store.sweep()
    for job_id in list(session._job_ids):
        record = store.records.get(job_id)
        if record is not None and record.job is not None:
            store.end(record, record.job.cancel(DEFAULT_OUTCOME, None), now)


def _closed_call_unchecked(reference: Reference, store: JobStore, session: JobOwner, read: Callable[[], T]) -> T:
    if session.closed:
        raise not_found_error()  # no parameter check on a closed session
    answer: T = reference(store, session, read)
    return answer


# --------------------------------------------------------------------------- submissions


# D-BRG-009 records nothing of a refused submission.  The seed keeps the active job and the
# current token (#配置与容量, #调用错误与任务状态), and lets the same token with the same text
# reuse a retained reply (#重复提交与冲突): here the refusal is that retained reply, while any
# other text on the token is still a normal submission.
def _refusals(store: JobStore) -> dict[str, dict[tuple[bytes, bytes], bytes]]:
    # Refused submissions: job id -> (token, digest) -> reply, outside the byte count (a
    # conformance run only).
    return _kept(store, "refusals", dict)


def _refusal_kept(reference: Reference, store: JobStore, record: JobRecord, token: bytes, digest: bytes,
                  exc: IntentParseError) -> BridgeReply:  # fmt: skip
    reply: BridgeReply = reference(store, record, token, digest, exc)
    _refusals(store).setdefault(record.job_id, {})[(token, digest)] = stored_reply(reply)
    return reply


def _refusal_replayed(reference: Reference, store: JobStore, record: JobRecord, step_token: str,
                      candidate_text: str, now: float) -> BridgeReply:  # fmt: skip
    kept = _refusals(store).get(record.job_id, {}).get((token_bytes(step_token), candidate_digest(candidate_text)))
    if kept is not None:
        return fresh_reply(kept)
    answer: BridgeReply = reference(store, record, step_token, candidate_text, now)
    return answer


def _estimated_step_size(reference: Reference, store: JobStore, record: JobRecord, candidate_text: str,
                         step_reply: bytes, exact_size: int) -> int:  # fmt: skip
    # An upper estimate: the old record kept whole, the candidate text, and the new task as
    # step and as material.
    return (record.nbytes + DIGEST_BYTES + len(candidate_text.encode("utf-8", "surrogatepass"))
            + 2 * len(step_reply))  # fmt: skip


# --------------------------------------------------------------------------- capacity


def _room_checked_first(reference: Reference, store: JobStore, session: JobOwner, start: Callable[[], Job],
                        now: float) -> bytes:  # fmt: skip
    store.check_room()  # a full Bridge refuses before the request is judged
    answer: bytes = reference(store, session, start, now)
    return answer


def _capacity_refusal_at_input(op: str, request: Any, reply: BridgeReply, memory: Memory) -> BridgeReply:
    err = error_of(reply)
    if op == "prepare" and err is not None and err.get("code") == "LIMIT_EXCEEDED" and err.get("stage") == "bridge":
        err["stage"] = "input"
    return reply


# D-BRG-013 reclaims oldest-terminated first.  The seed says only that terminal records go
# first and active jobs never (#配置与容量).
def _oldest_created_terminal(reference: Reference, store: JobStore) -> str:
    # Records are in creation order; the first terminal one goes (O(records)).
    return next(i for i, r in store.records.items() if not r.active)


# --------------------------------------------------------------------------- the legacy TTLs


# D-BRG-016: the seed gives jobTtlMs and replayTtlMs (deprecated, default 0) but not their
# meaning, nor an expiry code (BRIDGE_JOB_EXPIRED is D-ERR-005's).
def _deadline_renewed(reference: Reference, store: JobStore, record: JobRecord, now: float) -> tuple[str | None, float]:
    ttl = store.options.job_ttl_ms
    if not ttl:
        answer: tuple[str | None, float] = reference(store, record, now)
        return answer
    # Every new task renews the job's deadline (an idle timeout) and carries it.
    return iso_timestamp(store.wall_clock() + ttl), now + ttl


def _record_deadlines(store: JobStore) -> dict[str, float]:
    # The monotonic deadline that ends each whole record.
    return _kept(store, "record_deadlines", dict)


def _admitted_with_record_deadline(reference: Reference, store: JobStore, session: JobOwner, job: Job,
                                   now: float) -> bytes:  # fmt: skip
    first: bytes = reference(store, session, job, now)
    if store.options.job_ttl_ms:
        job_id = next(reversed(store.active))  # admit appends the new job; reclaiming drops terminal ones only
        _record_deadlines(store)[job_id] = now + store.options.job_ttl_ms
    return first


def _records_expired(reference: Reference, store: JobStore, now: float) -> None:
    # The deadline ends the record itself, whatever its state (O(records) per call, acceptable
    # in a conformance run); a record gone already is dropped again to no effect.
    deadlines = _record_deadlines(store)
    for job_id in [i for i, deadline in deadlines.items() if deadline <= now]:
        del deadlines[job_id]
        store.drop(job_id)


def _tombstones(store: JobStore) -> dict[str, JobOwner]:
    # Jobs the replay TTL dropped, with the session that owned them.
    return _kept(store, "tombstones", dict)


def _tombstone_left(reference: Reference, store: JobStore, job_id: str) -> None:
    _tombstones(store)[job_id] = store.records[job_id].owner
    reference(store, job_id)


def _owner_told_expired(reference: Reference, store: JobStore, session: JobOwner, job_id: str) -> IntentParseError:
    if _tombstones(store).get(job_id) is session:
        # The session that owned a job the replay TTL dropped is told it expired.
        return error("BRIDGE_JOB_EXPIRED", "bridge", EXPIRED_MESSAGE,
                     [self_issue("BRIDGE_JOB_EXPIRED", "/jobId", EXPIRED_MESSAGE)])  # fmt: skip
    answer: IntentParseError = reference(store, session, job_id)
    return answer


# --------------------------------------------------------------------------- tokens and replay
# Listed among the boundary variants (``_variants_boundary.VARIANTS``), where the catalogue has
# always named them.


def _nothing_replayed(reference: Reference, store: JobStore, record: JobRecord, step: UsedStep) -> bytes:
    raise store.conflict(record, step.token, step)  # nothing is replayed, not even the same text


NO_REPLAY = Alteration(
    name="no-replay",
    decisions=("D-BRG-007",),
    summary="a used step token is a conflict even with the identical candidate (no retained-reply replay)",
    store={"replay": _nothing_replayed},
)


def _cancelled(store: JobStore) -> set[str]:
    # The jobs a cancel ended, whose open step is then a conflict.
    return _kept(store, "cancelled", set)


def _cancel_remembered(reference: Reference, store: JobStore, record: JobRecord, exc: IntentParseError,
                       now: float) -> bytes:  # fmt: skip
    if exc.code in CANCEL_ENDING_CODES:
        _cancelled(store).add(record.job_id)
    answer: bytes = reference(store, record, exc, now)
    return answer


def _cancelled_step_conflicts(reference: Reference, store: JobStore, record: JobRecord) -> bytes:
    if record.job_id in _cancelled(store):
        raise JobStore.conflict(store, record, record.token, None)  # a cancelled job has no step any more
    answer: bytes = reference(store, record)
    return answer


CANCELLED_TOKEN_CONFLICTS = Alteration(
    name="cancelled-token-conflicts",
    decisions=("D-BRG-008",),
    summary="the open token of a cancelled job is a conflict, not the job's terminal reply",
    store={"end": _cancel_remembered, "open_step_of_ended_job": _cancelled_step_conflicts},
)


def _conflict_by_cause(reference: Reference, store: JobStore, record: JobRecord, token: bytes,
                       step: UsedStep | None) -> IntentParseError:  # fmt: skip
    # Every token issued for a job is a used step's or the open one's, so a token that is
    # neither was never issued for it.
    if step is None:
        return _input_fault("/stepToken", "stepToken was never issued for this job.")
    return _input_fault("/candidateText", "This step was already submitted with another candidateText.")


TOKENS_JUDGED_OTHERWISE = Alteration(
    name="tokens-judged-otherwise",
    decisions=("D-BRG-008",),
    summary="a token never issued for the job, or a used one with another text, is INPUT_INVALID, not a conflict",
    store={"conflict": _conflict_by_cause},
)


VARIANTS: tuple[Alteration, ...] = (
    # D-BRG-002 judges a prepare's parse members exactly as Intent.parse does.  The seeds fix only
    # the blank-input error (#回复类型); a Bridge that judges its own PrepareRequest may read an
    # absent input as an empty one and give that error, which names no member.
    Alteration(
        name="absent-input-is-blank",
        decisions=("D-BRG-002",),
        summary="a prepare without input gets the seed's blank-input error (no issue), not one naming /input",
        before=_absent_input_is_blank,
    ),
    # D-BRG-006: 22 URL-safe characters.  The seeds give jobId and stepToken as strings only
    # (#工具与 session 方法); random UUIDs are what many hosts would use.  Tokens a session never
    # issued pass through unchanged, so foreign and invented ones are still unknown.
    Alteration(
        name="uuid-tokens",
        decisions=("D-BRG-006",),
        summary="jobId and stepToken are random UUIDs (36 characters)",
        before=_uuid_tokens_in,
        after=_uuid_tokens_out,
    ),
    # D-BRG-014 refuses 3.0.  The seed asks for positive safe integers (#配置与容量); 3.0 is the
    # safe integer 3 to a JavaScript host.
    Alteration(
        name="integral-float-options",
        decisions=("D-BRG-014",),
        summary="an integral float option (maxJobs: 3.0) is the integer 3, not CONFIG_INVALID",
        store={"read_option": _integral_float_option},
    ),
    # D-BRG-014 names the first faulty option.  The seeds fix no issue list for a config error.
    Alteration(
        name="config-faults-all-listed",
        decisions=("D-BRG-014",),
        summary="CONFIG_INVALID lists every faulty capacity or TTL option, one issue each",
        store={"read_options": _every_faulty_option},
    ),
    # D-LIM-001: 1,024 jobs, 4,096 records, 64 MiB.  The seed names the options but no defaults
    # (#配置与容量); a smaller host picks smaller ones.
    Alteration(
        name="smaller-capacity-defaults",
        decisions=("D-LIM-001",),
        summary="capacity defaults maxJobs 64, maxReplayEntries 256, maxReplayBytes 8 MiB",
        policy=policy_changes(
            default_max_jobs=64, default_max_replay_entries=256, default_max_replay_bytes=8 * 1024 * 1024
        ),
    ),
    Alteration(
        name="closed-sessions-keep-records",
        decisions=("D-BRG-004", "D-BRG-005"),
        summary="close ends active jobs as cancelled and keeps every record until reclaimed; "
        "the closed session still answers for them",
        store={"read_call": _closed_session_answers, "close_session": _close_keeping_records},
    ),
    # D-BRG-004 checks an accept's or cancel's parameters before answering that a closed session
    # holds no job.  The seeds let parameter checks and a closed connection be answered in any
    # order, or raised (#调用错误与任务状态).
    Alteration(
        name="closed-calls-unchecked",
        decisions=("D-BRG-004",),
        summary="accept and cancel on a closed session answer BRIDGE_JOB_NOT_FOUND before checking parameters",
        store={"read_call": _closed_call_unchecked},
    ),
    Alteration(
        name="rejections-replayed",
        decisions=("D-BRG-009",),
        summary="a refused submission's reply is kept: the same token and text replay it, even after the step was used",
        store={"refuse": _refusal_kept, "answer": _refusal_replayed},
    ),
    # D-BRG-010 checks the exact size on a trial copy.  The seed only says a candidate over the
    # budget is refused with the job and token kept (#配置与容量); how the size is judged is open.
    Alteration(
        name="step-budget-estimated",
        decisions=("D-BRG-010",),
        summary="a step is refused unless an upper estimate of its record fits "
        "(old record kept whole + candidate + new task twice)",
        store={"step_size_checked": _estimated_step_size},
    ),
    # D-BRG-011 counts the retained content only.  The seed counts "保留记录的内部序列化内容" in
    # UTF-8 bytes; an implementation's internal serialisation may carry bookkeeping of its own.
    Alteration(
        name="record-overhead-counted",
        decisions=("D-BRG-011",),
        summary="maxReplayBytes also counts 512 bytes of bookkeeping per record",
        store={"record_size": lambda reference, store, content_bytes: content_bytes + 512},
    ),
    # D-BRG-012 judges the request before capacity.  The seed fixes no order between the two.
    Alteration(
        name="capacity-before-request",
        decisions=("D-BRG-012",),
        summary="maxJobs and maxReplayEntries are checked before the prepare request is judged",
        store={"open_job": _room_checked_first},
    ),
    # D-BRG-012 refuses a job the Bridge has no room for at stage bridge.  Seed 004 says only that
    # the stage is where the error happened; a Bridge may say the request itself was refused.
    Alteration(
        name="capacity-refusal-at-input",
        decisions=("D-BRG-012",),
        summary="a prepare refused for capacity is LIMIT_EXCEEDED at stage input",
        after=_capacity_refusal_at_input,
    ),
    Alteration(
        name="reclaim-oldest-created",
        decisions=("D-BRG-013",),
        summary="terminal records are reclaimed oldest-created first",
        store={"next_to_reclaim": _oldest_created_terminal},
    ),
    Alteration(
        name="job-ttl-per-task",
        decisions=("D-BRG-016",),
        summary="jobTtlMs is an idle timeout: every new task renews the deadline and its expiresAt",
        store={"deadline_after": _deadline_renewed},
    ),
    Alteration(
        name="job-ttl-drops-record",
        decisions=("D-BRG-016",),
        summary="jobTtlMs bounds the whole record: at the deadline it is dropped, active or finished, "
        "and answers BRIDGE_JOB_NOT_FOUND",
        store={"admit": _admitted_with_record_deadline, "expire_jobs": _records_expired},
    ),
    # The seeds name no code for a job dropped by the replay TTL: it is none of the cases seed 000
    # says may answer BRIDGE_JOB_NOT_FOUND (a closed connection, capacity, a restart).
    Alteration(
        name="replay-ttl-tombstone",
        decisions=("D-BRG-016",),
        summary="a job dropped by replayTtlMs answers its owner BRIDGE_JOB_EXPIRED, not BRIDGE_JOB_NOT_FOUND",
        store={"replay_expired": _tombstone_left, "missing": _owner_told_expired},
    ),
)
