"""Fair capacity over streamable HTTP: who a client is, how much of the Bridge it may hold, idle reclaim.

The Bridge's own capacity rules stay as they are (seed 000 "配置与容量": ``maxJobs`` is
shared, an active job is never evicted to admit another's, terminal records go first).
This module adds the server's policy for a shared HTTP endpoint:

* the fair share (D-MCP-025): no client holds more than half of the Bridge's job slots,
  and once half of them are in use only a client that holds no job may start one, so a
  client holding nothing finds a free slot unless more than half the Bridge's size of
  other clients hold jobs;
* who a client is (D-MCP-026): an MCP session in the handshake era; in the 2026-07-28 era,
  which has no session, the peer address together with the clientInfo the request declares;
* idle reclaim (D-MCP-021): an active job with no progress for ``job_idle_seconds`` is taken
  to be abandoned and cancelled, so its slot comes back without anyone else's traffic
  evicting it.

The ledger learns which jobs are active from the replies it sees, and how full the Bridge is
from the Bridge's own counter, so it needs nothing of the Bridge beyond its public API.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, NOT_A_STEP_CODES, PREPARE_TOOL
from intentref.mcp.replies import self_error_reply

# D-MCP-021: ten minutes without a step is far beyond the time a model takes to write one
# candidate, and a third of the SDK's idle limit for a whole session (1,800 s).
DEFAULT_JOB_IDLE_SECONDS: Final = 600.0
# D-MCP-026: how much of a declared clientInfo name or version a refusal quotes.  The
# identity itself is a digest of the whole value, so a long name costs no memory per job.
MAX_QUOTED_CLIENT_INFO: Final = 64
# D-LIM-007: tool calls one caller (a principal, or without authorization a client as D-MCP-026
# tells them apart) may make per second on average, and how many seconds of them at once.
# The normative suite over HTTP, one caller, makes 3,473 calls at about 900 a second on a
# quiet machine: it never meets this; a runaway caller meets it within two seconds.
DEFAULT_CALLS_PER_SECOND: Final = 1000
CALL_BURST_SECONDS: Final = 2

# Accept replies that leave the job where it was (D-BRG-009, R-IDM-004): a refused argument,
# a job this session does not have, a stale or conflicting token, a rejected candidate.
_UNCHANGED: Final = frozenset(NOT_A_STEP_CODES)
# The one unchanged reply that still shows the client working on the job's current step.
_REJECTED_CANDIDATE: Final = "LIMIT_EXCEEDED"
RECLAIM_DETAIL: Final = "reclaimed by the server: no progress for {seconds:g} s (D-MCP-021)"


# --------------------------------------------------------------------------- the fair share


def per_client_share(slots: int) -> int:
    """D-MCP-025: the most active jobs one client may hold: half the Bridge's job slots, at least 1."""
    return max(1, slots // 2)


def per_client_fault(limit: int, slots: int) -> str | None:
    """Why ``limit`` cannot be the per-client limit of a Bridge with ``slots`` job slots, or None."""
    share = per_client_share(slots)
    if 1 <= limit <= share:
        return None
    return (
        f"{limit} is not a per-client limit for a Bridge of {slots} job slots: it must be from 1 to {share}, "
        "since no client may hold more than half of them (D-MCP-025); raise --max-jobs for more."
    )


@dataclass(frozen=True)
class FairShare:
    """The admission rule of D-MCP-025 for one Bridge: refuse a new job, or let the Bridge judge it.

    ``slots`` is the Bridge's ceiling on active jobs (the smaller of ``maxJobs`` and
    ``maxReplayEntries``); ``per_client`` the most one client may hold (at most half of
    ``slots``).  The second half of the slots, from ``half_mark`` on, is open only to a
    client that holds no job: that is what keeps a slot for a newcomer however many
    clients hold their share, up to ``slots - half_mark`` of them.
    """

    slots: int
    per_client: int

    @classmethod
    def of(cls, slots: int, per_client: int | None = None) -> FairShare:
        """The rule for ``slots`` slots; ``per_client`` may lower the limit, never raise it past the share."""
        if slots < 1:
            raise ValueError("a Bridge has at least one job slot")
        limit = per_client_share(slots) if per_client is None else per_client
        if (fault := per_client_fault(limit, slots)) is not None:
            raise ValueError(fault)
        return cls(slots, limit)

    @property
    def half_mark(self) -> int:
        return self.slots // 2

    def refusal(self, held: int, active: int) -> str | None:
        """Why a client holding ``held`` jobs may not start one while ``active`` are in use, or None."""
        if held >= self.per_client:
            return (
                f"already holds {held} active jobs, the server's per-client limit ({self.per_client} of the "
                f"Bridge's {self.slots} job slots); finish or cancel one ({CANCEL_TOOL}) before preparing another."
            )
        if held and active >= self.half_mark:
            return (
                f"already holds {held} active jobs and the Bridge is at least half full ({active} of "
                f"{self.slots} job slots in use): past the half mark only a client holding no job may start "
                f"one, so finish or cancel one ({CANCEL_TOOL}) before preparing another."
            )
        return None


# --------------------------------------------------------------------------- who a client is


@dataclass(frozen=True)
class Client:
    """Whoever jobs count against: ``key`` tells clients apart; ``label`` is how a refusal names it."""

    key: Hashable
    label: str = field(compare=False)


def session_client(session: object) -> Client:
    """D-MCP-026, handshake era: the MCP session (its Bridge session stands for it)."""
    return Client(("session", session), "this MCP session")


def _quoted(text: str) -> str:
    return repr(text if len(text) <= MAX_QUOTED_CLIENT_INFO else text[:MAX_QUOTED_CLIENT_INFO] + "…")


def stateless_client(host: str | None, client_info: tuple[str, str] | None) -> Client:
    """D-MCP-026, 2026-07-28 era: the peer address with the declared clientInfo's name and version.

    ``client_info`` is ``(name, version)`` as the request's ``_meta`` declared it, or None when it
    declared none.  Both parts are evidence, not proof: any process on the host can connect
    from another loopback address or declare another clientInfo, so a client that wants to be
    many can be (D-MCP-025 says what holds then).
    """
    digest = hashlib.sha256(repr(client_info).encode("utf-8", "surrogatepass")).digest()
    declared = "no clientInfo" if client_info is None else f"clientInfo {_quoted(client_info[0])} {_quoted(client_info[1])}"
    return Client(("stateless", host, digest), f"the 2026-07-28 client at {host or 'an unknown address'} ({declared})")


def principal_client(principal: str) -> Client:
    """D-MCP-031, with authorization, in both eras: the principal the verified token names."""
    return Client(("principal", principal), f"the principal {_quoted(principal)}")


# --------------------------------------------------------------------------- the ledger


class _Session(Protocol):
    def cancel(self, request: dict[str, Any]) -> Any: ...


@dataclass
class _Held:
    owner: Client
    session: _Session
    token: str  # the job's current stepToken, as its last task gave it
    touched: float  # monotonic seconds of its last progress


class JobLedger:
    """The active jobs of one HTTP app: whose they are and when each last made progress.

    ``active_jobs`` reads the Bridge's own count of active jobs (every session's, not only
    this app's), which is what the half mark of D-MCP-025 is judged against.
    """

    def __init__(
        self,
        share: FairShare,
        active_jobs: Callable[[], int],
        job_idle_seconds: float | None = DEFAULT_JOB_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if job_idle_seconds is not None and not job_idle_seconds > 0:
            raise ValueError("job_idle_seconds must be positive, or None to never reclaim")
        self.share = share
        self.job_idle_seconds = job_idle_seconds
        self._active_jobs = active_jobs
        self._clock = clock
        self._jobs: OrderedDict[str, _Held] = OrderedDict()  # least recent progress first
        self._held: dict[Client, int] = {}
        self._by_session: dict[int, set[str]] = {}  # id(session) -> its active job ids
        self.reclaimed = 0  # jobs cancelled as abandoned, for the soak figure and tests

    def held_by(self, owner: Client) -> int:
        return self._held.get(owner, 0)

    # --- before a call ---------------------------------------------------------------------

    def refusal(self, owner: Client) -> dict[str, Any] | None:
        """The reply that refuses a new job for ``owner`` (D-MCP-025), or None to let the Bridge judge."""
        why = self.share.refusal(self.held_by(owner), self._active_jobs())
        return None if why is None else self_error_reply("LIMIT_EXCEEDED", f"{owner.label} {why}")

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
        self, owner: Client, session: _Session, tool: str, arguments: Mapping[str, Any] | None, reply: Mapping[str, Any]
    ) -> None:
        """Follow one tool call's effect on the jobs it names."""
        kind = reply.get("kind")
        if tool == PREPARE_TOOL:
            if kind == "task":
                new_id = str(reply["jobId"])
                self._jobs[new_id] = _Held(owner, session, str(reply["stepToken"]), self._clock())
                self._held[owner] = self.held_by(owner) + 1
                self._by_session.setdefault(id(session), set()).add(new_id)
            return
        if tool not in (ACCEPT_TOOL, CANCEL_TOOL) or not isinstance(arguments, Mapping):
            return
        job_id = arguments.get("jobId")
        if not isinstance(job_id, str):
            return
        held = self._jobs.get(job_id)
        if held is None or held.session is not session:
            return  # not an active job of that Bridge session: the Bridge changed nothing
        code = reply.get("error", {}).get("code") if kind == "error" else None
        if tool == CANCEL_TOOL:
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
