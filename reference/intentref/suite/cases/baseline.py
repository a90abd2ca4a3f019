"""Expected failures: a list of case ids an implementation knows it does not pass yet.

The file is JSON -- an array of ids, an object ``{"expectedFailures": [...]}``, or an
object mapping each id to a reason -- or text with one id per line (``#`` starts a
comment).  A listed case that fails or errors is *expected*; a listed case that passes
is *stale* and fails the run, so the list can only shrink (D-CNF-010).  A listed case
that did not run (not selected, or unsupported) is neither.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from intentref.suite.cases.script import ERRORED, FAILED, PASSED, CaseOutcome

_ID = re.compile(r"^[A-Z]{3}-[0-9]{4}$")


class BaselineError(ValueError):
    """The expected-failures file cannot be read or holds something that is not a case id."""


def load(path: str | Path) -> dict[str, str]:
    """The listed case ids, each with its reason ("" when the file gives none)."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    entries: dict[str, str] = {}
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise BaselineError(f"{path} is not valid JSON: {exc}") from None
        if isinstance(document, dict) and "expectedFailures" in document:
            document = document["expectedFailures"]
        if isinstance(document, list):
            entries = {str(item): "" for item in document}
        elif isinstance(document, dict):
            entries = {str(key): str(value) if value is not None else "" for key, value in document.items()}
        else:
            raise BaselineError(f"{path}: expected an array of case ids or an object")
    else:
        for line in text.splitlines():
            content, _, comment = line.partition("#")
            if content.strip():
                entries[content.strip()] = comment.strip()
    bad = [key for key in entries if not _ID.match(key)]
    if bad:
        raise BaselineError(f"{path}: not case ids: {', '.join(bad[:5])}")
    return entries


@dataclass
class ExpectedFailuresCheck:
    """The run's outcomes held against the expected-failures list."""

    expected: list[str] = field(default_factory=list)  # listed, and failed or errored
    stale: list[str] = field(default_factory=list)  # listed, and passed: remove them from the file
    unexpected: list[str] = field(default_factory=list)  # failed or errored, not listed
    not_run: list[str] = field(default_factory=list)  # listed, but not selected or unsupported

    @property
    def ok(self) -> bool:
        return not self.stale and not self.unexpected


def judge(outcomes: Iterable[CaseOutcome], listed: dict[str, str] | None = None) -> ExpectedFailuresCheck:
    listed = listed or {}
    check = ExpectedFailuresCheck()
    for outcome in outcomes:
        failing = outcome.outcome in (FAILED, ERRORED)
        if outcome.case_id not in listed:
            if failing:
                check.unexpected.append(outcome.case_id)
        elif failing:
            check.expected.append(outcome.case_id)
        elif outcome.outcome == PASSED:
            check.stale.append(outcome.case_id)
    check.not_run = sorted(set(listed) - set(check.expected) - set(check.stale))
    return check
