"""The job lifecycle as a Hypothesis state machine, against any target, with a plain dict model.

# spec: R-BRG-006, R-BRG-010, R-BRG-014, R-BRG-015, R-LIF-001, R-LIF-002, R-LIF-005, R-LIF-011, R-IDM-001, R-IDM-003, R-IDM-004, R-CAN-005, R-CAN-008, R-CAN-009, R-ERR-026, R-ERR-027

The model keeps, per job: its owner session, its stage (or ``None`` once terminal), its
current step token, the repairs it has used and every used step with its reply.  It
predicts reply kinds from the candidate it sends; the invariants are the issue's:

* nothing but a BridgeReply ever comes back (``ip.Example`` checks every call);
* an active job stays usable after every rejected call made against it;
* every replay of a used step is identical;
* other sessions get BRIDGE_JOB_NOT_FOUND for a job they do not own.

It drives only the Target protocol, so it runs unchanged in-process, over stdio or HTTP.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core.wire import CANCEL_OUTCOMES, NOT_A_STEP_CODES

# Instances with and without fields, with 0, 1 and 2 repairs.
INSTANCES = ["order", "default", "tworepairs", "norepair", "gen-00", "escaped", "english"]
MAX_SESSIONS = 3


# Malformed requests: which are refused, and how, is the reference's (the seeds give the types).
REQUEST_DECISIONS = ("D-BRG-001", "D-BRG-002", "D-BRG-015", "D-REQ-001", "D-REQ-003", "D-REQ-005", "D-MCP-006")


def repairs_allowed(instance: str) -> int:
    return int(ip.catalog_instances()[instance].get("repairAttempts", 1))


def judgement_decisions(instance: str, fault: str | None) -> tuple[str, ...]:
    """What the verdict on a candidate rests on beyond the seeds: a configured number of
    repairs (the seeds' default is one per stage) and a fault only a decision judges."""
    configured = ip.catalog_instances()[instance].get("repairAttempts", 1) != 1
    return (("D-CFG-001", "D-LIM-005") if configured else ()) + ip.FAULT_DECISIONS.get(fault or "", ())


class LifecycleMachine(RuleBasedStateMachine):
    target: ClassVar[Any] = None

    def __init__(self) -> None:
        super().__init__()
        self.example = ip.Example(type(self).target, requirements=("R-LIF-002", "R-IDM-001"))
        self.example.__enter__()
        self.sessions: list[ip.ExampleSession] = [self.example.session()]
        self.jobs: list[dict[str, Any]] = []  # the model: plain dicts, one per job
        self.tokens: set[str] = set()
        self._mcp = type(self).target.transport == "mcp"  # MCP tool arguments are always objects

    def teardown(self) -> None:
        self.example.__exit__(None, None, None)

    # --- model helpers ---------------------------------------------------------------------

    def _open_sessions(self) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if not s.closed]

    def _jobs(self, active: bool | None = None) -> list[dict[str, Any]]:
        return [j for j in self.jobs if not self.sessions[j["owner"]].closed
                and (active is None or (j["stage"] is not None) == active)]  # fmt: skip

    def _fresh(self, token: str) -> None:
        assert token not in self.tokens, "a token was issued twice"  # spec: R-LIF-011
        self.tokens.add(token)

    def _session(self, job: dict[str, Any]) -> ip.ExampleSession:
        return self.sessions[job["owner"]]

    def _still_usable(self, job: dict[str, Any], reply: dict[str, Any]) -> None:
        """After a rejected call the job is unchanged: same stage, same open step."""
        assert reply["kind"] == "error" and reply["error"]["code"] in NOT_A_STEP_CODES, reply

    def _record(self, job: dict[str, Any], text: str, reply: dict[str, Any]) -> None:
        job["used"].append((job["token"], text, reply, self._session(job).last_text))
        if reply["kind"] == "task":
            assert reply["jobId"] == job["id"]
            self._fresh(reply["stepToken"])
            job["token"], job["stage"] = reply["stepToken"], reply["stage"]
        else:
            job["stage"], job["terminal"] = None, reply

    # --- rules -----------------------------------------------------------------------------

    @precondition(lambda self: len(self._open_sessions()) < MAX_SESSIONS and ip.separate_sessions(self.example.target))
    @rule()
    def connect(self) -> None:
        self.sessions.append(self.example.session())

    @precondition(lambda self: len(self._open_sessions()) >= 2)
    @rule(data=st.data())
    def close_session(self, data: st.DataObject) -> None:
        # spec: R-LIF-012 -- its jobs go with it; the model forgets them (the connection is gone).
        index = data.draw(st.sampled_from(self._open_sessions()))
        self.sessions[index].close()

    @rule(data=st.data())
    def prepare(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self._open_sessions()))
        name = data.draw(st.sampled_from(ip.available(type(self).target, INSTANCES)))
        plan = data.draw(ist.plans(name, allow_empty_selection=True))
        reply = self.sessions[index].prepare(plan.request)
        assert reply["kind"] == "task" and reply["stage"] == "core", reply  # spec: R-BRG-006
        self._fresh(reply["jobId"])
        self._fresh(reply["stepToken"])
        self.jobs.append({"id": reply["jobId"], "owner": index, "instance": name, "plan": plan, "stage": "core",
                          "token": reply["stepToken"], "repairs": {"core": 0, "data": 0}, "used": [],
                          "terminal": None, "payload": reply["payload"]})  # fmt: skip

    @rule(data=st.data())
    def prepare_malformed(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self._open_sessions()))
        defect, request = data.draw(ist.malformed_requests("prepare", objects_only=self._mcp, lone_surrogates=False))
        reply = self.sessions[index].prepare(request)
        with ip.decided(*REQUEST_DECISIONS):
            assert reply["kind"] == "error", (defect, reply)  # spec: R-LIF-001

    @precondition(lambda self: self._jobs(active=True))
    @rule(data=st.data())
    def accept(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._jobs(active=True)))
        payload = json.loads(job["payload"])
        stage = job["stage"]
        if stage == "core":
            subject = ip.Subject("core", data.draw(ist.core_candidates()), payload)
        else:
            subject = ip.Subject("data", data.draw(ist.data_candidates(payload, job["plan"].data)), payload)
        expected, fault = "valid", None
        text = subject.text
        if data.draw(st.booleans()):
            fault, broken = data.draw(ist.broken_candidates(subject, lone_surrogates=False))
            text, expected = broken.text, broken.expected_code
        reply = self._session(job).accept({"jobId": job["id"], "stepToken": job["token"], "candidateText": text})
        code = ip.error_code(reply)
        assert code not in ("BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT"), ("an active job was lost", reply)
        with ip.decided(*judgement_decisions(job["instance"], fault)):
            self._judged(job, stage, expected, text, reply)

    def _judged(self, job: dict[str, Any], stage: str, expected: str, text: str, reply: dict[str, Any]) -> None:
        code = ip.error_code(reply)
        if expected == "LIMIT_EXCEEDED":
            self._still_usable(job, reply)
            return
        if expected == "MODEL_OUTPUT_INVALID":
            if job["repairs"][stage] < repairs_allowed(job["instance"]):  # spec: R-ERR-026, R-ERR-027
                job["repairs"][stage] += 1
                assert reply["kind"] == "task" and reply["stage"] == stage, reply
                with ip.decided("D-PAY-004"):  # the repair material's shape
                    assert json.loads(reply["payload"])["repair"]["attempt"] == job["repairs"][stage]
            else:
                assert code == "MODEL_OUTPUT_INVALID" and reply["error"]["stage"] == stage, reply
        elif expected == "DATA_EXTRACTION_FAILED":
            assert code == "DATA_EXTRACTION_FAILED", reply  # spec: R-ERR-030 -- never repaired
        elif stage == "core" and job["plan"].selected:
            assert reply["kind"] == "task" and reply["stage"] == "data", reply
        else:
            assert reply["kind"] == "result", reply
        if reply["kind"] == "task":
            job["payload"] = reply["payload"]
        self._record(job, text, reply)

    @precondition(lambda self: self._jobs(active=True))
    @rule(data=st.data())
    def accept_malformed(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._jobs(active=True)))
        defect, request = data.draw(ist.malformed_requests("accept", job_id=job["id"], step_token=job["token"],
                                                           objects_only=self._mcp))  # fmt: skip
        reply = self._session(job).accept(request)
        with ip.decided(*REQUEST_DECISIONS):
            assert reply["kind"] == "error", (defect, reply)
            self._still_usable(job, reply)

    @precondition(lambda self: any(j["used"] for j in self._jobs()))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        # spec: R-IDM-001 -- the same text on a used step: the same reply.
        job = data.draw(st.sampled_from([j for j in self._jobs() if j["used"]]))
        token, text, reply, wire = data.draw(st.sampled_from(job["used"]))
        again = self._session(job).accept({"jobId": job["id"], "stepToken": token, "candidateText": text})
        with ip.decided("D-BRG-007"):  # seed 000: a replay *may* reuse the retained reply
            assert ip.canonical(again) == ip.canonical(reply), "replay drift"
            last = self._session(job).last_text
            assert wire is None or last is None or last == wire, "replay drift in the text content"

    @precondition(lambda self: any(j["used"] for j in self._jobs()))
    @rule(data=st.data())
    def conflict(self, data: st.DataObject) -> None:
        # spec: R-IDM-003, R-LIF-005 -- another text on a used step conflicts, active job or not.
        job = data.draw(st.sampled_from([j for j in self._jobs() if j["used"]]))
        token, text, _, _ = data.draw(st.sampled_from(job["used"]))
        other = text + data.draw(st.sampled_from([" ", "\n", "x"]))
        reply = self._session(job).accept({"jobId": job["id"], "stepToken": token, "candidateText": other})
        with ip.decided("D-BRG-008"):  # seed 000: *may* conflict
            assert ip.error_code(reply) == "BRIDGE_STEP_CONFLICT", reply

    @precondition(lambda self: self._jobs() and len(self._open_sessions()) >= 2)
    @rule(data=st.data())
    def foreign(self, data: st.DataObject) -> None:
        # spec: R-BRG-014, R-BRG-015 -- another session's job does not exist for this one.
        job = data.draw(st.sampled_from(self._jobs()))
        other = data.draw(st.sampled_from([i for i in self._open_sessions() if i != job["owner"]]))
        if data.draw(st.booleans()):
            reply = self.sessions[other].accept({"jobId": job["id"], "stepToken": job["token"], "candidateText": "{}"})
        else:
            reply = self.sessions[other].cancel({"jobId": job["id"]})
        with ip.decided("D-BRG-003"):
            assert ip.error_code(reply) == "BRIDGE_JOB_NOT_FOUND", reply

    @rule(data=st.data())
    def unknown_job(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self._open_sessions()))
        job_id = data.draw(st.sampled_from(["x" * 22, "", "never-issued"]))
        reply = self.sessions[index].cancel({"jobId": job_id})  # spec: R-CAN-009
        with ip.decided("D-BRG-003"):
            assert ip.error_code(reply) == "BRIDGE_JOB_NOT_FOUND", reply

    @precondition(lambda self: self._jobs(active=True))
    @rule(data=st.data())
    def stale_token(self, data: st.DataObject) -> None:
        # spec: R-IDM-004 -- a token that is not the open step's conflicts and leaves the job alone.
        job = data.draw(st.sampled_from(self._jobs(active=True)))
        token = data.draw(st.sampled_from(["x" * 22, job["id"], job["token"] + "x"]))
        reply = self._session(job).accept({"jobId": job["id"], "stepToken": token, "candidateText": "{}"})
        with ip.decided("D-BRG-008"):
            assert ip.error_code(reply) == "BRIDGE_STEP_CONFLICT", reply

    @precondition(lambda self: self._jobs(active=True))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        # spec: R-CAN-005 .. R-CAN-007
        job = data.draw(st.sampled_from(self._jobs(active=True)))
        outcome = data.draw(st.sampled_from([None, *CANCEL_OUTCOMES]))
        request: dict[str, Any] = {"jobId": job["id"]}
        if outcome is not None:
            request["outcome"] = outcome
        if data.draw(st.booleans()):
            request["detail"] = data.draw(st.sampled_from(["模型拒绝", " ", "x" * 2048]))
        reply = self._session(job).cancel(request)
        stage, job["stage"], job["terminal"] = job["stage"], None, reply
        assert ip.error_code(reply) == CANCEL_OUTCOMES[outcome or "cancelled"], reply
        with ip.decided("D-BRG-015"):  # the stage of a cancel's error
            assert reply["error"]["stage"] == stage

    @precondition(lambda self: self._jobs(active=True))
    @rule(data=st.data())
    def cancel_malformed(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._jobs(active=True)))
        defect, request = data.draw(ist.malformed_requests("cancel", job_id=job["id"], objects_only=self._mcp, lone_surrogates=False))
        reply = self._session(job).cancel(request)
        with ip.decided(*REQUEST_DECISIONS):
            assert reply["kind"] == "error", (defect, reply)
            self._still_usable(job, reply)

    @precondition(lambda self: self._jobs(active=False))
    @rule(data=st.data())
    def cancel_terminal(self, data: st.DataObject) -> None:
        # spec: R-CAN-008 -- a retained terminal job answers with its terminal reply, a result too.
        job = data.draw(st.sampled_from(self._jobs(active=False)))
        reply = self._session(job).cancel({"jobId": job["id"], "outcome": "refusal"})
        with ip.decided("D-LIM-001", "D-BRG-013"):  # still retained: the capacities are the reference's
            assert ip.canonical(reply) == ip.canonical(job["terminal"]), "replay drift"

    @invariant()
    def tokens_are_never_reissued(self) -> None:
        assert len(self.tokens) == len(set(self.tokens))


def test_job_lifecycle(intentref_target: Any) -> None:
    LifecycleMachine.target = intentref_target
    run_state_machine_as_test(LifecycleMachine, settings=settings(settings.default))
