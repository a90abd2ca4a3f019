"""The `$each` matcher of the fixture language (conformance/README.md, Matchers).

Cases use it where the seeds fix the shape of every element of an array but not its
length, e.g. the issues of MODEL_OUTPUT_INVALID (spec: R-ERR-005 R-ERR-006; their number is
D-ERR-007's).
"""

from __future__ import annotations

from intentref.suite.cases.values import History, match

ISSUE = {"code": {"$type": "string"}, "path": {"$type": ["string", "null"]}}


def test_each_accepts_arrays_whose_every_element_matches_including_empty() -> None:
    assert match({"$each": ISSUE}, [], "", History()) == []
    assert match({"$each": ISSUE}, [{"code": "A", "path": None}, {"code": "B", "path": "/x"}], "", History()) == []


def test_each_names_every_element_that_does_not_match() -> None:
    found = match({"$each": ISSUE}, [{"code": "A", "path": None}, {"code": 1, "path": "/x"}, {"code": "C"}], "", History())
    assert [str(m) for m in found] == ["/1/code: expected a string, got 1", "/2/path: missing"]
    assert [(m.path, m.expected, m.actual) for m in found] == [("/1/code", "a string", "1"), ("/2/path", "a member here", "nothing")]


def test_each_refuses_what_is_not_an_array() -> None:
    assert [str(m) for m in match({"$each": ISSUE}, {"code": "A"}, "/issues", History())] == [
        '/issues: expected an array, got {"code":"A"}']


NAMES = ["a", "b", "c"]
ANY_ORDER = {"$allOf": [{"$length": 3}, {"$each": {"$anyOf": NAMES}}, *[{"$contains": n} for n in NAMES]]}


def test_all_of_states_a_set_of_names_in_any_order() -> None:
    assert match(ANY_ORDER, ["c", "a", "b"], "", History()) == []
    assert match(ANY_ORDER, ["a", "b", "c"], "", History()) == []


def test_all_of_reports_every_matcher_that_fails() -> None:
    found = [str(m) for m in match(ANY_ORDER, ["a", "a", "d"], "/f", History())]
    assert any("/f/2: matched none of 3 alternatives" in m for m in found)
    assert any(m.startswith('/f: no element matches "b"') for m in found)
    assert any(m.startswith('/f: no element matches "c"') for m in found)
    assert str(match(ANY_ORDER, ["a", "b"], "/f", History())[0]).startswith("/f: expected length 3")
