"""intentref check TASK.json [CANDIDATE]: judge one candidate offline, as the reference would.

For host developers debugging their prompts.  TASK.json is one of:

* a task as the host received it: a BridgeReply of kind task, or an MCP tool result
  carrying one in ``structuredContent``;
* a fuzz candidate case (``intentref fuzz --kind candidates``, ``"kind": "candidate"``):
  its task, judged with its own instance's settings (``repairAttempts``), and its own
  candidate (``candidateText``) when CANDIDATE is left out.

CANDIDATE is the text the model produced (a file, or ``-`` for stdin, read byte for byte).
The reply the reference would give is printed; the exit statuses are ``EXIT_STATUSES``.

The task carries everything the judgement needs: a core task its input and context; a
data task also the whole definition (``schemaReference``), the selection, the checked
default and the sources.  The real core rules run on a ``Job`` rebuilt at that step.
What a task cannot say is how many repairs a fresh step has left (a repair task says it
in ``repair``; a fuzz case in its instance): ``--repair-attempts`` sets it, default 1 as
in the reference (D-LIM-005).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

from intentref.core.limits import MAX_REPAIR_ATTEMPTS
from intentref.suite.usage import UsageError

EXIT_TASK_OR_RESULT: Final = 0
EXIT_ERROR_REPLY: Final = 1
EXIT_USAGE: Final = 2
EXIT_STATUSES: Final = (
    (EXIT_TASK_OR_RESULT, "the reply is a task (the next step) or a result"),
    (EXIT_ERROR_REPLY, "the reply is an error"),
    (EXIT_USAGE, "a usage error: an argument, or a file that cannot be read or holds no task"),
)


class NotATask(UsageError):
    """TASK.json holds no task this command can rebuild."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="judge one candidate against one task offline and print the reference's reply",
        description="Judge one candidate against one task offline and print the reply the reference gives.",
        epilog="exit status:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_STATUSES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", metavar="TASK.json",
                   help="the task reply (or MCP tool result) the host received, or a fuzz candidate case")  # fmt: skip
    p.add_argument("candidate", metavar="CANDIDATE", nargs="?",
                   help="the candidate text: a file, or - for stdin (optional for a fuzz case: its own candidate)")  # fmt: skip
    p.add_argument("--repair-attempts", type=_attempts, default=None, metavar="N",
                   help="repairs per stage the instance allows, for tasks that are not repairs "
                   "(default: the fuzz case's instance, else 1)")  # fmt: skip
    p.set_defaults(run=run)


def _attempts(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= MAX_REPAIR_ATTEMPTS:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_REPAIR_ATTEMPTS}, as an instance's repairAttempts")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        document = _read_json(args.task)
        task = read_task(document)
        case = document if _is_fuzz_case(document) else None
        if args.candidate is not None:
            text = _read_candidate(args.candidate)
        elif case is not None:
            text = case_candidate(case)
        else:
            raise UsageError("give CANDIDATE (a file, or - for stdin): only a fuzz case carries its own")
        attempts = args.repair_attempts if args.repair_attempts is not None else case_attempts(case)
        try:
            reply, note = judge(task, text, attempts)
        except (KeyError, TypeError, ValueError) as exc:  # a payload the reference never writes
            raise UsageError(f"{args.task}: the task's payload cannot be rebuilt ({type(exc).__name__}: {exc})") from None
    except UsageError as exc:
        print(f"intentref check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(reply, ensure_ascii=False, indent=2))
    if note:
        print(f"note: {note}", file=sys.stderr)
    if case is not None and args.candidate is None and isinstance(case.get("expected"), dict):
        print(f"note: {agreement(case['expected'], reply)}", file=sys.stderr)
    return EXIT_ERROR_REPLY if reply["kind"] == "error" else EXIT_TASK_OR_RESULT


def _read_json(name: str) -> Any:
    try:
        return json.loads(Path(name).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name}: not UTF-8 text") from None
    except ValueError as exc:
        raise UsageError(f"{name}: not JSON ({exc})") from None


def _read_candidate(name: str) -> str:
    # Bytes, decoded strictly as UTF-8 with surrogateescape: the exact text, no newline translation.
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    return raw.decode("utf-8", "surrogateescape")


def _is_fuzz_case(document: Any) -> bool:
    return isinstance(document, dict) and document.get("kind") == "candidate" and isinstance(document.get("task"), dict)


def case_candidate(case: dict[str, Any]) -> str:
    """A fuzz case's candidate text, its fixture generators ($repeat, $concat, $utf16) expanded."""
    from intentref.suite.cases.values import FixtureError, History, generate

    spec = case.get("candidateText")
    try:
        text = generate(spec, History())
    except FixtureError as exc:
        raise UsageError(f"the case's candidateText cannot be expanded: {exc}") from None
    if not isinstance(text, str):
        raise UsageError("the case's candidateText is not a text")
    return text


def case_attempts(case: dict[str, Any] | None) -> int | None:
    """The repairs per stage of a fuzz case's own instance, or None (the default) without a case."""
    if case is None:
        return None
    instances, name = case.get("instances"), case.get("instance")
    config = instances.get(name) if isinstance(instances, dict) else None
    if not isinstance(config, dict):
        raise UsageError(f"the case's instance {name!r} is not among its instances")
    attempts = config.get("repairAttempts", 1)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts <= MAX_REPAIR_ATTEMPTS:
        raise UsageError(f"the case's instance {name!r} has repairAttempts {attempts!r}; it must be 0 to {MAX_REPAIR_ATTEMPTS}")
    return attempts


def agreement(expected: dict[str, Any], reply: dict[str, Any]) -> str:
    """Whether ``reply`` is what the fuzz case says the reference answered (kind, code, stage)."""
    got: dict[str, Any] = {"kind": reply["kind"]}
    if reply["kind"] == "error":
        got.update(code=reply["error"]["code"], stage=reply["error"]["stage"])
    elif reply["kind"] == "task":
        got.update(stage=reply["stage"], repair="repair" in json.loads(reply["payload"]))
    wanted = {key: expected.get(key) for key in got}
    if expected.get("kind") == "task" and expected.get("stage") == "data" and reply["kind"] == "result":
        return "the case expects the data task that follows an accepted core candidate; offline this is its checked default"
    verdict = "agrees with" if wanted == got else "differs from"
    return f"this reply {verdict} the case's expected {json.dumps(expected, ensure_ascii=False)}"


def read_task(document: Any) -> dict[str, Any]:
    """The task reply inside ``document`` (a BridgeReply, an MCP tool result or a fuzz case)."""
    if isinstance(document, dict) and isinstance(document.get("structuredContent"), dict):
        document = document["structuredContent"]
    if _is_fuzz_case(document):
        document = document["task"]
    if not isinstance(document, dict) or document.get("kind") != "task":
        raise NotATask("TASK.json holds no task: give a task reply (kind task), an MCP tool result "
                              "carrying one, or a fuzz candidate case")  # fmt: skip
    if document.get("stage") not in ("core", "data") or not isinstance(document.get("payload"), str):
        raise NotATask("TASK.json: a task needs stage core or data and a payload string")
    return document


def rebuild(task: dict[str, Any], repair_attempts: int | None = None) -> Any:
    """The reference ``Job`` standing at ``task``'s step."""
    from intentref.core.errors import Issue
    from intentref.core.job import Job
    from intentref.core.policy import REFERENCE_POLICY
    from intentref.core.request import ParseRequest, Source
    from intentref.core.schema_subset import Definition
    from intentref.core.task import Repair

    payload = json.loads(task["payload"])
    stage = task["stage"]
    sources = tuple(Source(str(c["sourceId"]), str(c["role"]), str(c["content"])) for c in payload.get("context", []))
    material = payload.get("repair")
    attempts, used = (1 if repair_attempts is None else repair_attempts), 0
    repair = None
    if isinstance(material, dict):  # a repair task says how many were allowed and used (D-PAY-004)
        attempts, used = int(material["maxAttempts"]), int(material["attempt"])
        issues = tuple(Issue(i["code"], i["category"], i["path"], i["message"]) for i in material["issues"])
        repair = Repair(used, attempts, issues, material["previousCandidate"])
    if stage == "core":
        request = ParseRequest(payload["currentInput"], sources, None)
        return Job.at_step(Definition.from_schema({}, REFERENCE_POLICY), payload["structuredLanguage"], attempts, request,
                           repairs_used=used, repair=repair)  # fmt: skip
    definition = Definition.from_schema(payload["schemaReference"], REFERENCE_POLICY)
    request = ParseRequest(payload["currentInput"], sources, tuple(payload["selectedFields"]))
    return Job.at_step(definition, payload["structuredLanguage"], attempts, request, stage="data",
                       checked_default=payload["checkedDefault"], repairs_used=used, repair=repair)  # fmt: skip


def judge(task: dict[str, Any], candidate_text: str, repair_attempts: int | None = None) -> tuple[dict[str, Any], str]:
    """(the BridgeReply the reference would give, a note for the reader or "")."""
    job = rebuild(task, repair_attempts)
    outcome = job.submit(candidate_text)
    job_id = task.get("jobId", "<jobId>")
    if outcome.task is not None:
        reply = {"kind": "task", "jobId": job_id, "stepToken": "<the next stepToken>", "stage": outcome.task.stage,
                 **job.model_request()}  # fmt: skip
        return reply, "a contract fault with a repair left: the runtime answers with this repair task."
    if outcome.result is not None:
        note = ""
        if task["stage"] == "core":
            note = ("the core candidate is accepted; when the instance selects fields the runtime sends a data "
                    "task next, otherwise this is the result.")  # fmt: skip
        return {"kind": "result", "result": outcome.result}, note
    failure = outcome.failure or outcome.rejection
    assert failure is not None
    note = "the step stays open: submit another candidate with the same stepToken." if outcome.rejection else ""
    return {"kind": "error", "error": failure.to_json()}, note
