"""Named limits, each with its reason, and UTF-8 byte counting as a JavaScript host does it.

Only constants and the byte counter live here, so that every limit the reference
enforces can be read (and cited) in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

# spec: R-CAP-014 -- capacity options are positive safe integers no greater than this
# (the largest signed 32-bit integer: what a JavaScript timer accepts).
MAX_OPTION_VALUE: Final = 2_147_483_647
MAX_SAFE_INTEGER: Final = 2**53 - 1

# D-LIM-001 -- Bridge capacity defaults.  Large enough for an interactive host with many
# concurrent users, small enough that a runaway client cannot grow the process unbounded.
DEFAULT_MAX_JOBS: Final = 1_024
DEFAULT_MAX_REPLAY_ENTRIES: Final = 4_096
DEFAULT_MAX_REPLAY_BYTES: Final = 64 * 1024 * 1024

# spec: R-CAN-003, R-CAN-004 -- the cancel detail budget, in UTF-8 bytes.
MAX_CANCEL_DETAIL_BYTES: Final = 2_048

# D-LIM-002 -- request limits.  An input is one user turn: 32 KiB of UTF-8 holds far more
# than any real utterance while keeping a task payload small enough for any model context.
MAX_INPUT_BYTES: Final = 32 * 1024
MAX_CONTEXT_MESSAGES: Final = 64
MAX_CONTEXT_BYTES: Final = 256 * 1024
MAX_FIELDS_SELECTED: Final = 256

# D-LIM-003 -- candidate limits.  A complete candidate for the largest schema we accept is
# well under 1 MiB; anything larger is a runaway generation, not a candidate.
MAX_CANDIDATE_BYTES: Final = 1024 * 1024
# Nesting deeper than this cannot come from a schema we accept (MAX_SCHEMA_DEPTH + the
# candidate's own wrapping), and it keeps every walk over a candidate iterative-safe.
MAX_CANDIDATE_DEPTH: Final = 64

# D-LIM-004 -- schema resource limits (LIMIT_EXCEEDED at construction, spec: R-SCH-010).
MAX_SCHEMA_BYTES: Final = 256 * 1024
MAX_SCHEMA_DEPTH: Final = 32
# JSON nesting of the whole definition, keyword values included: two JSON levels per schema
# level ("properties"/name, "anyOf"/index) plus a candidate-deep value (a const) at the bottom.
# Checked first, iteratively, so that nothing recursive ever meets a deeper definition.
def schema_json_depth(schema_depth: int, candidate_depth: int) -> int:
    """The JSON nesting a definition may have for these limits (D-LIM-004; see above)."""
    return 2 * schema_depth + candidate_depth


MAX_SCHEMA_JSON_DEPTH: Final = schema_json_depth(MAX_SCHEMA_DEPTH, MAX_CANDIDATE_DEPTH)
MAX_SCHEMA_NODES: Final = 4_096
MAX_TOP_LEVEL_FIELDS: Final = 256
MAX_PATTERN_LENGTH: Final = 1_024
MAX_ENUM_VALUES: Final = 1_024
# spec: R-SCH-020 -- anyOf/oneOf/allOf arrays hold 1 to 16 schemas.
MIN_COMBINATION_ITEMS: Final = 1
MAX_COMBINATION_ITEMS: Final = 16

# D-LIM-005 -- repair attempts an instance may configure per stage (default 1, R-ERR-027).
DEFAULT_REPAIR_ATTEMPTS: Final = 1
MAX_REPAIR_ATTEMPTS: Final = 8


def utf8_length(text: str, lone_surrogate_bytes: int = 3) -> int:
    """Bytes a JavaScript ``TextEncoder`` writes for ``text``.

    Python strings may hold lone surrogates (JSON ``"\\ud800"`` decodes to one); a
    TextEncoder writes each as U+FFFD, three bytes.  A surrogate *pair* held as two
    code points is one four-byte character to JavaScript.  (spec: R-CAN-003, R-CAN-004, D-LIM-006)
    ``lone_surrogate_bytes`` is what a lone surrogate counts: 3, or what a decision variant
    chose (the caller passes its ``Policy``'s value, so limits imports nothing).
    """
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        pass
    joined = well_formed(text)
    extra = lone_surrogate_bytes - 3  # D-LIM-006: U+FFFD is 3 bytes
    return len(joined.encode("utf-8")) + (extra * joined.count("\ufffd") - extra * text.count("\ufffd") if extra else 0)


def well_formed(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def is_well_formed(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_lone_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate anywhere, object keys included.

    JSON text can carry one as an escape (``\\ud800``), UTF-8 cannot (D-REQ-003, D-MCP-008).
    """
    if isinstance(value, str):
        return not is_well_formed(value)
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_lone_surrogate(v) for v in value)
    return False


def map_strings(value: Any, change: Callable[[str], Any], keys: bool = False) -> Any:
    """JSON ``value`` with ``change`` applied to every string in it (and every member name, with ``keys``)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(k) if keys else k: map_strings(v, change, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change, keys) for v in value]
    return value


def well_formed_json(value: Any) -> Any:
    """``value`` with lone surrogates as U+FFFD, keys included: what any UTF-8 transport delivers (D-MCP-008)."""
    return map_strings(value, well_formed, keys=True)
