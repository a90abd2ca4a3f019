"""The core decision variants really change what the reference answers (spec: D-CNF-040).

Each test drives the same calls through the reference target (``AlteredTarget``
with no variant: the defaults in force) and through one variant, and shows that the two
answer differently, the reference as its decision says.  Every test therefore fails if the
core stops reading the choice, and also if the defaults stop being the reference's.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from intentref.core import limits
from intentref.core.jsontext import CandidateTextError, parse_candidate
from intentref.core.limits import utf8_length
from intentref.core.policy import REFERENCE_POLICY
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_INPUT, ORDER_SCHEMA
from intentref.suite.alterations import variants
from intentref.suite.alterations._variant_policy import VariantPolicy
from intentref.suite.alterations._variants_core import VARIANTS
from intentref.suite.alterations.alteration import AlteredTarget
from intentref.suite.targets.base import ConfigRejected

REFERENCE = AlteredTarget([], name="reference")
CORE_TEXT = json.dumps(ORDER_CORE, ensure_ascii=False)
DATA_TEXT = json.dumps(ORDER_DATA, ensure_ascii=False)
STRICT = {"language": "zh-CN", "repairAttempts": 0}


def _target(name: str | None) -> AlteredTarget:
    return REFERENCE if name is None else variants.target(name)


def _instance(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**STRICT, "schema": copy.deepcopy(ORDER_SCHEMA if schema is None else schema)}


def run(name: str | None, config: dict[str, Any], request: dict[str, Any], *texts: str) -> dict[str, Any]:
    """prepare, then accept each text in turn; the last reply (a dict)."""
    opened = _target(name).open({"i": config}, {})
    session = opened.connect()
    try:
        reply = session.prepare({"instance": "i", **request}).value
        for text in texts:
            assert reply["kind"] == "task", reply
            reply = session.accept({"jobId": reply["jobId"], "stepToken": reply["stepToken"], "candidateText": text}).value
        return reply
    finally:
        session.close()
        opened.close()


def data_reply(name: str | None, data_candidate: dict[str, Any] | str, schema: dict[str, Any] | None = None,
               input_text: str = ORDER_INPUT) -> dict[str, Any]:  # fmt: skip
    text = data_candidate if isinstance(data_candidate, str) else json.dumps(data_candidate, ensure_ascii=False)
    return run(name, _instance(schema), {"input": input_text}, CORE_TEXT, text)


def config_error(name: str | None, schema: dict[str, Any]) -> dict[str, Any] | None:
    try:
        _target(name).open({"i": _instance(schema)}, {}).close()
    except ConfigRejected as exc:
        return exc.error
    return None


def code(reply: dict[str, Any]) -> str:
    return reply["error"]["code"] if reply["kind"] == "error" else reply["kind"]


def test_every_core_variant_names_real_decisions_and_changes_the_policy() -> None:
    catalogue = variants.catalogue()
    assert {v.name for v in VARIANTS} <= set(catalogue)
    for variant in VARIANTS:
        assert variant.decisions and all(d.startswith("D-") for d in variant.decisions)
        assert variant.policy or variant.rules, variant.name
        target = variants.target(variant.name)
        assert target.policy != VariantPolicy()  # each one changes something


def test_defaults_are_the_reference_decisions() -> None:
    assert REFERENCE.policy == VariantPolicy()
    # Every field a variant may change defaults to the reference's value.
    assert all(getattr(VariantPolicy(), f) == getattr(REFERENCE_POLICY, f) for f in vars(REFERENCE_POLICY))
    assert data_reply(None, ORDER_DATA)["kind"] == "result"


# --- D-DAT-001 --------------------------------------------------------------------------------

NESTED_SCHEMA = {"type": "object", "properties": {"order": {"type": "object", "properties": {
    "id": {"type": "string"}, "qty": {"type": "integer"}}}}}  # fmt: skip


def _nested_candidate(evidence_paths: list[str]) -> dict[str, Any]:
    return {"data": {"order": {"id": "000123", "qty": 2}},
            "evidence": [{"path": p, "mode": "semantic", "sources": [{"sourceId": "input", "quote": "订单"}]}
                         for p in evidence_paths],
            "descriptionChecks": [],
            "fieldResults": [{"path": "/data/order", "status": "extracted", "explanation": "依据输入判断。"}],
            "issues": []}  # fmt: skip


def test_evidence_per_leaf() -> None:
    parent_only = _nested_candidate(["/data/order"])
    assert data_reply(None, parent_only, NESTED_SCHEMA)["kind"] == "result"  # D-DAT-001: covers the leaves
    refused = data_reply("evidence-per-leaf", parent_only, NESTED_SCHEMA)
    assert code(refused) == "MODEL_OUTPUT_INVALID"
    assert {i["path"] for i in refused["error"]["issues"]} == {"/data/order/id", "/data/order/qty"}
    per_leaf = _nested_candidate(["/data/order/id", "/data/order/qty"])
    assert data_reply("evidence-per-leaf", per_leaf, NESTED_SCHEMA)["kind"] == "result"


# --- D-COR-002 --------------------------------------------------------------------------------


def test_open_candidates_ignore_unknown_members_below_the_data_root() -> None:
    core = copy.deepcopy(ORDER_CORE)
    core["intents"][0]["id"] = "i1"
    extra_core = json.dumps(core, ensure_ascii=False)
    assert code(run(None, _instance(), {"input": ORDER_INPUT, "fields": []}, extra_core)) == "MODEL_OUTPUT_INVALID"
    result = run("open-candidates", _instance(), {"input": ORDER_INPUT, "fields": []}, extra_core)
    assert result["kind"] == "result" and "id" in result["result"]["intents"][0]  # the runtime's own id
    assert result["result"]["intents"][0]["id"] == "i1"
    data = copy.deepcopy(ORDER_DATA)
    data["evidence"][0]["confidence"] = "high"
    assert code(data_reply(None, data)) == "MODEL_OUTPUT_INVALID"
    assert data_reply("open-candidates", data)["kind"] == "result"
    # Seed 000 fixes the five root members of a data candidate: a sixth stays a violation.
    sixth = {**ORDER_DATA, "result": {}}
    assert code(data_reply("open-candidates", sixth)) == "MODEL_OUTPUT_INVALID"


# --- D-JSON-001 .. D-JSON-004 ------------------------------------------------------------------


def test_duplicate_keys_last_wins() -> None:
    text = DATA_TEXT.replace('"data": {"orderId": "000123"}', '"data": {"orderId": "999", "orderId": "000123"}')
    assert text != DATA_TEXT
    assert code(data_reply(None, text)) == "MODEL_OUTPUT_INVALID"
    reply = data_reply("duplicate-keys-last-wins", text)
    assert reply["kind"] == "result" and reply["result"]["data"] == {"orderId": "000123"}


def test_candidate_surrogates_replaced() -> None:
    core = copy.deepcopy(ORDER_CORE)
    core["requirements"] = ["\ud800尽快"]
    text = json.dumps(core)  # written as the escape \ud800
    assert code(run(None, _instance(), {"input": ORDER_INPUT, "fields": []}, text)) == "MODEL_OUTPUT_INVALID"
    reply = run("candidate-surrogates-replaced", _instance(), {"input": ORDER_INPUT, "fields": []}, text)
    assert reply["kind"] == "result" and reply["result"]["requirements"] == ["\ufffd尽快"]
    assert variants.target("candidate-surrogates-replaced").policy.read_candidate('["\ud800x"]') == ["\ufffdx"]  # a raw lone surrogate too


ANY_SCHEMA = {"type": "object", "properties": {"n": {}}}


def _number_candidate(literal: str) -> str:
    """A data candidate whose one value is the number ``literal``, written as given."""
    candidate = _string_candidate("@")
    candidate["data"] = {"n": "@"}
    candidate["evidence"][0]["path"] = candidate["fieldResults"][0]["path"] = "/data/n"
    return json.dumps(candidate, ensure_ascii=False).replace('"@"', literal)


def test_unsafe_integral_doubles() -> None:
    assert code(data_reply(None, _number_candidate("1e20"), ANY_SCHEMA)) == "MODEL_OUTPUT_INVALID"
    reply = data_reply("unsafe-integral-doubles", _number_candidate("1e20"), ANY_SCHEMA)
    assert reply["kind"] == "result" and reply["result"]["data"] == {"n": 1e20}
    # An integer *literal* beyond the safe range stays refused (R-RES-057).
    assert code(data_reply("unsafe-integral-doubles", _number_candidate("9007199254740993"), ANY_SCHEMA)) == (
        "MODEL_OUTPUT_INVALID")  # fmt: skip


def test_number_rules_in_data() -> None:
    text = _number_candidate("1e400")
    reference = data_reply(None, text, ANY_SCHEMA)
    variant = data_reply("number-rules-in-data", text, ANY_SCHEMA)
    assert code(reference) == code(variant) == "MODEL_OUTPUT_INVALID"
    assert [i["path"] for i in reference["error"]["issues"]] == [""]  # D-JSON-004: the whole text
    assert [i["path"] for i in variant["error"]["issues"]] == ["/data/n"]
    # Outside data the number rules do not apply: the candidate is judged by its contract alone.
    assert variants.target("number-rules-in-data").policy.read_candidate('{"x": 1e400}') == {"x": float("inf")}
    with pytest.raises(CandidateTextError):
        parse_candidate('{"x": 1e400}')


# --- D-SCH-001, D-SCH-003, D-SCH-004 ----------------------------------------------------------


def _string_candidate(value: str) -> dict[str, Any]:
    return {"data": {"v": value},
            "evidence": [{"path": "/data/v", "mode": "semantic", "sources": [{"sourceId": "input", "quote": "订单"}]}],
            "descriptionChecks": [],
            "fieldResults": [{"path": "/data/v", "status": "extracted", "explanation": "依据输入判断。"}],
            "issues": []}  # fmt: skip


def test_python_regex() -> None:
    # \d is ASCII in ECMA-262 (u flag) but any Unicode digit in Python's re.
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^\\d+$"}}}
    arabic_indic = "\u0661\u0662\u0663"
    assert code(data_reply(None, _string_candidate(arabic_indic), schema)) == "MODEL_OUTPUT_INVALID"
    assert data_reply("python-regex", _string_candidate(arabic_indic), schema)["kind"] == "result"
    letters = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^\\p{L}+$"}}}
    assert config_error(None, letters) is None
    refused = config_error("python-regex", letters)
    assert refused is not None and refused["code"] == "SCHEMA_UNSUPPORTED"


def test_formats_annotate() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "date"}}}
    assert code(data_reply(None, _string_candidate("2024-02-30"), schema)) == "MODEL_OUTPUT_INVALID"
    assert data_reply("formats-annotate", _string_candidate("2024-02-30"), schema)["kind"] == "result"


@pytest.mark.parametrize(("schema_id", "nested"), [("http://json-schema.org/draft-07/schema", False),
                                                    ("https://json-schema.org/draft-07/schema", False),
                                                    ("http://json-schema.org/draft-07/schema#", True)])  # fmt: skip
def test_canonical_draft7_id(schema_id: str, nested: bool) -> None:
    prop: dict[str, Any] = {"type": "string"}
    schema: dict[str, Any] = {"type": "object", "properties": {"a": prop}}
    (prop if nested else schema)["$schema"] = schema_id
    assert config_error(None, schema) is None
    refused = config_error("canonical-draft7-id", schema)
    assert refused is not None and refused["code"] == "SCHEMA_UNSUPPORTED"
    root = {"type": "object", "properties": {"a": {"type": "string"}}, "$schema": "https://json-schema.org/draft-07/schema#"}
    assert config_error("canonical-draft7-id", root) is None


# --- D-DAT-002 .. D-DAT-005 -------------------------------------------------------------------


def test_root_description_checks_only() -> None:
    unchecked = {**ORDER_DATA, "descriptionChecks": []}  # orderId has a description
    assert code(data_reply(None, unchecked)) == "MODEL_OUTPUT_INVALID"
    assert data_reply("root-description-checks-only", unchecked)["kind"] == "result"
    rooted = {**ORDER_SCHEMA, "description": "订单查询。"}
    assert code(data_reply("root-description-checks-only", unchecked, rooted)) == "MODEL_OUTPUT_INVALID"


def _with_check(verdict: str, issues: list[dict[str, Any]]) -> dict[str, Any]:
    candidate = copy.deepcopy(ORDER_DATA)
    candidate["descriptionChecks"][0]["verdict"] = verdict
    candidate["issues"] = issues
    return candidate


def test_no_implied_issues() -> None:
    violated = _with_check("violated", [])
    reference = data_reply(None, violated)["error"]["issues"]
    variant = data_reply("no-implied-issues", violated)
    assert reference == [{"code": "DATA_CONSTRAINT_VIOLATED", "category": "definition", "path": "/data/orderId",
                          "message": "输入明确提供精确订单编号。"}]  # fmt: skip
    assert code(variant) == "DATA_EXTRACTION_FAILED"
    assert [(i["code"], i["path"]) for i in variant["error"]["issues"]] == [("DATA_CONSTRAINT_VIOLATED", None)]


def test_verdict_issue_at_every_check() -> None:
    own = {"code": "DATA_CONFLICT", "category": "business_information", "path": "/data/orderId", "message": "编号矛盾。"}
    candidate = _with_check("undetermined", [own])
    assert [i["code"] for i in data_reply(None, candidate)["error"]["issues"]] == ["DATA_CONFLICT"]
    variant = data_reply("verdict-issue-at-every-check", candidate)
    assert [i["code"] for i in variant["error"]["issues"]] == ["DATA_CONFLICT", "DATA_DESCRIPTION_UNDETERMINED"]


def test_required_not_provided_is_business() -> None:
    candidate = {"data": {}, "evidence": [], "descriptionChecks": [],
                 "fieldResults": [{"path": "/data/orderId", "status": "not_provided", "explanation": "输入没有编号。"}],
                 "issues": []}  # fmt: skip
    assert code(data_reply(None, candidate, input_text="查询订单")) == "MODEL_OUTPUT_INVALID"
    variant = data_reply("required-not-provided-is-business", candidate, input_text="查询订单")
    assert code(variant) == "DATA_EXTRACTION_FAILED"
    assert [(i["code"], i["path"]) for i in variant["error"]["issues"]] == [("DATA_REQUIRED_MISSING", "/data/orderId")]


def test_schema_violation_is_business() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "minLength": 5}}}
    short = _string_candidate("订单")
    assert code(data_reply(None, short, schema)) == "MODEL_OUTPUT_INVALID"
    variant = data_reply("schema-violation-is-business", short, schema)
    assert code(variant) == "DATA_EXTRACTION_FAILED"
    assert [(i["code"], i["path"]) for i in variant["error"]["issues"]] == [("DATA_CONSTRAINT_VIOLATED", "/data/v")]
    # A value of the wrong type stays a contract fault (seed 004: 字段类型错误).
    wrong_type = {**short, "data": {"v": 5}}
    assert code(data_reply("schema-violation-is-business", wrong_type, schema)) == "MODEL_OUTPUT_INVALID"


# --- D-LIM-002 .. D-LIM-004, D-LIM-006 ---------------------------------------------------------


def test_smaller_and_larger_request_limits() -> None:
    at_limit = "查" * (limits.MAX_INPUT_BYTES // 3)  # 3 bytes each: at or just under 32 KiB
    over = "a" * (limits.MAX_INPUT_BYTES + 1)
    assert run(None, _instance(), {"input": at_limit})["kind"] == "task"
    smaller = run("smaller-limits", _instance(), {"input": at_limit})
    assert code(smaller) == "LIMIT_EXCEEDED"
    assert str(limits.MAX_INPUT_BYTES // 2) in smaller["error"]["message"]  # the active value is named
    assert code(run(None, _instance(), {"input": over})) == "LIMIT_EXCEEDED"
    assert run("larger-limits", _instance(), {"input": over})["kind"] == "task"


def test_smaller_and_larger_schema_limits() -> None:
    def with_fields(count: int) -> dict[str, Any]:
        return {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(count)}}

    assert config_error(None, with_fields(limits.MAX_TOP_LEVEL_FIELDS)) is None
    refused = config_error("smaller-limits", with_fields(limits.MAX_TOP_LEVEL_FIELDS))
    assert refused is not None and refused["code"] == "LIMIT_EXCEEDED"
    assert str(limits.MAX_TOP_LEVEL_FIELDS // 2) in refused["message"]
    over = with_fields(limits.MAX_TOP_LEVEL_FIELDS + 1)
    refused_by_reference = config_error(None, over)
    assert refused_by_reference is not None and refused_by_reference["code"] == "LIMIT_EXCEEDED"
    assert config_error("larger-limits", over) is None


def test_smaller_and_larger_candidate_limits() -> None:
    padded = {**ORDER_CORE, "normalizedInput": "x" * (limits.MAX_CANDIDATE_BYTES * 3 // 4)}
    text = json.dumps(padded)
    assert run(None, _instance(), {"input": ORDER_INPUT}, text)["kind"] == "task"
    assert code(run("smaller-limits", _instance(), {"input": ORDER_INPUT}, text)) == "LIMIT_EXCEEDED"
    deep = json.dumps({**ORDER_CORE, "x": json.loads("[" * 70 + "]" * 70)})
    reference = run(None, _instance(), {"input": ORDER_INPUT}, deep)
    larger = run("larger-limits", _instance(), {"input": ORDER_INPUT}, deep)
    assert code(reference) == code(larger) == "MODEL_OUTPUT_INVALID"
    assert "nesting deeper" in reference["error"]["issues"][0]["message"]
    assert all("nesting deeper" not in i["message"] for i in larger["error"]["issues"])  # only the extra member


def test_lone_surrogate_byte_counts() -> None:
    text = "\ud800" * 10
    assert utf8_length(text) == 30  # D-LIM-006: each as U+FFFD
    one = variants.target("lone-surrogate-one-byte").policy.lone_surrogate_utf8_bytes
    assert utf8_length(text, one) == 10
    assert utf8_length("\ud800\ufffd", one) == 4  # a real U+FFFD keeps its 3 bytes
    assert utf8_length(text, variants.target("lone-surrogate-as-escape").policy.lone_surrogate_utf8_bytes) == 60
    over = "\udc00" * 683  # 2,049 bytes counted as U+FFFD; 683 counted as "?"
    under = "\ud800" * 682  # 2,046 bytes counted as U+FFFD; 4,092 counted as escapes
    for name, detail, expected in ((None, over, "INPUT_INVALID"), ("lone-surrogate-one-byte", over, "MODEL_ABORTED"),
                                   (None, under, "MODEL_ABORTED"), ("lone-surrogate-as-escape", under, "INPUT_INVALID")):  # fmt: skip
        opened = _target(name).open({"i": _instance()}, {})
        session = opened.connect()
        task = session.prepare({"instance": "i", "input": ORDER_INPUT}).value
        assert code(session.cancel({"jobId": task["jobId"], "detail": detail}).value) == expected, name
        session.close()
        opened.close()


def test_ascii_blanks_take_an_ideographic_space_as_text() -> None:
    # D-TXT-001: U+3000 is ECMA-262 white space, so the reference refuses it as a blank text.
    core = {**ORDER_CORE, "normalizedInput": "\u3000"}
    text = json.dumps(core, ensure_ascii=False)
    assert code(run(None, _instance(), {"input": ORDER_INPUT, "fields": []}, text)) == "MODEL_OUTPUT_INVALID"
    reply = run("ascii-blanks", _instance(), {"input": ORDER_INPUT, "fields": []}, text)
    assert reply["kind"] == "result" and reply["result"]["normalizedInput"] == "\u3000"
    # An ASCII-blank text stays blank under the variant too.
    blank = json.dumps({**ORDER_CORE, "normalizedInput": " \t"}, ensure_ascii=False)
    assert code(run("ascii-blanks", _instance(), {"input": ORDER_INPUT, "fields": []}, blank)) == "MODEL_OUTPUT_INVALID"


def test_a_variant_policy_left_at_its_defaults_is_the_reference() -> None:
    # Every VariantPolicy method falls back to the reference's rule at its defaults: the whole
    # suite gives the same verdict, case by case, on the reference and on AlteredTarget([]).
    from intentref.suite.cases.fixtures import load_cases
    from intentref.suite.execution.runner import execute
    from intentref.suite.targets.base import InProcessTarget

    cases = load_cases()
    reference = {o.case_id: (o.outcome, o.mismatches) for o in execute(cases, InProcessTarget())}
    defaults = {o.case_id: (o.outcome, o.mismatches) for o in execute(cases, AlteredTarget([], name="defaults"))}
    assert len(reference) == len(cases) > 1000
    assert defaults == reference
