"""Decision variants made at the boundary: wording, payload layout, issue lists, codes.

Each variant takes a reference decision another way that the seeds also allow, by rewriting
requests before the reference sees them and replies after (``variants.Variant``).  These
are the choices an independent implementation most often makes differently.  Every rewrite
is deterministic, so a replayed reply is rewritten to the same bytes as the first answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .capabilities import REPAIR_ATTEMPTS
from .variants import BridgeReply, State, Variant

DATA_ISSUE_CODES = frozenset({
    "DATA_REQUIRED_MISSING", "DATA_AMBIGUOUS", "DATA_CONFLICT", "DATA_DEPENDENCY_MISSING",
    "DATA_CARDINALITY_MISMATCH", "DATA_VALUE_UNREPRESENTABLE", "DATA_CONSTRAINT_VIOLATED",
    "DATA_DESCRIPTION_UNDETERMINED", "DATA_SOURCE_INVALID",
})  # fmt: skip


def _error(reply: BridgeReply) -> dict[str, Any] | None:
    err = reply.get("error") if reply.get("kind") == "error" else None
    return err if isinstance(err, dict) else None


def _payload(reply: BridgeReply) -> dict[str, Any] | None:
    if reply.get("kind") != "task" or not isinstance(reply.get("payload"), str):
        return None
    decoded = json.loads(reply["payload"])
    return decoded if isinstance(decoded, dict) else None


def _set_payload(reply: BridgeReply, payload: Mapping[str, Any], *, ascii_spaced: bool = False) -> None:
    if ascii_spaced:
        reply["payload"] = json.dumps(payload, ensure_ascii=True)
    else:
        reply["payload"] = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _error_reply(code: str, stage: str, message: str, issues: list[dict[str, Any]]) -> BridgeReply:
    return {"kind": "error", "error": {"code": code, "stage": stage, "message": message, "issues": issues}}


# --------------------------------------------------------------------------- wording


def _reword(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None:
        err["message"] = f"[{err['code']} at stage {err['stage']}] the call could not be completed."
        for issue in err.get("issues", []):
            # The candidate's own business issues keep the model's words (seed 004's example).
            if isinstance(issue, dict) and issue.get("code") not in DATA_ISSUE_CODES:
                issue["message"] = f"Problem {issue.get('code')} here."
    if reply.get("kind") == "task":
        reply["instructions"] = (
            f"Write the complete {reply.get('stage')} candidate as one JSON document. "
            "Follow the format and read the payload; on a repair, send the whole candidate again."
        )
    return reply


REWORDED = Variant(
    name="reworded",
    decisions=("D-ERR-006", "D-INS-001"),
    summary="other error and issue messages, other task instructions",
    after=_reword,
)


# --------------------------------------------------------------------------- the core format


def _respell_schema(schema: Any) -> Any:
    """The same JSON Schema written differently: members in reverse order, a comment added."""
    if isinstance(schema, dict):
        spelled = {key: _respell_schema(schema[key]) if key in ("properties", "items") or isinstance(schema[key], dict)
                   else schema[key] for key in reversed(list(schema))}  # fmt: skip
        if "type" in spelled:
            spelled["$comment"] = "spelled by the variant"
        return spelled
    if isinstance(schema, list):
        return [_respell_schema(item) for item in schema]
    return schema


def _respell_format(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    fmt = reply.get("format") if reply.get("kind") == "task" else None
    if isinstance(fmt, dict) and fmt.get("kind") == "json_schema" and isinstance(fmt.get("schema"), dict):
        fmt["schema"] = _respell_schema(fmt["schema"])
    return reply


RESPELLED_CORE_SCHEMA = Variant(
    name="respelled-core-schema",
    decisions=("D-COR-001",),
    summary="an equivalent intent_core schema, spelled differently",
    after=_respell_format,
)


# --------------------------------------------------------------------------- payloads


def _payload_layout(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    payload = _payload(reply)
    if payload is not None:
        _set_payload(reply, dict(reversed(list(payload.items()))), ascii_spaced=True)
    return reply


PAYLOAD_LAYOUT = Variant(
    name="payload-layout",
    decisions=("D-PAY-001", "D-PAY-003"),
    summary="payload members in another order, written with ASCII escapes and spaces",
    after=_payload_layout,
)


def _context_entries(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    payload = _payload(reply)
    if payload is not None and isinstance(payload.get("context"), list):
        payload["context"] = [
            {"role": e.get("role"), "text": e.get("content"), "sourceId": e.get("sourceId")} if isinstance(e, dict) else e
            for e in payload["context"]
        ]
        _set_payload(reply, payload)
    return reply


CONTEXT_ENTRIES = Variant(
    name="context-entries",
    decisions=("D-PAY-002",),
    summary="payload context entries as {role, text, sourceId}",
    after=_context_entries,
)


def _repair_material(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    payload = _payload(reply)
    repair = payload.get("repair") if payload is not None else None
    if isinstance(repair, dict):
        assert payload is not None
        payload["repair"] = {
            "round": repair.get("attempt"),
            "problems": [
                {"at": i.get("path"), "why": i.get("message")} for i in repair.get("issues", []) if isinstance(i, dict)
            ],
            "yourLastAnswer": repair.get("previousCandidate"),
        }
        _set_payload(reply, payload)
    return reply


REPAIR_MATERIAL = Variant(
    name="repair-material",
    decisions=("D-PAY-004",),
    summary="payload.repair as {round, problems: [{at, why}], yourLastAnswer}",
    after=_repair_material,
)


def _request_order(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    """selectedFields (and the selected schema's members) in the order the request listed them."""
    if op == "prepare" and reply.get("kind") == "task" and isinstance(request, Mapping):
        fields = request.get("fields")
        if isinstance(fields, list):
            state.setdefault("fields", {})[reply.get("jobId")] = [f for f in fields if isinstance(f, str)]
    payload = _payload(reply)
    wanted = state.get("fields", {}).get(reply.get("jobId"))
    if payload is None or wanted is None or not isinstance(payload.get("selectedFields"), list):
        return reply
    order = {name: index for index, name in enumerate(dict.fromkeys(wanted))}
    selected = sorted(payload["selectedFields"], key=lambda n: order.get(n, len(order)))
    payload["selectedFields"] = selected
    schema = payload.get("selectedSchema")
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            schema["properties"] = {n: props[n] for n in selected if n in props}
        if isinstance(schema.get("required"), list):
            schema["required"] = [n for n in selected if n in schema["required"]]
    _set_payload(reply, payload)
    return reply


REQUEST_ORDER_FIELDS = Variant(
    name="request-order-fields",
    decisions=("D-REQ-002",),
    summary="selectedFields in the order the request lists them",
    after=_request_order,
)


def _lean_selected_schema(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    payload = _payload(reply)
    schema = payload.get("selectedSchema") if payload is not None else None
    if isinstance(schema, dict) and schema.get("required") == []:
        assert payload is not None
        del schema["required"]
        _set_payload(reply, payload)
    return reply


LEAN_SELECTED_SCHEMA = Variant(
    name="lean-selected-schema",
    decisions=("D-SCH-006",),
    summary="the selected schema omits an empty required list",
    after=_lean_selected_schema,
)


# --------------------------------------------------------------------------- issue lists


def _plain_contract_issues(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None and err.get("code") == "MODEL_OUTPUT_INVALID":
        err["issues"] = [{"code": "MODEL_OUTPUT_INVALID", "category": "processing", "path": None,
                          "message": "The candidate breaks the contract."}]  # fmt: skip
    payload = _payload(reply)
    repair = payload.get("repair") if payload is not None else None
    if isinstance(repair, dict) and isinstance(repair.get("issues"), list):
        assert payload is not None
        repair["issues"] = [{"code": "MODEL_OUTPUT_INVALID", "category": "processing", "path": None,
                             "message": "The candidate breaks the contract."}]  # fmt: skip
        _set_payload(reply, payload)
    return reply


PLAIN_CONTRACT_ISSUES = Variant(
    name="plain-contract-issues",
    decisions=("D-ERR-007",),
    summary="MODEL_OUTPUT_INVALID carries one issue with path null, not pointers into the candidate",
    after=_plain_contract_issues,
)


def _bare_not_found(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None and err.get("code") == "BRIDGE_JOB_NOT_FOUND":
        err["issues"] = []
    return reply


BARE_NOT_FOUND = Variant(
    name="bare-not-found",
    decisions=("D-BRG-003",),
    summary="BRIDGE_JOB_NOT_FOUND carries no issue",
    after=_bare_not_found,
)


def _partial_on_extraction_only(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None and err.get("code") != "DATA_EXTRACTION_FAILED":
        err.pop("partialResult", None)
    return reply


PARTIAL_ON_EXTRACTION_ONLY = Variant(
    name="partial-on-extraction-only",
    decisions=("D-ERR-009",),
    summary="partialResult only on DATA_EXTRACTION_FAILED",
    after=_partial_on_extraction_only,
)


CANCEL_CODES = ("MODEL_ABORTED", "MODEL_REFUSED", "MODEL_OUTPUT_INCOMPLETE")


def _detail_dropped(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None and err.get("code") in CANCEL_CODES:
        err["issues"] = []
    return reply


DETAIL_DROPPED = Variant(
    name="cancel-detail-dropped",
    decisions=("D-CAN-002",),
    summary="a cancel's detail is not kept as an issue",
    after=_detail_dropped,
)


def _parameter_faults_at_input(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is not None and err.get("code") == "INPUT_INVALID" and err.get("stage") == "bridge":
        err["stage"] = "input"
        err["issues"] = []
    return reply


PARAMETER_FAULTS_AT_INPUT = Variant(
    name="parameter-faults-at-input",
    decisions=("D-BRG-001",),
    summary="a malformed call is INPUT_INVALID at stage input, without issues",
    after=_parameter_faults_at_input,
)


# --------------------------------------------------------------------------- codes


_RENAMED_CODES = {
    "CONFIG_INVALID": ("INTENT_CONFIG_INVALID", None),
    "BRIDGE_INSTANCE_NOT_FOUND": ("INPUT_INVALID", "input"),
    "BRIDGE_JOB_EXPIRED": ("BRIDGE_JOB_NOT_FOUND", None),
}


def _other_codes(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    err = _error(reply)
    if err is None or err.get("code") not in _RENAMED_CODES:
        return reply
    old = err["code"]
    new, stage = _RENAMED_CODES[old]
    err["code"] = new
    if stage is not None:
        err["stage"] = stage
    for issue in err.get("issues", []):
        if isinstance(issue, dict) and issue.get("code") == old:
            issue["code"] = new
    return reply


OTHER_CODES = Variant(
    name="other-codes",
    decisions=("D-ERR-001", "D-ERR-002", "D-ERR-003", "D-ERR-005"),
    summary="CONFIG_INVALID, BRIDGE_INSTANCE_NOT_FOUND and BRIDGE_JOB_EXPIRED under other codes",
    after=_other_codes,
)


# --------------------------------------------------------------------------- requests


_PARSE_MEMBERS = ("instance", "input", "context", "fields")
_MEMBERS = {"prepare": _PARSE_MEMBERS, "accept": ("jobId", "stepToken", "candidateText"),
            "cancel": ("jobId", "outcome", "detail")}  # fmt: skip


def _ignore_unknown_members(op: str, request: Any, state: State) -> Any:
    if isinstance(request, dict) and op in _MEMBERS:
        return {k: v for k, v in request.items() if k in _MEMBERS[op]}
    return request


LENIENT_MEMBERS = Variant(
    name="lenient-members",
    decisions=("D-REQ-001",),
    summary="unknown request members are ignored, not refused",
    before=_ignore_unknown_members,
)


def _fields_null_refused(op: str, request: Any, state: State) -> Any:
    if op == "prepare" and isinstance(request, dict) and "fields" in request and request["fields"] is None:
        message = "fields must be an array of field names."
        return _error_reply("INPUT_INVALID", "input", message, [
            {"code": "INPUT_INVALID", "category": "input", "path": "/fields", "message": message}])
    return request


FIELDS_NULL_REFUSED = Variant(
    name="fields-null-refused",
    decisions=("D-REQ-005",),
    summary="fields: null is refused, not read as absent",
    before=_fields_null_refused,
)


def _strict_context(op: str, request: Any, state: State) -> Any:
    if op != "prepare" or not isinstance(request, dict) or "context" not in request:
        return request
    context = request["context"]

    def refuse(path: str) -> BridgeReply:
        message = "context must hold non-blank text."
        return _error_reply("INPUT_INVALID", "input", message,
                            [{"code": "INPUT_INVALID", "category": "input", "path": path, "message": message}])  # fmt: skip

    if context is None:
        return refuse("/context")
    if isinstance(context, str) and not context.strip():
        return refuse("/context")
    if isinstance(context, list):
        kept = []
        for index, message in enumerate(context):
            if isinstance(message, dict):
                content = message.get("content")
                if isinstance(content, str) and not content.strip():
                    return refuse(f"/context/{index}/content")
                message = {k: v for k, v in message.items() if k in ("role", "content")}
            kept.append(message)
        request["context"] = kept
    return request


STRICT_CONTEXT = Variant(
    name="strict-context",
    decisions=("D-REQ-004",),
    summary="blank or null context refused; extra message members ignored",
    before=_strict_context,
)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {k: _replace_surrogates(v) for k, v in value.items()}
    return value


def _surrogates_replaced(op: str, request: Any, state: State) -> Any:
    if op == "prepare" and isinstance(request, dict):
        for member in ("input", "context"):
            if member in request:
                request[member] = _replace_surrogates(request[member])
    return request


SURROGATES_REPLACED = Variant(
    name="surrogates-replaced",
    decisions=("D-REQ-003",),
    summary="lone surrogates in request text become U+FFFD, as a JavaScript host's encoder writes them",
    before=_surrogates_replaced,
)


def _null_outcome_is_absent(op: str, request: Any, state: State) -> Any:
    if op == "cancel" and isinstance(request, dict) and "outcome" in request and request["outcome"] is None:
        del request["outcome"]
    return request


NULL_OUTCOME = Variant(
    name="null-outcome-default",
    decisions=("D-BRG-015",),
    summary="cancel outcome: null means the default, cancelled",
    before=_null_outcome_is_absent,
)


# --------------------------------------------------------------------------- configuration


def _without_repair_attempts(name: str, config: dict[str, Any]) -> dict[str, Any]:
    config.pop("repairAttempts", None)
    return config


REPAIRS_NOT_CONFIGURABLE = Variant(
    name="repairs-not-configurable",
    decisions=("D-CFG-001", "D-LIM-005"),
    summary="an instance takes no repairAttempts member: one repair per stage, always",
    config=_without_repair_attempts,
    lacks={REPAIR_ATTEMPTS: "repairs are not configurable per instance in this variant"},
)


def _default_language_zh(name: str, config: dict[str, Any]) -> dict[str, Any]:
    config.setdefault("language", "zh-CN")
    return config


DEFAULT_LANGUAGE_ZH = Variant(
    name="default-language-zh",
    decisions=("D-CFG-002",),
    summary="language defaults to zh-CN",
    config=_default_language_zh,
)


def _walk_combinations(schema: Any, path: str) -> str | None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            if key in ("anyOf", "oneOf", "allOf") and isinstance(value, list) and not 1 <= len(value) <= 16:
                return f"{path}/{escaped}"
            found = _walk_combinations(value, f"{path}/{escaped}")
            if found is not None:
                return found
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found = _walk_combinations(value, f"{path}/{index}")
            if found is not None:
                return found
    return None


def _combination_length_is_a_limit(name: str, config: dict[str, Any]) -> dict[str, Any]:
    from ..errors import Issue, error

    where = _walk_combinations(config.get("schema"), "")
    if where is not None:
        message = f"{where}: a combination holds 1 to 16 schemas."
        raise error("LIMIT_EXCEEDED", "config", message, [Issue("LIMIT_EXCEEDED", "config", where, message)])
    return config


COMBINATION_LIMIT = Variant(
    name="combination-length-limit",
    decisions=("D-SCH-005",),
    summary="an anyOf/oneOf/allOf array outside 1-16 is LIMIT_EXCEEDED, not SCHEMA_UNSUPPORTED",
    config=_combination_length_is_a_limit,
)


# --------------------------------------------------------------------------- tokens and replay


def _conflict(path: str = "/stepToken") -> BridgeReply:
    message = "This step token cannot be used now."
    return _error_reply("BRIDGE_STEP_CONFLICT", "bridge", message,
                        [{"code": "BRIDGE_STEP_CONFLICT", "category": "input", "path": path, "message": message}])  # fmt: skip


_MOVED_BY_SUBMISSION = ("MODEL_OUTPUT_INVALID", "DATA_EXTRACTION_FAILED")


def _no_replay_before(op: str, request: Any, state: State) -> Any:
    if op == "accept" and isinstance(request, dict) \
            and (request.get("jobId"), request.get("stepToken")) in state.setdefault("used", set()):
        return _conflict()
    return request


def _no_replay_after(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    if op != "accept" or not isinstance(request, dict):
        return reply
    err = _error(reply)
    moved = reply.get("kind") in ("task", "result") or (err is not None and err.get("code") in _MOVED_BY_SUBMISSION)
    if moved:
        state.setdefault("used", set()).add((request.get("jobId"), request.get("stepToken")))
    return reply


NO_REPLAY = Variant(
    name="no-replay",
    decisions=("D-BRG-007",),
    summary="a used step token is a conflict even with the identical candidate (no retained-reply replay)",
    before=_no_replay_before,
    after=_no_replay_after,
)


def _track_open_tokens(op: str, request: Any, reply: BridgeReply, state: State) -> BridgeReply:
    open_tokens = state.setdefault("open", {})
    if reply.get("kind") == "task":
        open_tokens[reply.get("jobId")] = reply.get("stepToken")
    elif op == "accept" and isinstance(request, dict):
        err = _error(reply)
        if reply.get("kind") == "result" or (err is not None and err.get("code") in _MOVED_BY_SUBMISSION):
            open_tokens.pop(request.get("jobId"), None)
    if op == "cancel" and isinstance(request, dict):
        err = _error(reply)
        job = request.get("jobId")
        if err is not None and err.get("code") in CANCEL_CODES and job in open_tokens:
            state.setdefault("cancelled", set()).add((job, open_tokens.pop(job)))
    return reply


def _cancelled_token_conflicts(op: str, request: Any, state: State) -> Any:
    if op == "accept" and isinstance(request, dict) \
            and (request.get("jobId"), request.get("stepToken")) in state.get("cancelled", set()):
        return _conflict()
    return request


CANCELLED_TOKEN_CONFLICTS = Variant(
    name="cancelled-token-conflicts",
    decisions=("D-BRG-008",),
    summary="the open token of a cancelled job is a conflict, not the job's terminal reply",
    before=_cancelled_token_conflicts,
    after=_track_open_tokens,
)


VARIANTS = (
    REWORDED,
    RESPELLED_CORE_SCHEMA,
    PAYLOAD_LAYOUT,
    CONTEXT_ENTRIES,
    REPAIR_MATERIAL,
    REQUEST_ORDER_FIELDS,
    LEAN_SELECTED_SCHEMA,
    PLAIN_CONTRACT_ISSUES,
    BARE_NOT_FOUND,
    PARTIAL_ON_EXTRACTION_ONLY,
    DETAIL_DROPPED,
    PARAMETER_FAULTS_AT_INPUT,
    OTHER_CODES,
    LENIENT_MEMBERS,
    FIELDS_NULL_REFUSED,
    STRICT_CONTEXT,
    SURROGATES_REPLACED,
    NULL_OUTCOME,
    REPAIRS_NOT_CONFIGURABLE,
    DEFAULT_LANGUAGE_ZH,
    COMBINATION_LIMIT,
    NO_REPLAY,
    CANCELLED_TOKEN_CONFLICTS,
)
