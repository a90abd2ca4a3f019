"""Decision variants made inside the Bridge: capacity, reclamation, sessions, the legacy TTLs.

Each variant changes fields of the ``intentref.core.policy.Policy`` the Bridge is built with, read where the
decision is applied, or rewrites calls at the boundary (see ``variants.Alteration``).  Every
alternative is one seed 000 also allows (``#配置与容量``, ``#工具与 session 方法``,
``#调用错误与任务状态``, ``#重复提交与冲突``); the comment on each says why.
"""

from __future__ import annotations

import uuid
from typing import Any

from intentref.bridge import BridgeReply
from intentref.suite.alterations.alteration import Alteration, Memory, policy_changes

# --------------------------------------------------------------------------- requests


def _absent_input_is_blank(op: str, request: Any, memory: Memory) -> Any:
    if op == "prepare" and isinstance(request, dict) and "input" not in request:
        request["input"] = ""
    return request


# D-BRG-002 judges a prepare's parse members exactly as Intent.parse does.  The seeds fix only
# the blank-input error (#回复类型); a Bridge that judges its own PrepareRequest may read an
# absent input as an empty one and give that error, which names no member.
ABSENT_INPUT_IS_BLANK = Alteration(
    name="absent-input-is-blank",
    decisions=("D-BRG-002",),
    summary="a prepare without input gets the seed's blank-input error (no issue), not one naming /input",
    before=_absent_input_is_blank,
)


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


# D-BRG-006: 22 URL-safe characters.  The seeds give jobId and stepToken as strings only
# (#工具与 session 方法); random UUIDs are what many hosts would use.  Tokens a session never
# issued pass through unchanged, so foreign and invented ones are still unknown.
UUID_TOKENS = Alteration(
    name="uuid-tokens",
    decisions=("D-BRG-006",),
    summary="jobId and stepToken are random UUIDs (36 characters)",
    before=_uuid_tokens_in,
    after=_uuid_tokens_out,
)


# --------------------------------------------------------------------------- configuration


# D-BRG-014 refuses 3.0.  The seed asks for positive safe integers (#配置与容量); 3.0 is the
# safe integer 3 to a JavaScript host.
INTEGRAL_FLOAT_OPTIONS = Alteration(
    name="integral-float-options",
    decisions=("D-BRG-014",),
    summary="an integral float option (maxJobs: 3.0) is the integer 3, not CONFIG_INVALID",
    policy=policy_changes(integral_float_options=True),
)

# D-BRG-014 names the first faulty option.  The seeds fix no issue list for a config error.
CONFIG_FAULTS_ALL_LISTED = Alteration(
    name="config-faults-all-listed",
    decisions=("D-BRG-014",),
    summary="CONFIG_INVALID lists every faulty capacity or TTL option, one issue each",
    policy=policy_changes(config_faults_all_listed=True),
)

# D-LIM-001: 1,024 jobs, 4,096 records, 64 MiB.  The seed names the options but no defaults
# (#配置与容量); a smaller host picks smaller ones.
SMALLER_CAPACITY_DEFAULTS = Alteration(
    name="smaller-capacity-defaults",
    decisions=("D-LIM-001",),
    summary="capacity defaults maxJobs 64, maxReplayEntries 256, maxReplayBytes 8 MiB",
    policy=policy_changes(
        default_max_jobs=64, default_max_replay_entries=256, default_max_replay_bytes=8 * 1024 * 1024
    ),
)


# --------------------------------------------------------------------------- sessions


# D-BRG-004 / D-BRG-005 drop a closed session's records and answer BRIDGE_JOB_NOT_FOUND.  The
# seeds require closing to release the active jobs (#调用错误与任务状态) and say the original
# job *may* then be BRIDGE_JOB_NOT_FOUND (#重复提交与冲突); ending them and keeping the records
# until capacity reclaims them releases them too.
CLOSED_SESSIONS_KEEP_RECORDS = Alteration(
    name="closed-sessions-keep-records",
    decisions=("D-BRG-004", "D-BRG-005"),
    summary="close ends active jobs as cancelled and keeps every record until reclaimed; "
    "the closed session still answers for them",
    policy=policy_changes(closed_sessions_keep_records=True),
)


# D-BRG-004 checks an accept's or cancel's parameters before answering that a closed session
# holds no job.  The seeds let parameter checks and a closed connection be answered in any
# order, or raised (#调用错误与任务状态).
CLOSED_CALLS_UNCHECKED = Alteration(
    name="closed-calls-unchecked",
    decisions=("D-BRG-004",),
    summary="accept and cancel on a closed session answer BRIDGE_JOB_NOT_FOUND before checking parameters",
    policy=policy_changes(closed_calls_unchecked=True),
)


# --------------------------------------------------------------------------- submissions


# D-BRG-009 records nothing of a refused submission.  The seed keeps the active job and the
# current token (#配置与容量, #调用错误与任务状态), and lets the same token with the same text
# reuse a retained reply (#重复提交与冲突): here the refusal is that retained reply, while any
# other text on the token is still a normal submission.
REJECTIONS_REPLAYED = Alteration(
    name="rejections-replayed",
    decisions=("D-BRG-009",),
    summary="a refused submission's reply is kept: the same token and text replay it, even after the step was used",
    policy=policy_changes(rejections_replayed=True),
)

# D-BRG-010 checks the exact size on a trial copy.  The seed only says a candidate over the
# budget is refused with the job and token kept (#配置与容量); how the size is judged is open.
STEP_BUDGET_ESTIMATED = Alteration(
    name="step-budget-estimated",
    decisions=("D-BRG-010",),
    summary="a step is refused unless an upper estimate of its record fits "
    "(old record kept whole + candidate + new task twice)",
    policy=policy_changes(step_budget_estimated=True),
)


# --------------------------------------------------------------------------- capacity


# D-BRG-011 counts the retained content only.  The seed counts "保留记录的内部序列化内容" in
# UTF-8 bytes; an implementation's internal serialisation may carry bookkeeping of its own.
RECORD_OVERHEAD_COUNTED = Alteration(
    name="record-overhead-counted",
    decisions=("D-BRG-011",),
    summary="maxReplayBytes also counts 512 bytes of bookkeeping per record",
    policy=policy_changes(record_overhead_bytes=512),
)

# D-BRG-012 judges the request before capacity.  The seed fixes no order between the two.
CAPACITY_BEFORE_REQUEST = Alteration(
    name="capacity-before-request",
    decisions=("D-BRG-012",),
    summary="maxJobs and maxReplayEntries are checked before the prepare request is judged",
    policy=policy_changes(capacity_before_request=True),
)


def _capacity_refusal_at_input(op: str, request: Any, reply: BridgeReply, memory: Memory) -> BridgeReply:
    err = reply.get("error") if reply.get("kind") == "error" else None
    if (
        op == "prepare"
        and isinstance(err, dict)
        and err.get("code") == "LIMIT_EXCEEDED"
        and err.get("stage") == "bridge"
    ):
        err["stage"] = "input"
    return reply


# D-BRG-012 refuses a job the Bridge has no room for at stage bridge.  Seed 004 says only that
# the stage is where the error happened; a Bridge may say the request itself was refused.
CAPACITY_REFUSAL_AT_INPUT = Alteration(
    name="capacity-refusal-at-input",
    decisions=("D-BRG-012",),
    summary="a prepare refused for capacity is LIMIT_EXCEEDED at stage input",
    after=_capacity_refusal_at_input,
)

# D-BRG-013 reclaims oldest-terminated first.  The seed says only that terminal records go
# first and active jobs never (#配置与容量).
RECLAIM_OLDEST_CREATED = Alteration(
    name="reclaim-oldest-created",
    decisions=("D-BRG-013",),
    summary="terminal records are reclaimed oldest-created first",
    policy=policy_changes(reclaim_oldest_created=True),
)


# --------------------------------------------------------------------------- the legacy TTLs


# D-BRG-016: the seed gives jobTtlMs and replayTtlMs (deprecated, default 0) but not their
# meaning, nor an expiry code (BRIDGE_JOB_EXPIRED is D-ERR-005's).
JOB_TTL_PER_TASK = Alteration(
    name="job-ttl-per-task",
    decisions=("D-BRG-016",),
    summary="jobTtlMs is an idle timeout: every new task renews the deadline and its expiresAt",
    policy=policy_changes(job_ttl_per_task=True),
)

JOB_TTL_DROPS_RECORD = Alteration(
    name="job-ttl-drops-record",
    decisions=("D-BRG-016",),
    summary="jobTtlMs bounds the whole record: at the deadline it is dropped, active or finished, "
    "and answers BRIDGE_JOB_NOT_FOUND",
    policy=policy_changes(job_ttl_drops_record=True),
)

# The seeds name no code for a job dropped by the replay TTL: it is none of the cases seed 000
# says may answer BRIDGE_JOB_NOT_FOUND (a closed connection, capacity, a restart).
REPLAY_TTL_TOMBSTONE = Alteration(
    name="replay-ttl-tombstone",
    decisions=("D-BRG-016",),
    summary="a job dropped by replayTtlMs answers its owner BRIDGE_JOB_EXPIRED, not BRIDGE_JOB_NOT_FOUND",
    policy=policy_changes(replay_ttl_tombstones=True),
)


VARIANTS: tuple[Alteration, ...] = (
    ABSENT_INPUT_IS_BLANK,
    UUID_TOKENS,
    INTEGRAL_FLOAT_OPTIONS,
    CONFIG_FAULTS_ALL_LISTED,
    SMALLER_CAPACITY_DEFAULTS,
    CLOSED_SESSIONS_KEEP_RECORDS,
    CLOSED_CALLS_UNCHECKED,
    REJECTIONS_REPLAYED,
    STEP_BUDGET_ESTIMATED,
    RECORD_OVERHEAD_COUNTED,
    CAPACITY_BEFORE_REQUEST,
    CAPACITY_REFUSAL_AT_INPUT,
    RECLAIM_OLDEST_CREATED,
    JOB_TTL_PER_TASK,
    JOB_TTL_DROPS_RECORD,
    REPLAY_TTL_TOMBSTONE,
)
