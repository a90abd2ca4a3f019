"""Pydantic models of every wire type, the source of the JSON Schemas in ``spec/schemas/``.

These models describe shapes for readers, hosts and other implementations; the core does
not validate with them (its rules live in one function per rule, so each fault carries
its pointer).  ``tests/spec/test_schemas.py`` regenerates the published schemas from these
models and checks that models, schemas and the core's rules agree on real examples.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, model_validator

Text = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
Action = Literal["query", "analyze", "generate", "modify", "delete", "execute", "other"]
JsonValue = Any


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _optional_members_are_absent_not_null(cls, value: Any) -> Any:
        # On the wire an optional member is omitted, never null (spec: R-ERR-011, R-RPY-008).
        if isinstance(value, dict):
            for name in _ABSENT_NOT_NULL.get(cls.__name__, ()):
                if name in value and value[name] is None:
                    raise ValueError(f"{name} is omitted when absent, never null")
        return value


def _absent_not_null(schema: dict[str, Any]) -> None:
    """Publish an optional member as its type alone: absent is allowed, null is not."""
    schema.pop("default", None)
    choices = schema.pop("anyOf", None)
    if choices is not None:
        kept = [c for c in choices if c != {"type": "null"}]
        if len(kept) == 1:
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept


_ABSENT_NOT_NULL: dict[str, tuple[str, ...]] = {
    "SerializedIntentError": ("partialResult",),
    "TaskReply": ("expiresAt",),
    "PrepareRequest": ("context", "fields"),
    "CancelRequest": ("detail",),
}


class Clarification(_Strict):
    question: Text
    options: list[Text]


ItemId = Annotated[str, StringConstraints(pattern=r"^i[1-9][0-9]*$")]


class ReadyItem(_Strict):
    id: ItemId
    action: Action
    target: Text | None
    requirements: list[Text]
    status: Literal["ready"]


class ClarificationItem(_Strict):
    id: ItemId
    action: Action | None
    target: Text | None
    requirements: list[Text]
    status: Literal["needs_clarification"]
    reason: Text
    clarification: Annotated[list[Clarification], Field(min_length=1)]


class BlockedItem(_Strict):
    id: ItemId
    action: Action
    target: Text | None
    requirements: list[Text]
    status: Literal["awaiting_confirmation", "conditional"]
    reason: Text


IntentItem = Annotated[ReadyItem | ClarificationItem | BlockedItem, Field(discriminator="status")]


class IntentResult(_Strict):
    """seed 001 "完整公共类型": seven root members."""

    input: Annotated[str, StringConstraints(pattern=r"\S")]
    normalizedInput: Text
    primaryIntent: Text | None
    requirements: list[Text]
    intents: list[IntentItem]
    prohibitions: list[Text]
    data: dict[str, JsonValue]


# --- candidates ---------------------------------------------------------------------------


class Blockers(_Strict):
    clarificationReason: Text | None
    questions: list[Clarification]
    confirmationReason: Text | None
    conditionReason: Text | None


class CoreIntent(_Strict):
    action: Action | None
    target: Text | None
    requirements: list[Text]
    blockers: Blockers


class CoreCandidate(_Strict):
    normalizedInput: Text
    primaryIntent: Text | None
    requirements: list[Text]
    prohibitions: list[Text]
    intents: list[CoreIntent]


class Source(_Strict):
    sourceId: Annotated[str, Field(min_length=1)]
    quote: Annotated[str, Field(min_length=1)]


class Evidence(_Strict):
    path: str
    mode: Literal["exact", "semantic"]
    sources: Annotated[list[Source], Field(min_length=1)]


class DescriptionCheck(_Strict):
    path: str
    verdict: Literal["satisfied", "violated", "undetermined"]
    explanation: Text
    sources: Annotated[list[Source], Field(min_length=1)]


class FieldResult(_Strict):
    path: str
    status: Literal["extracted", "not_provided", "not_applicable", "issue"]
    explanation: Text


class BusinessIssue(_Strict):
    code: Literal["DATA_REQUIRED_MISSING", "DATA_AMBIGUOUS", "DATA_CONFLICT", "DATA_DEPENDENCY_MISSING"]
    category: Literal["business_information"]
    path: str | None
    message: Text


class DefinitionIssue(_Strict):
    code: Literal[
        "DATA_CARDINALITY_MISMATCH", "DATA_VALUE_UNREPRESENTABLE", "DATA_CONSTRAINT_VIOLATED", "DATA_DESCRIPTION_UNDETERMINED"
    ]
    category: Literal["definition"]
    path: str | None
    message: Text


class DataCandidate(_Strict):
    data: dict[str, JsonValue]
    evidence: list[Evidence]
    descriptionChecks: list[DescriptionCheck]
    fieldResults: list[FieldResult]
    issues: list[Annotated[BusinessIssue | DefinitionIssue, Field(discriminator="category")]]


# --- errors and replies ---------------------------------------------------------------------


class IntentIssue(_Strict):
    code: str
    category: Literal["input", "config", "business_information", "definition", "processing"]
    path: str | None
    message: str


class SerializedIntentError(_Strict):
    code: str
    stage: Literal["config", "input", "core", "data", "bridge"]
    message: str
    issues: list[IntentIssue]
    partialResult: IntentResult | None = Field(default=None, json_schema_extra=_absent_not_null)


class JsonSchemaFormat(_Strict):
    kind: Literal["json_schema"]
    name: Literal["intent_core"]
    schema_: Annotated[dict[str, JsonValue], Field(alias="schema")]


class JsonObjectFormat(_Strict):
    kind: Literal["json_object"]


class TaskReply(_Strict):
    kind: Literal["task"]
    jobId: Annotated[str, Field(min_length=1)]
    stepToken: Annotated[str, Field(min_length=1)]
    stage: Literal["core", "data"]
    instructions: Annotated[str, Field(min_length=1)]
    payload: str
    format: Annotated[JsonSchemaFormat | JsonObjectFormat, Field(discriminator="kind")]
    expiresAt: str | None = Field(default=None, json_schema_extra=_absent_not_null)


class ResultReply(_Strict):
    kind: Literal["result"]
    result: IntentResult


class ErrorReply(_Strict):
    kind: Literal["error"]
    error: SerializedIntentError


BridgeReply = Annotated[TaskReply | ResultReply | ErrorReply, Field(discriminator="kind")]


class ContextMessage(_Strict):
    role: Literal["user", "assistant", "tool"]
    content: str


class PrepareRequest(_Strict):
    instance: str
    input: str
    context: str | list[ContextMessage] | None = Field(default=None, json_schema_extra=_absent_not_null)
    fields: list[str] | None = Field(default=None, json_schema_extra=_absent_not_null)


class AcceptRequest(_Strict):
    jobId: str
    stepToken: str
    candidateText: str


class CancelRequest(_Strict):
    jobId: str
    outcome: Literal["cancelled", "refusal", "incomplete"] = "cancelled"
    detail: str | None = Field(default=None, json_schema_extra=_absent_not_null)


# The published schemas: file name -> the type it describes.
WIRE_TYPES: dict[str, Any] = {
    "intent-result": IntentResult,
    "core-candidate": CoreCandidate,
    "data-candidate": DataCandidate,
    "serialized-intent-error": SerializedIntentError,
    "bridge-reply": BridgeReply,
    "prepare-request": PrepareRequest,
    "accept-request": AcceptRequest,
    "cancel-request": CancelRequest,
}


def json_schema(name: str) -> dict[str, Any]:
    schema = TypeAdapter(WIRE_TYPES[name]).json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://intentref.invalid/spec/schemas/{name}.schema.json",
        **schema,
    }


def adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(WIRE_TYPES[name])
