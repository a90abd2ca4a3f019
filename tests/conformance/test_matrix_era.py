"""``intentref matrix`` records, per implementation, the era its run spoke (issue 37 item 4, D-CNF-066)."""

from __future__ import annotations

import jsonschema

from intentref.suite.cases.fixtures import load_cases, select
from intentref.suite.commands import matrix


def test_each_implementation_records_the_era_its_run_spoke() -> None:
    cases = select(load_cases(), None, ["BRG-0001"], [])
    impls = [
        matrix.Implementation("direct", "in-process", "user"),
        matrix.Implementation("negotiated", "reference", "user"),  # auto: the reference speaks 2026-07-28
        matrix.Implementation("handshake", "reference", "user", era="legacy"),
    ]
    wall = matrix.run_matrix(impls, cases, time_limit=300, timeout=10, jobs=2)
    document = matrix.document(impls, cases, wall, 300)
    jsonschema.Draft202012Validator(matrix.matrix_schema()).validate(document)
    spoken = {i["name"]: (i["era"], i["eraNegotiated"]) for i in document["implementations"]}
    assert spoken == {"direct": ("auto", "-"), "negotiated": ("auto", "2026"), "handshake": ("legacy", "legacy")}
