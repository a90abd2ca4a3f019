"""``intentref check TASK.json CANDIDATE``: judge one candidate offline, as the reference would.

For host developers debugging their prompts: TASK.json is a task as the host received it
(a BridgeReply of kind task, an MCP tool result carrying one, or a fuzz candidate case),
CANDIDATE the text the model produced (a file, or ``-`` for stdin, read byte for byte).
The reply the reference would give is printed; exit 0 for a task or a result, 1 for an
error reply, 2 when TASK.json is not a task.

The task carries everything the judgement needs: a core task its input and context; a
data task also the whole definition (``schemaReference``), the selection, the checked
default and the sources.  The real core rules run on a ``Job`` rebuilt at that step.
What a task cannot say is how many repairs a fresh step has left (a repair task says it
in ``repair``): ``--repair-attempts`` sets it, default 1 as in the reference (D-LIM-005).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_TASK_OR_RESULT = 0
EXIT_ERROR_REPLY = 1
EXIT_USAGE = 2


class NotATask(ValueError):
    """TASK.json holds no task this command can rebuild."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="judge one candidate against one task offline and print the reference's reply")
    p.add_argument("task", metavar="TASK.json", help="the task reply (or MCP tool result) the host received")
    p.add_argument("candidate", metavar="CANDIDATE", help="the candidate text: a file, or - for stdin")
    p.add_argument("--repair-attempts", type=int, default=None, metavar="N",
                   help="repairs per stage the instance allows, for tasks that are not repairs (default 1)")  # fmt: skip
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        task = read_task(json.loads(Path(args.task).read_text("utf-8")))
    except (OSError, ValueError) as exc:
        print(f"intentref check: {args.task}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    text = _read_candidate(args.candidate)
    reply, note = judge(task, text, args.repair_attempts)
    print(json.dumps(reply, ensure_ascii=False, indent=2))
    if note:
        print(f"note: {note}", file=sys.stderr)
    return EXIT_ERROR_REPLY if reply["kind"] == "error" else EXIT_TASK_OR_RESULT


def _read_candidate(name: str) -> str:
    # Bytes, decoded strictly as UTF-8 with surrogateescape: the exact text, no newline translation.
    raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    return raw.decode("utf-8", "surrogateescape")


def read_task(document: Any) -> dict[str, Any]:
    """The task reply inside ``document`` (a BridgeReply, an MCP tool result or a fuzz case)."""
    if isinstance(document, dict) and isinstance(document.get("structuredContent"), dict):
        document = document["structuredContent"]
    if isinstance(document, dict) and document.get("kind") == "candidate" and isinstance(document.get("task"), dict):
        document = document["task"]
    if not isinstance(document, dict) or document.get("kind") != "task":
        raise NotATask("not a task reply (kind must be task)")
    if document.get("stage") not in ("core", "data") or not isinstance(document.get("payload"), str):
        raise NotATask("a task needs stage core or data and a payload string")
    return document


def rebuild(task: dict[str, Any], repair_attempts: int | None = None) -> Any:
    """The reference ``Job`` standing at ``task``'s step."""
    from .job import Job
    from .request import ParseRequest, Source
    from .schema_subset import Definition

    payload = json.loads(task["payload"])
    stage = task["stage"]
    sources = tuple(Source(str(c["sourceId"]), str(c["role"]), str(c["content"])) for c in payload.get("context", []))
    repair = payload.get("repair")
    attempts, used = (1 if repair_attempts is None else repair_attempts), 0
    if isinstance(repair, dict):  # a repair task says how many were allowed and used (D-PAY-004)
        attempts, used = int(repair["maxAttempts"]), int(repair["attempt"])
    if stage == "core":
        request = ParseRequest(payload["currentInput"], sources, None)
        return Job.at_step(Definition.from_schema({}), payload["structuredLanguage"], attempts, request,
                           repairs_used=used, repair=repair)  # fmt: skip
    definition = Definition.from_schema(payload["schemaReference"])
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
                 "instructions": outcome.task.instructions, "payload": outcome.task.payload,
                 "format": outcome.task.format}  # fmt: skip
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
