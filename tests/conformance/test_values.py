"""The `$each` matcher of the fixture language (conformance/README.md, Matchers).

Cases use it where the seeds fix the shape of every element of an array but not its
length, e.g. the issues of MODEL_OUTPUT_INVALID (spec: R-ERR-005 R-ERR-006; their number is
D-ERR-007's).
"""

from __future__ import annotations

from intentref.conformance.values import History, match

ISSUE = {"code": {"$type": "string"}, "path": {"$type": ["string", "null"]}}


def test_each_accepts_arrays_whose_every_element_matches_including_empty() -> None:
    assert match({"$each": ISSUE}, [], "", History()) == []
    assert match({"$each": ISSUE}, [{"code": "A", "path": None}, {"code": "B", "path": "/x"}], "", History()) == []


def test_each_names_every_element_that_does_not_match() -> None:
    found = match({"$each": ISSUE}, [{"code": "A", "path": None}, {"code": 1, "path": "/x"}, {"code": "C"}], "", History())
    assert found == ["/1/code: expected a string, got 1", "/2/path: missing"]


def test_each_refuses_what_is_not_an_array() -> None:
    assert match({"$each": ISSUE}, {"code": "A"}, "/issues", History()) == [
        '/issues: expected an array, got {"code":"A"}']
