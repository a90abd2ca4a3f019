"""Exact messages, boundaries and loop edges that the conformance cases leave open.

The conformance cases may not fix a message's wording (hosts must not branch on it,
R-ERR-013), but the reference's own sentences are part of what it publishes: a reply quotes
the offending value, names the member, escapes the pointer.  These tests pin what each
message says about the input, the boundaries at the named limits, and the rules that must
report every fault in a list rather than stop at the first.  Written to kill mutants that
survived the cases; each states the rule, not the code.
"""

from __future__ import annotations

import copy
import gc
import json
import weakref
from decimal import Decimal
from typing import Any

import pytest
from wire_checks import raised_error

from intentref import Intent, IntentParseError, ModelExecutorError
from intentref.bridge import BridgeClosedError, create_intent_bridge, read_bridge_config
from intentref.core import jsonpointer
from intentref.core.core_candidate import core_violations
from intentref.core.data_candidate import DataContext, judge
from intentref.core.errors import IntentParseError as ErrorClass
from intentref.core.job import DATA_CONTRACT_MESSAGE
from intentref.core.jsontext import CandidateTextError, json_type_name, parse_candidate
from intentref.core.limits import MAX_CANDIDATE_DEPTH
from intentref.core.policy import REFERENCE_POLICY
from intentref.core.request import read_request
from intentref.core.schema_subset import (
    MAX_PATTERN_LENGTH,
    MAX_SAFE_INTEGER,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_JSON_DEPTH,
    Definition,
    strip_removed_keywords,
)
from intentref.devtools.examples import ORDER_CORE

SCHEMA = {"type": "object", "properties": {"orderId": {"type": "string"}}}


def _core_with(change: Any) -> list[tuple[str, str]]:
    candidate = copy.deepcopy(ORDER_CORE)
    change(candidate)
    return core_violations(candidate)


# --------------------------------------------------------------------------- candidate text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a":1,"a":2}', "duplicate object key 'a'"),
        ("1e400", "number 1e400 is not a finite double"),
        ("12345678901234567890.5", "number 12345678901234567890.5 loses precision as a double"),
        ("9007199254740993", "integer 9007199254740993 is outside the safe integer range"),
        ("1e16", "integer value 1e16 is outside the safe integer range"),
        ("-9007199254740994.0", "integer value -9007199254740994.0 is outside the safe integer range"),
        ("NaN", "NaN is not JSON"),
        ("-Infinity", "-Infinity is not JSON"),
        ('"\\ud800"', "string holds a lone surrogate"),
        ('{"k": ["\\udc00"]}', "string holds a lone surrogate"),
        ('{"\\ud800": 1}', "string holds a lone surrogate"),
        ("[1,", "not valid JSON: Expecting value at line 1 column 4"),
        ("[]]", "not valid JSON: Extra data at line 1 column 3"),
    ],
)
def test_candidate_text_faults_say_what_is_wrong(text, message):
    # spec: D-JSON-001 D-JSON-002 D-JSON-004 D-LIM-003 -- strict JSON; the message names the fault and where.
    with pytest.raises(CandidateTextError) as raised:
        parse_candidate(text)
    assert str(raised.value) == message


def test_candidate_nesting_limit_is_inclusive():
    # spec: D-LIM-003 -- MAX_CANDIDATE_DEPTH levels are allowed, one more is not.
    assert parse_candidate("[" * MAX_CANDIDATE_DEPTH + "]" * MAX_CANDIDATE_DEPTH) is not None
    assert parse_candidate('{"a":' * (MAX_CANDIDATE_DEPTH - 1) + "1" + "}" * (MAX_CANDIDATE_DEPTH - 1))
    over = MAX_CANDIDATE_DEPTH + 1
    with pytest.raises(CandidateTextError, match=f"^nesting deeper than {MAX_CANDIDATE_DEPTH} levels$"):
        parse_candidate("[" * over + "]" * over)


def test_a_surrogate_escape_is_checked_in_every_string_of_the_document():
    # spec: D-JSON-002 -- one well-formed escape does not excuse a lone one further on.
    assert parse_candidate('["\\ud83d\\ude00", "x"]') == ["\U0001f600", "x"]
    with pytest.raises(CandidateTextError):
        parse_candidate('["\\ud83d\\ude00", ["\\ud800"]]')


@pytest.mark.parametrize(
    ("value", "name"),
    [(None, "null"), (True, "boolean"), (0, "number"), (1.5, "number"), ("", "string"), ({}, "object"),
     ([], "array"), (Decimal(1), "Decimal"), (b"", "bytes")],
)  # fmt: skip
def test_json_type_names(value, name):
    # spec: D-ERR-006 -- messages name JSON types, not Python ones; a value that is not JSON at all
    # (an in-process caller's object) is named by its own type.
    assert json_type_name(value) == name


# --------------------------------------------------------------------------- core candidate


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c: c.update(primaryIntent=5),
         [("/primaryIntent", "primaryIntent must be null or a non-blank string, got 5.")]),
        (lambda c: c["intents"][0].update(target="  "),
         [("/intents/0/target", "target must be null or a non-blank string, got '  '.")]),
        (lambda c: c.update(requirements=[1]),
         [("/requirements/0", "requirements entries must be non-blank strings, got 1.")]),
        (lambda c: c.update(prohibitions=["ok", None]),
         [("/prohibitions/1", "prohibitions entries must be non-blank strings, got None.")]),
        (lambda c: c["intents"][0].update(requirements=["", 2]),
         [("/intents/0/requirements/0", "requirements entries must be non-blank strings, got ''."),
          ("/intents/0/requirements/1", "requirements entries must be non-blank strings, got 2.")]),
        (lambda c: c["intents"][0]["blockers"].update(confirmationReason=3),
         [("/intents/0/blockers/confirmationReason", "confirmationReason must be null or a non-blank string, got 3.")]),
        (lambda c: c["intents"][0]["blockers"].update(conditionReason=""),
         [("/intents/0/blockers/conditionReason", "conditionReason must be null or a non-blank string, got ''.")]),
        (lambda c: c.update(intents=[1]), [("/intents/0", "each intent must be an object.")]),
        (lambda c: c.update({"a/b~c": 1}), [("/a~1b~0c", "unexpected member 'a/b~c'.")]),
        (lambda c: c["intents"][0].update({"~x": 1}), [("/intents/0/~0x", "unexpected member '~x'.")]),
        (lambda c: c.update(normalizedInput=None), [("/normalizedInput", "normalizedInput must be a non-blank string.")]),
        (lambda c: c["intents"][0]["blockers"].pop("questions"), [("/intents/0/blockers/questions", "questions is required.")]),
    ],
)  # fmt: skip
def test_core_violations_name_the_member_and_quote_the_value(change, expected):
    # spec: R-COR-002 R-COR-003 R-COR-005 D-ERR-006 -- path, member name and the value as given.
    assert _core_with(change) == expected


def test_a_long_quoted_value_is_cut_to_sixty_characters():
    # spec: D-ERR-006 -- messages stay short: a quoted value longer than 60 characters ends in "...".
    exactly = "x" * 58  # repr adds two quotes: 60 characters, shown whole
    [(_, whole)] = _core_with(lambda c: c["intents"][0].update(action=exactly))
    assert whole.endswith(f"got {exactly!r}.")
    [(_, one_over)] = _core_with(lambda c: c["intents"][0].update(action="x" * 59))  # 61 characters: cut
    assert one_over.endswith("got '" + "x" * 56 + "....")
    [(path, cut)] = _core_with(lambda c: c["intents"][0].update(action="y" * 80))
    assert path == "/intents/0/action"
    assert cut == ("action must be one of query, analyze, generate, modify, delete, execute, other or null, got '"
                   + "y" * 56 + "....")  # fmt: skip


def test_every_bad_question_of_every_intent_is_reported():
    # spec: R-COR-007 -- the rule does not stop at the first bad question or the first intent.
    def change(c: dict[str, Any]) -> None:
        c["intents"][0]["blockers"].update(clarificationReason="which order?", questions=[1, "q", {"question": ""}])
        c["intents"].append(copy.deepcopy(c["intents"][0]))
        c["intents"][1]["blockers"]["questions"] = "not a list"

    shape = "each question must be an object with question and options."
    assert _core_with(change) == [
        ("/intents/0/blockers/questions/0", shape), ("/intents/0/blockers/questions/1", shape),
        ("/intents/0/blockers/questions/2/options", "options is required."),
        ("/intents/0/blockers/questions/2/question", "question must be a non-blank string."),
        ("/intents/1/blockers/questions", "questions must be an array."),
    ]  # fmt: skip


# --------------------------------------------------------------------------- data candidate


def _data_context() -> DataContext:
    definition = Definition.from_schema(SCHEMA, REFERENCE_POLICY)
    return DataContext(definition, ("orderId",), {"input": "查询订单 000123", "context:0": "上一条"})


def test_every_bad_source_is_reported():
    # spec: R-DAT-008 R-DAT-009 R-DAT-010 -- each source entry is judged, not only the first bad one.
    sources = [{"sourceId": "", "quote": "x"}, {"sourceId": "nowhere", "quote": "x"}, 5,
               {"sourceId": "context:0", "quote": ""}, {"sourceId": 7, "quote": "1"},
               {"sourceId": "input", "quote": "999"}]  # fmt: skip
    candidate = {
        "data": {"orderId": "000123"},
        "evidence": [{"path": "/data/orderId", "mode": "exact", "sources": sources}],
        "descriptionChecks": [],
        "fieldResults": [{"path": "/data/orderId", "status": "extracted", "explanation": "输入给出编号。"}],
        "issues": [],
    }
    found = [v for v in judge(candidate, _data_context(), REFERENCE_POLICY).violations if v[0].startswith("/evidence/0/sources/")]
    assert found == [
        ("/evidence/0/sources/0/sourceId", "sourceId must be a non-empty string."),
        ("/evidence/0/sources/1/sourceId", "unknown sourceId 'nowhere'; use input or a context:N id from the payload."),
        ("/evidence/0/sources/2", "each source must be an object with sourceId and quote."),
        ("/evidence/0/sources/3/quote", "quote must be a non-empty string."),
        ("/evidence/0/sources/4/sourceId", "sourceId must be a non-empty string."),
        ("/evidence/0/sources/5/quote", "quote '999' does not occur in input."),
    ]  # fmt: skip


def test_a_data_stage_contract_failure_says_data_candidate():
    # spec: R-ERR-027 D-ERR-006 -- the final contract error of the data stage has the data sentence.
    intent = Intent({"schema": SCHEMA, "repairAttempts": 0})
    answers = iter([json.dumps(ORDER_CORE, ensure_ascii=False), "{}"])
    with pytest.raises(IntentParseError) as raised:
        intent.parse({"input": "查询订单 000123"}, lambda task: next(answers))
    error = raised.value.to_json()
    assert (error["code"], error["stage"], error["message"]) == ("MODEL_OUTPUT_INVALID", "data", DATA_CONTRACT_MESSAGE)


def test_an_executor_error_with_an_undeclared_code_is_a_clear_programming_error():
    # spec: R-ERR-031 D-ERR-004 -- an executor ends a job only with a declared model code; a made-up one is a
    # host bug, reported as such (ValueError naming the code), not published as an error code.
    class MadeUp(ModelExecutorError):
        code = "MODEL_ON_FIRE"

    def executor(task: dict[str, Any]) -> str:
        raise MadeUp("boom")

    with pytest.raises(ValueError) as raised:
        Intent({"schema": SCHEMA}).parse({"input": "查询订单 000123"}, executor)
    # The message lists every code a job can end with, comma-separated, so the host sees its choices.
    head, _, listed = str(raised.value).partition(": ")
    assert head == "'MODEL_ON_FIRE' is not a code a job can end with"
    assert listed.split(", ") == ["MODEL_ABORTED", "MODEL_REFUSED", "MODEL_OUTPUT_INCOMPLETE", "MODEL_AUTH_FAILED",
                      "MODEL_RATE_LIMITED", "MODEL_REQUEST_FAILED", "BRIDGE_JOB_EXPIRED"]  # fmt: skip


def test_submitting_to_an_ended_job_is_a_programming_error_that_says_so():
    job = Intent({"schema": SCHEMA}).start({"input": "查询订单 000123"})
    job.cancel("cancelled")
    with pytest.raises(RuntimeError) as raised:
        job.submit("{}")
    assert str(raised.value) == "submit() on a job that has ended"


@pytest.mark.parametrize("stage, language", [("core", "en"), ("data", "zh-CN")])
def test_a_repair_task_says_it_is_a_repair_and_the_first_task_does_not(stage, language):
    # spec: R-TSK-010 -- a repair task's instructions add the repair paragraph to its stage's own.
    from intentref.core.instructions import task_instructions

    job = Intent({"schema": SCHEMA, "language": language, "repairAttempts": 1}).start({"input": "查询订单 000123"})
    if stage == "data":
        job.submit(json.dumps(ORDER_CORE, ensure_ascii=False))
    assert job.task.stage == stage
    first = job.model_request()["instructions"]
    assert first == task_instructions(stage, language, False)
    assert job.submit("{}").task is not None and job.task.stage == stage
    repair = job.model_request()["instructions"]
    assert repair == task_instructions(stage, language, True)
    assert repair.startswith(first)
    assert len(repair) > len(first)


def test_an_unknown_stage_has_no_instructions():
    from intentref.core.instructions import task_instructions

    with pytest.raises(ValueError, match=r"^no instructions for stage 'DATA'$"):
        task_instructions("DATA", "zh-CN", False)


def test_an_undeclared_error_code_cannot_be_raised():
    # spec: D-ERR-001 -- every published code is in the table.
    with pytest.raises(ValueError, match=r"^undeclared error code 'NOT_A_CODE'$"):
        ErrorClass("NOT_A_CODE", "input", "x.")


# --------------------------------------------------------------------------- requests


@pytest.mark.parametrize(
    ("request_value", "path", "message", "code"),
    [
        ({"input": 5}, "/input", "input must be a string, got number.", "INPUT_INVALID"),
        ({"input": None}, "/input", "input must be a string, got null.", "INPUT_INVALID"),
        (5, "", "request must be an object.", "INPUT_INVALID"),
        ({"input": "x", "context": 5}, "/context", "context must be a string or an array of messages.", "INPUT_INVALID"),
        ({"input": "x", "context": [5]}, "/context/0", "a context message must be an object with role and content.",
         "INPUT_INVALID"),
        ({"input": "x", "context": [{"content": "y"}]}, "/context/0/role", "role must be user, assistant or tool.",
         "INPUT_INVALID"),
        ({"input": "x", "context": [{"role": "user", "content": []}]}, "/context/0/content",
         "content must be a string, got array.", "INPUT_INVALID"),
        ({"input": "x", "fields": 5}, "/fields", "fields must be an array of top-level field names.", "INPUT_INVALID"),
        ({"input": "x", "fields": ["zz"]}, "/fields/0", "unknown field 'zz'.", "UNKNOWN_FIELD"),
    ],
)  # fmt: skip
def test_request_faults_name_the_member(request_value, path, message, code):
    # spec: R-BRG-019 D-REQ-004 D-REQ-006 R-ERR-017 D-ERR-006 -- one issue at the member, the message names it.
    error = raised_error(lambda: read_request(request_value, ["orderId"], REFERENCE_POLICY))
    assert (error["code"], error["message"]) == (code, message)
    assert error["issues"] == [{"code": code, "category": "input", "path": path, "message": message}]


def test_an_oversized_context_is_a_limit_at_context():
    # spec: D-LIM-002 -- the context byte limit is LIMIT_EXCEEDED at /context.
    error = raised_error(lambda: read_request({"input": "x", "context": "y" * 300_000}, ["orderId"], REFERENCE_POLICY))
    assert error["code"] == "LIMIT_EXCEEDED"
    assert error["issues"] == [{"code": "LIMIT_EXCEEDED", "category": "input", "path": "/context",
                                "message": "context too large."}]  # fmt: skip


# --------------------------------------------------------------------------- Bridge


@pytest.mark.parametrize(("value", "name"), [(None, "null"), (True, "boolean"), (1, "number"), ({}, "object"),
                                             ([], "array")])  # fmt: skip
def test_bridge_type_faults_name_the_json_type(value, name):
    # spec: R-BRG-004 D-ERR-006 -- "jobId must be a string, got <JSON type>."
    session = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}}).connect()
    reply = session.accept({"jobId": value, "stepToken": "t", "candidateText": "{}"})
    assert reply["kind"] == "error"
    assert reply["error"]["issues"] == [{"code": "INPUT_INVALID", "category": "input", "path": "/jobId",
                                         "message": f"jobId must be a string, got {name}."}]  # fmt: skip


def test_instance_names_must_be_strings():
    # spec: R-CAP-001 D-BRG-001 -- a config fault, at /instances.
    error = raised_error(lambda: read_bridge_config({"instances": {1: Intent({"schema": SCHEMA})}}))
    assert error["code"] == "CONFIG_INVALID"
    assert error["issues"] == [{"code": "CONFIG_INVALID", "category": "config", "path": "/instances",
                                "message": "instance names must be strings."}]  # fmt: skip


def test_open_objects_say_they_are_open_and_a_closed_bridge_refuses_connect():
    # spec: R-BRG-009 -- closed is False until close(); then connect() raises BridgeClosedError.
    bridge = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}})
    session = bridge.connect()
    assert bridge.closed is False and session.closed is False
    session.close()
    assert session.closed is True and bridge.closed is False
    bridge.close()
    assert bridge.closed is True
    with pytest.raises(BridgeClosedError, match=r"^connect\(\) on a closed Bridge$"):
        bridge.connect()


def test_a_closed_session_is_not_kept_alive_by_the_bridge():
    # spec: R-BRG-009 D-BRG-004 -- a host that opens and closes sessions does not grow the Bridge.
    bridge = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}})
    session = bridge.connect()
    session.prepare({"instance": "order", "input": "查询订单 000123"})
    session.close()
    gone = weakref.ref(session)
    del session
    gc.collect()
    assert gone() is None


# --------------------------------------------------------------------------- JSON Pointer


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [("/a~0b/~1c~0", ["a~b", "/c~"]), ("", []), ("/", [""]), ("/~01", ["~1"]), ("/~2", None), ("/a~", None),
     ("a", None)],
)  # fmt: skip
def test_pointer_split_unescapes_in_the_rfc_order(pointer, tokens):
    # spec: R-DAT-005 R-DAT-006 -- ~1 then ~0, so "~01" is "~1"; any other "~" is invalid.
    assert jsonpointer.split(pointer) == tokens


# --------------------------------------------------------------------------- schema subset


def _schema_error(schema: Any) -> tuple[str, str, str]:
    error = raised_error(lambda: Definition.from_schema(schema, REFERENCE_POLICY))
    [issue] = error["issues"]
    assert error["message"] == f"schema {issue['path'] or '/'}: {issue['message']}"
    return error["code"], issue["path"], issue["message"]


def _with_property(subschema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": subschema}}


def test_schema_faults_are_reported_at_their_pointer():
    # spec: R-SCH-011 R-SCH-013 D-SCH-004 -- the message is "schema <pointer>: <what>".
    unsupported = "SCHEMA_UNSUPPORTED"
    assert _schema_error(5) == (unsupported, "", "the root of a definition must be an object schema.")
    assert _schema_error(_with_property({"const": MAX_SAFE_INTEGER + 1})) == (
        unsupported, "/properties/a/const", "integers must lie within the safe integer range.")  # fmt: skip
    assert _schema_error({"type": "object", "properties": {1: {}}}) == (
        unsupported, "/properties", "object keys must be strings.")  # fmt: skip
    assert _schema_error(_with_property({"const": float("nan")})) == (
        unsupported, "/properties/a/const", "numbers must be finite.")  # fmt: skip
    assert _schema_error(_with_property({"const": object()})) == (
        unsupported, "/properties/a/const", "object is not JSON data.")  # fmt: skip
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["a"] = cyclic
    assert _schema_error(cyclic) == (unsupported, "/properties/a", "the definition contains a cycle.")
    Definition.from_schema(_with_property({"const": MAX_SAFE_INTEGER}), REFERENCE_POLICY)  # the largest safe integer is fine


@pytest.mark.parametrize("finished_first", [True, False])
def test_a_bad_value_after_a_finished_container_is_still_found(finished_first):
    # spec: D-SCH-004 -- the walk goes on after leaving a container; order does not matter.
    bad = float("inf")
    values = [[1, {"b": [2]}], {"k": bad}] if finished_first else [{"k": bad}, [1, {"b": [2]}]]
    _code, path, message = _schema_error(_with_property({"enum": values}))
    assert (path, message) == (f"/properties/a/enum/{1 if finished_first else 0}/k", "numbers must be finite.")


def _nested_lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_schema_json_depth_boundary():
    # spec: D-SCH-004 -- MAX_SCHEMA_JSON_DEPTH JSON levels in all; the fault is at the first level too deep.
    deepest_allowed = MAX_SCHEMA_JSON_DEPTH - 2  # root, properties, a and const's own level come first
    Definition.from_schema(_with_property({"const": _nested_lists(deepest_allowed)}), REFERENCE_POLICY)
    _code, path, message = _schema_error(_with_property({"const": _nested_lists(deepest_allowed + 1)}))
    assert message == f"the definition nests deeper than {MAX_SCHEMA_JSON_DEPTH} JSON levels."
    assert path.startswith("/properties/a/const/0/0/")


def test_schema_byte_limit_is_inclusive():
    # spec: R-SCH-014 -- a definition of exactly MAX_SCHEMA_BYTES is taken, one byte more is not.
    def sized(total: int) -> dict[str, Any]:
        schema = _with_property({"description": ""})
        base = len(json.dumps(schema, ensure_ascii=False).encode("utf-8"))
        schema["properties"]["a"]["description"] = "x" * (total - base)
        return schema

    Definition.from_schema(sized(MAX_SCHEMA_BYTES), REFERENCE_POLICY)
    _code, path, message = _schema_error(sized(MAX_SCHEMA_BYTES + 1))
    assert (path, message) == ("", f"the definition is larger than {MAX_SCHEMA_BYTES} bytes.")


@pytest.mark.parametrize(
    ("subschema", "value", "errors"),
    [
        ({"type": "array", "items": {"type": "object", "properties": {"x": False}}}, [{"x": 1}],
         [("/data/a/0/x", "1 should not be valid under {}")]),
        ({"type": "object", "additionalProperties": {"type": "object", "properties": {"x": False}}}, {"k": {"x": 1}},
         [("/data/a/k/x", "1 should not be valid under {}")]),
        ({"allOf": [{"type": "object", "properties": {"x": False}}]}, {"x": 1},
         [("/data/a/x", "1 should not be valid under {}")]),
        ({"type": "array", "items": False}, [1], [("/data/a/0", "1 should not be valid under {}")]),
        ({"allOf": [False]}, 1, [("/data/a", "False schema does not allow 1")]),
        ({"not": {"type": "object", "properties": {"x": False}}}, {"y": 1},
         [("/data/a", "{'y': 1} should not be valid under {'type': 'object', 'properties': {'x': False}}")]),
    ],
)  # fmt: skip
def test_a_false_subschema_is_blamed_on_its_own_path(subschema, value, errors):
    # spec: R-DAT-017 D-SCH-006 -- a data error points at the value that broke the rule.
    definition = Definition.from_schema(_with_property(subschema), REFERENCE_POLICY)
    assert [(e.path, e.message) for e in definition.validate(("a",), {"a": value})] == errors


def test_removed_keywords_are_stripped_at_every_schema_position():
    # spec: R-SCH-016 -- $id, _label and _customMessages never reach a model, wherever they sit.
    schema = {"type": "object", "$id": "r", "_label": "l", "properties": {
        "a": {"type": "array", "_label": "x", "items": {"_customMessages": {}, "type": "string", "$id": "i"}},
        "b": {"additionalProperties": {"$id": "q", "type": "string"}, "not": {"_label": "n", "type": "null"},
              "anyOf": [{"_label": "1"}], "oneOf": [{"$id": "2"}], "allOf": [{"_customMessages": {"a": 1}}],
              "const": {"$id": "data, not a keyword"}}}}  # fmt: skip
    assert strip_removed_keywords(schema) == {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}},
        "b": {"additionalProperties": {"type": "string"}, "not": {"type": "null"}, "anyOf": [{}], "oneOf": [{}],
              "allOf": [{}], "const": {"$id": "data, not a keyword"}}}}  # fmt: skip


@pytest.mark.parametrize(
    ("subschema", "code", "pointer", "message"),
    [
        ({"type": "string", "pattern": 5}, "SCHEMA_UNSUPPORTED", "/pattern", "pattern must be a string."),
        ({"type": "string", "pattern": "a" * (MAX_PATTERN_LENGTH + 1)}, "LIMIT_EXCEEDED", "/pattern",
         f"pattern longer than {MAX_PATTERN_LENGTH} characters."),
        ({"type": "string", "pattern": "("}, "SCHEMA_UNSUPPORTED", "/pattern",
         "pattern is not an ECMA-262 regular expression."),
        ({"type": "string", "format": "uuid4"}, "SCHEMA_UNSUPPORTED", "/format", "format 'uuid4' is not supported."),
    ],
)  # fmt: skip
def test_keyword_faults_name_the_keyword(subschema, code, pointer, message):
    # spec: R-SCH-013 D-LIM-004 D-SCH-001 -- a refused keyword is named at its own pointer.
    assert _schema_error(_with_property(subschema)) == (code, "/properties/a" + pointer, message)


def test_a_candidate_that_is_not_json_is_reported_with_the_parsers_reason():
    # spec: R-ERR-026 -- the repair issue says why the text is not a JSON object.
    job = Intent({"schema": SCHEMA, "repairAttempts": 1}).start({"input": "查询订单 000123"})
    with pytest.raises(CandidateTextError) as parsed:
        parse_candidate("{")
    assert job.submit("{").task is not None
    [issue] = json.loads(job.model_request()["payload"])["repair"]["issues"]
    assert str(parsed.value)  # a reason, not an empty sentence
    assert (issue["path"], issue["message"]) == ("", str(parsed.value))


def test_request_messages_name_the_member():
    # spec: R-BRG-019 D-REQ-003 -- a lone surrogate in text context, a field name that is not a string.
    for request, path, message in [
        ({"input": "x", "context": "背景\ud800"}, "/context", "context contains a lone surrogate."),
        ({"input": "x", "fields": ["orderId", 7]}, "/fields/1", "a field name must be a string."),
    ]:
        error = raised_error(lambda r=request: read_request(r, ("orderId",), REFERENCE_POLICY))
        assert error["message"] == message
        assert [(i["path"], i["message"]) for i in error["issues"]] == [(path, message)]
