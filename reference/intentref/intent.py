"""The in-process API: ``Intent(config).parse(request, executor)`` (seed 001 "响应结构", seed 004).

``Intent`` holds a checked configuration; ``start`` opens a pure ``Job`` that the Bridge
drives step by step, and ``parse`` / ``aparse`` drive the same job with a model executor
until it ends.  An executor signals a failure of its own by raising one of the
``Model*`` exceptions below; the job then ends with the matching code and is never repaired.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from intentref.core import jsonpointer
from intentref.core.errors import IntentParseError, Issue, error
from intentref.core.job import Job
from intentref.core.limits import DEFAULT_REPAIR_ATTEMPTS, MAX_REPAIR_ATTEMPTS
from intentref.core.policy import REFERENCE_POLICY, Policy
from intentref.core.request import read_request
from intentref.core.schema_subset import Definition
from intentref.core.text import has_text

CONFIG_KEYS: Final = frozenset({"language", "schema", "repairAttempts"})


class ModelExecutorError(Exception):
    """Raised by an executor to end the job with ``code`` (spec: R-ERR-031)."""

    code = "MODEL_REQUEST_FAILED"


class ModelAborted(ModelExecutorError):
    code = "MODEL_ABORTED"


class ModelRefused(ModelExecutorError):
    code = "MODEL_REFUSED"


class ModelOutputIncomplete(ModelExecutorError):
    code = "MODEL_OUTPUT_INCOMPLETE"


class ModelAuthFailed(ModelExecutorError):
    code = "MODEL_AUTH_FAILED"


class ModelRateLimited(ModelExecutorError):
    code = "MODEL_RATE_LIMITED"


class ModelRequestFailed(ModelExecutorError):
    code = "MODEL_REQUEST_FAILED"


def config_error(path: str, message: str) -> IntentParseError:
    return error("CONFIG_INVALID", "config", message, [Issue("CONFIG_INVALID", "config", path, message)])


class Intent:
    """A configured recogniser.  Construction checks everything (spec: R-SCH-009, R-SCH-010, D-CFG-001)."""

    def __init__(self, config: Mapping[str, Any] | None = None, *, policy: Policy = REFERENCE_POLICY) -> None:
        # ``policy``: the decisions this instance applies where the seeds are silent; the
        # reference's unless the suite builds a decision variant (intentref.core.policy).
        config = {} if config is None else config
        if not isinstance(config, Mapping):
            raise config_error("", "an Intent config must be an object.")
        for key in config:
            if key not in CONFIG_KEYS:
                raise config_error("/" + jsonpointer.escape_token(str(key)), f"unknown config member {key!r}.")
        language = config.get("language", policy.default_language)  # D-CFG-002
        if not has_text(language):
            raise config_error("/language", "language must be a non-blank language tag such as zh-CN.")
        attempts = config.get("repairAttempts", DEFAULT_REPAIR_ATTEMPTS)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts <= MAX_REPAIR_ATTEMPTS:
            raise config_error("/repairAttempts", f"repairAttempts must be an integer from 0 to {MAX_REPAIR_ATTEMPTS}.")
        self.language: str = language
        self.repair_attempts: int = attempts
        self.policy = policy
        self.definition = Definition.from_schema(config.get("schema"), policy)
        self.disposed = False

    @property
    def fields(self) -> tuple[str, ...]:
        return self.definition.fields

    def start(self, request: Any) -> Job:
        """Open a job for ``request``, or raise the request's stage-"input" error."""
        parsed = read_request(request, self.definition.fields, self.policy)
        return Job(self.definition, self.language, self.repair_attempts, parsed, self.policy)

    def parse(self, request: Any, executor: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
        """Run a whole job with a synchronous executor; the IntentResult, or IntentParseError."""
        job = self.start(request)
        while True:
            try:
                text = executor(job.model_request())
            except ModelExecutorError as exc:
                raise job.end(exc.code, str(exc) or None) from None
            result = _step(job, text)
            if result is not None:
                return result

    async def aparse(
        self, request: Any, executor: Callable[[dict[str, Any]], Awaitable[str] | str]
    ) -> dict[str, Any]:
        """``parse`` for an executor that may be a coroutine function."""
        job = self.start(request)
        while True:
            try:
                reply = executor(job.model_request())
                text = await reply if inspect.isawaitable(reply) else reply
            except ModelExecutorError as exc:
                raise job.end(exc.code, str(exc) or None) from None
            result = _step(job, text)
            if result is not None:
                return result

    def dispose(self) -> None:
        """Release the instance.  Nothing here holds a resource; kept for the seeds' lifecycle."""
        self.disposed = True


def _step(job: Job, text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        raise TypeError(f"the executor must return the candidate as str, not {type(text).__name__}")
    outcome = job.submit(text)
    if outcome.result is not None:
        return outcome.result
    if outcome.failure is not None:
        raise outcome.failure
    if outcome.rejection is not None:
        # On the API path nobody can resubmit the step, so a rejection ends the parse
        # (D-CFG-004), and like every ending after the core it keeps what was understood
        # (D-ERR-009).
        rejected = outcome.rejection
        raise error(rejected.code, rejected.stage, rejected.message, rejected.issues, job.checked_default)
    return None
