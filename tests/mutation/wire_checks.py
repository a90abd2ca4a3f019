"""Checks every reply of the reference must pass, whatever the case asked for.

A conformance case states what one reply must contain (a code, a subset, a token); these
checks add what every reply must be, so that a fault outside the part a case inspects is
still caught: the published wire schemas (spec/schemas/, R-RPY-001 .. R-RPY-004, R-ERR-005,
R-ERR-006), the error-code table with its stages and issue categories (D-ERR-001), and
non-blank fixed messages (D-ERR-006).  The table is written out here from the spec, not
imported from intentref, so that a fault in the code cannot also change the check.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import jsonschema
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

# D-ERR-001, as spec/decisions.md tabulates it: code -> (stages, category of its own issue).
# LIMIT_EXCEEDED files its own issue as "config" at stage config and "input" at stage input.
ERROR_TABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "CONFIG_INVALID": (("config",), "config"),
    "SCHEMA_UNSUPPORTED": (("config",), "config"),
    "LIMIT_EXCEEDED": (("config", "input", "core", "data", "bridge"), "processing"),
    "INPUT_INVALID": (("input", "bridge"), "input"),
    "UNKNOWN_FIELD": (("input",), "input"),
    "MODEL_OUTPUT_INVALID": (("core", "data"), "processing"),
    "DATA_EXTRACTION_FAILED": (("data",), "business_information"),
    "MODEL_ABORTED": (("core", "data"), "processing"),
    "MODEL_REFUSED": (("core", "data"), "processing"),
    "MODEL_OUTPUT_INCOMPLETE": (("core", "data"), "processing"),
    "MODEL_AUTH_FAILED": (("core", "data"), "processing"),
    "MODEL_RATE_LIMITED": (("core", "data"), "processing"),
    "MODEL_REQUEST_FAILED": (("core", "data"), "processing"),
    "BRIDGE_INSTANCE_NOT_FOUND": (("bridge",), "input"),
    "BRIDGE_JOB_NOT_FOUND": (("bridge",), "input"),
    "BRIDGE_STEP_CONFLICT": (("bridge",), "input"),
    "BRIDGE_JOB_EXPIRED": (("bridge",), "processing"),
    "BRIDGE_TOOL_NOT_FOUND": (("bridge",), "input"),
    "INTERNAL_ERROR": (("bridge",), "processing"),
}
STAGE_CATEGORY = {("LIMIT_EXCEEDED", "config"): "config", ("LIMIT_EXCEEDED", "input"): "input"}
# R-DAT-019, R-DAT-020, R-DAT-022: the data issue codes (business information, definition,
# and the runtime's own DATA_SOURCE_INVALID).  R-ERR-005: an issue's code is one of these or
# an error code.
DATA_ISSUE_CODES = frozenset({
    "DATA_REQUIRED_MISSING", "DATA_AMBIGUOUS", "DATA_CONFLICT", "DATA_DEPENDENCY_MISSING",
    "DATA_CARDINALITY_MISMATCH", "DATA_VALUE_UNREPRESENTABLE", "DATA_CONSTRAINT_VIOLATED",
    "DATA_DESCRIPTION_UNDETERMINED", "DATA_SOURCE_INVALID",
})  # fmt: skip

# ECMA-262 WhiteSpace and LineTerminator (D-TXT-001), independent of intentref.core.text.
_BLANK = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def non_blank(value: Any) -> bool:
    return isinstance(value, str) and value.strip(_BLANK) != ""


@functools.cache
def _validator(name: str) -> Any:
    schema = json.loads((ROOT / "spec" / "schemas" / f"{name}.schema.json").read_text("utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def schema_faults(name: str, value: Any) -> list[str]:
    return [f"{name}{'/' + '/'.join(map(str, e.absolute_path)) if e.absolute_path else ''}: {e.message}"
            for e in _validator(name).iter_errors(value)]  # fmt: skip


def error_faults(err: Any, where: str = "error") -> list[str]:
    """What is wrong with a SerializedIntentError (an empty list when nothing is)."""
    faults = schema_faults("serialized-intent-error", err)
    if not isinstance(err, dict):
        return faults or [f"{where}: not an object"]
    code, stage = err.get("code"), err.get("stage")
    if code not in ERROR_TABLE:
        return [*faults, f"{where}: code {code!r} is not in the D-ERR-001 table"]
    stages, category = ERROR_TABLE[code]
    if stage not in stages:
        faults.append(f"{where}: {code} may not carry stage {stage!r} (D-ERR-001: {stages})")
    if not non_blank(err.get("message")):
        faults.append(f"{where}/message: blank or not a string (D-ERR-006)")
    for index, issue in enumerate(err.get("issues") or []):
        if not isinstance(issue, dict):
            continue
        if not non_blank(issue.get("message")):
            faults.append(f"{where}/issues/{index}/message: blank or not a string (D-ERR-006)")
        if issue.get("code") not in ERROR_TABLE and issue.get("code") not in DATA_ISSUE_CODES:
            faults.append(f"{where}/issues/{index}/code: {issue.get('code')!r} is neither an error code "
                          "nor a data issue code (R-ERR-005)")  # fmt: skip
        if issue.get("code") == code:
            expected = STAGE_CATEGORY.get((code, stage), category)
            if issue.get("category") != expected:
                faults.append(f"{where}/issues/{index}: {code} files itself as {expected!r}, "
                              f"not {issue.get('category')!r} (D-ERR-001)")  # fmt: skip
    partial = err.get("partialResult")
    if partial is not None:
        faults += schema_faults("intent-result", partial)
    return faults


def reply_faults(reply: Any) -> list[str]:
    """What is wrong with a BridgeReply."""
    faults = schema_faults("bridge-reply", reply)
    if isinstance(reply, dict) and reply.get("kind") == "error":
        faults += error_faults(reply.get("error"), "error")
    return faults


def raised_error(make: Any) -> dict[str, Any]:
    """The SerializedIntentError that ``make()`` raises (the test fails if it raises none)."""
    from intentref import IntentParseError

    with pytest.raises(IntentParseError) as raised:
        make()
    return raised.value.to_json()
