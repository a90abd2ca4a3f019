"""The levels of the cases, proved against the decision variants (D-CNF-040, spec: R-BRG-006).

``test_the_levels_hold`` is the proof itself: every normative case passes under every
variant and under all of them combined, every reference case is broken by a variant of a
decision it cites.  The other tests show that the proof can fail, for each of its three
reasons, and that the variants are real targets.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from intentref.suite.alterations import variants
from intentref.suite.alterations.alteration import AlteredTarget
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import FAILED, PASSED, UNSUPPORTED
from intentref.suite.commands import levels
from intentref.suite.execution.runner import execute
from tests.conftest import ROOT


def _case(case_id: str, level: str, steps: list[dict[str, Any]], decisions: list[str] | None = None,
          instances: list[str] | None = None) -> Case:  # fmt: skip
    data: dict[str, Any] = {"id": case_id, "description": "test", "requirements": ["R-BRG-006"], "level": level,
                            "steps": steps}  # fmt: skip
    if decisions:
        data["decisions"] = decisions
    if instances:
        data["instances"] = instances
    return Case("TST", "tst.json", data)


BLANK_INPUT_MESSAGE = _case("TST-0001", "normative", [
    {"op": "prepare", "args": {"instance": "default", "input": "  "},
     "expect": {"$error": {"code": "INPUT_INVALID", "message": "input must contain non-whitespace text."}}}])
BLANK_INPUT_CODE = _case("TST-0002", "reference", [
    {"op": "prepare", "args": {"instance": "default", "input": "  "},
     "expect": {"$error": {"code": "INPUT_INVALID", "stage": "input"}}}], decisions=["D-ERR-006"])
NO_VARIANT = _case("TST-0003", "reference", [
    {"op": "prepare", "args": {"instance": "default", "input": "  "},
     "expect": {"$error": {"code": "INPUT_INVALID"}}}], decisions=["D-SCH-007"])
NEEDS_NO_REPAIR = _case("TST-0004", "reference", [
    {"op": "prepare", "args": {"instance": "norepair", "input": "查询订单 000123"}, "expect": {"$task": {"stage": "core"}}},
    {"op": "accept", "args": {"jobId": {"$reply": 0, "pointer": "/jobId"},
                              "stepToken": {"$reply": 0, "pointer": "/stepToken"}, "candidateText": "{"},
     "expect": {"$error": {"code": "MODEL_OUTPUT_INVALID", "stage": "core"}}}],
    decisions=["D-CFG-001", "D-LIM-005"], instances=["norepair"])  # fmt: skip


# Problems of the proof known when this list was written, each to be fixed (a case re-levelled
# or re-cited, a variant added): the list may only shrink.  A problem not listed fails the
# test, and so does a listed one that no longer occurs (D-CNF-010's rule for baselines).
KNOWN_PROBLEMS = ROOT / "tests/conformance/levels-known-problems.json"


def test_the_levels_hold() -> None:
    proof = levels.prove()
    known = set(json.loads(KNOWN_PROBLEMS.read_text("utf-8"))["problems"]) if KNOWN_PROBLEMS.exists() else set()
    problems = set(proof.problems())
    new, stale = sorted(problems - known), sorted(known - problems)
    assert not new, f"{len(new)} new problems, first ones:\n" + "\n".join(new[:40])
    assert not stale, f"{len(stale)} listed problems no longer occur; remove them:\n" + "\n".join(stale[:40])
    assert proof.normative_cases > 0 and proof.reference_cases > 0
    # The table the README links to (spec/levels.md) is this proof: same variants, same counts.
    assert "](spec/levels.md)" in (ROOT / "README.md").read_text("utf-8")
    page = (ROOT / "spec/levels.md").read_text("utf-8")
    block = page.split("<!-- levels-table -->")[1].split("<!-- /levels-table -->")[0]
    rows = [line.split("|") for line in block.splitlines() if line.startswith("| ") and "`" in line]
    documented = {r[2].strip().strip("`"): (int(r[4]), r[5].strip()) for r in rows}
    measured = {v.name: (len(v.normative_failed), str(len(v.reference_broken))) for v in proof.variants}
    measured["all"] = (len(proof.combined.normative_failed), "–")
    assert documented == measured
    assert f"({proof.normative_cases} normative and {proof.reference_cases}" in " ".join(block.split())


def test_a_normative_case_that_rests_on_wording_fails_the_proof() -> None:
    proof = levels.prove([BLANK_INPUT_MESSAGE], only_variants=["reworded"])
    assert [line.split(":")[0] for line in proof.variants[0].normative_failed] == ["TST-0001"]
    assert proof.combined.normative_failed and not proof.holds
    assert proof.problems() == ["normative TST-0001 fails under reworded", "normative TST-0001 fails under all"]


def test_a_reference_case_no_variant_breaks_is_reported_as_mis_cited() -> None:
    proof = levels.prove([BLANK_INPUT_CODE], only_variants=["reworded"])
    assert proof.unbroken_reference == ["TST-0002"]
    assert proof.problems() == ["reference TST-0002 is broken by no variant of its decisions"] and not proof.holds


def test_a_cited_decision_without_a_variant_is_reported() -> None:
    proof = levels.prove([NO_VARIANT], only_variants=["reworded"])
    assert proof.decisions_without_variant == {"D-SCH-007": ["TST-0003"]}
    assert proof.problems() == ["decision D-SCH-007 has no variant"] and not proof.holds


def test_a_case_needing_a_capability_the_variant_lacks_is_unsupported_and_counts_as_broken() -> None:
    target = variants.target("repairs-not-configurable")
    [outcome] = execute([NEEDS_NO_REPAIR], target)
    assert outcome.outcome == UNSUPPORTED
    assert outcome.detail.startswith("needs an instance's repairAttempts"), outcome.detail
    proof = levels.prove([NEEDS_NO_REPAIR], only_variants=["repairs-not-configurable"])
    assert proof.variants[0].reference_broken == ["TST-0004"] and proof.holds


def test_the_reference_itself_passes_what_a_variant_fails() -> None:
    from intentref.suite.targets.base import InProcessTarget

    [reference] = execute([BLANK_INPUT_MESSAGE], InProcessTarget())
    [variant] = execute([BLANK_INPUT_MESSAGE], variants.target("reworded"))
    assert (reference.outcome, variant.outcome) == (PASSED, FAILED)


def test_every_variant_names_real_decisions() -> None:
    import re

    decided = set(re.findall(r"^#### (D-[A-Z]+-\d+)", "\n".join(
        p.read_text("utf-8") for p in (ROOT / "spec").glob("decisions*.md")), re.M))  # fmt: skip
    catalogue = variants.catalogue()
    assert len(catalogue) >= 20
    for variant in catalogue.values():
        assert variant.decisions and set(variant.decisions) <= decided, variant.name
        assert variant.summary.strip(), variant.name


def _transcript(target: Any) -> list[Any]:
    """One fixed tour of the Bridge surface: what each boundary variant must answer differently."""
    from intentref.suite.targets.base import ConfigRejected, load_instances

    instances = load_instances()
    configs = [{"language": "en", "schema": {"type": "object", "properties": {"a": {"anyOf": []}}}},
               {"repairAttempts": 0}, {}, {"schema": {"type": "object", "properties": {"a": {"enum": []}}}}]  # fmt: skip
    seen: list[Any] = []
    for config in configs:
        try:
            run = target.open({"x": config}, {})
            session = run.connect()
            task = session.prepare({"instance": "x", "input": "hi"}).value
            seen.append(json.loads(task["payload"]))
            seen.append(session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": "{"}).value)
            run.close()
        except ConfigRejected as rejected:
            seen.append(rejected.error)
    run = target.open(instances, {})
    s = run.connect()
    core = json.dumps({"normalizedInput": "n", "primaryIntent": None, "requirements": [], "prohibitions": [],
                       "intents": []}, ensure_ascii=False)  # fmt: skip
    calls: list[tuple[str, Any]] = [
        ("prepare", {"instance": "default", "input": " "}),
        ("prepare", {"instance": "nowhere", "input": "hi"}),
        ("prepare", {"instance": "default", "input": "hi", "extra": 1}),
        ("prepare", {"instance": "default", "input": "hi", "fields": None}),
        ("prepare", {"instance": "default", "input": "hi", "context": None}),
        ("prepare", {"instance": "default", "input": "hi", "context": [{"role": "user", "content": "c", "x": 1}]}),
        ("prepare", {"instance": "default", "input": "hi\ud800"}),
        ("accept", {"jobId": "nope", "stepToken": "t", "candidateText": "{}"}),
        ("accept", {"jobId": 5}),
        ("cancel", {"jobId": "nope", "outcome": None}),
        ("prepare", {"instance": "multi", "input": "hi", "fields": ["orders", "orders"]}),
    ]
    for op, request in calls:
        seen.append(getattr(s, op)(request).value)
    # The multi instance with fields in reverse order, a broken core candidate twice, a replay.
    task = s.prepare({"instance": "multi", "input": "订单000123数量2", "fields": ["budget", "urgent"],
                      "context": "背景"}).value  # fmt: skip
    seen.append(task)
    first = s.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": "{"}).value
    again = s.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": "{"}).value
    seen += [first, again]
    data = s.accept({"jobId": task["jobId"], "stepToken": first["stepToken"], "candidateText": core}).value
    seen.append(data)
    seen.append(s.accept({"jobId": task["jobId"], "stepToken": "made-up", "candidateText": "{}"}).value)
    blank = s.prepare({"instance": "default", "input": "hi"}).value
    seen.append(s.cancel({"jobId": blank["jobId"], "detail": "  "}).value)
    seen.append(s.cancel({"jobId": task["jobId"], "detail": "stop"}).value)
    seen.append(s.accept({"jobId": task["jobId"], "stepToken": data["stepToken"], "candidateText": "{}"}).value)
    seen.append(s.cancel({"jobId": task["jobId"], "outcome": None}).value)
    run.close()
    # The deprecated replay TTL, with a job left untouched past it.
    run = target.open(instances, {"replayTtlMs": 1})
    s = run.connect()
    idle = s.prepare({"instance": "default", "input": "hi"}).value
    time.sleep(0.01)
    seen.append(s.accept({"jobId": idle["jobId"], "stepToken": idle["stepToken"], "candidateText": core}).value)
    run.close()
    # Tokens are random: name each by the order it first appeared in, so that only what the
    # variant decided differently can tell two transcripts apart.
    text = json.dumps(seen, ensure_ascii=False)
    tokens = [r[k] for r in seen if isinstance(r, dict) for k in ("jobId", "stepToken") if isinstance(r.get(k), str)]
    for index, token in enumerate(dict.fromkeys(tokens)):
        text = text.replace(token, f"<token {index}>")
    normalised: list[Any] = json.loads(text)
    return normalised


def test_every_boundary_variant_answers_the_tour_differently() -> None:
    from intentref.suite.alterations import _variants_boundary
    from intentref.suite.targets.base import InProcessTarget

    reference = _transcript(InProcessTarget())
    for variant in _variants_boundary.VARIANTS:
        assert _transcript(AlteredTarget([variant])) != reference, variant.name


def test_the_combined_variant_takes_one_variant_per_decision() -> None:
    combined = variants.combined()
    decisions = [d for v in combined for d in v.decisions]
    assert len(decisions) == len(set(decisions))
    assert {v.name for v in combined} <= set(variants.catalogue())
    with pytest.raises(KeyError, match="no decision variant 'nope'"):
        variants.target("nope")


def test_levels_command_lists_variants_and_refuses_an_unknown_one(tmp_path: Any) -> None:
    listed = subprocess.run([sys.executable, "-m", "intentref.cli", "levels", "--list"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert listed.returncode == 0
    names = [line.split("\t")[0] for line in listed.stdout.splitlines()]
    assert names == list(variants.catalogue())
    bad = subprocess.run([sys.executable, "-m", "intentref.cli", "levels", "--variant", "nope"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == "intentref levels: no variant 'nope'; see --list"
    missing = subprocess.run([sys.executable, "-m", "intentref.cli", "levels", "--json", str(tmp_path / "no" / "x.json")],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_conformance_command_takes_a_variant_target(tmp_path: Any) -> None:
    report = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "intentref.cli", "conformance", "--target", "variant:reworded",
                          "--only", "RPY-0012", "--json", str(report)], capture_output=True, text=True, timeout=120)  # fmt: skip
    document = json.loads(report.read_text("utf-8"))
    assert "variant:reworded" in json.dumps(document), run.stderr
    outcomes = [c["outcome"] for c in document["cases"]]
    # RPY-0012 is normative: the reworded variant, like every variant, must pass it.
    assert outcomes == ["passed"] and run.returncode == 0


def test_envelope_cases_run_under_a_variant_through_the_mcp_tool_layer() -> None:
    from intentref.suite.cases.fixtures import load_cases

    envelope = [c for c in load_cases() if c.transport == "mcp"]
    assert envelope
    plain = execute(envelope, variants.target("reworded"))
    assert {o.outcome for o in plain} == {UNSUPPORTED}
    modelled = {o.case_id: o.outcome for o in execute(envelope, variants.target("reworded", envelope=True))}
    assert UNSUPPORTED not in modelled.values()
    assert all(modelled[c.id] == PASSED for c in envelope if c.level == "normative"), modelled
    # ... and a variant that changes what an envelope case checks fails it there.
    broken = execute([c for c in envelope if c.id == "ENV-0013"], variants.target("unknown-jobs-by-cause", envelope=True))
    assert [o.outcome for o in broken] == [FAILED]
