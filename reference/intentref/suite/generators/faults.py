"""The named candidate faults: each breaks a valid candidate in one way and says what the reference answers.

Call one as ``CANDIDATE_FAULTS[name](subject, draw)``; ``faults_for`` lists those that
apply to a subject.  Each fault registers its requirement IDs and, where the verdict is
the reference's choice, the decisions it rests on (read by the property projection).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from intentref.core import jsonpointer
from intentref.core.errors import BUSINESS_ISSUE_CODES
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import MAX_CANDIDATE_BYTES, MAX_SAFE_INTEGER
from intentref.suite.generators.candidates import intent_item
from intentref.suite.generators.draw import Draw
from intentref.suite.generators.schemas import leaves
from intentref.suite.generators.texts import ABSENT_MARK, BIG, LONE_SURROGATES, sentence, word


@dataclass(frozen=True)
class Subject:
    """A task and a valid candidate for it: what a fault breaks."""

    stage: str  # "core" or "data"
    candidate: dict[str, Any]
    payload: dict[str, Any]

    @property
    def text(self) -> str:
        return dumps_compact(self.candidate)

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.candidate)


class Broken(NamedTuple):
    """A candidate text broken in one named way, and what the reference makes of it.

    ``expected_code`` is the code of the judgement: MODEL_OUTPUT_INVALID (a repair task
    while repairs are left, then the error), DATA_EXTRACTION_FAILED, or LIMIT_EXCEEDED (a
    rejection that keeps the step open).  ``pointer`` is an issue path the judgement
    reports (None: the issue's path is null).
    """

    text: str
    expected_code: str
    pointer: str | None


INVALID: Final = "MODEL_OUTPUT_INVALID"
EXTRACTION: Final = "DATA_EXTRACTION_FAILED"
LIMIT: Final = "LIMIT_EXCEEDED"


@dataclass(frozen=True)
class CandidateFault:
    """One named way to break a candidate.  Call it: ``CANDIDATE_FAULTS[name](subject, draw)``."""

    name: str
    stages: frozenset[str]
    make: Callable[[Subject, Draw], Broken]
    applies_to: Callable[[Subject], bool] = field(default=lambda subject: True)
    requirements: tuple[str, ...] = ()
    heavy: bool = False  # large texts: left out where size matters (CI properties, small fuzz runs)
    # The reference decisions the fault's verdict rests on (another implementation may judge
    # such a text otherwise and still follow the seeds); () when the seeds fix the verdict.
    decisions: tuple[str, ...] = ()

    def applies(self, subject: Subject) -> bool:
        return subject.stage in self.stages and self.applies_to(subject)

    def __call__(self, subject: Subject, d: Draw) -> Broken:
        if not self.applies(subject):
            raise ValueError(f"fault {self.name} does not apply to this {subject.stage} candidate")
        broken = self.make(subject, d)
        _remember(broken.text, self.name)
        return broken


# The fault each recently generated broken text was made with, so a differential check can
# tell a verdict the seeds fix from one the reference decided (intentref.suite.properties.projection).
# Bounded: a long campaign generates millions; a divergence is judged right after its call.
_RECENT_FAULTS: Final = 4096
_FAULT_OF: dict[str, str] = {}


def _remember(text: str, name: str) -> None:
    if len(_FAULT_OF) >= _RECENT_FAULTS:
        del _FAULT_OF[next(iter(_FAULT_OF))]
    _FAULT_OF[text] = name


def fault_of(text: str) -> str | None:
    """The named fault ``text`` was generated with, if it was generated here recently."""
    return _FAULT_OF.get(text)


CANDIDATE_FAULTS: dict[str, CandidateFault] = {}
BOTH: Final = frozenset({"core", "data"})
CORE: Final = frozenset({"core"})
DATA: Final = frozenset({"data"})


def _fault(name: str, stages: frozenset[str], *requirements: str, applies: Callable[[Subject], bool] | None = None,
           heavy: bool = False, decisions: tuple[str, ...] = ()
           ) -> Callable[[Callable[[Subject, Draw], Broken]], Callable[[Subject, Draw], Broken]]:  # fmt: skip
    def register(make: Callable[[Subject, Draw], Broken]) -> Callable[[Subject, Draw], Broken]:
        CANDIDATE_FAULTS[name] = CandidateFault(name, stages, make, applies or (lambda subject: True), requirements,
                                                heavy, decisions)  # fmt: skip
        return make

    return register


def _edit(name: str, stages: frozenset[str], *requirements: str, code: str = INVALID, **options: Any
          ) -> Callable[[Callable[[dict[str, Any], Subject, Draw], str]], None]:  # fmt: skip
    """``_fault`` for a fault that edits a copy of the candidate and returns the path the issue names."""

    def register(edit: Callable[[dict[str, Any], Subject, Draw], str]) -> None:
        def make(s: Subject, d: Draw) -> Broken:
            c = s.copy()
            return _broken(c, code, edit(c, s, d))

        _fault(name, stages, *requirements, **options)(make)

    return register


def _ensure_item(candidate: dict[str, Any], d: Draw) -> int:
    if not candidate["intents"]:
        candidate["intents"].append(intent_item(d, (False, False, False)))
    return d.integer(0, len(candidate["intents"]) - 1)


def _broken(candidate: Any, code: str, pointer: str | None) -> Broken:
    return Broken(dumps_compact(candidate), code, pointer)


# --- core ----------------------------------------------------------------------------------


@_edit("core.blank_normalized_input", CORE, "R-COR-009", "R-RES-017")
def _blank_normalized_input(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["normalizedInput"] = d.choice(["", " ", "\t\n", "\u3000"])
    return "/normalizedInput"


@_edit("core.questions_without_reason", CORE, "R-COR-006")
def _questions_without_reason(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    item = c["intents"][i]
    item["action"] = item["action"] or "query"
    item["blockers"]["clarificationReason"] = None
    item["blockers"]["questions"] = [{"question": sentence(d), "options": []}]
    return f"/intents/{i}/blockers/clarificationReason"


@_edit("core.reason_without_questions", CORE, "R-COR-006")
def _reason_without_questions(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    c["intents"][i]["blockers"]["clarificationReason"] = sentence(d)
    c["intents"][i]["blockers"]["questions"] = []
    return f"/intents/{i}/blockers/questions"


@_edit("core.null_action_without_clarification", CORE, "R-COR-008", "R-RES-028")
def _null_action(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    item = c["intents"][i]
    item["action"] = None
    item["blockers"]["clarificationReason"] = None
    item["blockers"]["questions"] = []
    return f"/intents/{i}/action"


@_edit("core.unknown_action", CORE, "R-RES-008")
def _unknown_action(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    c["intents"][i]["action"] = d.choice(["frobnicate", "Query", "", "QUERY"])
    return f"/intents/{i}/action"


@_edit("core.missing_blockers_member", CORE, "R-COR-004", "R-COR-005")
def _missing_blocker(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    name = d.choice(["clarificationReason", "questions", "confirmationReason", "conditionReason"])
    del c["intents"][i]["blockers"][name]
    return f"/intents/{i}/blockers/{name}"


@_edit("core.missing_root_member", CORE, "R-COR-002")
def _missing_root(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = d.choice(["normalizedInput", "primaryIntent", "requirements", "prohibitions", "intents"])
    del c[name]
    return f"/{name}"


@_edit("core.extra_member", CORE, "R-DAT-006", "R-ERR-015", decisions=("D-COR-002",))
def _extra_core_member(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = d.choice(["x/y~z", "~1", "extra", "/"])
    c[name] = True
    return "/" + jsonpointer.escape_token(name)


@_edit("core.blank_requirement", CORE, "R-COR-009", "R-RES-020")
def _blank_requirement(c: dict[str, Any], s: Subject, d: Draw) -> str:
    member = d.choice(["requirements", "prohibitions"])
    c[member].append(d.choice([" ", ""]))
    return f"/{member}/{len(c[member]) - 1}"


@_edit("core.wrong_type", CORE, "R-COR-002", "R-RES-013")
def _core_wrong_type(c: dict[str, Any], s: Subject, d: Draw) -> str:
    member, wrong = d.choice([("normalizedInput", 5), ("intents", {}), ("requirements", "x"), ("primaryIntent", []),
                              ("prohibitions", None)])  # fmt: skip
    c[member] = wrong
    return f"/{member}"


@_edit("core.question_without_options", CORE, "R-COR-007")
def _question_without_options(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _ensure_item(c, d)
    c["intents"][i]["blockers"]["clarificationReason"] = sentence(d)
    c["intents"][i]["blockers"]["questions"] = [{"question": sentence(d)}]
    return f"/intents/{i}/blockers/questions/0/options"


# --- data ----------------------------------------------------------------------------------


def _has_sources(s: Subject) -> bool:
    return bool(s.candidate.get("evidence"))


def _first_evidence(s: Subject, d: Draw) -> int:
    return d.integer(0, len(s.candidate["evidence"]) - 1)


@_edit("data.quote_not_in_source", DATA, "R-DAT-010", applies=_has_sources)
def _quote_not_in_source(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _first_evidence(s, d)
    c["evidence"][i]["mode"] = "semantic"  # so only the quote is wrong
    c["evidence"][i]["sources"][0]["quote"] = ABSENT_MARK + word(d, 3)
    return f"/evidence/{i}/sources/0/quote"


@_edit("data.unknown_source_id", DATA, "R-DAT-009", applies=_has_sources)
def _unknown_source(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _first_evidence(s, d)
    c["evidence"][i]["sources"][0]["sourceId"] = d.choice(["context:99", "Input", "ctx:0"])
    return f"/evidence/{i}/sources/0/sourceId"


@_edit("data.empty_sources", DATA, "R-DAT-008", applies=_has_sources)
def _empty_sources(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _first_evidence(s, d)
    c["evidence"][i]["sources"] = []
    return f"/evidence/{i}/sources"


@_edit("data.missing_field_result", DATA, "R-SRC-011")
def _missing_field_result(c: dict[str, Any], s: Subject, d: Draw) -> str:
    del c["fieldResults"][d.integer(0, len(c["fieldResults"]) - 1)]
    return "/fieldResults"


@_edit("data.duplicate_field_result", DATA, "R-SRC-011")
def _duplicate_field_result(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["fieldResults"].append(copy.deepcopy(c["fieldResults"][0]))
    return f"/fieldResults/{len(c['fieldResults']) - 1}/path"


@_edit("data.unselected_field", DATA, "R-FLD-007", "R-RES-047")
def _unselected_field(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = next(n for n in ("zz/unselected~", "~zz", "zz", "zzz") if n not in s.payload["selectedFields"])
    c["data"][name] = "x"
    return "/data/" + jsonpointer.escape_token(name)


def _has_leaves(s: Subject) -> bool:
    return bool(leaves(s.candidate["data"]))


@_edit("data.missing_evidence", DATA, "R-SRC-010", applies=_has_leaves, decisions=("D-DAT-001",))
def _missing_evidence(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["evidence"] = []
    return leaves(c["data"])[0][0]


def _non_string_leaf(s: Subject) -> int | None:
    values = dict(leaves(s.candidate["data"]))
    return next((i for i, entry in enumerate(s.candidate["evidence"])
                 if entry["path"] in values and not isinstance(values[entry["path"]], str)), None)  # fmt: skip


@_edit("data.exact_mode_for_non_string", DATA, "R-DAT-011", applies=lambda s: _non_string_leaf(s) is not None, decisions=("D-DAT-003",))
def _exact_non_string(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _non_string_leaf(s)
    assert i is not None
    c["evidence"][i]["mode"] = "exact"
    return f"/evidence/{i}/mode"


def _exact_entry(s: Subject) -> int | None:
    return next((i for i, entry in enumerate(s.candidate["evidence"])
                 if entry["mode"] == "exact" and len(entry["sources"][0]["quote"]) > 1), None)  # fmt: skip


@_edit("data.exact_value_not_quoted", DATA, "R-DAT-012", applies=lambda s: _exact_entry(s) is not None)
def _exact_not_quoted(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _exact_entry(s)
    assert i is not None
    source = c["evidence"][i]["sources"][0]
    source["quote"] = source["quote"][:-1]  # still in the source, no longer the value
    return f"/evidence/{i}/mode"


@_edit("data.blank_explanation", DATA, "R-DAT-014")
def _blank_explanation(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["fieldResults"][0]["explanation"] = d.choice([" ", "", "\n"])
    return "/fieldResults/0/explanation"


@_edit("data.extra_root_member", DATA, "R-DAT-002", "R-DAT-006", decisions=("D-COR-002",))
def _extra_data_member(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = d.choice(["x/y", "result", "~"])
    c[name] = {}
    return "/" + jsonpointer.escape_token(name)


@_edit("data.reserved_issue_code", DATA, "R-DAT-022", "R-ERR-033")
def _reserved_issue(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["issues"].append({"code": "DATA_SOURCE_INVALID", "category": "business_information", "path": None,
                        "message": sentence(d)})  # fmt: skip
    return f"/issues/{len(c['issues']) - 1}/code"


@_edit("data.wrong_member_type", DATA, "R-DAT-002", "R-DAT-004")
def _data_wrong_type(c: dict[str, Any], s: Subject, d: Draw) -> str:
    member, wrong = d.choice([("evidence", {}), ("data", []), ("issues", "none"), ("fieldResults", None)])
    c[member] = wrong
    return f"/{member}"


@_edit("data.missing_description_check", DATA, "R-SRC-005", applies=lambda s: bool(s.candidate["descriptionChecks"]), decisions=("D-DAT-002",))
def _missing_check(c: dict[str, Any], s: Subject, d: Draw) -> str:
    c["descriptionChecks"] = []
    return "/descriptionChecks"


def _typed_top_field(s: Subject) -> str | None:
    props = s.payload["selectedSchema"]["properties"]
    return next((str(name) for name in s.candidate["data"]
                 if isinstance(props.get(name), dict) and props[name].get("type") in ("string", "integer", "number", "boolean")),
                None)  # fmt: skip


@_edit("data.schema_violation", DATA, "R-SCH-035", "R-RES-053", applies=lambda s: _typed_top_field(s) is not None)
def _schema_violation(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = _typed_top_field(s)
    assert name is not None
    kind = s.payload["selectedSchema"]["properties"][name]["type"]
    c["data"][name] = 7 if kind == "string" else "7"  # the wrong JSON type, never coerced
    path = "/data/" + jsonpointer.escape_token(name)
    for entry in c["evidence"]:
        if entry["path"] == path:
            entry["mode"] = "semantic"
    return path


def _omitted_optional(s: Subject) -> int | None:
    return next((i for i, entry in enumerate(s.candidate["fieldResults"]) if entry["status"] != "extracted"), None)


@_edit("data.extracted_but_missing", DATA, "R-DAT-015", applies=lambda s: _omitted_optional(s) is not None, decisions=("D-DAT-003", "D-DAT-005"))
def _extracted_but_missing(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = _omitted_optional(s)
    assert i is not None
    c["fieldResults"][i]["status"] = "extracted"
    return f"/fieldResults/{i}/status"


# --- business failures (valid contract, the information is not there) -----------------------


def _required_returned(s: Subject) -> str | None:
    return next((str(name) for name in s.payload["selectedSchema"].get("required", []) if name in s.candidate["data"]), None)


@_edit("business.required_missing", DATA, "R-DAT-023", "R-DAT-024", "R-ERR-030", code=EXTRACTION,
       applies=lambda s: _required_returned(s) is not None, decisions=("D-DAT-004", "D-DAT-005"))  # fmt: skip
def _required_missing(c: dict[str, Any], s: Subject, d: Draw) -> str:
    name = _required_returned(s)
    assert name is not None
    path = "/data/" + jsonpointer.escape_token(name)
    del c["data"][name]
    c["evidence"] = [e for e in c["evidence"] if not (e["path"] == path or e["path"].startswith(path + "/"))]
    c["descriptionChecks"] = [e for e in c["descriptionChecks"] if e["path"] != path]
    for entry in c["fieldResults"]:
        if entry["path"] == path:
            entry["status"] = "issue"
    c["issues"].append({"code": "DATA_REQUIRED_MISSING", "category": "business_information", "path": path,
                        "message": sentence(d)})  # fmt: skip
    return path


@_edit("business.check_violated", DATA, "R-DAT-018", applies=lambda s: bool(s.candidate["descriptionChecks"]), decisions=("D-DAT-005",), code=EXTRACTION)
def _check_violated(c: dict[str, Any], s: Subject, d: Draw) -> str:
    i = d.integer(0, len(c["descriptionChecks"]) - 1)
    c["descriptionChecks"][i]["verdict"] = d.choice(["violated", "undetermined"])
    path: str = c["descriptionChecks"][i]["path"]
    return path


@_edit("business.issue_filed", DATA, "R-DAT-019", "R-ERR-029", decisions=("D-DAT-007",), code=EXTRACTION)
def _issue_filed(c: dict[str, Any], s: Subject, d: Draw) -> str:
    path = "/data/" + jsonpointer.escape_token(s.payload["selectedFields"][0])
    c["issues"].append({"code": d.choice(BUSINESS_ISSUE_CODES), "category": "business_information", "path": path,
                        "message": sentence(d)})  # fmt: skip
    return path


# --- JSON text -----------------------------------------------------------------------------


def _inject(text: str, member: str) -> str:
    """``member`` (raw JSON text ``"name":value``) as the first member of the root object."""
    return "{" + member + ("," if text != "{}" else "") + text[1:]


@_fault("json.duplicate_key", BOTH, "R-RES-056", decisions=("D-JSON-001",))
def _duplicate_key(s: Subject, d: Draw) -> Broken:
    name = d.choice(list(s.candidate))
    return Broken(_inject(s.text, json.dumps(name, ensure_ascii=False) + ":null"), INVALID, "")


@_fault("json.trailing_garbage", BOTH)
def _trailing_garbage(s: Subject, d: Draw) -> Broken:
    return Broken(s.text + d.choice([" x", "}", ",", "\n{}", "\x00"]), INVALID, "")


@_fault("json.truncated", BOTH)
def _truncated(s: Subject, d: Draw) -> Broken:
    return Broken(s.text[: d.integer(0, len(s.text) - 1)], INVALID, "")


@_fault("json.nan_literal", BOTH, "R-RES-056")
def _nan(s: Subject, d: Draw) -> Broken:
    literal = d.choice(["NaN", "Infinity", "-Infinity"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.unsafe_integer", BOTH, "R-RES-057", decisions=("D-JSON-004",))
def _unsafe_integer(s: Subject, d: Draw) -> Broken:
    literal = d.choice([str(MAX_SAFE_INTEGER + 1), str(-MAX_SAFE_INTEGER - 2), "1e400", "9007199254740993.0"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.lossy_number", BOTH, "R-RES-058", decisions=("D-JSON-004",))
def _lossy_number(s: Subject, d: Draw) -> Broken:
    literal = d.choice(["0.1000000000000000055511151231257827", "1.00000000000000000001", "3.141592653589793238"])
    return Broken(_inject(s.text, '"n":' + literal), INVALID, "")


@_fault("json.wrong_root", BOTH)
def _wrong_root(s: Subject, d: Draw) -> Broken:
    return Broken(d.choice(["[]", "null", "42", '"text"', "true", json.dumps([s.candidate])]), INVALID, "")


@_fault("json.leading_bom", BOTH, decisions=("D-JSON-001",))
def _bom(s: Subject, d: Draw) -> Broken:
    return Broken("\ufeff" + s.text, INVALID, "")


@_fault("json.not_json", BOTH)
def _not_json(s: Subject, d: Draw) -> Broken:
    return Broken(d.choice(["", " ", "not json", "{'a': 1}", "```json\n{}\n```"]), INVALID, "")


# Depths: just past MAX_CANDIDATE_DEPTH (64), and far past it (what breaks recursive parsers).
DEEP_NESTING: Final = (65, 1_000, 100_000)


@_fault("json.deep_nesting", BOTH, "R-RES-056", decisions=("D-LIM-003",))
def _deep_nesting(s: Subject, d: Draw) -> Broken:
    depth = d.choice(DEEP_NESTING)
    return Broken("[" * depth + "]" * depth, INVALID, "")


# Faults whose candidate text holds a raw lone surrogate: JSON text can carry it as an escape,
# UTF-8 cannot, and whether a server ever sees it is its transport's (D-MCP-008, D-CNF-053).
LONE_SURROGATE_FAULTS: Final = frozenset({"text.lone_surrogate"})


@_fault("text.lone_surrogate", BOTH, decisions=("D-JSON-002",))
def _lone_surrogate(s: Subject, d: Draw) -> Broken:
    # A raw lone surrogate in the candidate string: JavaScript strings can hold one.
    c = s.copy()
    first = next(iter(c))
    c[first] = d.choice(LONE_SURROGATES) + (c[first] if isinstance(c[first], str) else "")
    return Broken(json.dumps(c, ensure_ascii=False), INVALID, "")


@_fault("text.escaped_lone_surrogate", BOTH, decisions=("D-JSON-002",))
def _escaped_lone_surrogate(s: Subject, d: Draw) -> Broken:
    escape = d.choice(["\\ud800", "\\udfff", "\\ud83d x"])
    return Broken(_inject(s.text, '"s":"' + escape + '"'), INVALID, "")


def oversize_text(d: Draw, total: int | None = None) -> str:
    """A JSON string of just over the candidate budget (or ``total`` bytes), in one character width."""
    unit = d.choice(["x", "é", "中", "😀"])
    width = len(unit.encode("utf-8"))
    wanted = MAX_CANDIDATE_BYTES + d.integer(1, width) if total is None else total
    count = -(-(wanted - 2) // width)  # ceil: at least ``wanted`` bytes with the quotes
    return '"' + unit * count + '"'


@_fault("text.oversize", BOTH, "R-CAP-013", "R-LIF-009", decisions=("D-LIM-003",))
def _oversize(s: Subject, d: Draw) -> Broken:
    return Broken(oversize_text(d), LIMIT, None)


@_fault("text.oversize_10mb", BOTH, "R-CAP-013", heavy=True, decisions=("D-LIM-003",))
def _oversize_10mb(s: Subject, d: Draw) -> Broken:
    return Broken(oversize_text(d, BIG), LIMIT, None)


def broken(d: Draw, subject: Subject, names: Sequence[str]) -> tuple[str, Broken]:
    """One of ``names`` applied to ``subject``: (fault name, Broken)."""
    name = d.choice(list(names))
    return name, CANDIDATE_FAULTS[name](subject, d)


def faults_for(subject: Subject, include_heavy: bool = True) -> list[str]:
    """The names of every fault that applies to ``subject``, in registry order."""
    return [name for name, f in CANDIDATE_FAULTS.items() if f.applies(subject) and (include_heavy or not f.heavy)]
