"""Reference behaviour the conformance cases do not pin down, each tied to its spec entry.

Written to kill mutants that survived the conformance cases, the core and Bridge tests
and the properties: each test states a rule the reference must follow (not the text of
its code), so a mutant it kills was a real fault.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from wire_checks import error_faults, raised_error

from intentref import Intent, IntentParseError
from intentref.bridge import create_intent_bridge
from intentref.core.jsontext import CandidateTextError, parse_candidate
from intentref.core.policy import REFERENCE_POLICY
from intentref.core.schema_subset import Definition
from intentref.devtools.examples import ORDER_CORE

SCHEMA = {"type": "object", "properties": {"orderId": {"type": "string"}}}
CORE_TEXT = json.dumps(ORDER_CORE, ensure_ascii=False)


# --------------------------------------------------------------------------- D-SCH-001


@pytest.mark.parametrize(
    ("value", "ok"),
    [("été", True), ("Ωmega", True), ("中文", True), ("p{L}", False), ("abc1", False), ("", False)],
)
def test_patterns_use_the_ecma_u_flag(value, ok):
    # spec: D-SCH-001 -- ECMA-262 with the u flag: \p{L} is the letter class, not "p{L}".
    definition = Definition.from_schema(
        {"type": "object", "properties": {"word": {"type": "string", "pattern": "^\\p{L}+$"}}}
    , REFERENCE_POLICY)
    errors = definition.validate(("word",), {"word": value})
    assert (errors == []) is ok, errors
    if not ok:
        assert [e.path for e in errors] == ["/data/word"]


def test_a_pattern_seen_for_the_first_time_is_compiled_and_applied():
    # spec: D-SCH-001 -- a pattern never used before in this process is still applied.
    unique = f"^x{time.monotonic_ns()}$"
    definition = Definition.from_schema({"type": "object", "properties": {"v": {"type": "string", "pattern": unique}}}, REFERENCE_POLICY)
    assert definition.validate(("v",), {"v": unique[1:-1]}) == []
    assert [e.path for e in definition.validate(("v",), {"v": "y"})] == ["/data/v"]


# --------------------------------------------------------------------------- D-ERR-001, D-ERR-002

BAD_BRIDGE_OPTIONS = [
    ({"maxJobs": 0}, "/maxJobs"),
    ({"maxJobs": 2147483648}, "/maxJobs"),
    ({"maxReplayEntries": -1}, "/maxReplayEntries"),
    ({"maxReplayBytes": 1.5}, "/maxReplayBytes"),
    ({"jobTtlMs": -1}, "/jobTtlMs"),
    ({"replayTtlMs": "0"}, "/replayTtlMs"),
    ({"maxJobs": True}, "/maxJobs"),
    ({"surprise": 1}, "/surprise"),
    ({"a/b": 1}, "/a~1b"),
]


@pytest.mark.parametrize(("options", "path"), BAD_BRIDGE_OPTIONS)
def test_a_bad_bridge_option_is_config_invalid_with_one_self_issue(options, path):
    # spec: D-ERR-001 D-ERR-002 -- CONFIG_INVALID, stage config, one issue filed as config at the member.
    err = raised_error(lambda: create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}, **options}))
    assert error_faults(err) == []
    assert (err["code"], err["stage"]) == ("CONFIG_INVALID", "config")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [("CONFIG_INVALID", "config", path)]
    assert err["issues"][0]["message"] == err["message"]


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ("not an object", ""),
        ({}, "/instances"),
        ({"instances": {}}, "/instances"),
        ({"instances": []}, "/instances"),
        ({"instances": {"order": {"schema": SCHEMA}}}, "/instances/order"),
        ({"instances": {"a/b": "x"}}, "/instances/a~1b"),
    ],
)
def test_a_bad_bridge_config_is_config_invalid_with_its_pointer(config, path):
    # spec: D-ERR-001 D-ERR-002
    err = raised_error(lambda: create_intent_bridge(config))
    assert error_faults(err) == []
    assert (err["code"], err["stage"]) == ("CONFIG_INVALID", "config")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [("CONFIG_INVALID", "config", path)]


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"language": " ", "schema": SCHEMA}, "/language"),
        ({"language": 7, "schema": SCHEMA}, "/language"),
        ({"schema": SCHEMA, "repairAttempts": 9}, "/repairAttempts"),
        ({"schema": SCHEMA, "repairAttempts": -1}, "/repairAttempts"),
        ({"schema": SCHEMA, "extra": 1}, "/extra"),
    ],
)
def test_a_bad_intent_config_is_config_invalid_with_its_pointer(config, path):
    # spec: D-ERR-001 D-ERR-002
    err = raised_error(lambda: Intent(config))
    assert error_faults(err) == []
    assert (err["code"], err["stage"]) == ("CONFIG_INVALID", "config")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [("CONFIG_INVALID", "config", path)]


@pytest.mark.parametrize(
    ("schema", "code", "path"),
    [
        ({"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0}}}, "SCHEMA_UNSUPPORTED", "/properties/n/multipleOf"),
        ({"type": "object", "properties": {"n": {"type": "array", "uniqueItems": 1}}}, "SCHEMA_UNSUPPORTED", "/properties/n/uniqueItems"),
        ({"type": "object", "properties": {"n": {"examples": {}}}}, "SCHEMA_UNSUPPORTED", "/properties/n/examples"),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {}}, "SCHEMA_UNSUPPORTED", "/$schema"),
        ({"type": "object", "properties": {"n": {"enum": list(range(10_000))}}}, "LIMIT_EXCEEDED", "/properties/n/enum"),
    ],
)  # fmt: skip
def test_a_definition_outside_the_subset_is_refused_with_a_message(schema, code, path):
    # spec: D-ERR-001 D-ERR-006 R-SCH-009 -- a code, stage config, the pointer, and a real message.
    err = raised_error(lambda: Intent({"schema": schema}))
    assert error_faults(err) == []
    assert (err["code"], err["stage"]) == (code, "config")
    assert [(i["code"], i["category"], i["path"]) for i in err["issues"]] == [(code, "config", path)]


# --------------------------------------------------------------------------- R-RPY-009, D-BRG-016


def test_expires_at_is_the_deadline_on_the_real_wall_clock():
    # spec: R-RPY-009 D-BRG-016 -- prepare time + jobTtlMs, as toISOString() writes it, in UTC.
    bridge = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}, "jobTtlMs": 60_000})
    before = time.time()
    task = bridge.connect().prepare({"instance": "order", "input": "查询订单 000123"})
    after = time.time()
    deadline = datetime.strptime(task["expiresAt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    assert before + 60 - 0.002 <= deadline <= after + 60 + 0.002


# --------------------------------------------------------------------------- the Python API


def test_the_repr_of_an_error_names_its_class_code_and_stage():
    err = raised_error(lambda: Intent({"language": " ", "schema": SCHEMA}))
    with pytest.raises(IntentParseError) as raised:
        Intent({"language": " ", "schema": SCHEMA})
    assert repr(raised.value) == (f"IntentParseError('CONFIG_INVALID', stage='config', message={err['message']!r})")


# --------------------------------------------------------------------------- R-RES-056 .. R-RES-058

@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("9007199254740991.0", 9007199254740991),  # 2^53 - 1 written as a decimal: the largest safe integer
        ("-9007199254740991.0", -9007199254740991),
        ("9.007199254740991e15", 9007199254740991),
        ("1.0", 1),
        ("-0.0", 0),
        ("0.5", 0.5),
    ],
)
def test_integral_decimals_up_to_the_safe_limit_are_integers(literal, value):
    # spec: R-RES-057 D-JSON-003 -- the bound is inclusive, whether written 9007199254740991 or .0.
    parsed = parse_candidate(f'{{"n": {literal}}}')["n"]
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("literal", ["9007199254740992.0", "-9007199254740992.0", "1e16", "1e999", "-1e999",
                                     "0.1000000000000000055511151231257827"])  # fmt: skip
def test_numbers_outside_the_rules_are_refused(literal):
    # spec: R-RES-056 R-RES-057 R-RES-058
    with pytest.raises(CandidateTextError):
        parse_candidate(f'{{"n": {literal}}}')


# --------------------------------------------------------------------------- D-CFG-003


def test_the_executor_receives_instructions_payload_and_format():
    # spec: D-CFG-003 R-TSK-002 -- executor(model_request) gets exactly {instructions, payload, format}.
    seen: list[Any] = []

    class Stop(Exception):
        pass

    def executor(request: dict[str, Any]) -> str:
        seen.append(request)
        raise Stop  # after the first request: an executor's own exception propagates (D-ERR-004)

    with pytest.raises(Stop):
        Intent({"schema": SCHEMA}).parse({"input": "查询订单 000123"}, executor)
    [request] = seen
    assert sorted(request) == ["format", "instructions", "payload"]
    assert isinstance(request["instructions"], str) and isinstance(request["payload"], str)
    assert request["format"]["kind"] == "json_schema" and request["format"]["name"] == "intent_core"


# --------------------------------------------------------------------------- R-COR-*, issue 2 bad input

LONG = "x" * 200


@pytest.mark.parametrize(
    "blockers_or_action",
    [{"action": LONG}, {"target": 7}, {"requirements": [LONG, " "]}, {"action": {"nested": [LONG] * 5}}],
)
def test_a_long_or_odd_wrong_value_gives_a_contract_error_not_a_crash(blockers_or_action):
    # spec: R-COR-002 R-ERR-024 R-ERR-025 -- a wrong value of any size is MODEL_OUTPUT_INVALID, never an exception.
    core = json.loads(CORE_TEXT)
    core["intents"][0].update(blockers_or_action)
    session = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA, "repairAttempts": 0})}}).connect()
    task = session.prepare({"instance": "order", "input": "查询订单 000123"})
    reply = session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": json.dumps(core)})
    assert reply["kind"] == "error" and reply["error"]["code"] == "MODEL_OUTPUT_INVALID", reply
    assert error_faults(reply["error"]) == []
    assert all(len(issue["message"]) < 400 for issue in reply["error"]["issues"])  # long values are shortened


# --------------------------------------------------------------------------- D-BRG-016: replayTtlMs


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("ending", ["cancel", "expiry"])
def test_an_ended_job_is_kept_for_replay_ttl_ms_after_it_ended(ending):
    # spec: D-BRG-016 R-CAN-008 -- a terminal record is dropped once replayTtlMs has passed since it
    # ended (by cancel or by jobTtlMs expiry), and answers its terminal reply until then.
    clock = Clock()
    options = {"replayTtlMs": 1000, **({"jobTtlMs": 500} if ending == "expiry" else {})}
    bridge = create_intent_bridge({"instances": {"order": Intent({"schema": SCHEMA})}, **options}, clock=clock)
    session = bridge.connect()
    task = session.prepare({"instance": "order", "input": "查询订单 000123"})
    if ending == "cancel":
        clock.now = 100.0
        first = session.cancel({"jobId": task["jobId"]})
        expected = "MODEL_ABORTED"
    else:
        clock.now = 600.0  # past the 500 ms deadline: the job expires at the next call
        first = session.cancel({"jobId": task["jobId"]})
        expected = "BRIDGE_JOB_EXPIRED"
    assert first["kind"] == "error" and first["error"]["code"] == expected, first
    ended = clock.now
    clock.now = ended + 999
    assert session.cancel({"jobId": task["jobId"]}) == first
    clock.now = ended + 1000
    gone = session.cancel({"jobId": task["jobId"]})
    assert gone["kind"] == "error" and gone["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", gone
    # and the Bridge is still whole: a new job runs
    assert session.prepare({"instance": "order", "input": "查询订单 000124"})["kind"] == "task"
