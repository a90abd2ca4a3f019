"""The reference's ``JobStore`` with Bridge decisions taken another way: what decision variants build.

Each Bridge decision (D-BRG-*) is a method of ``intentref.bridge.JobStore`` whose body is the
reference's.  ``VariantStore`` overrides those methods to read the fields of its
``VariantPolicy`` (``_variant_policy``): at their defaults every method is the reference's,
so ``VariantStore`` with ``VariantPolicy()`` is the reference Bridge (checked by
``tests/conformance/test_variants_core.py``).  The state only an alternative reading needs
(refusals kept for replay, whole-record deadlines, tombstones, cancelled jobs) lives here,
not in the Bridge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from intentref.bridge import (
    CAPACITY_OPTIONS,
    DEFAULT_OUTCOME,
    DIGEST_BYTES,
    TTL_OPTIONS,
    BridgeReply,
    JobRecord,
    JobStore,
    UsedStep,
    iso_timestamp,
    not_found_error,
    stored_reply,
)
from intentref.bridge_store import JobOwner, candidate_digest, fresh_reply, token_bytes
from intentref.core.errors import CANCEL_CODES, IntentParseError, Issue, error, self_issue
from intentref.core.policy import Policy
from intentref.suite.alterations._variant_policy import VariantPolicy

T = TypeVar("T")

EXPIRED_MESSAGE = "The retained replies of this job expired (replayTtlMs)."


def _knobs(policy: Policy) -> VariantPolicy:
    # A VariantStore is built only with a VariantPolicy (AlteredTarget.open); any other policy
    # reads as VariantPolicy's defaults, which are the reference's.
    return policy if isinstance(policy, VariantPolicy) else VariantPolicy()


def _input_fault(path: str, message: str) -> IntentParseError:
    return error("INPUT_INVALID", "bridge", message, [Issue("INPUT_INVALID", "input", path, message)])


class VariantStore(JobStore):
    """``JobStore`` whose decisions follow the ``VariantPolicy`` it is built with."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.knobs = _knobs(self.policy)
        # D-BRG-009 the other way: refused submissions, job id -> (token, digest) -> reply.
        self.refusals: dict[str, dict[tuple[bytes, bytes], bytes]] = {}
        # D-BRG-016 the other way: the monotonic deadline that ends each whole record.
        self.record_deadlines: dict[str, float] = {}
        # D-BRG-016 the other way: jobs the replay TTL dropped, with the session that owned them.
        self.tombstones: dict[str, JobOwner] = {}
        # D-BRG-008 the other way: the jobs a cancel ended, whose open step is then a conflict.
        self.cancelled: set[str] = set()

    # --- the BridgeConfig (D-BRG-014) -------------------------------------------------------

    @classmethod
    def read_options(cls, config: Mapping[str, Any], policy: Policy) -> list[int]:
        if not _knobs(policy).config_faults_all_listed:
            return super().read_options(config, policy)
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

    @classmethod
    def read_option(cls, config: Mapping[str, Any], name: str, minimum: int, policy: Policy) -> int:
        value = config.get(name)
        if _knobs(policy).integral_float_options and isinstance(value, float) and value.is_integer():
            config = {**config, name: int(value)}  # 3.0 is the safe integer 3, as to JavaScript
        return super().read_option(config, name, minimum, policy)

    # --- admission (D-BRG-012) and sizes (D-BRG-010, D-BRG-011) -----------------------------

    def open_job(self, session: JobOwner, start: Callable[[], Any], now: float) -> bytes:
        if self.knobs.capacity_before_request:
            self.check_room()  # a full Bridge refuses before the request is judged
        return super().open_job(session, start, now)

    def admit(self, session: JobOwner, job: Any, now: float) -> bytes:
        first = super().admit(session, job, now)
        if self.options.job_ttl_ms and self.knobs.job_ttl_drops_record:
            job_id = next(reversed(self.active))  # admit appends the new job; reclaiming drops terminal ones only
            self.record_deadlines[job_id] = now + self.options.job_ttl_ms
        return first

    def record_size(self, content_bytes: int) -> int:
        # Also this many bytes of bookkeeping for every record.
        return content_bytes + self.knobs.record_overhead_bytes

    def step_size_checked(self, record: JobRecord, candidate_text: str, step_reply: bytes, exact_size: int) -> int:
        if not self.knobs.step_budget_estimated:
            return exact_size
        # An upper estimate: the old record kept whole, the candidate text, and the new task as
        # step and as material.
        return (record.nbytes + DIGEST_BYTES + len(candidate_text.encode("utf-8", "surrogatepass"))
                + 2 * len(step_reply))  # fmt: skip

    # --- refusals (D-BRG-009) ----------------------------------------------------------------

    def refuse(self, record: JobRecord, token: bytes, digest: bytes, exc: IntentParseError) -> BridgeReply:
        reply = super().refuse(record, token, digest, exc)
        if self.knobs.rejections_replayed:
            # Kept for this token and text, outside the byte count (a conformance run only).
            self.refusals.setdefault(record.job_id, {})[(token, digest)] = stored_reply(reply)
        return reply

    def answer(self, record: JobRecord, step_token: str, candidate_text: str, now: float) -> BridgeReply:
        kept = self.refusals.get(record.job_id, {}).get((token_bytes(step_token), candidate_digest(candidate_text)))
        return fresh_reply(kept) if kept is not None else super().answer(record, step_token, candidate_text, now)

    def _forget(self, job_id: str) -> None:
        super()._forget(job_id)
        self.refusals.pop(job_id, None)
        self.record_deadlines.pop(job_id, None)
        self.cancelled.discard(job_id)

    # --- used and unknown tokens (D-BRG-007, D-BRG-008) ----------------------------------------

    def replay(self, record: JobRecord, step: UsedStep) -> bytes:
        if not self.knobs.retained_replies_replayed:
            raise self.conflict(record, step.token, step)  # nothing is replayed, not even the same text
        return super().replay(record, step)

    def conflict(self, record: JobRecord, token: bytes, step: UsedStep | None) -> IntentParseError:
        if not self.knobs.tokens_judged_by_cause:
            return super().conflict(record, token, step)
        # Every token issued for a job is a used step's or the open one's, so a token that is
        # neither was never issued for it.
        if step is None:
            return _input_fault("/stepToken", "stepToken was never issued for this job.")
        return _input_fault("/candidateText", "This step was already submitted with another candidateText.")

    def open_step_of_ended_job(self, record: JobRecord) -> bytes:
        if self.knobs.cancelled_open_step_conflicts and record.job_id in self.cancelled:
            raise super().conflict(record, record.token, None)  # a cancelled job has no step any more
        return super().open_step_of_ended_job(record)

    def end(self, record: JobRecord, exc: IntentParseError, now: float) -> bytes:
        if exc.code in CANCEL_CODES.values():
            self.cancelled.add(record.job_id)
        return super().end(record, exc, now)

    # --- time (D-BRG-016) ----------------------------------------------------------------------

    def expire_jobs(self, now: float) -> None:
        if not self.knobs.job_ttl_drops_record:
            super().expire_jobs(now)
            return
        # The deadline ends the record itself, whatever its state (O(records) per call,
        # acceptable in a conformance run).
        for job_id in [i for i, deadline in self.record_deadlines.items() if deadline <= now]:
            self.drop(job_id)

    def deadline_after(self, record: JobRecord, now: float) -> tuple[str | None, float]:
        if not (self.knobs.job_ttl_per_task and self.options.job_ttl_ms):
            return super().deadline_after(record, now)
        # Every new task renews the job's deadline (an idle timeout) and carries it.
        return iso_timestamp(self.wall_clock() + self.options.job_ttl_ms), now + self.options.job_ttl_ms

    def replay_expired(self, job_id: str) -> None:
        if self.knobs.replay_ttl_tombstones:
            self.tombstones[job_id] = self.records[job_id].owner
        super().replay_expired(job_id)

    def missing(self, session: JobOwner, job_id: str) -> IntentParseError:
        if self.tombstones.get(job_id) is session:
            # The session that owned a job the replay TTL dropped is told it expired.
            return error("BRIDGE_JOB_EXPIRED", "bridge", EXPIRED_MESSAGE,
                         [self_issue("BRIDGE_JOB_EXPIRED", "/jobId", EXPIRED_MESSAGE)])  # fmt: skip
        return super().missing(session, job_id)

    # --- reclaiming (D-BRG-013) --------------------------------------------------------------

    def next_to_reclaim(self) -> str:
        if not self.knobs.reclaim_oldest_created:
            return super().next_to_reclaim()
        # Records are in creation order; the first terminal one goes (O(records)).
        return next(i for i, r in self.records.items() if not r.active)

    # --- closed sessions (D-BRG-004, D-BRG-005) ------------------------------------------------

    def read_call(self, session: JobOwner, read: Callable[[], T]) -> T:
        if self.knobs.closed_calls_unchecked and session.closed:
            raise not_found_error()  # no parameter check on a closed session
        if self.knobs.closed_sessions_keep_records:
            return read()  # the closed session still answers for the records it kept
        return super().read_call(session, read)

    def close_session(self, session: JobOwner) -> None:
        if not self.knobs.closed_sessions_keep_records:
            super().close_session(session)
            return
        # The active jobs end as a cancel would end them, and every record stays, terminal,
        # until it is reclaimed.
        now = self.sweep()
        for job_id in list(session._job_ids):
            record = self.records.get(job_id)
            if record is not None and record.job is not None:
                self.end(record, record.job.cancel(DEFAULT_OUTCOME, None), now)
