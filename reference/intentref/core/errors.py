"""The one typed error family of intentref, and the public error-code table.

Every failure the core or the Bridge can report is an :class:`IntentParseError`
(or its data subclass).  Nothing else is raised across the public boundary; the
Bridge turns these errors into ``{"kind": "error", ...}`` replies in exactly one
place (``intentref.bridge_store.error_reply``), and the API path raises them.

The seeds name a public error enumeration but its table was lost
(spec: R-ERR-021); the complete list below is reference decision D-ERR-001.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

ErrorStage = Literal["config", "input", "core", "data", "bridge"]
IssueCategory = Literal["input", "config", "business_information", "definition", "processing"]


@dataclass(frozen=True)
class ErrorCodeInfo:
    """Where a code may appear and the category of the issue it files about itself."""

    stages: tuple[ErrorStage, ...]
    category: IssueCategory


# D-ERR-001: the complete public error-code list.  The first eleven are named by the
# seeds; the rest are reference decisions (D-ERR-002 .. D-ERR-006).
ERROR_CODES: Final[dict[str, ErrorCodeInfo]] = {
    "CONFIG_INVALID": ErrorCodeInfo(("config",), "config"),
    "SCHEMA_UNSUPPORTED": ErrorCodeInfo(("config",), "config"),
    "LIMIT_EXCEEDED": ErrorCodeInfo(("config", "input", "core", "data", "bridge"), "processing"),
    "INPUT_INVALID": ErrorCodeInfo(("input", "bridge"), "input"),
    "UNKNOWN_FIELD": ErrorCodeInfo(("input",), "input"),
    "MODEL_OUTPUT_INVALID": ErrorCodeInfo(("core", "data"), "processing"),
    "DATA_EXTRACTION_FAILED": ErrorCodeInfo(("data",), "business_information"),
    "MODEL_ABORTED": ErrorCodeInfo(("core", "data"), "processing"),
    "MODEL_REFUSED": ErrorCodeInfo(("core", "data"), "processing"),
    "MODEL_OUTPUT_INCOMPLETE": ErrorCodeInfo(("core", "data"), "processing"),
    "MODEL_AUTH_FAILED": ErrorCodeInfo(("core", "data"), "processing"),
    "MODEL_RATE_LIMITED": ErrorCodeInfo(("core", "data"), "processing"),
    "MODEL_REQUEST_FAILED": ErrorCodeInfo(("core", "data"), "processing"),
    "BRIDGE_INSTANCE_NOT_FOUND": ErrorCodeInfo(("bridge",), "input"),
    "BRIDGE_JOB_NOT_FOUND": ErrorCodeInfo(("bridge",), "input"),
    "BRIDGE_STEP_CONFLICT": ErrorCodeInfo(("bridge",), "input"),
    "BRIDGE_JOB_EXPIRED": ErrorCodeInfo(("bridge",), "processing"),
    "BRIDGE_TOOL_NOT_FOUND": ErrorCodeInfo(("bridge",), "input"),
    "INTERNAL_ERROR": ErrorCodeInfo(("bridge",), "processing"),
}

# spec: R-DAT-019, R-DAT-020 -- the data issue codes a candidate may file, by category.
BUSINESS_ISSUE_CODES: Final = ("DATA_REQUIRED_MISSING", "DATA_AMBIGUOUS", "DATA_CONFLICT", "DATA_DEPENDENCY_MISSING")
DEFINITION_ISSUE_CODES: Final = (
    "DATA_CARDINALITY_MISMATCH",
    "DATA_VALUE_UNREPRESENTABLE",
    "DATA_CONSTRAINT_VIOLATED",
    "DATA_DESCRIPTION_UNDETERMINED",
)
# spec: R-DAT-022, R-ERR-033 -- reserved for the runtime; a candidate that files it breaks the contract.
RESERVED_ISSUE_CODES: Final = ("DATA_SOURCE_INVALID",)
DATA_ISSUE_CODES: Final = BUSINESS_ISSUE_CODES + DEFINITION_ISSUE_CODES + RESERVED_ISSUE_CODES

# Cancel outcomes and the codes they end a job with (spec: R-CAN-005, R-CAN-006, R-CAN-007).
CANCEL_CODES: Final[dict[str, str]] = {
    "cancelled": "MODEL_ABORTED",
    "refusal": "MODEL_REFUSED",
    "incomplete": "MODEL_OUTPUT_INCOMPLETE",
}

# Codes that never lead to a repair task (spec: R-ERR-030, R-ERR-031).
NEVER_REPAIRED: Final = frozenset(
    {
        "DATA_EXTRACTION_FAILED",
        "MODEL_ABORTED",
        "MODEL_REFUSED",
        "MODEL_OUTPUT_INCOMPLETE",
        "MODEL_AUTH_FAILED",
        "MODEL_RATE_LIMITED",
        "MODEL_REQUEST_FAILED",
    }
)


@dataclass(frozen=True)
class Issue:
    """One issue entry of a SerializedIntentError (spec: R-ERR-005)."""

    code: str
    category: IssueCategory
    path: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "category": self.category, "path": self.path, "message": self.message}


class IntentParseError(Exception):
    """A recognition failure: the API path raises it, the Bridge serialises it.

    ``to_json()`` is exactly SerializedIntentError: code, stage, message, issues,
    and ``partialResult`` only when there is one (spec: R-ERR-006, R-ERR-011, R-ERR-012).
    """

    def __init__(
        self,
        code: str,
        stage: ErrorStage,
        message: str,
        issues: list[Issue] | tuple[Issue, ...] = (),
        partial_result: dict[str, Any] | None = None,
    ) -> None:
        if code not in ERROR_CODES:  # a typo here would publish an undeclared code
            raise ValueError(f"undeclared error code {code!r}")
        super().__init__(message)
        self.code = code
        self.stage: ErrorStage = stage
        self.message = message
        self.issues: tuple[Issue, ...] = tuple(issues)
        self.partial_result = partial_result

    @property
    def partialResult(self) -> dict[str, Any] | None:
        return self.partial_result

    def to_json(self) -> dict[str, Any]:
        """This error as the reference writes it (what ``intentref.core.writer.Writer.error`` gives)."""
        return serialized_error(self.code, self.stage, self.message, [issue.to_json() for issue in self.issues],
                                self.partial_result)  # fmt: skip

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, stage={self.stage!r}, message={self.message!r})"


def serialized_error(code: str, stage: str, message: str, issues: list[dict[str, Any]],
                     partial_result: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """A SerializedIntentError: ``partialResult`` only when there is one (spec: R-ERR-006, R-ERR-011, R-ERR-012)."""
    out: dict[str, Any] = {"code": code, "stage": stage, "message": message, "issues": issues}
    if partial_result is not None:
        out["partialResult"] = partial_result
    return out


class IntentDataError(IntentParseError):
    """The data stage could not satisfy the definition (spec: R-ERR-001)."""


def error(
    code: str,
    stage: ErrorStage,
    message: str,
    issues: list[Issue] | tuple[Issue, ...] = (),
    partial_result: dict[str, Any] | None = None,
) -> IntentParseError:
    """Build the right member of the family for ``code``."""
    cls = IntentDataError if code == "DATA_EXTRACTION_FAILED" else IntentParseError
    return cls(code, stage, message, issues, partial_result)


def self_issue(code: str, path: str | None, message: str) -> Issue:
    """An issue that files the error's own code with that code's category."""
    return Issue(code, ERROR_CODES[code].category, path, message)
