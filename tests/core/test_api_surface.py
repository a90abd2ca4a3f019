"""The in-process API as the seeds describe it, in its Python spelling (D-CFG-003)."""

from __future__ import annotations

import pytest

import intentref
from intentref import Intent, IntentDataError, IntentParseError
from intentref.core import models
from tests.conftest import ORDER_CORE, ORDER_SCHEMA, dumps, scripted


def test_parse_returns_the_result_itself():
    # spec: R-RES-001 -- not a wrapper: the IntentResult object, a plain dict.
    result = Intent().parse({"input": "查询订单 000123"}, scripted([dumps(ORDER_CORE)]))
    assert type(result) is dict and set(result) == {
        "input", "normalizedInput", "primaryIntent", "requirements", "intents", "prohibitions", "data",
    }  # fmt: skip


def test_public_types_are_importable_and_internal_ones_are_not_exported():
    # spec: R-RES-007 R-RES-014 R-ERR-009
    for name in ("IntentResult", "ReadyItem", "ClarificationItem", "BlockedItem", "Clarification",
                 "SerializedIntentError", "IntentIssue", "BridgeReply"):  # fmt: skip
        assert hasattr(models, name), name
    assert not hasattr(intentref, "ItemBase") and not hasattr(models, "ItemBase")
    assert not hasattr(intentref, "IssueCategory")


def test_errors_are_one_family_with_a_data_subclass():
    # spec: R-ERR-001 R-ERR-039 R-ERR-012
    assert issubclass(IntentDataError, IntentParseError) and issubclass(IntentParseError, Exception)
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": ORDER_SCHEMA}).parse({"input": "x", "fields": ["nope"]}, scripted([]))
    err = caught.value
    assert not isinstance(err, IntentDataError)
    assert err.code == "UNKNOWN_FIELD" and err.stage == "input" and err.partialResult is None
    assert [i.path for i in err.issues] == ["/fields/0"]
    serialized = err.to_json()
    assert set(serialized) == {"code", "stage", "message", "issues"}  # no name, no stack
    assert serialized["message"] == err.message == str(err)


def test_an_undeclared_code_cannot_be_raised():
    with pytest.raises(ValueError):
        IntentParseError("NOT_A_CODE", "input", "x")

