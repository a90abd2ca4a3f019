"""One recognition job as a pure state machine: the whole lifecycle in one transition table.

What may live here: the job states, the events that move a job, ``TRANSITIONS``, and the
``Job`` object that reads a candidate, decides which event it is, and builds the next
task or the terminal outcome.  No IO, no clocks, no tokens, no sessions: the API path
(``intentref.intent``) and the Bridge (``intentref.bridge``) both drive a ``Job`` and add
those themselves.

    CORE --core accepted, fields selected--> DATA --data accepted--> SUCCEEDED
    CORE --core accepted, nothing to extract--> SUCCEEDED
    CORE|DATA --contract fault, repair left--> same stage (a repair task)
    CORE|DATA --contract fault, none left / host ended / business fault--> FAILED
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

from intentref.core import core_candidate, data_candidate
from intentref.core.errors import CANCEL_CODES, ErrorStage, IntentParseError, Issue, error
from intentref.core.jsontext import CandidateTextError
from intentref.core.limits import utf8_length
from intentref.core.policy import REFERENCE_POLICY, Policy
from intentref.core.request import ParseRequest
from intentref.core.schema_subset import Definition
from intentref.core.task import Repair, Task


class State(enum.Enum):
    CORE = "core"
    DATA = "data"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Event(enum.Enum):
    CORE_ACCEPTED_WITH_FIELDS = "core accepted, fields selected"
    CORE_ACCEPTED = "core accepted, nothing to extract"
    DATA_ACCEPTED = "data accepted"
    REPAIR_OFFERED = "contract fault, repair left"
    CONTRACT_FAILED = "contract fault, no repair left"
    BUSINESS_FAILED = "business information missing"
    ENDED = "ended by the host, the model or the clock"


# The lifecycle.  A (state, event) pair missing here is a bug, and raises KeyError.
TRANSITIONS: Final[dict[tuple[State, Event], State]] = {
    (State.CORE, Event.CORE_ACCEPTED_WITH_FIELDS): State.DATA,  # spec: R-FLD-002
    (State.CORE, Event.CORE_ACCEPTED): State.SUCCEEDED,  # spec: R-FLD-003
    (State.CORE, Event.REPAIR_OFFERED): State.CORE,  # spec: R-TSK-009 -- no separate repair stage
    (State.CORE, Event.CONTRACT_FAILED): State.FAILED,
    (State.CORE, Event.ENDED): State.FAILED,
    (State.DATA, Event.DATA_ACCEPTED): State.SUCCEEDED,
    (State.DATA, Event.REPAIR_OFFERED): State.DATA,
    (State.DATA, Event.CONTRACT_FAILED): State.FAILED,
    (State.DATA, Event.BUSINESS_FAILED): State.FAILED,  # spec: R-ERR-030 -- never repaired
    (State.DATA, Event.ENDED): State.FAILED,
}

ACTIVE: Final = frozenset({State.CORE, State.DATA})

# D-ERR-006: fixed messages; hosts branch on codes, never on these (spec: R-LIF-007, R-ERR-013).
CORE_CONTRACT_MESSAGE: Final = "The core candidate does not satisfy the candidate contract."
DATA_CONTRACT_MESSAGE: Final = "The data candidate does not satisfy the candidate contract."
EXTRACTION_MESSAGE: Final = "Selected extension information cannot satisfy the definition."  # seed 004 example
CANCEL_MESSAGES: Final = {
    "MODEL_ABORTED": "The host cancelled the job.",
    "MODEL_REFUSED": "The host's model refused the task.",
    "MODEL_OUTPUT_INCOMPLETE": "The host's model did not produce a complete candidate.",
}


@dataclass(frozen=True)
class Outcome:
    """What one submission led to.  Exactly one of task / result / failure / rejection."""

    task: Task | None = None
    result: dict[str, Any] | None = None
    failure: IntentParseError | None = None
    # A rejection leaves the job where it was: same state, same step (spec: R-CAP-013).
    rejection: IntentParseError | None = None


class Job:
    def __init__(self, definition: Definition, language: str, repair_attempts: int, request: ParseRequest,
                 policy: Policy = REFERENCE_POLICY) -> None:  # fmt: skip
        self.definition = definition
        self.policy = policy
        self.language = language
        self.repair_attempts = repair_attempts
        self.request = request
        self.state = State.CORE
        self.repairs_used = {"core": 0, "data": 0}
        self.checked_default: dict[str, Any] | None = None
        self.selected = definition.fields if request.fields is None else request.fields
        self.task: Task = self._core_task(None)

    @classmethod
    def at_step(
        cls,
        definition: Definition,
        language: str,
        repair_attempts: int,
        request: ParseRequest,
        *,
        stage: ErrorStage = "core",
        checked_default: dict[str, Any] | None = None,
        repairs_used: int = 0,
        repair: Repair | None = None,
        policy: Policy = REFERENCE_POLICY,
    ) -> Job:
        """A job standing at a step a host has received: what ``intentref check`` judges offline.

        A data step needs the checked default of its core step; ``repairs_used`` repairs of
        ``stage`` are already spent, and ``repair`` is the repair material the task carries.
        """
        job = cls(definition, language, repair_attempts, request, policy)
        job.repairs_used[stage] = repairs_used
        if stage == "data":
            job.state = State.DATA
            job.checked_default = checked_default
            job.task = job._data_task(repair)
        elif repair is not None:
            job.task = job._core_task(repair)
        return job

    # --- transitions ------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def stage(self) -> ErrorStage:
        return "data" if self.state is State.DATA else "core"

    def _move(self, event: Event) -> None:
        self.state = TRANSITIONS[(self.state, event)]

    def submit(self, candidate_text: str) -> Outcome:
        """Judge one complete candidate for the current step."""
        if not self.active:
            raise RuntimeError("submit() on a job that has ended")
        max_bytes = self.policy.max_candidate_bytes  # D-LIM-003
        if utf8_length(candidate_text, self.policy.lone_surrogate_utf8_bytes) > max_bytes:
            message = f"candidateText exceeds {max_bytes} UTF-8 bytes."
            return Outcome(rejection=error("LIMIT_EXCEEDED", self.stage, message,
                                           [Issue("LIMIT_EXCEEDED", "processing", None, message)]))  # fmt: skip
        try:
            candidate = self.policy.read_candidate(candidate_text)
        except CandidateTextError as exc:
            return self._contract_fault([(exc.path, str(exc))], candidate_text)
        if self.state is State.CORE:
            return self._submit_core(candidate, candidate_text)
        return self._submit_data(candidate, candidate_text)

    def end(self, code: str, detail: str | None = None, stage: ErrorStage | None = None) -> IntentParseError:
        """End an active job for a reason outside the candidate (cancel, model failure, expiry)."""
        if code not in _END_MESSAGES:  # D-ERR-004 -- a host's own ModelExecutorError subclass with a made-up code
            raise ValueError(f"{code!r} is not a code a job can end with: {', '.join(_END_MESSAGES)}")
        stage = stage or self.stage
        self._move(Event.ENDED)
        return error(code, stage, _END_MESSAGES[code], self.policy.detail_issues(code, detail),
                     self.checked_default)  # fmt: skip

    def cancel(self, outcome: str, detail: str | None = None) -> IntentParseError:
        return self.end(CANCEL_CODES[outcome], detail)  # spec: R-CAN-001, R-CAN-002

    # --- core -------------------------------------------------------------------------------

    def _submit_core(self, candidate: Any, text: str) -> Outcome:
        violations = self.policy.core_violations(candidate)
        if violations:
            return self._contract_fault(violations, text)
        self.checked_default = core_candidate.assemble_result(self.request.input, candidate)
        if not self.selected:
            self._move(Event.CORE_ACCEPTED)
            return Outcome(result=self.checked_default)
        self._move(Event.CORE_ACCEPTED_WITH_FIELDS)
        self.task = self._data_task(None)
        return Outcome(task=self.task)

    # --- data -------------------------------------------------------------------------------

    def _submit_data(self, candidate: Any, text: str) -> Outcome:
        assert self.checked_default is not None
        ctx = data_candidate.DataContext(self.definition, self.selected, self.request.sources())
        judgement = data_candidate.judge(candidate, ctx, self.policy)
        if judgement.violations:
            return self._contract_fault(judgement.violations, text)
        if judgement.issues:
            self._move(Event.BUSINESS_FAILED)
            # spec: R-ERR-036, R-ERR-037 -- partialResult keeps the default result with data {}.
            return Outcome(failure=error("DATA_EXTRACTION_FAILED", "data", EXTRACTION_MESSAGE,
                                         judgement.issues, self.checked_default))  # fmt: skip
        self._move(Event.DATA_ACCEPTED)
        assert judgement.data is not None
        return Outcome(result={**self.checked_default, "data": judgement.data})

    # --- faults and repairs -----------------------------------------------------------------

    def _contract_fault(self, violations: list[tuple[str, str]], text: str) -> Outcome:
        stage = self.stage
        issues = tuple(self.policy.contract_issues(violations))
        if self.repairs_used[stage] < self.repair_attempts:  # spec: R-ERR-026, R-ERR-027
            self.repairs_used[stage] += 1
            self._move(Event.REPAIR_OFFERED)
            repair = Repair(self.repairs_used[stage], self.repair_attempts, issues, text)
            self.task = self._core_task(repair) if stage == "core" else self._data_task(repair)
            return Outcome(task=self.task)
        self._move(Event.CONTRACT_FAILED)
        message = CORE_CONTRACT_MESSAGE if stage == "core" else DATA_CONTRACT_MESSAGE
        return Outcome(failure=error("MODEL_OUTPUT_INVALID", stage, message, issues, self.checked_default))

    # --- tasks ------------------------------------------------------------------------------

    def _core_task(self, repair: Repair | None) -> Task:
        return Task("core", self.language, self.request, repair)

    def _data_task(self, repair: Repair | None) -> Task:
        return Task("data", self.language, self.request, repair, self.definition, self.checked_default, self.selected)

    def model_request(self) -> dict[str, Any]:
        """The current task as this job's policy writes it for a model (``Intent.parse``)."""
        return self.policy.writer.model_request(self.task)


# Every code a job can end with outside a candidate: a cancel outcome, a model failure, expiry.
_END_MESSAGES: Final = {
    **CANCEL_MESSAGES,
    "MODEL_AUTH_FAILED": "The model provider rejected the credentials.",
    "MODEL_RATE_LIMITED": "The model provider rate-limited the request.",
    "MODEL_REQUEST_FAILED": "The model request failed.",
    "BRIDGE_JOB_EXPIRED": "The job expired before it was completed.",
}
