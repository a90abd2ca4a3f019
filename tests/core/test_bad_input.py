"""Hostile and malformed input: each case gives its documented error, never an uncaught exception."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import intentref
from intentref import Intent, IntentDataError, IntentParseError
from intentref.core.limits import (
    MAX_CANDIDATE_BYTES,
    MAX_CONTEXT_MESSAGES,
    MAX_FIELDS_SELECTED,
    MAX_INPUT_BYTES,
)
from tests.conftest import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA, dumps, scripted

ORDER_INPUT = "查询订单 000123"


def _core_error(text, attempts=0):
    executor = scripted([text])
    with pytest.raises(IntentParseError) as caught:
        Intent({"repairAttempts": attempts}).parse({"input": ORDER_INPUT}, executor)
    return caught.value.to_json(), executor


def _data_error(text, attempts=0):
    executor = scripted([dumps(ORDER_CORE), text])
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": ORDER_SCHEMA, "repairAttempts": attempts}).parse({"input": ORDER_INPUT}, executor)
    return caught.value.to_json(), executor


# --- candidate text ---------------------------------------------------------------------------------

HOSTILE_TEXTS = {
    "100k open brackets": "[" * 100_000,
    "100k nested arrays": "[" * 100_000 + "]" * 100_000,
    "100k nested objects": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "deep but parseable": "[" * 500 + "]" * 500,
    "65 levels": "[" * 65 + "]" * 65,
    "lone surrogate escape": dumps({**ORDER_CORE, "normalizedInput": "订单"}).replace("订单", "\\ud800", 1),
    "lone low surrogate escape": dumps({**ORDER_CORE, "normalizedInput": "订单"}).replace("订单", "x\\udfff", 1),
    "raw lone surrogate in a string": dumps({**ORDER_CORE, "normalizedInput": "订单\ud800"}),
    "raw lone surrogate in a key": dumps({**ORDER_CORE, "\ud800": 1}),
    "raw lone surrogate outside strings": dumps(ORDER_CORE) + "\ud800",
    "NaN": dumps(ORDER_CORE).replace("[]", "[NaN]", 1),
    "Infinity": dumps(ORDER_CORE).replace("[]", "[Infinity]", 1),
    "-Infinity": dumps(ORDER_CORE).replace("[]", "[-Infinity]", 1),
    "duplicate root keys": dumps(ORDER_CORE)[:-1] + ', "prohibitions": []}',
    "duplicate nested keys": dumps(ORDER_CORE).replace('"target"', '"target": "x", "target"', 1),
    "empty": "",
    "whitespace": "  \n",
    "trailing comma": dumps(ORDER_CORE)[:-1] + ",}",
    "two documents": dumps(ORDER_CORE) + dumps(ORDER_CORE),
    "single quotes": dumps(ORDER_CORE).replace('"', "'"),
    "a JSON string": json.dumps(dumps(ORDER_CORE)),
    "a code fence": "```json\n" + dumps(ORDER_CORE) + "\n```",
    "BOM": "\ufeff" + dumps(ORDER_CORE),
    "NUL": dumps(ORDER_CORE) + "\x00",
}


def test_the_hostile_texts_are_what_they_claim():
    assert HOSTILE_TEXTS["lone surrogate escape"].count("\\ud800") == 1
    assert "\ud800" in HOSTILE_TEXTS["raw lone surrogate in a string"]
    assert json.loads(HOSTILE_TEXTS["duplicate root keys"]) == ORDER_CORE  # Python's json would take it


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_candidate_texts_are_contract_errors(name):
    # spec: R-ERR-024 R-RES-056 -- D-LIM-003 D-JSON-001 D-JSON-002 D-ERR-007
    text = HOSTILE_TEXTS[name]
    err, executor = _core_error(text)
    assert (err["code"], err["stage"]) == ("MODEL_OUTPUT_INVALID", "core")
    assert err["issues"] and all(i["code"] == "MODEL_OUTPUT_INVALID" for i in err["issues"])
    assert "partialResult" not in err
    assert len(executor.requests) == 1
    err, executor = _data_error(text)
    assert (err["code"], err["stage"]) == ("MODEL_OUTPUT_INVALID", "data")
    assert err["partialResult"]["data"] == {}
    assert len(executor.requests) == 2


def test_a_hostile_text_is_repaired_like_any_contract_fault():
    executor = scripted(["[" * 100_000, dumps(ORDER_CORE)])
    result = Intent().parse({"input": ORDER_INPUT}, executor)
    assert result["intents"][0]["action"] == "query"
    repair = json.loads(executor.requests[1]["payload"])["repair"]
    assert repair["previousCandidate"] == "[" * 100_000


def test_an_escaped_surrogate_pair_is_one_character():
    # The control for the lone-surrogate cases: a pair escaped as JSON is a real character.
    text = dumps({**ORDER_CORE, "normalizedInput": "X"}).replace("X", "\\ud83d\\ude00")
    assert Intent().parse({"input": ORDER_INPUT}, scripted([text]))["normalizedInput"] == "😀"


def test_a_ten_megabyte_candidate_is_a_limit():
    # spec: R-LIF-004 -- D-CFG-004 D-LIM-003: on the API path the rejection ends the parse.
    err, executor = _core_error(" " * (10 * 1024 * 1024), attempts=3)
    assert (err["code"], err["stage"]) == ("LIMIT_EXCEEDED", "core")
    assert [(i["code"], i["category"]) for i in err["issues"]] == [("LIMIT_EXCEEDED", "processing")]
    assert "partialResult" not in err
    assert len(executor.requests) == 1  # no repair either
    err, executor = _data_error("[" * (10 * 1024 * 1024), attempts=3)
    assert (err["code"], err["stage"]) == ("LIMIT_EXCEEDED", "data")
    assert len(executor.requests) == 2


def test_the_candidate_limit_counts_utf8_bytes():
    text = dumps(ORDER_CORE)
    exactly = text + " " * (MAX_CANDIDATE_BYTES - len(text.encode("utf-8")))
    assert Intent().parse({"input": ORDER_INPUT}, scripted([exactly]))["intents"][0]["action"] == "query"
    err, _ = _core_error(exactly + " ")
    assert err["code"] == "LIMIT_EXCEEDED"
    # fewer characters than the limit, more bytes: each 中 is three bytes.
    wide = dumps({**ORDER_CORE, "normalizedInput": "中" * (MAX_CANDIDATE_BYTES // 3)})
    assert len(wide) < MAX_CANDIDATE_BYTES < len(wide.encode("utf-8"))
    err, _ = _core_error(wide)
    assert err["code"] == "LIMIT_EXCEEDED"


# --- requests ---------------------------------------------------------------------------------------

# (name, request, code, issue path)
BAD_REQUESTS = [
    ("request a string", "查询订单", "INPUT_INVALID", ""),
    ("request None", None, "INPUT_INVALID", ""),
    ("request a list", [{"input": "x"}], "INPUT_INVALID", ""),
    ("input missing", {}, "INPUT_INVALID", "/input"),
    ("input missing, context given", {"context": "x"}, "INPUT_INVALID", "/input"),
    ("input a number", {"input": 123}, "INPUT_INVALID", "/input"),
    ("input None", {"input": None}, "INPUT_INVALID", "/input"),
    ("input a list", {"input": ["查询"]}, "INPUT_INVALID", "/input"),
    ("input bytes", {"input": "查询".encode()}, "INPUT_INVALID", "/input"),
    ("input a lone surrogate", {"input": "查询\ud800"}, "INPUT_INVALID", "/input"),
    ("context a number", {"input": "x", "context": 5}, "INPUT_INVALID", "/context"),
    ("context a boolean", {"input": "x", "context": True}, "INPUT_INVALID", "/context"),
    ("context an object", {"input": "x", "context": {"role": "user", "content": "c"}}, "INPUT_INVALID", "/context"),
    ("context a tuple", {"input": "x", "context": ({"role": "user", "content": "c"},)}, "INPUT_INVALID", "/context"),
    ("context text lone surrogate", {"input": "x", "context": "\udc00"}, "INPUT_INVALID", "/context"),
    ("message a string", {"input": "x", "context": ["hello"]}, "INPUT_INVALID", "/context/0"),
    ("message None", {"input": "x", "context": [None]}, "INPUT_INVALID", "/context/0"),
    ("role system", {"input": "x", "context": [{"role": "system", "content": "c"}]}, "INPUT_INVALID", "/context/0/role"),
    ("role background", {"input": "x", "context": [{"role": "background", "content": "c"}]}, "INPUT_INVALID", "/context/0/role"),
    ("role upper case", {"input": "x", "context": [{"role": "User", "content": "c"}]}, "INPUT_INVALID", "/context/0/role"),
    ("role missing", {"input": "x", "context": [{"content": "c"}]}, "INPUT_INVALID", "/context/0/role"),
    ("role a list", {"input": "x", "context": [{"role": ["user"], "content": "c"}]}, "INPUT_INVALID", "/context/0/role"),
    ("second role bad", {"input": "x", "context": [{"role": "user", "content": "c"}, {"role": 1, "content": "c"}]},
     "INPUT_INVALID", "/context/1/role"),
    ("content missing", {"input": "x", "context": [{"role": "user"}]}, "INPUT_INVALID", "/context/0/content"),
    ("content a number", {"input": "x", "context": [{"role": "tool", "content": 1}]}, "INPUT_INVALID", "/context/0/content"),
    ("content lone surrogate", {"input": "x", "context": [{"role": "tool", "content": "\ud800"}]}, "INPUT_INVALID",
     "/context/0/content"),
    ("message extra member", {"input": "x", "context": [{"role": "user", "content": "c", "name": "n"}]}, "INPUT_INVALID",
     "/context/0/name"),
    ("message member a/b", {"input": "x", "context": [{"role": "user", "content": "c", "a/b": 1}]}, "INPUT_INVALID",
     "/context/0/a~1b"),
    ("fields a string", {"input": "x", "fields": "orderId"}, "INPUT_INVALID", "/fields"),
    ("fields an object", {"input": "x", "fields": {"orderId": True}}, "INPUT_INVALID", "/fields"),
    ("fields a tuple", {"input": "x", "fields": ("orderId",)}, "INPUT_INVALID", "/fields"),
    ("fields a number", {"input": "x", "fields": 1}, "INPUT_INVALID", "/fields"),
    ("field name a number", {"input": "x", "fields": ["orderId", 5]}, "INPUT_INVALID", "/fields/1"),
    ("field name None", {"input": "x", "fields": [None]}, "INPUT_INVALID", "/fields/0"),
    ("field name a list", {"input": "x", "fields": [["orderId"]]}, "INPUT_INVALID", "/fields/0"),
    ("too many field names", {"input": "x", "fields": ["orderId"] * (MAX_FIELDS_SELECTED + 1)}, "LIMIT_EXCEEDED", "/fields"),
    ("unknown member", {"input": "x", "instance": "default"}, "INPUT_INVALID", "/instance"),
    ("misspelt member", {"input": "x", "field": ["orderId"]}, "INPUT_INVALID", "/field"),
    ("unknown member a/b~c", {"input": "x", "a/b~c": 1}, "INPUT_INVALID", "/a~1b~0c"),
    ("member of another case", {"input": "x", "Fields": []}, "INPUT_INVALID", "/Fields"),
    ("non-string member names", {"input": "x", 1: "a", "b": 2, None: 3}, "INPUT_INVALID", "/1"),
    ("unknown field", {"input": "x", "fields": ["note"]}, "UNKNOWN_FIELD", "/fields/0"),
    ("second field unknown", {"input": "x", "fields": ["orderId", "orderID"]}, "UNKNOWN_FIELD", "/fields/1"),
    ("nested path as field", {"input": "x", "fields": ["orderId/x"]}, "UNKNOWN_FIELD", "/fields/0"),
    ("pointer as field", {"input": "x", "fields": ["/data/orderId"]}, "UNKNOWN_FIELD", "/fields/0"),
    ("empty field name", {"input": "x", "fields": [""]}, "UNKNOWN_FIELD", "/fields/0"),
    ("input too large", {"input": "a" * (MAX_INPUT_BYTES + 1)}, "LIMIT_EXCEEDED", "/input"),
    ("input too large in bytes", {"input": "中" * (MAX_INPUT_BYTES // 3 + 1)}, "LIMIT_EXCEEDED", "/input"),
    ("too many messages", {"input": "x", "context": [{"role": "user", "content": "c"}] * (MAX_CONTEXT_MESSAGES + 1)},
     "LIMIT_EXCEEDED", "/context"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "request_", "code", "path"), BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_requests_are_input_errors_with_a_path(name, request_, code, path):
    # spec: R-BRG-019 R-FLD-004 R-FLD-005 R-TSK-005 R-TSK-007 R-ERR-007 -- D-REQ-001 D-REQ-003 D-REQ-004 D-LIM-002
    executor = scripted([])
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": ORDER_SCHEMA}).parse(request_, executor)
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == (code, "input")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [(code, "input", path)]
    assert "partialResult" not in err
    assert executor.requests == []


def test_the_limits_are_inclusive():
    intent = Intent({"schema": ORDER_SCHEMA})
    assert intent.start({"input": "a" * MAX_INPUT_BYTES}).active
    assert intent.start({"input": "中" * (MAX_INPUT_BYTES // 3)}).active
    assert intent.start({"input": "x", "context": [{"role": "user", "content": ""}] * MAX_CONTEXT_MESSAGES}).active


def test_unknown_fields_without_a_schema():
    # spec: R-FLD-004 R-SCH-012 -- an instance without fields knows no field names.
    with pytest.raises(IntentParseError) as caught:
        Intent().start({"input": "x", "fields": ["orderId"]})
    assert caught.value.code == "UNKNOWN_FIELD"
    assert Intent().start({"input": "x", "fields": []}).active


@pytest.mark.parametrize("request_", [{"input": "x", "context": None}, {"input": "x", "fields": None}])
def test_null_context_and_fields_mean_absent(request_):
    # D-REQ-004 -- context: null is no context; fields: null is fields omitted (R-FLD-001).
    job = Intent({"schema": ORDER_SCHEMA}).start(request_)
    assert job.request.context == () and job.selected == ("orderId",)


# --- configuration ----------------------------------------------------------------------------------

BAD_CONFIGS = [
    ("not a mapping", "zh-CN", ""),
    ("a list", [("language", "zh-CN")], ""),
    ("unknown member", {"lang": "zh-CN"}, "/lang"),
    ("misspelt member", {"repairAttempt": 1}, "/repairAttempt"),
    ("unknown member a/b", {"a/b": 1}, "/a~1b"),
    ("language a number", {"language": 5}, "/language"),
    ("language None", {"language": None}, "/language"),
    ("language empty", {"language": ""}, "/language"),
    ("language blank", {"language": " \t"}, "/language"),
    ("language a list", {"language": ["zh-CN"]}, "/language"),
    ("repairAttempts -1", {"repairAttempts": -1}, "/repairAttempts"),
    ("repairAttempts 9", {"repairAttempts": 9}, "/repairAttempts"),
    ("repairAttempts True", {"repairAttempts": True}, "/repairAttempts"),
    ("repairAttempts False", {"repairAttempts": False}, "/repairAttempts"),
    ("repairAttempts '1'", {"repairAttempts": "1"}, "/repairAttempts"),
    ("repairAttempts 1.0", {"repairAttempts": 1.0}, "/repairAttempts"),
    ("repairAttempts None", {"repairAttempts": None}, "/repairAttempts"),
]


@pytest.mark.parametrize(("name", "config", "path"), BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
def test_bad_configurations_are_config_errors(name, config, path):
    # D-CFG-001 D-ERR-002 D-LIM-005
    with pytest.raises(IntentParseError) as caught:
        Intent(config)
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == ("CONFIG_INVALID", "config")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [("CONFIG_INVALID", "config", path)]


@pytest.mark.parametrize("attempts", [0, 8])
def test_repair_attempt_bounds_are_accepted(attempts):
    assert Intent({"repairAttempts": attempts}).repair_attempts == attempts


# --- executor failures ------------------------------------------------------------------------------

EXECUTOR_FAILURES = [
    (intentref.ModelRefused, "MODEL_REFUSED"),
    (intentref.ModelAuthFailed, "MODEL_AUTH_FAILED"),
    (intentref.ModelRateLimited, "MODEL_RATE_LIMITED"),
    (intentref.ModelRequestFailed, "MODEL_REQUEST_FAILED"),
    (intentref.ModelAborted, "MODEL_ABORTED"),
    (intentref.ModelOutputIncomplete, "MODEL_OUTPUT_INCOMPLETE"),
    (intentref.ModelExecutorError, "MODEL_REQUEST_FAILED"),
]


def _failing(exc, steps_before):
    """An executor that answers ``steps_before`` steps, then raises ``exc``; it records each call."""
    calls = []

    def executor(request):
        calls.append(request)
        if len(calls) > steps_before:
            raise exc
        return dumps(ORDER_CORE)

    executor.calls = calls
    return executor


@pytest.mark.parametrize(("exc", "code"), EXECUTOR_FAILURES)
@pytest.mark.parametrize("stage", ["core", "data"])
def test_executor_failures_end_the_job_with_their_code(exc, code, stage):
    # spec: R-ERR-031 R-ERR-040 R-ERR-011 -- D-ERR-004
    executor = _failing(exc("provider said no"), 0 if stage == "core" else 1)
    intent = Intent({"schema": ORDER_SCHEMA, "repairAttempts": 3})
    with pytest.raises(IntentParseError) as caught:
        intent.parse({"input": ORDER_INPUT}, executor)
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == (code, stage)
    assert not isinstance(caught.value, IntentDataError)
    assert err["issues"] == [{"code": code, "category": "processing", "path": None, "message": "provider said no"}]
    assert len(executor.calls) == (1 if stage == "core" else 2)  # never repaired
    if stage == "core":
        assert "partialResult" not in err
    else:
        assert err["partialResult"] == Intent().parse({"input": ORDER_INPUT}, scripted([dumps(ORDER_CORE)]))


def test_an_executor_failure_without_a_message_has_no_issues():
    with pytest.raises(IntentParseError) as caught:
        Intent().parse({"input": ORDER_INPUT}, _failing(intentref.ModelRefused(), 0))
    assert caught.value.to_json()["issues"] == []


def test_an_executor_failure_after_a_repair_task_keeps_its_stage():
    calls = []

    def executor(request):
        calls.append(request)
        if len(calls) == 1:
            return dumps(ORDER_CORE)
        if len(calls) == 2:
            return dumps({**ORDER_DATA, "evidence": []})
        raise intentref.ModelRateLimited("slow down")

    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": ORDER_SCHEMA, "repairAttempts": 2}).parse({"input": ORDER_INPUT}, executor)
    assert (caught.value.code, caught.value.stage) == ("MODEL_RATE_LIMITED", "data")
    assert caught.value.partialResult["data"] == {}
    assert len(calls) == 3


def test_other_executor_exceptions_propagate_unchanged():
    # D-ERR-004: an executor's own bug is not serialised as a result.
    def executor(request):
        raise KeyError("bug")

    with pytest.raises(KeyError):
        Intent().parse({"input": ORDER_INPUT}, executor)


# --- aparse -----------------------------------------------------------------------------------------


def test_aparse_with_an_async_executor():
    # D-CFG-003
    requests = []

    async def executor(request):
        requests.append(request)
        await asyncio.sleep(0)
        return [dumps(ORDER_CORE), dumps(ORDER_DATA)][len(requests) - 1]

    intent = Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})
    result = asyncio.run(intent.aparse({"input": ORDER_INPUT}, executor))
    assert result == intent.parse({"input": ORDER_INPUT}, scripted([dumps(ORDER_CORE), dumps(ORDER_DATA)]))
    assert result["data"] == {"orderId": "000123"}
    assert [r["format"]["kind"] for r in requests] == ["json_schema", "json_object"]


def test_aparse_with_a_sync_executor():
    result = asyncio.run(Intent().aparse({"input": ORDER_INPUT}, scripted([dumps(ORDER_CORE)])))
    assert result["intents"][0]["id"] == "i1"


@pytest.mark.parametrize(("exc", "code"), EXECUTOR_FAILURES)
def test_aparse_executor_failures(exc, code):
    calls = []

    async def executor(request):
        calls.append(request)
        if len(calls) == 1:
            return dumps(ORDER_CORE)
        raise exc("boom")

    with pytest.raises(IntentParseError) as caught:
        asyncio.run(Intent({"schema": ORDER_SCHEMA, "repairAttempts": 3}).aparse({"input": ORDER_INPUT}, executor))
    assert (caught.value.code, caught.value.stage) == (code, "data")
    assert caught.value.partialResult["data"] == {}
    assert len(calls) == 2


def test_aparse_errors_are_the_parse_errors():
    async def executor(request):
        return "[" * 100_000

    with pytest.raises(IntentParseError) as caught:
        asyncio.run(Intent({"repairAttempts": 0}).aparse({"input": ORDER_INPUT}, executor))
    assert (caught.value.code, caught.value.stage) == ("MODEL_OUTPUT_INVALID", "core")
    with pytest.raises(IntentParseError) as caught:
        asyncio.run(Intent().aparse({"input": "  "}, executor))
    assert caught.value.code == "INPUT_INVALID"


# --- properties: arbitrary values never escape as anything but IntentParseError ---------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["/data/orderId", "/data", "input", "context:0", "000123", "exact", "semantic", "issue",
                       "extracted", "violated", "definition", "business_information", "DATA_AMBIGUOUS", "query"])
)  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6) | st.sampled_from(["path", "mode", "code"]), c, max_size=4),
    max_leaves=12,
)


def _paths(node, prefix=()):
    """Every (path, value) inside a JSON value, containers included."""
    yield prefix, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


# A data candidate exercising every entry kind, for mutation.
FULL_DATA = {
    **ORDER_DATA,
    "issues": [{"code": "DATA_AMBIGUOUS", "category": "business_information", "path": None, "message": "m"}],
}


def _mutated(base, data):
    candidate = copy.deepcopy(base)
    path, _ = data.draw(st.sampled_from(list(_paths(candidate))[1:]), label="path")
    node = candidate
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = data.draw(json_values, label="value")
    return candidate


def _run(intent, request, texts):
    try:
        result = intent.parse(request, scripted(texts))
    except IntentParseError as err:
        json.dumps(err.to_json())  # the error always serialises
        return None
    json.dumps(result, allow_nan=False)
    return result


ORDER = Intent({"schema": ORDER_SCHEMA, "repairAttempts": 0})
CORE_ONLY = {"input": ORDER_INPUT, "fields": []}


@given(json_values)
def test_arbitrary_candidate_text_gives_only_intent_parse_errors(value):
    text = json.dumps(value)
    _run(ORDER, CORE_ONLY, [text])  # as the core candidate
    _run(ORDER, {"input": ORDER_INPUT}, [dumps(ORDER_CORE), text])  # as the data candidate
    if isinstance(value, str):
        _run(ORDER, CORE_ONLY, [value])  # the raw string as the text itself


@given(st.data())
def test_mutated_candidates_give_only_intent_parse_errors(data):
    _run(ORDER, CORE_ONLY, [dumps(_mutated(ORDER_CORE, data))])
    _run(ORDER, {"input": ORDER_INPUT}, [dumps(ORDER_CORE), dumps(_mutated(FULL_DATA, data))])


@given(json_values)
def test_arbitrary_requests_give_only_intent_parse_errors(value):
    for request in (value, {"input": ORDER_INPUT, "context": value}, {"input": ORDER_INPUT, "fields": value}, {"input": value}):
        try:
            ORDER.start(request)
        except IntentParseError as err:
            assert err.stage == "input"


@given(st.dictionaries(st.sampled_from(["input", "context", "fields", "instance"]), json_values, max_size=4))
def test_arbitrary_request_members_give_only_intent_parse_errors(request):
    try:
        ORDER.start(request)
    except IntentParseError as err:
        assert err.stage == "input"


@given(json_values)
def test_arbitrary_configurations_give_only_intent_parse_errors(value):
    for config in (value, {"schema": value}, {"language": value}, {"repairAttempts": value}):
        try:
            Intent(config)
        except IntentParseError as err:
            assert err.stage == "config"
