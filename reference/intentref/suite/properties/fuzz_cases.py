"""The case files ``intentref fuzz`` writes: candidates, replies and sessions, one JSON file each.

Every choice comes from ``random.Random`` seeded per case (``"{seed}/{kind}/{index}"``), so
the same seed writes byte-identical files and case 7 is the same whatever the count; the
command line, the format and the replay are in ``intentref.suite.commands.fuzz``.

The writers import the generators, the reference and the walker when they run: every
``intentref`` command imports this module for ``CASE_KINDS`` (``--kind``), and none of them
should pay for those imports (start-up cost).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from intentref.suite.targets.base import InProcessSession

FORMAT: Final = "intentref-fuzz/1"
CASE_KINDS: Final = ("candidates", "replies", "sessions")
PREFIX: Final = {"candidates": "c", "replies": "r", "sessions": "s"}

# --------------------------------------------------------------------------- writing files

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def dumps_file(value: Any) -> str:
    """Readable, deterministic JSON; a lone surrogate left in a string is written as its \\u escape."""
    text = json.dumps(value, ensure_ascii=False, indent=1)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _rng(seed: int, kind: str, index: int) -> random.Random:
    # A string seed is hashed with SHA-512 by random.seed: stable across runs and platforms.
    return random.Random(f"{seed}/{kind}/{index}")


def write_cases(out: Path, seed: int, count: int, kinds: tuple[str, ...], heavy: bool = False) -> dict[str, Any]:
    makers: dict[str, Callable[[random.Random, str, bool], dict[str, Any]]] = {
        "candidates": candidate_case, "replies": reply_case, "sessions": session_case,
    }  # fmt: skip
    manifest: dict[str, Any] = {"format": FORMAT, "seed": seed, "count": count, "heavy": heavy,
                                "kinds": {}, "faults": {}, "defects": {}, "expected": {}}  # fmt: skip
    faults: Counter[str] = Counter()
    defects: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    for kind in kinds:
        folder = out / kind
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.json"):
            stale.unlink()
        for index in range(count):
            case_id = f"{PREFIX[kind]}{index:04d}"
            case = makers[kind](_rng(seed, kind, index), case_id, heavy)
            (folder / f"{case_id}.json").write_text(dumps_file(case), "utf-8")
            if kind == "candidates":
                faults[case["fault"] or "valid"] += 1
                verdict = case["expected"]
                expected[verdict.get("code") or verdict["kind"]] += 1
            elif kind == "replies":
                defects[case["defect"] or f"valid.{case['layer']}"] += 1
        manifest["kinds"][kind] = count
    manifest["faults"], manifest["defects"] = dict(sorted(faults.items())), dict(sorted(defects.items()))
    manifest["expected"] = dict(sorted(expected.items()))
    (out / "manifest.json").write_text(dumps_file(manifest), "utf-8")
    return manifest


# --------------------------------------------------------------------------- candidate cases


def _placeholders(reply: Any, tokens: dict[str, str]) -> Any:
    """``reply`` with its tokens as ``<jobId:1>``-style placeholders, numbered as first seen."""
    if not isinstance(reply, dict):
        return reply
    out = dict(reply)
    for member in ("jobId", "stepToken"):
        if isinstance(out.get(member), str):
            if out[member] not in tokens:
                tokens[out[member]] = f"<{member}:{sum(1 for v in tokens.values() if v.startswith('<' + member)) + 1}>"
            out[member] = tokens[out[member]]
    return out


def _verdict(reply: dict[str, Any]) -> dict[str, Any]:
    if reply["kind"] == "error":
        return {"kind": "error", "code": reply["error"]["code"], "stage": reply["error"]["stage"]}
    if reply["kind"] == "task":
        return {"kind": "task", "stage": reply["stage"], "repair": "repair" in json.loads(reply["payload"])}
    return {"kind": "result"}


def candidate_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.core.jsontext import dumps_compact
    from intentref.suite.generators.candidates import core_candidate, data_candidate
    from intentref.suite.generators.catalog import catalog_instances
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.faults import CANDIDATE_FAULTS, Subject, faults_for
    from intentref.suite.generators.reference_replies import catalog_schema, reference_session
    from intentref.suite.generators.requests import plan_request
    from intentref.suite.properties.case_writer import Call, case_from_calls, text_spec
    from intentref.suite.properties.differential import well_formed_json

    d = RandomDraw(rng)
    instances = catalog_instances()
    name = d.choice([*sorted(n for n in instances if catalog_schema(n)), "default"])
    plan = plan_request(d, name, catalog_schema(name))
    session = reference_session()
    calls: list[Call] = []

    def call(op: str, args: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = getattr(session, op)(args)
        calls.append(Call("main", op, args, well_formed_json(reply)))  # as any transport delivers it
        return reply

    try:
        task = call("prepare", plan.request)
        core = core_candidate(d)
        if plan.selected and d.integer(0, 2) > 0:  # two in three reach the data stage
            task = call("accept", _step(task, dumps_compact(core)))
        repairs = int(instances[name].get("repairAttempts", 1))
        if repairs and d.integer(0, 4) == 0:  # some tasks are repair tasks
            task = call("accept", _step(task, "{"))
        payload = json.loads(task["payload"])
        if task["stage"] == "core":
            subject = Subject("core", core, payload)
        else:
            subject = Subject("data", data_candidate(d, payload, plan.data), payload)
        fault = None
        text = subject.text
        if d.integer(0, 9) >= 3:
            fault = d.choice(faults_for(subject, include_heavy=heavy))
            text = CANDIDATE_FAULTS[fault](subject, d).text
        reply = call("accept", _step(task, text))
    finally:
        session.close()
    tokens: dict[str, str] = {}
    for earlier in calls[:-1]:
        _placeholders(earlier.reply, tokens)
    return {
        "kind": "candidate",
        "id": case_id,
        "fault": fault,
        "instance": name,
        "instances": {name: instances[name]},
        "task": _placeholders(well_formed_json(task), tokens),
        "candidateText": text_spec(text),
        "expected": _verdict(reply),
        "reply": _placeholders(well_formed_json(reply), tokens),
        "steps": case_from_calls(calls, instances, {}, ("R-BRG-006",))["steps"],
    }


def _step(task: dict[str, Any], text: str) -> dict[str, Any]:
    return {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": text}


# --------------------------------------------------------------------------- reply cases


def reply_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.reference_replies import reference_reply
    from intentref.suite.generators.replies import malformed_reply, malformed_tool_result, tool_result

    d = RandomDraw(rng)
    reply = reference_reply(d)
    layer = d.choice(["bridge", "mcp"])
    case: dict[str, Any] = {"kind": "reply", "id": case_id, "layer": layer, "valid": True, "defect": None,
                            "requirement": None}  # fmt: skip
    if d.integer(0, 9) < 4:
        case["value"] = reply if layer == "bridge" else tool_result(reply)
        return case
    defect, requirement, value = (malformed_reply if layer == "bridge" else malformed_tool_result)(d, reply)
    return {**case, "valid": False, "defect": defect, "requirement": requirement, "value": value}


# --------------------------------------------------------------------------- session cases


def session_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.suite.generators.catalog import catalog_instances
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.reference_replies import reference_session
    from intentref.suite.properties.case_writer import case_from_calls
    from intentref.suite.properties.differential import well_formed_json
    from intentref.suite.properties.targets import Tally
    from intentref.suite.properties.walker import Walker

    d = RandomDraw(rng)
    # Objects only: a session case must replay over MCP too, whose tool arguments are objects.
    walker = Walker(_ReferenceRun(reference_session), d, Tally(), heavy=heavy, objects_only=True)
    try:
        for _ in range(d.integer(3, 10)):
            walker.step()
    finally:
        walker.close()
    calls = [replace(c, reply=well_formed_json(c.reply)) for c in walker.calls]  # as any transport delivers them
    case = case_from_calls(calls, catalog_instances(), {}, ("R-BRG-006", "R-IDM-001"))
    return {"kind": "session", "id": case_id, "instances": case.get("setup", {}).get("instances", {}),
            "instanceNames": case["instances"], "steps": case["steps"]}  # fmt: skip


class _ReferenceRun:
    """The shared reference Bridge as a conformance Run of plain reply dicts."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect

    def connect(self) -> Any:
        return InProcessSession(self._connect())

    def close(self) -> None:
        pass
