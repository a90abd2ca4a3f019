"""Every rule the properties check at normative level has a normative fixture (issue 38).

A rule only a property checks is checked only where Hypothesis happens to draw it: the
blank quote (R-DAT-009: a quote must be non-empty, not non-blank) was caught by the
properties alone until DAT-0256 and DAT-0257. An implementer who runs only the fixtures
must meet every such rule too, so this test compares the two lists:

* the properties' normative rules: the requirements of every candidate fault that rests on
  no decision (``intentref.properties.CANDIDATE_FAULTS``) and of every ``ip.Example`` in
  ``properties/*.py`` that is not entered together with ``ip.decided(...)``;
* the requirements the normative fixtures cite.

A rule the fixtures cannot state at normative level is listed in ``NO_NORMATIVE_FIXTURE``
with the reason; the list may only name rules the properties really check.
"""

from __future__ import annotations

import ast
import pathlib

from intentref import properties as ip
from intentref.suite.cases.fixtures import load_cases

ROOT = pathlib.Path(__file__).resolve().parents[2]

NO_NORMATIVE_FIXTURE = {
    # The byte budget a candidate is measured against is how the target counts what it
    # retains (D-LIM-003): a property finds each target's own budget from its replies, a
    # fixture has one number for every implementation; its fixtures are reference cases.
    # (R-LIF-009, the resubmission after it, is checked by the properties only under
    # D-LIM-003 and D-BRG-009, so it is not a normative property rule.)
    "R-CAP-013": "the budget is counted as D-LIM-003 decides",
    # A MAY rule: a replay may be answered with the retained reply (D-BRG-007); what stays
    # normative of it, that the job still takes its open step, is R-LIF-002's.
    "R-IDM-001": "a MAY rule whose answer D-BRG-007 decides",
}


def _decided(item: ast.withitem) -> bool:
    call = item.context_expr
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "decided"


def _example_requirements(tree: ast.AST) -> set[str]:
    """The requirements of ``ip.Example(..., requirements=...)`` in a with-statement not decided."""
    found: set[str] = set()
    constants = {target.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}  # fmt: skip
    for node in ast.walk(tree):
        if not isinstance(node, ast.With) or any(_decided(item) for item in node.items):
            continue
        for item in node.items:
            call = item.context_expr
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "Example"):
                continue
            for keyword in call.keywords:
                if keyword.arg == "requirements":
                    value = keyword.value
                    if isinstance(value, ast.Name):
                        value = constants[value.id]
                    found.update(ast.literal_eval(value))
    return found


def properties_normative_rules() -> set[str]:
    rules = {r for fault in ip.CANDIDATE_FAULTS.values() if not fault.decisions for r in fault.requirements}
    for path in sorted((ROOT / "properties").glob("test_*.py")):
        rules |= _example_requirements(ast.parse(path.read_text("utf-8")))
    return rules


def fixtures_normative_rules() -> set[str]:
    return {r for case in load_cases() if case.level == "normative" for r in case.data.get("requirements", [])}


def test_every_rule_the_properties_check_at_normative_level_has_a_normative_fixture() -> None:
    missing = properties_normative_rules() - fixtures_normative_rules() - set(NO_NORMATIVE_FIXTURE)
    assert not missing, f"checked only by the properties: {sorted(missing)}"


def test_the_exemptions_name_rules_the_properties_check_and_no_fixture_covers() -> None:
    checked = properties_normative_rules()
    covered = fixtures_normative_rules()
    assert set(NO_NORMATIVE_FIXTURE) <= checked, sorted(set(NO_NORMATIVE_FIXTURE) - checked)
    assert not set(NO_NORMATIVE_FIXTURE) & covered, sorted(set(NO_NORMATIVE_FIXTURE) & covered)


def test_the_blank_quote_rule_is_among_the_properties_rules_and_has_its_fixture() -> None:
    # R-DAT-009 is what the blank quote tests; the comparison above would have missed the gap
    # had R-DAT-009 not been a property rule. The lists are compared by requirement, so a
    # new way of breaking a rule that already has a fixture still needs a fixture of its own.
    assert "R-DAT-009" in properties_normative_rules()
    blank = [c for c in load_cases() if c.level == "normative" and "blank quote" in c.data["description"]]
    assert blank and all("R-DAT-009" in c.data["requirements"] for c in blank)
