"""An example's calls written as a conformance case, the reference's replies as its expectations.

What a divergence (``differential.Divergence``) and ``intentref fuzz``'s session cases
write: tokens become ``$reply`` references, long or ill-formed texts fixture generators.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from intentref.core.limits import is_well_formed
from intentref.suite.cases.values import map_strings, stringify
from intentref.suite.properties.projection import NORMATIVE, REFERENCE, is_judgement, is_repair
from intentref.suite.targets.base import load_instances

TOKEN_MEMBERS: Final = ("jobId", "stepToken")


@dataclass
class Call:
    session: str
    op: str  # prepare / accept / cancel / close
    args: Any = None  # as the reference received it
    reply: Any = None  # the reference's reply


# Strings longer than this, or holding lone surrogates, are written with generators.
_LONG: Final = 512
_RUN: Final = re.compile(r"(.)\1{63,}", re.DOTALL)


def text_spec(text: str) -> Any:
    """A fixture generator for ``text``: literal when short and well-formed, else $concat/$repeat/$utf16."""
    if len(text) <= _LONG and is_well_formed(text):
        return text
    parts: list[Any] = []
    last = 0
    for match in _RUN.finditer(text):
        parts += _plain_parts(text[last : match.start()])
        parts.append({"$repeat": match.group(1), "times": len(match.group(0))} if is_well_formed(match.group(1)) else
                     {"$utf16": [ord(match.group(1))] * len(match.group(0))})  # fmt: skip
        last = match.end()
    parts += _plain_parts(text[last:])
    return parts[0] if len(parts) == 1 else {"$concat": parts}


def _plain_parts(text: str) -> list[Any]:
    out: list[Any] = []
    buffer = ""
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            if buffer:
                out.append(buffer)
                buffer = ""
            out.append({"$utf16": [ord(char)]})
        else:
            buffer += char
    if buffer:
        out.append(buffer)
    return out


def candidate_spec(text: str) -> Any:
    """``{"$json": value}`` when the text is exactly JSON.stringify(value), else the text."""
    with contextlib.suppress(ValueError, RecursionError):
        decoded = json.loads(text)
        if stringify(decoded) == text and len(text) <= 64 * 1024:
            return {"$json": decoded}
    return text_spec(text)


def case_from_calls(calls: list[Call], instances: dict[str, Any], options: dict[str, Any],
                    requirements: tuple[str, ...] = (), level: str = REFERENCE, decisions: tuple[str, ...] = ("D-ERR-006",),
                    same_as: int | None = None, projected: bool = False) -> dict[str, Any]:  # fmt: skip
    """The calls as a conformance case of ``level``: $reply for tokens, the reference's replies as expectations.

    ``projected`` (what a divergence writes): every expectation is the normative projection
    of the reference's reply (D-CNF-020): a task's stage and repair flag, a result exactly,
    an error's code and stage.  Otherwise (fuzz session cases) the reference's replies are
    expected exactly, a reference case of the wording decisions.  ``same_as`` (a replay
    that drifted) makes the last step expect ``$sameAs`` that earlier step.
    """
    expectation = _expectation if projected else _exact_expectation
    first_seen: dict[str, tuple[int, str]] = {}
    steps: list[dict[str, Any]] = []
    used: list[str] = []
    judged = False  # did a step show a repair or a refused candidate (what repairAttempts decides)?
    for index, call in enumerate(calls):
        step: dict[str, Any] = {"op": call.op}
        if call.session != "main":
            step["session"] = call.session
        if call.op != "close":
            step["args"] = _args_spec(call.args, first_seen)
            last = index == len(calls) - 1
            step["expect"] = {"$sameAs": same_as} if last and same_as is not None else expectation(call.reply, first_seen)
            judged = judged or is_judgement(call.reply)
            name = call.args.get("instance") if isinstance(call.args, dict) else None
            if isinstance(name, str) and name in instances and name not in used:
                used.append(name)
        steps.append(step)
        if isinstance(call.reply, dict):  # registered after the expectation: there they are fresh
            for member in TOKEN_MEMBERS:
                if isinstance(call.reply.get(member), str):
                    first_seen.setdefault(call.reply[member], (index, "/" + member))
    normative = level == NORMATIVE
    case: dict[str, Any] = {
        "id": "NEW-0001",
        "description": ("Found by intentref properties: the target's reply broke a seed rule at the last step."
                        if normative else
                        "Found by intentref properties: the target decided differently from the reference "
                        "at the last step."),
        "requirements": list(requirements) or ["R-BRG-006"],
        "level": level,
        "instances": used,
        "steps": steps,
    }  # fmt: skip
    if not normative:
        case["decisions"] = list(decisions)
    if options:
        case["bridge"] = dict(options)
    standard = _standard_instances()
    setup = {name: _seed_configuration(instances[name], normative and not judged) for name in used}
    if any(name not in standard or standard[name] != setup[name] for name in used):
        case["setup"] = {"instances": setup}
    return case


def _seed_configuration(config: Any, drop_repairs: bool) -> Any:
    """``config``, without ``repairAttempts`` when no step depends on it: a normative case must
    not need a member only the reference decided to take (D-CFG-001)."""
    if drop_repairs and isinstance(config, dict) and "repairAttempts" in config:
        return {k: v for k, v in config.items() if k != "repairAttempts"}
    return config


@functools.cache
def _standard_instances() -> dict[str, Any]:
    return load_instances()


def _args_spec(args: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    if not isinstance(args, dict):
        return {"$literal": args}
    out: dict[str, Any] = {}
    for key, val in args.items():
        if key in TOKEN_MEMBERS and isinstance(val, str) and val in first_seen:
            out[key] = _token_ref(val, first_seen)
        elif key in TOKEN_MEMBERS and isinstance(val, str) and _near_token(val, first_seen):
            # A real token with something appended (a near miss): keep the reference, not its value.
            known = _near_token(val, first_seen)
            out[key] = {"$concat": [_token_ref(known, first_seen), text_spec(val[len(known):])]}
        elif key == "candidateText" and isinstance(val, str):
            out[key] = candidate_spec(val)
        else:
            out[key] = map_strings(val, text_spec)
    return out


def _near_token(value: str, first_seen: dict[str, tuple[int, str]]) -> str:
    return next((t for t in first_seen if t and value.startswith(t) and value != t), "")


def _token_ref(token: str, first_seen: dict[str, tuple[int, str]]) -> Any:
    """A ``$reply`` reference to the step that first returned ``token``, or ``$fresh`` for a new one."""
    if token not in first_seen:
        return {"$fresh": True}
    step, pointer = first_seen[token]
    return {"$reply": step, "pointer": pointer}


def _exact_expectation(reply: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    """The reference's ``reply`` exactly, its tokens as ``$reply`` references or ``$fresh``."""
    if not isinstance(reply, dict):
        return reply
    out = dict(reply)
    for member in TOKEN_MEMBERS:
        if isinstance(out.get(member), str):
            out[member] = _token_ref(out[member], first_seen)
    return out


def _expectation(reply: Any, first_seen: dict[str, tuple[int, str]]) -> Any:
    """A matcher for the normative projection of the reference's ``reply`` (D-CNF-020)."""
    if not isinstance(reply, dict):
        return reply
    kind = reply.get("kind")
    if kind == "task":
        task: dict[str, Any] = {"stage": reply.get("stage")}
        for member in TOKEN_MEMBERS:
            if isinstance(reply.get(member), str):
                task[member] = _token_ref(reply[member], first_seen)
        repair = {"$type": ["object", "array", "string", "number", "boolean"]} if is_repair(reply) else {"$absent": True}
        task["payload"] = {"$jsonText": {"$subset": {"repair": repair}}}
        task["expiresAt"] = {"$type": "string"} if "expiresAt" in reply else {"$absent": True}  # seed 000: none by default
        return {"$task": task}
    if kind == "error" and isinstance(reply.get("error"), dict):
        return {"$error": {"code": reply["error"].get("code"), "stage": reply["error"].get("stage")}}
    return {"kind": kind, "result": reply.get("result")} if kind == "result" else reply
