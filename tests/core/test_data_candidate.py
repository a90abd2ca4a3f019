"""The data candidate contract of seed 000 "data 候选", one rule broken at a time, and the data rules
of seed 001 "data 的省略与 null" and seed 003 (field selection, sources, extraction failure)."""

from __future__ import annotations

import copy
import json

import pytest

from intentref import Intent, IntentDataError, IntentParseError
from intentref.core.data_candidate import DATA_RULES, DataContext, judge
from intentref.core.errors import BUSINESS_ISSUE_CODES, DEFINITION_ISSUE_CODES
from intentref.core.policy import REFERENCE_POLICY
from tests.conftest import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA, dumps, scripted

ORDER_INPUT = "查询订单 000123"


def _source(quote, source_id="input"):
    return {"sourceId": source_id, "quote": quote}


def _evidence(path, quote, mode="exact", source_id="input"):
    return {"path": path, "mode": mode, "sources": [_source(quote, source_id)]}


def _extracted(path):
    return {"path": path, "status": "extracted", "explanation": "输入明确给出。"}


def _candidate(data=None, evidence=(), checks=(), results=(), issues=()):
    return {
        "data": {} if data is None else data,
        "evidence": list(evidence),
        "descriptionChecks": list(checks),
        "fieldResults": list(results),
        "issues": list(issues),
    }


def _issue(code, category, path, message="请补充材料。"):
    return {"code": code, "category": category, "path": path, "message": message}


# --- setups: a definition, a request and a valid candidate for it ----------------------------------

QTY_SCHEMA = {"type": "object", "properties": {"quantity": {"type": "integer"}}}
QTY_DATA = _candidate({"quantity": 2}, [_evidence("/data/quantity", "2", "semantic")], results=[_extracted("/data/quantity")])

TIMED_SCHEMA = {
    "type": "object",
    "description": "结束时间不得早于开始时间。",
    "properties": {"startTime": {"type": "string"}, "endTime": {"type": "string"}},
    "required": ["startTime", "endTime"],
}
TIMED_INPUT = "会议从 09:00 开到 10:00"
TIMED_CHECK = {
    "path": "/data",
    "verdict": "satisfied",
    "explanation": "结束时间 10:00 不早于开始时间 09:00。",
    "sources": [_source("09:00"), _source("10:00")],
}
TIMED_DATA = _candidate(
    {"endTime": "10:00"}, [_evidence("/data/endTime", "10:00")], [TIMED_CHECK], [_extracted("/data/endTime")]
)

SETUPS = {
    "order": (ORDER_SCHEMA, {"input": ORDER_INPUT}, ORDER_DATA),
    "qty": (QTY_SCHEMA, {"input": "数量 2"}, QTY_DATA),
    "timed": (TIMED_SCHEMA, {"input": TIMED_INPUT, "fields": ["endTime"]}, TIMED_DATA),
}


def _context(setup):
    """The DataContext a job builds for the setup's request."""
    schema, request, _ = SETUPS[setup]
    job = Intent({"schema": schema}).start(request)
    return DataContext(job.definition, job.selected, job.request.sources())


def _with(setup, path, value):
    """The setup's valid candidate with the member at ``path`` set to ``value`` (DELETE removes it)."""
    candidate = copy.deepcopy(SETUPS[setup][2])
    node = candidate
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return candidate


DELETE = object()
E0 = ("evidence", 0)
S0 = ("evidence", 0, "sources", 0)
C0 = ("descriptionChecks", 0)
R0 = ("fieldResults", 0)


def _order(**members):
    candidate = copy.deepcopy(ORDER_DATA)
    candidate.update(members)
    return candidate


MISSING_ORDER = _order(
    data={},
    evidence=[],
    descriptionChecks=[],
    fieldResults=[{"path": "/data/orderId", "status": "issue", "explanation": "没有提供订单编号。"}],
    issues=[_issue("DATA_REQUIRED_MISSING", "business_information", "/data/orderId", "请提供订单编号。")],
)

# (name, setup, broken candidate, the pointer the violation must name, the rule that must catch it)
BROKEN = [
    ("missing issues member", "order", _with("order", ("issues",), DELETE), "/issues", "root_has_exactly_the_data_members"),
    ("missing data member", "order", _with("order", ("data",), DELETE), "/data", "root_has_exactly_the_data_members"),
    ("extra root member", "order", _with("order", ("result",), {}), "/result", "root_has_exactly_the_data_members"),
    ("data not an object", "order", _with("order", ("data",), ["000123"]), "/data", "members_have_their_types"),
    ("evidence not an array", "order", _with("order", ("evidence",), {}), "/evidence", "members_have_their_types"),
    ("issue not an object", "order", _with("order", ("issues",), ["DATA_AMBIGUOUS"]), "/issues/0", "members_have_their_types"),
    ("unselected field in data", "timed", _with("timed", ("data", "startTime"), "09:00"), "/data/startTime",
     "data_holds_only_selected_fields"),
    ("undefined field in data", "order", _with("order", ("data", "note"), "x"), "/data/note", "data_holds_only_selected_fields"),
    ("evidence path outside data", "order", _with("order", (*E0, "path"), "/orderId"), "/evidence/0/path", "evidence_is_well_formed"),
    ("evidence path not a pointer", "order", _with("order", (*E0, "path"), "data/orderId"), "/evidence/0/path",
     "evidence_is_well_formed"),
    ("evidence names no value", "order", _with("order", (*E0, "path"), "/data/orderId/0"), "/evidence/0/path",
     "evidence_is_well_formed"),
    ("evidence mode unknown", "order", _with("order", (*E0, "mode"), "verbatim"), "/evidence/0/mode", "evidence_is_well_formed"),
    ("evidence extra member", "order", _with("order", (*E0, "confidence"), 1), "/evidence/0/confidence", "evidence_is_well_formed"),
    ("evidence without sources", "order", _with("order", (*E0, "sources"), DELETE), "/evidence/0/sources", "evidence_is_well_formed"),
    ("empty sources", "order", _with("order", (*E0, "sources"), []), "/evidence/0/sources", "evidence_is_well_formed"),
    ("source not an object", "order", _with("order", (*E0, "sources"), ["000123"]), "/evidence/0/sources/0", "evidence_is_well_formed"),
    ("source without quote", "order", _with("order", (*S0, "quote"), DELETE), "/evidence/0/sources/0/quote", "evidence_is_well_formed"),
    ("empty quote", "order", _with("order", (*S0, "quote"), ""), "/evidence/0/sources/0/quote", "evidence_is_well_formed"),
    ("empty sourceId", "order", _with("order", (*S0, "sourceId"), ""), "/evidence/0/sources/0/sourceId", "evidence_is_well_formed"),
    ("unknown sourceId", "order", _with("order", (*S0, "sourceId"), "context:0"), "/evidence/0/sources/0/sourceId",
     "evidence_is_well_formed"),
    ("quote not in its source", "order", _with("order", (*S0, "quote"), "000124"), "/evidence/0/sources/0/quote",
     "evidence_is_well_formed"),
    ("extra source member", "order", _with("order", (*S0, "offset"), 5), "/evidence/0/sources/0/offset", "evidence_is_well_formed"),
    ("exact value differs from quote", "order", _with("order", (*S0, "quote"), "00012"), "/evidence/0/mode",
     "exact_evidence_equals_a_quote"),
    ("exact evidence on a number", "qty", _with("qty", (*E0, "mode"), "exact"), "/evidence/0/mode", "exact_evidence_equals_a_quote"),
    ("returned value without evidence", "order", _with("order", ("evidence",), []), "/data/orderId", "every_returned_leaf_has_evidence"),
    ("check verdict unknown", "order", _with("order", (*C0, "verdict"), "ok"), "/descriptionChecks/0/verdict",
     "description_checks_are_well_formed"),
    ("check explanation blank", "order", _with("order", (*C0, "explanation"), " \n"), "/descriptionChecks/0/explanation",
     "description_checks_are_well_formed"),
    ("check explanation ECMA blank", "order", _with("order", (*C0, "explanation"), "\u3000\ufeff\u00a0"),
     "/descriptionChecks/0/explanation", "description_checks_are_well_formed"),  # D-TXT-001
    ("check without explanation", "order", _with("order", (*C0, "explanation"), DELETE), "/descriptionChecks/0/explanation",
     "description_checks_are_well_formed"),
    ("check path outside selection", "timed", _with("timed", (*C0, "path"), "/data/startTime"), "/descriptionChecks/0/path",
     "description_checks_are_well_formed"),
    ("check path an array", "order", _with("order", (*C0, "path"), ["data", "orderId"]), "/descriptionChecks/0/path",
     "description_checks_are_well_formed"),
    ("check with empty sources", "order", _with("order", (*C0, "sources"), []), "/descriptionChecks/0/sources",
     "description_checks_are_well_formed"),
    ("check quote not in source", "timed", _with("timed", (*C0, "sources"), [_source("08:00")]), "/descriptionChecks/0/sources/0/quote",
     "description_checks_are_well_formed"),
    ("described field unchecked", "order", _with("order", ("descriptionChecks",), []), "/descriptionChecks",
     "described_fields_are_checked"),
    ("root description unchecked", "timed", _with("timed", ("descriptionChecks",), []), "/descriptionChecks",
     "root_description_is_checked"),
    ("no field result", "order", _with("order", ("fieldResults",), []), "/fieldResults", "field_results_cover_each_selected_field"),
    ("duplicate field result", "order", _order(fieldResults=[_extracted("/data/orderId")] * 2), "/fieldResults/1/path",
     "field_results_cover_each_selected_field"),
    ("field result below a field", "order", _with("order", (*R0, "path"), "/data/orderId/0"), "/fieldResults/0/path",
     "field_results_cover_each_selected_field"),
    ("field result status unknown", "order", _with("order", (*R0, "status"), "done"), "/fieldResults/0/status",
     "field_results_cover_each_selected_field"),
    ("field result explanation blank", "order", _with("order", (*R0, "explanation"), ""), "/fieldResults/0/explanation",
     "field_results_cover_each_selected_field"),
    ("extracted but omitted", "order", _order(data={}, evidence=[], descriptionChecks=[]), "/fieldResults/0/status",
     "field_status_matches_data"),
    ("not_applicable but returned", "qty", _with("qty", (*R0, "status"), "not_applicable"), "/fieldResults/0/status",
     "field_status_matches_data"),
    ("required field not_provided", "order", _order(data={}, evidence=[], descriptionChecks=[],
     fieldResults=[{"path": "/data/orderId", "status": "not_provided", "explanation": "未提供。"}]), "/fieldResults/0/status",
     "required_fields_are_not_omitted"),
    ("issue status without issue", "order", _with("order", ("issues",), []) | {"data": {}, "evidence": [], "descriptionChecks": [],
     "fieldResults": MISSING_ORDER["fieldResults"]}, "/fieldResults/0/status", "issue_status_has_a_matching_issue"),
    ("issue status, issue elsewhere", "timed", _with("timed", ("data",), {}) | {"evidence": [], "fieldResults": [
     {"path": "/data/endTime", "status": "issue", "explanation": "缺少开始时间。"}],
     "issues": [_issue("DATA_DEPENDENCY_MISSING", "business_information", None)]}, "/fieldResults/0/status",
     "issue_status_has_a_matching_issue"),
    ("reserved issue code", "order", _with("order", ("issues",), [_issue("DATA_SOURCE_INVALID", "definition", None)]),
     "/issues/0/code", "issues_are_well_formed"),
    ("issue category unknown", "order", _with("order", ("issues",), [_issue("DATA_AMBIGUOUS", "input", None)]),
     "/issues/0/category", "issues_are_well_formed"),
    ("issue category an array", "order", _with("order", ("issues",), [_issue("DATA_AMBIGUOUS", ["definition"], None)]),
     "/issues/0/category", "issues_are_well_formed"),
    ("issue category an object", "order", _with("order", ("issues",), [_issue("DATA_AMBIGUOUS", {}, None)]),
     "/issues/0/category", "issues_are_well_formed"),
    ("issue code of the other category", "order", _with("order", ("issues",), [_issue("DATA_CONFLICT", "definition", None)]),
     "/issues/0/code", "issues_are_well_formed"),
    ("issue code unknown", "order", _with("order", ("issues",), [_issue("MODEL_OUTPUT_INVALID", "business_information", None)]),
     "/issues/0/code", "issues_are_well_formed"),
    ("issue path outside selection", "timed", _with("timed", ("issues",), [_issue("DATA_CONFLICT", "business_information",
     "/data/startTime")]), "/issues/0/path", "issues_are_well_formed"),
    ("issue path not data", "order", _with("order", ("issues",), [_issue("DATA_CONFLICT", "business_information", "/input")]),
     "/issues/0/path", "issues_are_well_formed"),
    ("issue message blank", "order", _with("order", ("issues",), [_issue("DATA_CONFLICT", "business_information", None, "\t")]),
     "/issues/0/message", "issues_are_well_formed"),
    ("issue without message", "order", _with("order", ("issues",), [{"code": "DATA_CONFLICT", "category": "business_information",
     "path": None}]), "/issues/0/message", "issues_are_well_formed"),
]  # fmt: skip


def _partial(setup):
    """The checked default result of the setup's request: what partialResult must be."""
    schema, request, _ = SETUPS[setup]
    return Intent({"language": "zh-CN", "schema": schema}).parse({**request, "fields": []}, scripted([dumps(ORDER_CORE)]))


def _fail(setup, candidate, attempts=0):
    """Run the setup end to end with ``candidate`` as the data step; the error and the executor."""
    schema, request, _ = SETUPS[setup]
    executor = scripted([dumps(ORDER_CORE)] + [dumps(candidate)] * (attempts + 1))
    with pytest.raises(IntentParseError) as caught:
        Intent({"language": "zh-CN", "schema": schema, "repairAttempts": attempts}).parse(request, executor)
    return caught.value, executor


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_each_setup_candidate_is_valid(setup):
    # spec: R-DAT-003
    schema, request, candidate = SETUPS[setup]
    assert judge(candidate, _context(setup), REFERENCE_POLICY).violations == []
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    result = Intent({"language": "zh-CN", "schema": schema}).parse(request, executor)
    assert result["data"] == candidate["data"]
    assert set(result) == {"input", "normalizedInput", "primaryIntent", "requirements", "intents", "prohibitions", "data"}


@pytest.mark.parametrize(("name", "setup", "candidate", "pointer", "rule"), BROKEN, ids=[b[0] for b in BROKEN])
def test_each_data_rule_broken_alone(name, setup, candidate, pointer, rule):
    # spec: R-DAT-002 R-DAT-004 .. R-DAT-017 R-DAT-019 .. R-DAT-022 R-SRC-010 R-SRC-011 R-SRC-014 R-ERR-025 R-ERR-036
    found = list(DATA_RULES[rule](candidate, _context(setup)))
    assert pointer in [path for path, _ in found], found
    err, executor = _fail(setup, candidate)
    out = err.to_json()
    assert (out["code"], out["stage"]) == ("MODEL_OUTPUT_INVALID", "data")
    assert not isinstance(err, IntentDataError)
    assert pointer in [issue["path"] for issue in out["issues"]], out["issues"]
    assert {(i["code"], i["category"]) for i in out["issues"]} == {("MODEL_OUTPUT_INVALID", "processing")}
    # The core succeeded, so the validated default is kept, with empty data (R-ERR-036, R-ERR-037).
    assert out["partialResult"] == _partial(setup)
    assert out["partialResult"]["data"] == {}
    assert len(executor.requests) == 2


def test_every_data_rule_is_exercised_by_a_broken_candidate():
    assert {b[4] for b in BROKEN} == set(DATA_RULES)


def test_a_data_contract_fault_is_repaired_as_a_data_task():
    # spec: R-TSK-009 R-TSK-010 R-TSK-011 R-SRC-015 -- a repair keeps stage data and format json_object.
    bad = dumps(_with("order", (*S0, "quote"), "000124"))
    executor = scripted([dumps(ORDER_CORE), bad, dumps(ORDER_DATA)])
    result = Intent({"language": "zh-CN", "schema": ORDER_SCHEMA}).parse({"input": ORDER_INPUT}, executor)
    assert result["data"] == {"orderId": "000123"}
    first, repair = json.loads(executor.requests[1]["payload"]), json.loads(executor.requests[2]["payload"])
    assert "repair" not in first
    assert repair["repair"]["previousCandidate"] == bad
    # 000124 is not in the input, and the exact value 000123 no longer equals a quote
    assert [i["path"] for i in repair["repair"]["issues"]] == ["/evidence/0/mode", "/evidence/0/sources/0/quote"]
    assert executor.requests[2]["format"] == {"kind": "json_object"}
    assert {k: v for k, v in repair.items() if k != "repair"} == first


@pytest.mark.parametrize("bare", [{"orderId": "000123"}, None], ids=["bare data", "final result"])
def test_bare_data_or_a_final_result_is_not_a_candidate(bare):
    # spec: R-DAT-026
    if bare is None:
        bare = _partial("order") | {"data": {"orderId": "000123"}}
    err, _ = _fail("order", bare)
    assert err.code == "MODEL_OUTPUT_INVALID" and err.stage == "data"
    paths = {i.path for i in err.issues}
    assert ({"/data", "/evidence", "/fieldResults"} if "orderId" in bare else {"/evidence", "/input", "/intents"}) <= paths


# --- business faults ----------------------------------------------------------------------------


def test_business_faults_end_the_job_without_repair():
    # spec: R-ERR-028 R-ERR-029 R-ERR-030 R-DAT-024 R-SRC-013 R-SRC-017
    err, executor = _fail("order", MISSING_ORDER, attempts=3)
    assert isinstance(err, IntentDataError)
    assert (err.code, err.stage) == ("DATA_EXTRACTION_FAILED", "data")
    assert [i.to_json() for i in err.issues] == MISSING_ORDER["issues"]
    assert err.partialResult == _partial("order")
    assert len(executor.requests) == 2  # core + data: no repair task although three were allowed


def test_contract_faults_are_repaired_where_business_faults_are_not():
    # The contrast to the test above: the same budget is spent on a contract fault.
    err, executor = _fail("order", _with("order", ("evidence",), []), attempts=3)
    assert err.code == "MODEL_OUTPUT_INVALID"
    assert len(executor.requests) == 5
    assert [json.loads(r["payload"])["repair"]["attempt"] for r in executor.requests[2:]] == [1, 2, 3]


@pytest.mark.parametrize(
    ("verdict", "code"), [("violated", "DATA_CONSTRAINT_VIOLATED"), ("undetermined", "DATA_DESCRIPTION_UNDETERMINED")]
)
def test_violated_and_undetermined_checks_are_business_faults(verdict, code):
    # spec: R-DAT-018 R-SRC-006 -- D-DAT-003
    candidate = _with("order", (*C0, "verdict"), verdict)
    err, executor = _fail("order", candidate, attempts=2)
    assert isinstance(err, IntentDataError) and err.code == "DATA_EXTRACTION_FAILED"
    assert [i.to_json() for i in err.issues] == [
        {"code": code, "category": "definition", "path": "/data/orderId", "message": "输入明确提供精确订单编号。"}
    ]
    assert len(executor.requests) == 2
    # A root check is reported at /data.
    timed = _with("timed", (*C0, "verdict"), verdict)
    err, _ = _fail("timed", timed)
    assert [(i.code, i.path) for i in err.issues] == [(code, "/data")]


def test_a_verdict_adds_no_issue_where_the_candidate_filed_one():
    # D-DAT-003: the candidate's own issue at the same path stands for the check.
    candidate = _order(
        data={},
        evidence=[],
        descriptionChecks=[dict(ORDER_DATA["descriptionChecks"][0], verdict="violated")],
        fieldResults=[{"path": "/data/orderId", "status": "issue", "explanation": "编号格式不符。"}],
        issues=[_issue("DATA_CONSTRAINT_VIOLATED", "definition", "/data/orderId", "编号须为六位。")],
    )
    err, _ = _fail("order", candidate)
    assert [i.to_json() for i in err.issues] == candidate["issues"]


def test_a_satisfied_check_is_no_fault():
    assert judge(ORDER_DATA, _context("order"), REFERENCE_POLICY).issues == []


def _issue_candidate(code, category, path="/data/orderId"):
    return _order(
        data={},
        evidence=[],
        descriptionChecks=[],
        fieldResults=[{"path": "/data/orderId", "status": "issue", "explanation": "材料不足。"}],
        issues=[_issue(code, category, path)],
    )


CATEGORIES = {"business_information": BUSINESS_ISSUE_CODES, "definition": DEFINITION_ISSUE_CODES}
CODES = [(code, category) for category, codes in CATEGORIES.items() for code in codes]


def test_the_eight_candidate_issue_codes_are_the_seed_list():
    assert set(BUSINESS_ISSUE_CODES) == {"DATA_REQUIRED_MISSING", "DATA_AMBIGUOUS", "DATA_CONFLICT", "DATA_DEPENDENCY_MISSING"}
    assert set(DEFINITION_ISSUE_CODES) == {
        "DATA_CARDINALITY_MISMATCH",
        "DATA_VALUE_UNREPRESENTABLE",
        "DATA_CONSTRAINT_VIOLATED",
        "DATA_DESCRIPTION_UNDETERMINED",
    }


@pytest.mark.parametrize(("code", "category"), CODES)
def test_each_issue_code_is_accepted_in_its_category_only(code, category):
    # spec: R-DAT-019 R-DAT-020 R-DAT-021 R-ERR-029
    err, _ = _fail("order", _issue_candidate(code, category))
    assert err.code == "DATA_EXTRACTION_FAILED"
    assert [(i.code, i.category, i.path) for i in err.issues] == [(code, category, "/data/orderId")]
    other = next(c for c in CATEGORIES if c != category)
    err, _ = _fail("order", _issue_candidate(code, other))
    assert err.code == "MODEL_OUTPUT_INVALID"
    assert [i.path for i in err.issues] == ["/issues/0/code"]


@pytest.mark.parametrize("path", ["/data", None])
def test_an_issue_may_name_the_data_root_or_no_path(path):
    # spec: R-DAT-021 R-ERR-014
    candidate = _issue_candidate("DATA_CONFLICT", "business_information", path)
    candidate["issues"].append(_issue("DATA_REQUIRED_MISSING", "business_information", "/data/orderId"))
    err, _ = _fail("order", candidate)
    assert err.code == "DATA_EXTRACTION_FAILED"
    assert [i.path for i in err.issues] == [path, "/data/orderId"]


@pytest.mark.parametrize("category", ["business_information", "definition", "processing"])
def test_data_source_invalid_is_a_contract_error(category):
    # spec: R-DAT-022 R-ERR-033
    err, _ = _fail("order", _issue_candidate("DATA_SOURCE_INVALID", category), attempts=0)
    assert err.code == "MODEL_OUTPUT_INVALID" and err.stage == "data"
    assert "/issues/0/code" in [i.path for i in err.issues]


# --- JSON Pointer escaping of field names -----------------------------------------------------------

ESC_SCHEMA = {"type": "object", "properties": {"a/b": {"type": "string", "maxLength": 4}, "m~n": {"type": "string"}}}
ESC_INPUT = "甲值 x1，乙值 y2"


def _esc(**changes):
    candidate = _candidate(
        {"a/b": "x1", "m~n": "y2"},
        [_evidence("/data/a~1b", "x1"), _evidence("/data/m~0n", "y2")],
        results=[_extracted("/data/a~1b"), _extracted("/data/m~0n")],
    )
    candidate.update(changes)
    return candidate


def _esc_run(candidate):
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    return Intent({"schema": ESC_SCHEMA, "repairAttempts": 0}).parse({"input": ESC_INPUT}, executor)


def _esc_error(candidate):
    with pytest.raises(IntentParseError) as caught:
        _esc_run(candidate)
    return caught.value


def test_escaped_field_paths_are_accepted():
    # spec: R-DAT-006 R-ERR-015
    assert _esc_run(_esc())["data"] == {"a/b": "x1", "m~n": "y2"}


def test_unescaped_field_paths_are_rejected():
    err = _esc_error(_esc(evidence=[_evidence("/data/a/b", "x1"), _evidence("/data/m~0n", "y2")]))
    assert err.code == "MODEL_OUTPUT_INVALID"
    # the runtime's own pointers escape too: the uncovered leaf is /data/a~1b
    assert {"/evidence/0/path", "/data/a~1b"} <= {i.path for i in err.issues}
    err = _esc_error(_esc(fieldResults=[_extracted("/data/a~1b"), _extracted("/data/m~n")]))
    assert {"/fieldResults/1/path", "/fieldResults"} <= {i.path for i in err.issues}


def test_runtime_pointers_escape_field_names():
    # spec: R-ERR-015 -- violations found by the runtime name escaped paths.
    err = _esc_error(_esc(evidence=[_evidence("/data/a~1b", "x1")]))
    assert [i.path for i in err.issues] == ["/data/m~0n"]
    err = _esc_error(_esc(data={"a/b": "x1", "m~n": "y2", "p/q~r": "z"}))
    assert "/data/p~1q~0r" in [i.path for i in err.issues]
    # a schema violation inside a field with "/" in its name
    err = _esc_error(_esc(data={"a/b": "x1x1x1", "m~n": "y2"}, evidence=[_evidence("/data/a~1b", "x1", "semantic"),
                                                                        _evidence("/data/m~0n", "y2")]))  # fmt: skip
    assert err.code == "MODEL_OUTPUT_INVALID" and [i.path for i in err.issues] == ["/data/a~1b"]


def test_issue_and_check_paths_escape_field_names():
    # spec: R-ERR-015 -- the business field a/b is /data/a~1b in the error's issues.
    candidate = _esc(
        data={"m~n": "y2"},
        evidence=[_evidence("/data/m~0n", "y2")],
        descriptionChecks=[{"path": "/data/m~0n", "verdict": "violated", "explanation": "乙值不符。", "sources": [_source("y2")]}],
        fieldResults=[{"path": "/data/a~1b", "status": "issue", "explanation": "甲值不明。"}, _extracted("/data/m~0n")],
        issues=[_issue("DATA_AMBIGUOUS", "business_information", "/data/a~1b")],
    )
    err = _esc_error(candidate)
    assert err.code == "DATA_EXTRACTION_FAILED"
    assert [(i.code, i.path) for i in err.issues] == [
        ("DATA_AMBIGUOUS", "/data/a~1b"),
        ("DATA_CONSTRAINT_VIOLATED", "/data/m~0n"),
    ]


# --- sources ----------------------------------------------------------------------------------------

NOTE_SCHEMA = {"type": "object", "properties": {"note": {"type": "string"}}}
MESSAGES = [
    {"role": "user", "content": "第一条：请尽快。"},
    {"role": "assistant", "content": "备注：明天送达"},
    {"role": "tool", "content": "工具输出"},
]


def _note(source_id, quote="明天送达"):
    return _candidate({"note": quote}, [_evidence("/data/note", quote, source_id=source_id)], results=[_extracted("/data/note")])


def _note_run(context, candidate):
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    result = Intent({"schema": NOTE_SCHEMA, "repairAttempts": 0}).parse({"input": "记下备注", "context": context}, executor)
    return result, json.loads(executor.requests[1]["payload"])


def test_quotes_from_a_text_context_use_context_0():
    # spec: R-TSK-006 R-TSK-008 R-DAT-010 -- D-PAY-002
    result, payload = _note_run("备注：明天送达", _note("context:0"))
    assert result["data"] == {"note": "明天送达"}
    assert payload["context"] == [{"sourceId": "context:0", "role": "background", "content": "备注：明天送达"}]


def test_quotes_from_messages_use_their_index():
    # spec: R-TSK-005 R-TSK-007
    result, payload = _note_run(MESSAGES, _note("context:1"))
    assert result["data"] == {"note": "明天送达"}
    assert [(c["sourceId"], c["role"]) for c in payload["context"]] == [
        ("context:0", "user"),
        ("context:1", "assistant"),
        ("context:2", "tool"),
    ]
    assert _note_run(MESSAGES, _note("context:2", "工具输出"))[0]["data"] == {"note": "工具输出"}


@pytest.mark.parametrize(
    ("context", "source_id", "pointer"),
    [
        (MESSAGES, "context:0", "/evidence/0/sources/0/quote"),  # a real source, but the quote is not in it
        (MESSAGES, "input", "/evidence/0/sources/0/quote"),
        (MESSAGES, "context:3", "/evidence/0/sources/0/sourceId"),
        ("备注：明天送达", "context:1", "/evidence/0/sources/0/sourceId"),
        ("备注：明天送达", "background", "/evidence/0/sources/0/sourceId"),
        (None, "context:0", "/evidence/0/sources/0/sourceId"),
        (MESSAGES, "currentInput", "/evidence/0/sources/0/sourceId"),
        (MESSAGES, "Context:1", "/evidence/0/sources/0/sourceId"),
    ],
)
def test_quotes_must_come_from_the_named_source(context, source_id, pointer):
    # spec: R-DAT-009 R-DAT-010 R-SRC-014 R-SRC-016
    with pytest.raises(IntentParseError) as caught:
        _note_run(context, _note(source_id))
    assert caught.value.code == "MODEL_OUTPUT_INVALID" and caught.value.stage == "data"
    assert [i.path for i in caught.value.issues] == [pointer]


def test_every_source_of_an_entry_is_checked():
    candidate = _note("context:1")
    candidate["evidence"][0]["sources"].append(_source("后天送达", "context:1"))
    with pytest.raises(IntentParseError) as caught:
        _note_run(MESSAGES, candidate)
    assert [i.path for i in caught.value.issues] == ["/evidence/0/sources/1/quote"]


# --- evidence modes and coverage --------------------------------------------------------------------

ORDERS_SCHEMA = {
    "type": "object",
    "properties": {
        "orders": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"orderId": {"type": "string"}, "quantity": {"type": "integer"}},
                "required": ["orderId", "quantity"],
                "additionalProperties": False,
            },
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "urgent": {"type": "boolean"},
    },
}
ORDERS_INPUT = "查询订单000123数量2、000124数量1，标签为空数组，不加急"
ORDERS = [{"orderId": "000123", "quantity": 2}, {"orderId": "000124", "quantity": 1}]


def _orders_run(data, evidence, results=None):
    candidate = _candidate(data, evidence, results=results or [_extracted(f"/data/{k}") for k in data] + [
        {"path": f"/data/{k}", "status": "not_provided", "explanation": "未提供。"} for k in ("orders", "tags", "urgent")
        if k not in data])  # fmt: skip
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    return Intent({"schema": ORDERS_SCHEMA, "repairAttempts": 0}).parse({"input": ORDERS_INPUT}, executor)


def test_semantic_evidence_on_an_ancestor_covers_its_leaves():
    # spec: R-SRC-010 R-DAT-013 -- D-DAT-001
    evidence = [{"path": "/data/orders", "mode": "semantic", "sources": [_source("000123数量2"), _source("000124数量1")]}]
    assert _orders_run({"orders": ORDERS}, evidence)["data"] == {"orders": ORDERS}


def test_evidence_on_one_element_does_not_cover_its_siblings():
    evidence = [{"path": "/data/orders/0", "mode": "semantic", "sources": [_source("000123数量2")]}]
    with pytest.raises(IntentParseError) as caught:
        _orders_run({"orders": ORDERS}, evidence)
    assert [i.path for i in caught.value.issues] == ["/data/orders/1/orderId", "/data/orders/1/quantity"]


def test_exact_evidence_on_a_nested_string_and_semantic_on_its_sibling():
    evidence = [
        _evidence("/data/orders/0/orderId", "000123"),
        _evidence("/data/orders/0/quantity", "数量2", "semantic"),
        {"path": "/data/orders/1", "mode": "semantic", "sources": [_source("000124数量1")]},
    ]
    assert _orders_run({"orders": ORDERS}, evidence)["data"] == {"orders": ORDERS}


@pytest.mark.parametrize(
    ("data", "quote"), [({"urgent": False}, "不加急"), ({"tags": []}, "标签为空数组")], ids=["boolean", "empty array"]
)
def test_exact_evidence_is_for_strings_only(data, quote):
    # spec: R-DAT-011 -- false and [] are returned values that need evidence, but not exact evidence.
    path = "/data/" + next(iter(data))
    assert _orders_run(data, [_evidence(path, quote, "semantic")])["data"] == data
    with pytest.raises(IntentParseError) as caught:
        _orders_run(data, [_evidence(path, quote, "exact")])
    assert [i.path for i in caught.value.issues] == ["/evidence/0/mode"]
    with pytest.raises(IntentParseError) as caught:
        _orders_run(data, [])
    assert [i.path for i in caught.value.issues] == [path]  # an empty container is a leaf (D-DAT-001)


# --- root descriptions under partial selection ------------------------------------------------------


def test_a_root_description_needs_a_data_check_under_partial_selection():
    # spec: R-RES-060 R-SRC-001 R-SRC-002 R-SRC-003 R-SRC-005
    err, _ = _fail("timed", _with("timed", ("descriptionChecks",), []))
    assert [i.path for i in err.issues] == ["/descriptionChecks"]
    executor = scripted([dumps(ORDER_CORE), dumps(TIMED_DATA)])
    result = Intent({"schema": TIMED_SCHEMA}).parse({"input": TIMED_INPUT, "fields": ["endTime"]}, executor)
    assert result["data"] == {"endTime": "10:00"}  # startTime was material, not data
    payload = json.loads(executor.requests[1]["payload"])
    assert payload["selectedFields"] == ["endTime"]
    assert payload["selectedSchema"] == {
        "type": "object",
        "description": "结束时间不得早于开始时间。",
        "properties": {"endTime": {"type": "string"}},
        "required": ["endTime"],
        "additionalProperties": False,
    }
    assert payload["schemaReference"] == TIMED_SCHEMA


def test_a_field_check_does_not_stand_for_the_root_check():
    candidate = _with("timed", (*C0, "path"), "/data/endTime")
    err, _ = _fail("timed", candidate)
    assert [i.path for i in err.issues] == ["/descriptionChecks"]


def test_missing_relationship_material_is_a_business_issue():
    # spec: R-SRC-004
    candidate = _candidate(
        {},
        checks=[{"path": "/data", "verdict": "undetermined", "explanation": "材料没有开始时间。", "sources": [_source("10:00")]}],
        results=[{"path": "/data/endTime", "status": "issue", "explanation": "无法核对开始时间。"}],
        issues=[_issue("DATA_DEPENDENCY_MISSING", "business_information", "/data/endTime", "请提供开始时间。")],
    )
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    with pytest.raises(IntentDataError) as caught:
        Intent({"schema": TIMED_SCHEMA}).parse({"input": "10:00 结束", "fields": ["endTime"]}, executor)
    assert [(i.code, i.category, i.path) for i in caught.value.issues] == [
        ("DATA_DEPENDENCY_MISSING", "business_information", "/data/endTime"),
        ("DATA_DESCRIPTION_UNDETERMINED", "definition", "/data"),
    ]


# --- the three forms of fields ----------------------------------------------------------------------

TWO_SCHEMA = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string", "description": "当前请求中的订单编号，保留前导零。"},
        "note": {"type": "string"},
    },
    "required": ["orderId"],
    "additionalProperties": False,
}
NOTE_ONLY = _candidate({"note": "加急"}, [_evidence("/data/note", "加急")], results=[_extracted("/data/note")])


def _two(request, candidates):
    executor = scripted([dumps(ORDER_CORE), *map(dumps, candidates)])
    result = Intent({"schema": TWO_SCHEMA, "repairAttempts": 0}).parse(request, executor)
    return result, executor


def test_fields_omitted_selects_every_field():
    # spec: R-FLD-001
    both = _order(fieldResults=[*ORDER_DATA["fieldResults"], {"path": "/data/note", "status": "not_provided", "explanation": "无。"}])
    result, executor = _two({"input": ORDER_INPUT}, [both])
    assert result["data"] == {"orderId": "000123"}
    payload = json.loads(executor.requests[1]["payload"])
    assert payload["selectedFields"] == ["orderId", "note"]
    assert list(payload["selectedSchema"]["properties"]) == ["orderId", "note"]
    assert payload["selectedSchema"]["required"] == ["orderId"]
    with pytest.raises(IntentParseError) as caught:
        _two({"input": ORDER_INPUT}, [ORDER_DATA])  # no conclusion for note
    assert [i.path for i in caught.value.issues] == ["/fieldResults"]


def test_fields_empty_skips_the_data_stage():
    # spec: R-FLD-003 R-FLD-006 R-BRG-011
    result, executor = _two({"input": ORDER_INPUT, "fields": []}, [])
    assert len(executor.requests) == 1
    assert result["data"] == {}
    assert result == _partial("order")


def test_selecting_one_field_narrows_the_selected_schema():
    # spec: R-FLD-002 R-FLD-007 R-FLD-008 R-FLD-009 R-FLD-010
    result, executor = _two({"input": "备注加急", "fields": ["note"]}, [NOTE_ONLY])
    assert result["data"] == {"note": "加急"}  # the unselected required orderId does not block
    payload = json.loads(executor.requests[1]["payload"])
    assert payload["selectedFields"] == ["note"]
    assert payload["selectedSchema"] == {
        "type": "object",
        "properties": {"note": {"type": "string"}},
        "required": [],
        "additionalProperties": False,
    }
    assert payload["schemaReference"] == TWO_SCHEMA
    # ... and orderId, once selected, is required again.
    with pytest.raises(IntentParseError) as caught:
        _two({"input": "备注加急", "fields": ["orderId"]}, [_candidate(results=[
            {"path": "/data/orderId", "status": "not_provided", "explanation": "未提供。"}])])  # fmt: skip
    assert [i.path for i in caught.value.issues] == ["/fieldResults/0/status"]


def test_an_unselected_field_may_not_be_returned():
    # spec: R-FLD-007 R-RES-047
    both = _candidate(
        {"note": "加急", "orderId": "000123"},
        [_evidence("/data/note", "加急"), _evidence("/data/orderId", "000123")],
        results=[_extracted("/data/note")],
    )
    with pytest.raises(IntentParseError) as caught:
        _two({"input": "订单 000123 备注加急", "fields": ["note"]}, [both])
    assert "/data/orderId" in [i.path for i in caught.value.issues]


# --- validation: no coercion, no defaults, nothing dropped ------------------------------------------


def _single(schema, value, evidence_mode="semantic", quote="材料", input_text="材料"):
    definition = {"type": "object", "properties": {"f": schema}}
    candidate = _candidate({"f": value}, [_evidence("/data/f", quote, evidence_mode)], results=[_extracted("/data/f")])
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    return Intent({"schema": definition, "repairAttempts": 0}).parse({"input": input_text}, executor)


def _single_error(schema, value, **kw):
    with pytest.raises(IntentParseError) as caught:
        _single(schema, value, **kw)
    assert caught.value.code == "MODEL_OUTPUT_INVALID" and caught.value.stage == "data"
    return [i.path for i in caught.value.issues]


def test_data_is_not_coerced():
    # spec: R-SCH-035 R-RES-053 -- "000123" is not turned into the integer the schema wants.
    assert _single_error({"type": "integer"}, "000123", evidence_mode="exact", quote="000123", input_text="订单 000123") == ["/data/f"]
    assert _single_error({"type": "string"}, 123, quote="123", input_text="订单 123") == ["/data/f"]
    assert _single_error({"type": "boolean"}, "true") == ["/data/f"]
    assert _single({"type": "string"}, "000123", "exact", "000123", "订单 000123")["data"] == {"f": "000123"}


def test_defaults_are_not_inserted():
    # spec: R-SCH-036 R-SCH-022 R-RES-054
    schema = {"type": "object", "properties": {"note": {"type": "string", "default": "无"}}}
    candidate = _candidate(results=[{"path": "/data/note", "status": "not_provided", "explanation": "未提供备注。"}])
    result = Intent({"schema": schema}).parse({"input": "查询"}, scripted([dumps(ORDER_CORE), dumps(candidate)]))
    assert result["data"] == {}
    nested = {"type": "object", "properties": {"a": {"type": "string", "default": "d"}}, "required": ["a"]}
    assert _single_error(nested, {}) == ["/data/f"]  # the missing required a is not filled from its default


def test_extra_properties_inside_a_field_are_neither_dropped_nor_accepted():
    # spec: R-SCH-037 R-FLD-009
    closed = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    assert _single_error(closed, {"a": "x", "b": "y"}) == ["/data/f"]
    open_ = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert _single(open_, {"a": "x", "b": "y"})["data"] == {"f": {"a": "x", "b": "y"}}


def test_an_optional_field_without_material_stays_omitted():
    # spec: R-RES-049
    both = _order(fieldResults=[*ORDER_DATA["fieldResults"], {"path": "/data/note", "status": "not_provided", "explanation": "无。"}])
    result, _ = _two({"input": ORDER_INPUT}, [both])
    assert "note" not in result["data"]
    assert result["data"] == {"orderId": "000123"}


def test_null_only_where_the_schema_allows_it():
    # spec: R-RES-050
    assert _single({"type": ["string", "null"]}, None, quote="备注为null", input_text="备注为null")["data"] == {"f": None}
    assert _single_error({"type": "string"}, None, quote="备注为null", input_text="备注为null") == ["/data/f"]
    # and null needs its own evidence like any leaf
    definition = {"type": "object", "properties": {"f": {"type": ["string", "null"]}}}
    candidate = _candidate({"f": None}, results=[_extracted("/data/f")])
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": definition, "repairAttempts": 0}).parse({"input": "x"}, scripted([dumps(ORDER_CORE), dumps(candidate)]))
    assert [i.path for i in caught.value.issues] == ["/data/f"]


def test_the_result_holds_no_process_members():
    # spec: R-RES-055 R-SRC-009
    result = Intent({"schema": ORDER_SCHEMA}).parse({"input": ORDER_INPUT}, scripted([dumps(ORDER_CORE), dumps(ORDER_DATA)]))
    text = json.dumps(result)
    for member in ("evidence", "descriptionChecks", "fieldResults", "issues", "quote"):
        assert member not in text


# --- numbers are read from the literal --------------------------------------------------------------

AMOUNT_SCHEMA = {"type": "object", "properties": {"amount": {"type": "number"}}}
PLACEHOLDER = "__AMOUNT__"


def _amount_text(literal):
    candidate = _candidate(
        {"amount": PLACEHOLDER}, [_evidence("/data/amount", "金额", "semantic")], results=[_extracted("/data/amount")]
    )
    text = dumps(candidate)
    assert text.count(f'"{PLACEHOLDER}"') == 1
    return text.replace(f'"{PLACEHOLDER}"', literal)


def _amount_run(literal):
    executor = scripted([dumps(ORDER_CORE), _amount_text(literal)])
    return Intent({"schema": AMOUNT_SCHEMA, "repairAttempts": 0}).parse({"input": "金额如上"}, executor)


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("9007199254740991", 9007199254740991),
        ("-9007199254740991", -9007199254740991),
        ("0.1", 0.1),
        ("1.0", 1),
        ("1e2", 100),
        ("-0", 0),
        ("2.5", 2.5),
        ("1.5e-300", 1.5e-300),
        ("-2.5E+3", -2500),
        ("5e-324", 5e-324),
    ],
)
def test_representable_number_literals_are_accepted(literal, value):
    # spec: R-RES-056 R-RES-057 R-RES-058 -- D-JSON-003 D-JSON-004
    amount = _amount_run(literal)["data"]["amount"]
    assert amount == value and type(amount) is type(value)


@pytest.mark.parametrize(
    "literal",
    [
        "9007199254740992",  # 2**53: outside the safe integers
        "-9007199254740992",
        "9007199254740992.0",  # exactly a double, but an integral value outside the safe integers (D-JSON-003)
        "1e300",  # likewise integral, so an integer (D-JSON-003), and not a safe one
        "9007199254740993.0",  # not exactly a double
        "1e400",  # not finite
        "-1e400",
        "0.10000000000000000001",  # rounds to 0.1: decimal round-trip loss
        "1e-400",  # underflows to 0
        "NaN",
        "Infinity",
        "-Infinity",
    ],
)
def test_unrepresentable_number_literals_are_rejected(literal):
    # spec: R-RES-056 R-RES-057 R-RES-058 R-ERR-024
    with pytest.raises(IntentParseError) as caught:
        _amount_run(literal)
    err = caught.value.to_json()
    assert (err["code"], err["stage"]) == ("MODEL_OUTPUT_INVALID", "data")
    assert err["partialResult"]["data"] == {}


def test_an_unrepresentable_value_is_reported_as_an_issue():
    # spec: R-RES-059 -- the model files DATA_VALUE_UNREPRESENTABLE instead of writing the number.
    candidate = _candidate(
        results=[{"path": "/data/amount", "status": "issue", "explanation": "金额超出可表示范围。"}],
        issues=[_issue("DATA_VALUE_UNREPRESENTABLE", "definition", "/data/amount", "金额无法精确表示。")],
    )
    executor = scripted([dumps(ORDER_CORE), dumps(candidate)])
    with pytest.raises(IntentDataError) as caught:
        Intent({"schema": AMOUNT_SCHEMA}).parse({"input": "金额 9007199254740993"}, executor)
    assert [i.code for i in caught.value.issues] == ["DATA_VALUE_UNREPRESENTABLE"]
