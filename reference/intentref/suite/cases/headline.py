"""The first line of a failed step when the reply is of another kind than expected (D-CNF-031).

A mismatch list reads well when the reply is the expected kind with a wrong member.  When
a case expects an error and gets a task, the list starts with ``/: expected an error reply
…, got {"kind":"task",…}`` and reads as if a broken candidate had been accepted, when it
was caught and offered for repair.  So that line is preceded by one that says what came
back in the seeds' own terms: its kind, its stage, and for a repair task the issues of
``payload.repair`` (code and path).  Nothing here decides a verdict; it only describes.
"""

from __future__ import annotations

import json
from typing import Any, Final

from intentref.suite.cases.values import History, Mismatch

REPLY_KINDS: Final = ("task", "result", "error")
# Issues named in one headline: enough to recognise a fault, short enough to stay one line.
MAX_ISSUES_SHOWN: Final = 4


def expected_kinds(expected: Any, history: History) -> set[str] | None:
    """The reply kinds the matcher ``expected`` can accept, or None when it cannot be told."""
    if not isinstance(expected, dict):
        return None
    if "$task" in expected:
        return {"task"}
    if "$error" in expected:
        return {"error"}
    if "$kindNot" in expected:
        return set(REPLY_KINDS) - {expected["$kindNot"]}
    if "$sameAs" in expected:
        step = expected["$sameAs"]
        earlier = history.replies[step] if isinstance(step, int) and 0 <= step < len(history.replies) else None
        kind = earlier.get("kind") if isinstance(earlier, dict) else None
        return {kind} if kind in REPLY_KINDS else None
    for either in ("$anyOf", "$either"):  # alternatives: any of their kinds
        if isinstance(expected.get(either), list):
            kinds: set[str] = set()
            for alternative in expected[either]:
                one = expected_kinds(alternative, history)
                if one is None:
                    return None
                kinds |= one
            return kinds
    members = expected.get("$subset", expected)
    if any(key.startswith("$") for key in expected if key != "$subset"):
        return None  # another matcher: no claim on the kind
    kind = members.get("kind") if isinstance(members, dict) else None
    return {kind} if isinstance(kind, str) and kind in REPLY_KINDS else None


def _expected_text(expected: Any, kinds: set[str]) -> str:
    parts = []
    for kind in sorted(kinds, key=REPLY_KINDS.index):
        if kind == "error":
            want = expected.get("$error") if isinstance(expected, dict) else None
            code = want.get("code") if isinstance(want, dict) else None
            parts.append(f"an error ({code})" if isinstance(code, str) else "an error")
        elif kind == "task":
            want = expected.get("$task") if isinstance(expected, dict) else None
            stage = want.get("stage") if isinstance(want, dict) else None
            parts.append(f"a {stage} task" if isinstance(stage, str) else "a task")
        else:
            parts.append("a result")
    return " or ".join(parts)


def _issues(issues: Any) -> str:
    """``CODE at /path, …`` from an issue list of any shape."""
    if not isinstance(issues, list) or not issues:
        return "none listed"
    shown = []
    for issue in issues[:MAX_ISSUES_SHOWN]:
        if not isinstance(issue, dict):
            shown.append(json.dumps(issue, ensure_ascii=False)[:60])
            continue
        code = issue.get("code") if isinstance(issue.get("code"), str) else "?"
        path = issue.get("path")
        where = "(root)" if path == "" else path if isinstance(path, str) else "no path"
        shown.append(f"{code} at {where}")
    more = len(issues) - MAX_ISSUES_SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _repair(payload: Any) -> Any:
    """``payload.repair`` of a task, the payload given as JSON text or as an object."""
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return None
    return payload.get("repair") if isinstance(payload, dict) else None


def _got_text(actual: dict[str, Any]) -> str:
    kind = actual.get("kind")
    if kind == "task":
        stage = actual.get("stage")
        text = f"a task: stage {stage if isinstance(stage, str) else '?'}"
        repair = _repair(actual.get("payload"))
        if repair is None:
            return text + ", not a repair task"
        issues = repair.get("issues") if isinstance(repair, dict) else repair  # a bare list, tolerated
        return text + f", a repair task whose issues are {_issues(issues)}"
    if kind == "error":
        error: dict[str, Any] = actual["error"] if isinstance(actual.get("error"), dict) else {}
        code, stage = error.get("code"), error.get("stage")
        return f"an error: {code} at stage {stage}, issues {_issues(error.get('issues'))}"
    result: dict[str, Any] = actual["result"] if isinstance(actual.get("result"), dict) else {}
    items: list[Any] = result["intents"] if isinstance(result.get("intents"), list) else []
    statuses = ", ".join(str(i.get("status")) for i in items if isinstance(i, dict)) or "no items"
    return f"a result ({statuses})"


def kind_headline(expected: Any, actual: Any, history: History) -> Mismatch | None:
    """``expected X, got Y: …`` about the reply as a whole (no path) when ``actual`` is of a kind
    ``expected`` cannot match, else None."""
    kinds = expected_kinds(expected, history)
    if kinds is None or not isinstance(actual, dict) or actual.get("kind") not in REPLY_KINDS:
        return None
    if actual["kind"] in kinds:
        return None
    return Mismatch(None, _expected_text(expected, kinds), _got_text(actual))
