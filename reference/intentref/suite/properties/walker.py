"""The session walker: a random walk of Bridge calls with a model of what must come back.

It drives ``intentref properties``'s long campaign against any target, and writes the
session cases of ``intentref fuzz`` against the reference (``properties.fuzz_cases``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Final

from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, has_lone_surrogate
from intentref.core.wire import CANCEL_OUTCOMES, NOT_A_STEP_CODES
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.generators.candidates import core_candidate, data_candidate
from intentref.suite.generators.catalog import catalog_instances
from intentref.suite.generators.faults import CANDIDATE_FAULTS, Subject, faults_for
from intentref.suite.generators.reference_replies import catalog_schema
from intentref.suite.generators.requests import malformed_request, plan_request
from intentref.suite.generators.texts import detail_with_bytes
from intentref.suite.properties.case_writer import Call
from intentref.suite.properties.differential import Divergence, canonical
from intentref.suite.properties.targets import call_allowing_refusal
from intentref.suite.targets.base import RequestDropped

WALK_INSTANCES: Final = ("order", "default", "tworepairs", "norepair", "multi", "escaped", "english", "period",
                         "gen-00", "gen-01", "gen-02", "gen-03", "gen-04", "gen-05")  # fmt: skip
# Action -> weight.  Common host behaviour first; the rest probes the edges.
ACTIONS: Final = {"prepare": 16, "prepare_malformed": 5, "accept": 22, "accept_fault": 16, "accept_malformed": 4,
                  "replay": 8, "conflict": 4, "foreign": 3, "stale": 2, "cancel": 5, "cancel_terminal": 3,
                  "cancel_malformed": 3, "connect": 2, "close": 1}  # fmt: skip
# Used steps with texts longer than this are not kept for replay (memory over long runs).
MAX_KEPT_TEXT: Final = 300_000


@dataclass
class JobModel:
    id: str
    owner: int
    instance: str
    plan: Any
    stage: str | None  # None once terminal
    token: str
    payload: str
    repairs: dict[str, int] = field(default_factory=lambda: {"core": 0, "data": 0})
    used: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # token, text, canonical, wire
    terminal: str | None = None  # canonical terminal reply


class Walker:
    """A random walk of Bridge calls over a few sessions, with a model of what must come back.

    Every call is counted in ``tally``; a failed invariant (a lost active job, a replay
    drift, a wrong prediction) is counted and noted, not raised, so a long run reports
    everything it found.  ``calls`` is the reference-space log for ``case_from_calls``.
    """

    def __init__(self, run: Any, draw: Any, tally: Any, heavy: bool = False, max_sessions: int = 3,
                 objects_only: bool = False, instances: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.run, self.d, self.tally, self.heavy = run, draw, tally, heavy
        self.objects_only = objects_only  # MCP tool arguments are always objects
        self.max_sessions = max_sessions
        self.catalog = catalog_instances() if instances is None else instances  # what the run serves
        self.instances = [name for name in WALK_INSTANCES if name in self.catalog]
        self.sessions: list[Any] = []
        self.names: list[str] = []
        self.jobs: list[JobModel] = []
        self.calls: list[Call] = []
        self._last_wire: str | None = None
        self._new_session()

    # --- plumbing --------------------------------------------------------------------------

    def _new_session(self) -> None:
        self.sessions.append(self.run.connect())
        self.names.append("main" if len(self.names) == 0 else f"s{len(self.names) + 1}")

    def _open(self) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if s is not None]

    def _jobs(self, active: bool | None = None) -> list[JobModel]:
        return [j for j in self.jobs if self.sessions[j.owner] is not None
                and (active is None or (j.stage is not None) == active)]  # fmt: skip

    def _call(self, index: int, op: str, request: Any) -> dict[str, Any] | None:
        self.tally.calls[op] += 1
        try:
            reply = call_allowing_refusal(self.sessions[index], op, request)
        except Divergence as exc:
            self.tally.divergences += 1
            if self.tally.room():  # building the case costs: only for the notes kept
                self.tally.note("divergence:\n" + str(exc))
            self._drop(index)
            return None
        except Exception as exc:  # the target broke: count it, carry on with a new connection
            if has_lone_surrogate(request):
                # Whether a lone surrogate reaches the server at all is its transport's matter,
                # decided by the reference (D-REQ-003, D-MCP-008; D-CNF-053): reference level.
                # A dropped request leaves a live connection, which goes on serving.
                self.tally.lone_surrogates_lost += 1
                if self.tally.lone_surrogates_lost == 1:
                    self.tally.note(f"{op} with a lone surrogate raised {type(exc).__name__}: {exc!s:.300}")
                if not isinstance(exc, RequestDropped):
                    self._drop(index)
                return None
            self.tally.uncaught_exceptions += 1
            self.tally.note(f"{op} raised {type(exc).__name__}: {exc!s:.300}")
            self._drop(index)
            return None
        value = reply.value
        self.calls.append(Call(self.names[index], op, request, value))
        if not is_bridge_reply(value):
            self.tally.non_replies += 1
            self.tally.note(f"{op} returned a non-reply: {value!r:.300}")
            return None
        self._last_wire = reply.text
        result: dict[str, Any] = value
        return result

    def _drop(self, index: int) -> None:
        session, self.sessions[index] = self.sessions[index], None
        with contextlib.suppress(Exception):  # a broken connection may not close cleanly
            session.close()
        if not self._open():
            self._new_session()

    def _fail(self, counter: str, text: str) -> None:
        setattr(self.tally, counter, getattr(self.tally, counter) + 1)
        self.tally.note(f"{counter}: {text:.400}")

    def close(self, release: bool = False) -> None:
        """End the walk: close every open session, or with ``release`` hand each back to the run.

        A released session has its active jobs cancelled and may serve the next walk on the
        same run (D-CNF-002, D-CNF-024): over stdio that saves a server process per session.
        """
        for index in self._open():
            self.calls.append(Call(self.names[index], "close"))
            try:
                session = self.sessions[index]
                session.release() if release else session.close()
            except Exception as exc:
                self.tally.uncaught_exceptions += 1
                self.tally.note(f"close raised {type(exc).__name__}: {exc}")
            self.sessions[index] = None

    # --- the walk --------------------------------------------------------------------------

    def step(self) -> None:
        names = list(ACTIONS)
        roll = self.d.integer(0, sum(ACTIONS.values()) - 1)
        for name in names:
            roll -= ACTIONS[name]
            if roll < 0:
                break
        getattr(self, "_" + name)()

    def _session_index(self) -> int:
        return int(self.d.choice(self._open()))

    def _prepare(self) -> None:
        index = self._session_index()
        name = self.d.choice(self.instances)
        plan = plan_request(self.d, name, catalog_schema(name), allow_empty_selection=True)
        reply = self._call(index, "prepare", plan.request)
        if reply is None:
            return
        if reply["kind"] != "task" or reply.get("stage") != "core":
            self._fail("mispredictions", f"a valid prepare was answered {reply}")
            return
        self.jobs.append(JobModel(reply["jobId"], index, name, plan, "core", reply["stepToken"], reply["payload"]))

    def _prepare_malformed(self) -> None:
        defect, request = malformed_request(self.d, "prepare", instance=self.d.choice(self.instances), heavy=self.heavy,
                                            objects_only=self.objects_only)
        self.tally.sent[defect] += 1
        reply = self._call(self._session_index(), "prepare", request)
        if reply is not None and reply["kind"] != "error":
            self._fail("mispredictions", f"{defect} was answered {reply['kind']}")

    def _active_job(self) -> JobModel | None:
        active = self._jobs(active=True)
        return self.d.choice(active) if active else None

    def _accept(self, broken: bool = False) -> None:
        job = self._active_job()
        if job is None:
            return self._prepare()
        payload = json.loads(job.payload)
        stage = job.stage
        assert stage is not None
        if stage == "core":
            subject = Subject("core", core_candidate(self.d), payload)
        else:
            subject = Subject("data", data_candidate(self.d, payload, job.plan.data), payload)
        text, expected = subject.text, "valid"
        if broken:
            fault = self.d.choice(faults_for(subject, include_heavy=self.heavy))
            made = CANDIDATE_FAULTS[fault](subject, self.d)
            text, expected = made.text, made.expected_code
            self.tally.sent[fault + (".100k" if fault == "json.deep_nesting" and len(text) >= 200_000 else "")] += 1
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": job.token, "candidateText": text})
        if reply is None:
            return None
        code = reply["error"]["code"] if reply["kind"] == "error" else None
        if code in ("BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT"):
            self._fail("lost_active_jobs", f"job {job.id} at {stage}: {code}")
            job.stage = None
            return None
        if not self._predicted(job, stage, expected, reply):
            self._fail("mispredictions", f"{expected} candidate at {stage} ({job.instance}) was answered {reply}")
        if expected == "LIMIT_EXCEEDED" and code == "LIMIT_EXCEEDED":
            return None  # refused: not a used step
        self._record(job, text, reply)
        return None

    def _predicted(self, job: JobModel, stage: str, expected: str, reply: dict[str, Any]) -> bool:
        code = reply["error"]["code"] if reply["kind"] == "error" else None
        if expected == "LIMIT_EXCEEDED":
            return code == "LIMIT_EXCEEDED"
        if expected == "MODEL_OUTPUT_INVALID":
            if job.repairs[stage] < int(self.catalog[job.instance].get("repairAttempts", 1)):
                job.repairs[stage] += 1
                return bool(reply["kind"] == "task" and reply["stage"] == stage)
            return code == "MODEL_OUTPUT_INVALID"
        if expected == "DATA_EXTRACTION_FAILED":
            return code == "DATA_EXTRACTION_FAILED"
        if stage == "core" and job.plan.selected:
            return bool(reply["kind"] == "task" and reply["stage"] == "data")
        return bool(reply["kind"] == "result")

    def _record(self, job: JobModel, text: str, reply: dict[str, Any]) -> None:
        if len(text) <= MAX_KEPT_TEXT:
            job.used.append((job.token, text, canonical(reply), self._last_wire))
        if reply["kind"] == "task":
            job.token, job.stage, job.payload = reply["stepToken"], reply["stage"], reply["payload"]
        else:
            job.stage, job.terminal = None, canonical(reply)

    def _accept_fault(self) -> None:
        self._accept(broken=True)

    def _accept_malformed(self) -> None:
        self._malformed("accept")

    def _malformed(self, op: str) -> None:
        """A malformed accept or cancel on an active job: refused, and the job's step left unused."""
        job = self._active_job()
        if job is None:
            return
        defect, request = malformed_request(self.d, op, job_id=job.id, step_token=job.token, heavy=self.heavy,
                                            objects_only=self.objects_only)  # fmt: skip
        self.tally.sent[defect] += 1
        reply = self._call(job.owner, op, request)
        if reply is not None and not _is_error(reply, *NOT_A_STEP_CODES):
            self._fail("mispredictions", f"{defect} was answered {reply}")

    def _used_job(self) -> JobModel | None:
        jobs = [j for j in self._jobs() if j.used]
        return self.d.choice(jobs) if jobs else None

    def _replay(self) -> None:
        job = self._used_job()
        if job is None:
            return
        token, text, expected, wire = self.d.choice(job.used)
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": text})
        if reply is None:
            return
        if reply["kind"] == "error" and reply["error"]["code"] == "BRIDGE_JOB_NOT_FOUND" and job.stage is None:
            job.used = []  # a terminal record may be reclaimed (spec: R-CAP-011): not a drift
            return
        if canonical(reply) != expected or (wire is not None and self._last_wire is not None and wire != self._last_wire):
            self._fail("replay_drifts", f"job {job.id}: {canonical(reply):.200} != {expected:.200}")

    def _conflict(self) -> None:
        job = self._used_job()
        if job is None:
            return
        token, text, _, _ = self.d.choice(job.used)
        other = text + self.d.choice([" ", "\n", "x", "\ud800"])
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": other})
        if reply is not None and not _is_error(reply, "BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND" if job.stage is None else ""):
            self._fail("mispredictions", f"another text on a used step was answered {reply}")

    def _foreign(self) -> None:
        jobs = self._jobs()
        others = self._open()
        if not jobs or len(others) < 2:
            return self._connect()
        job = self.d.choice(jobs)
        index = self.d.choice([i for i in others if i != job.owner])
        if self.d.boolean():
            reply = self._call(index, "accept", {"jobId": job.id, "stepToken": job.token, "candidateText": "{}"})
        else:
            reply = self._call(index, "cancel", {"jobId": job.id})
        if reply is not None and not _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            self._fail("mispredictions", f"another session's job was answered {reply}")
        return None

    def _stale(self) -> None:
        job = self._active_job()
        if job is None:
            return
        token = self.d.choice(["x" * 22, job.id, job.token + "x", ""])
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": "{}"})
        if reply is not None and not _is_error(reply, "BRIDGE_STEP_CONFLICT"):
            self._fail("mispredictions", f"a token of no step was answered {reply}")

    def _cancel(self) -> None:
        job = self._active_job()
        if job is None:
            return
        outcome = self.d.choice([None, *CANCEL_OUTCOMES])
        request: dict[str, Any] = {"jobId": job.id}
        if outcome is not None:
            request["outcome"] = outcome
        if self.d.boolean():
            request["detail"] = detail_with_bytes(self.d, self.d.choice([0, 1, 40, MAX_CANCEL_DETAIL_BYTES]))
        reply = self._call(job.owner, "cancel", request)
        if reply is None:
            return
        if _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            self._fail("lost_active_jobs", f"cancel of active job {job.id}")
        elif not _is_error(reply, CANCEL_OUTCOMES[outcome or "cancelled"]):
            self._fail("mispredictions", f"a cancel was answered {reply}")
        job.stage, job.terminal = None, canonical(reply)

    def _cancel_terminal(self) -> None:
        ended = [j for j in self._jobs(active=False) if j.terminal is not None]
        if not ended:
            return
        job = self.d.choice(ended)
        reply = self._call(job.owner, "cancel", {"jobId": job.id, "outcome": self.d.choice(list(CANCEL_OUTCOMES))})
        if reply is None or _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            return  # reclaimed (spec: R-CAP-011)
        if canonical(reply) != job.terminal:
            self._fail("replay_drifts", f"the terminal reply of {job.id} changed: {canonical(reply):.200}")

    def _cancel_malformed(self) -> None:
        self._malformed("cancel")

    def _connect(self) -> None:  # the "connect" action
        if len(self._open()) < self.max_sessions:
            self._new_session()

    def _close(self) -> None:
        if len(self._open()) < 2:
            return
        index = self._session_index()
        self.calls.append(Call(self.names[index], "close"))
        self.sessions[index].close()
        self.sessions[index] = None


def _is_error(reply: dict[str, Any], *codes: str) -> bool:
    return reply.get("kind") == "error" and reply["error"].get("code") in codes

