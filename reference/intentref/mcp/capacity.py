"""Fair capacity over streamable HTTP: a per-client active-job quota and reclaim of idle jobs.

The Bridge's own capacity rules stay as they are (seed 000 "配置与容量": ``maxJobs`` is
shared, an active job is never evicted to admit another's, terminal records go first).
This module adds the server's policy for a shared HTTP endpoint (D-MCP-021):

* a client may hold at most ``max_jobs_per_client`` active jobs; beyond it ``intent_prepare``
  answers ``LIMIT_EXCEEDED`` before the Bridge is asked, so one client cannot take every slot;
* an active job with no progress for ``job_idle_seconds`` is taken to be abandoned (its
  client is gone) and cancelled, so its slot comes back without anyone else's traffic
  evicting it.

Who a "client" is follows D-MCP-020: the MCP session in the handshake era, the peer
address in the 2026-07-28 era (which has no session).  The ledger learns which jobs are
active from the replies it sees, so it needs nothing of the Bridge beyond its public API.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from intentref.core.errors import error, self_issue

# D-MCP-021: a host runs a handful of recognitions at once per conversation; 64 covers a
# parallel batch and lets 16 clients at their full quota share the default maxJobs (1,024).
DEFAULT_MAX_JOBS_PER_CLIENT: Final = 64
# D-MCP-021: ten minutes without a step is far beyond the time a model takes to write one
# candidate, and a third of the SDK's idle limit for a whole session (1,800 s).
DEFAULT_JOB_IDLE_SECONDS: Final = 600.0

# Accept replies that leave the job where it was (D-BRG-009, R-IDM-004): a refused argument,
# a job this session does not have, a stale or conflicting token, a rejected candidate.
_UNCHANGED: Final = frozenset({"INPUT_INVALID", "BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT", "LIMIT_EXCEEDED"})
# The one unchanged reply that still shows the client working on the job's current step.
_REJECTED_CANDIDATE: Final = "LIMIT_EXCEEDED"
# Whoever a job counts against (D-MCP-020): an MCP session object, or ("peer", address).
Owner = Any
RECLAIM_DETAIL: Final = "reclaimed by the server: no progress for {seconds:g} s (D-MCP-021)"


class _Session(Protocol):
    def cancel(self, request: dict[str, Any]) -> Any: ...


@dataclass
class _Held:
    owner: Owner
    session: _Session
    token: str  # the job's current stepToken, as its last task gave it
    touched: float  # monotonic seconds of its last progress


def _quota_reply(limit: int) -> dict[str, Any]:
    message = (
        f"this client already holds {limit} active jobs, the server's per-client limit; "
        "finish or cancel one (intent_cancel) before preparing another."
    )
    return {
        "kind": "error",
        "error": error("LIMIT_EXCEEDED", "bridge", message, [self_issue("LIMIT_EXCEEDED", None, message)]).to_json(),
    }


class JobLedger:
    """The active jobs of one HTTP app: whose they are and when each last made progress."""

    def __init__(
        self,
        max_jobs_per_client: int | None = DEFAULT_MAX_JOBS_PER_CLIENT,
        job_idle_seconds: float | None = DEFAULT_JOB_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_jobs_per_client is not None and max_jobs_per_client < 1:
            raise ValueError("max_jobs_per_client must be at least 1, or None for no limit")
        if job_idle_seconds is not None and not job_idle_seconds > 0:
            raise ValueError("job_idle_seconds must be positive, or None to never reclaim")
        self.max_jobs_per_client = max_jobs_per_client
        self.job_idle_seconds = job_idle_seconds
        self._clock = clock
        self._jobs: OrderedDict[str, _Held] = OrderedDict()  # least recent progress first
        self._held: dict[Owner, int] = {}
        self._by_session: dict[int, set[str]] = {}  # id(session) -> its active job ids
        self.reclaimed = 0  # jobs cancelled as abandoned, for the soak figure and tests

    def held_by(self, owner: Owner) -> int:
        return self._held.get(owner, 0)

    # --- before a call ---------------------------------------------------------------------

    def refusal(self, owner: Owner) -> dict[str, Any] | None:
        """The reply that refuses a new job for ``owner``, or None when it is under its quota."""
        limit = self.max_jobs_per_client
        if limit is not None and self.held_by(owner) >= limit:
            return _quota_reply(limit)
        return None

    def reclaim_idle(self) -> int:
        """Cancel every active job without progress for job_idle_seconds; returns how many."""
        if self.job_idle_seconds is None:
            return 0
        deadline = self._clock() - self.job_idle_seconds
        count = 0
        while self._jobs:
            job_id, held = next(iter(self._jobs.items()))
            if held.touched > deadline:
                break
            self._remove(job_id)
            # An ordinary cancel: the job ends with a terminal reply its client can still
            # read on its next call (D-BRG-008), and the Bridge releases its slot.
            held.session.cancel(
                {"jobId": job_id, "outcome": "cancelled", "detail": RECLAIM_DETAIL.format(seconds=self.job_idle_seconds)}
            )
            count += 1
        self.reclaimed += count
        return count

    # --- after a call ----------------------------------------------------------------------

    def record(
        self, owner: Owner, session: _Session, tool: str, arguments: Mapping[str, Any] | None, reply: Mapping[str, Any]
    ) -> None:
        """Follow one tool call's effect on the jobs it names."""
        kind = reply.get("kind")
        if tool == "intent_prepare":
            if kind == "task":
                new_id = str(reply["jobId"])
                self._jobs[new_id] = _Held(owner, session, str(reply["stepToken"]), self._clock())
                self._held[owner] = self.held_by(owner) + 1
                self._by_session.setdefault(id(session), set()).add(new_id)
            return
        if tool not in ("intent_accept", "intent_cancel") or not isinstance(arguments, Mapping):
            return
        job_id = arguments.get("jobId")
        if not isinstance(job_id, str):
            return
        held = self._jobs.get(job_id)
        if held is None or held.session is not session:
            return  # not an active job of that Bridge session: the Bridge changed nothing
        code = reply.get("error", {}).get("code") if kind == "error" else None
        if tool == "intent_cancel":
            if code not in ("INPUT_INVALID", "BRIDGE_JOB_NOT_FOUND"):
                self._remove(job_id)  # the reply is the job's terminal reply
            return
        if arguments.get("stepToken") != held.token:
            return  # a replay of an earlier step, or a conflict: the current step is untouched
        if kind == "task":
            held.token = str(reply["stepToken"])
            self._touch(job_id, held)
        elif kind == "result" or code not in _UNCHANGED:
            self._remove(job_id)
        elif code == _REJECTED_CANDIDATE:
            self._touch(job_id, held)  # still working on this step

    def forget_session(self, session: _Session) -> None:
        """Drop the jobs of a closed Bridge session (the Bridge has already released them)."""
        for job_id in list(self._by_session.get(id(session), ())):
            self._remove(job_id)

    def _touch(self, job_id: str, held: _Held) -> None:
        held.touched = self._clock()
        self._jobs.move_to_end(job_id)

    def _remove(self, job_id: str) -> None:
        held = self._jobs.pop(job_id)
        jobs = self._by_session[id(held.session)]
        jobs.discard(job_id)
        if not jobs:
            del self._by_session[id(held.session)]
        left = self._held[held.owner] - 1
        if left:
            self._held[held.owner] = left
        else:
            del self._held[held.owner]
