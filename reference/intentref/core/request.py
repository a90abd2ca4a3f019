"""The parse request: input, context and field selection (seed 000 "payload 内容", seed 003 "三种 fields").

Validation here happens before any job exists, so every failure is a stage-"input" error
and nothing has to be undone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from intentref.core import jsonpointer
from intentref.core.errors import IntentParseError, Issue, error
from intentref.core.jsontext import json_type_name
from intentref.core.limits import is_well_formed, utf8_length
from intentref.core.text import has_text

CONTEXT_ROLES = ("user", "assistant", "tool")  # spec: R-TSK-007
REQUEST_KEYS = frozenset({"input", "context", "fields"})
# spec: R-ERR-017 -- the message of the seed's blank-input example, kept as written.
BLANK_INPUT_MESSAGE = "input must contain non-whitespace text."


@dataclass(frozen=True)
class Source:
    """One piece of material a quote may come from (spec: R-TSK-005, R-TSK-006, R-TSK-008)."""

    source_id: str
    role: str
    content: str


@dataclass(frozen=True)
class ParseRequest:
    input: str
    context: tuple[Source, ...]
    fields: tuple[str, ...] | None  # None: every top-level field (spec: R-FLD-001)

    def sources(self) -> dict[str, str]:
        """sourceId -> text, the material quotes are checked against."""
        out = {"input": self.input}
        for source in self.context:
            out[source.source_id] = source.content
        return out


class RequestPolicy(Protocol):
    """What reading a request asks of the policy it is given.

    ``intentref.core.policy.Policy`` answers with the reference's limits (D-LIM-002, D-LIM-006)
    and selection order (D-REQ-002); a decision variant answers another way.
    """

    @property
    def max_input_bytes(self) -> int: ...
    @property
    def max_context_messages(self) -> int: ...
    @property
    def max_context_bytes(self) -> int: ...
    @property
    def max_fields_selected(self) -> int: ...
    @property
    def lone_surrogate_utf8_bytes(self) -> int: ...

    def select_fields(self, requested: list[str], defined: tuple[str, ...]) -> tuple[str, ...]: ...


def _invalid(path: str, message: str, code: str = "INPUT_INVALID", issue: str | None = None) -> IntentParseError:
    """A stage-"input" error whose one issue points at ``path`` (and says ``issue``, if given)."""
    return error(code, "input", message, [Issue(code, "input", path, issue or message)])


def _require_text(value: Any, path: str, what: str) -> str:
    if not isinstance(value, str):
        raise _invalid(path, f"{what} must be a string, got {json_type_name(value)}.")
    if not is_well_formed(value):
        # D-REQ-003: a lone surrogate cannot be kept byte for byte through UTF-8.
        raise _invalid(path, f"{what} contains a lone surrogate.")
    return value


def read_request(request: Any, defined_fields: Sequence[str], policy: RequestPolicy) -> ParseRequest:
    """Validate a parse request against an instance's defined top-level fields, under ``policy``'s limits."""
    if not isinstance(request, Mapping):
        raise _invalid("", "request must be an object.")
    unknown = sorted((k for k in request if k not in REQUEST_KEYS), key=str)  # keys may mix types
    if unknown:  # D-REQ-001: unknown request members are refused, not ignored
        key = str(unknown[0])
        raise _invalid("/" + jsonpointer.escape_token(key), f"unknown request member {key!r}.")

    if "input" not in request:
        raise _invalid("/input", "input is required.")
    text = _require_text(request["input"], "/input", "input")
    if not has_text(text):  # spec: R-RES-016, R-ERR-017 -- the seed's exact blank-input error, no issues
        raise error("INPUT_INVALID", "input", BLANK_INPUT_MESSAGE)
    max_input = policy.max_input_bytes
    if utf8_length(text, policy.lone_surrogate_utf8_bytes) > max_input:
        raise _invalid("/input", f"input exceeds {max_input} UTF-8 bytes.", "LIMIT_EXCEEDED")

    context = _read_context(request.get("context"), "context" in request, policy)
    fields = _read_fields(request, defined_fields, policy)
    return ParseRequest(text, context, fields)


def _read_context(value: Any, present: bool, policy: RequestPolicy) -> tuple[Source, ...]:
    if not present or value is None:
        return ()
    if isinstance(value, str):
        # spec: R-TSK-006 -- text context is one background source, context:0.
        _require_text(value, "/context", "context")
        sources: tuple[Source, ...] = (Source("context:0", "background", value),)
    elif isinstance(value, list):
        if len(value) > policy.max_context_messages:
            raise _invalid("/context", f"context holds more than {policy.max_context_messages} messages.",
                           "LIMIT_EXCEEDED", "too many context messages.")  # fmt: skip
        items = []
        for index, message in enumerate(value):
            path = f"/context/{index}"
            if not isinstance(message, Mapping):
                raise _invalid(path, "a context message must be an object with role and content.")
            extra = sorted(str(k) for k in message if k not in ("role", "content"))
            if extra:
                raise _invalid(f"{path}/{jsonpointer.escape_token(extra[0])}", f"unknown message member {extra[0]!r}.")
            role = message.get("role")
            if role not in CONTEXT_ROLES:
                raise _invalid(f"{path}/role", "role must be user, assistant or tool.")
            if "content" not in message:
                raise _invalid(f"{path}/content", "content is required.")
            content = _require_text(message["content"], f"{path}/content", "content")
            # spec: R-TSK-005, R-TSK-007 -- messages become context:0, context:1, ... in order.
            items.append(Source(f"context:{index}", str(role), content))
        sources = tuple(items)
    else:
        raise _invalid("/context", "context must be a string or an array of messages.")
    if sum(utf8_length(s.content, policy.lone_surrogate_utf8_bytes) for s in sources) > policy.max_context_bytes:
        raise _invalid("/context", f"context exceeds {policy.max_context_bytes} UTF-8 bytes.", "LIMIT_EXCEEDED",
                       "context too large.")  # fmt: skip
    return sources


def _read_fields(request: Mapping[str, Any], defined_fields: Sequence[str], policy: RequestPolicy) -> tuple[str, ...] | None:
    if "fields" not in request or request["fields"] is None:
        return None  # spec: R-FLD-001 -- omitted: every defined top-level field
    value = request["fields"]
    if not isinstance(value, list):
        raise _invalid("/fields", "fields must be an array of top-level field names.")
    max_fields = policy.max_fields_selected
    if len(value) > max_fields:  # D-LIM-002
        raise _invalid("/fields", f"fields selects more than {max_fields} names.", "LIMIT_EXCEEDED")
    defined = set(defined_fields)
    seen: list[str] = []
    for index, name in enumerate(value):
        if not isinstance(name, str):
            raise _invalid(f"/fields/{index}", "a field name must be a string.")
        if name not in defined:
            # spec: R-FLD-004, R-FLD-005 -- only top-level properties are fields; a nested path is not.
            # D-REQ-007: the one issue points at the offending entry of fields.
            raise _invalid(f"/fields/{index}", f"unknown field {name!r}.", code="UNKNOWN_FIELD")
        seen.append(name)
    return policy.select_fields(seen, tuple(defined_fields))  # D-REQ-002
