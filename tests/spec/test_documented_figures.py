"""Figures the spec documents are the ones the code applies."""

from __future__ import annotations

import re

import pytest

from intentref import Intent, IntentParseError
from intentref.core import limits
from tests.conftest import ORDER_CORE, ROOT, dumps, scripted


def _decision(ident: str) -> str:
    text = (ROOT / "spec/decisions.md").read_text("utf-8")
    start = text.index(f"#### {ident} ")
    end = text.find("\n#### ", start + 1)
    return text[start:end]


def test_capacity_defaults_are_documented_as_applied():
    # spec: R-CAP-002 -- D-LIM-001 states the defaults; they must be the ones in force.
    entry = _decision("D-LIM-001")
    assert re.search(r"`maxJobs` 1,024", entry) and limits.DEFAULT_MAX_JOBS == 1024
    assert re.search(r"`maxReplayEntries` 4,096", entry) and limits.DEFAULT_MAX_REPLAY_ENTRIES == 4096
    assert re.search(r"`maxReplayBytes` 64 MiB", entry) and limits.DEFAULT_MAX_REPLAY_BYTES == 64 * 1024 * 1024


def test_request_and_candidate_limits_are_documented_as_applied():
    assert "at most 32 KiB" in _decision("D-LIM-002") and limits.MAX_INPUT_BYTES == 32 * 1024
    assert "64 messages and 256 KiB" in _decision("D-LIM-002")
    assert (limits.MAX_CONTEXT_MESSAGES, limits.MAX_CONTEXT_BYTES) == (64, 256 * 1024)
    assert "at most 1 MiB" in _decision("D-LIM-003") and limits.MAX_CANDIDATE_BYTES == 1024 * 1024
    assert "at most 64 levels" in _decision("D-LIM-003") and limits.MAX_CANDIDATE_DEPTH == 64


def test_one_code_occurs_at_several_stages():
    # spec: R-ERR-008 R-LIF-004 -- LIMIT_EXCEEDED at config, input and core: a host must
    # read `stage`, the code does not imply it.
    stages = set()
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": {"type": "object", "properties": {f"f{i}": {} for i in range(limits.MAX_TOP_LEVEL_FIELDS + 1)}}})
    stages.add((caught.value.code, caught.value.stage))
    with pytest.raises(IntentParseError) as caught:
        Intent().parse({"input": "x" * (limits.MAX_INPUT_BYTES + 1)}, scripted([]))
    stages.add((caught.value.code, caught.value.stage))
    with pytest.raises(IntentParseError) as caught:
        Intent().parse({"input": "x"}, scripted([dumps(ORDER_CORE) + " " * limits.MAX_CANDIDATE_BYTES]))
    stages.add((caught.value.code, caught.value.stage))
    assert stages == {("LIMIT_EXCEEDED", "config"), ("LIMIT_EXCEEDED", "input"), ("LIMIT_EXCEEDED", "core")}
