"""The three tools as a client sees them: their declarations, input schemas, reply schema and the instructions.

Seed 000 "工具与 session 方法".  Declarative only (spec: R-BRG-004): nothing here runs a
call; ``intentref.mcp.adapter`` answers the calls these declarations announce.  The tool
names, the operations they perform and the cancel outcomes come from
``intentref.core.wire``, where each is spelled once.
"""

from __future__ import annotations

from typing import Any, Final

from intentref.core.wire import ACCEPT_TOOL, CANCEL_OUTCOMES, CANCEL_TOOL, PREPARE_TOOL, TOOL_NAMES
from intentref.mcp.replies import REPLY_KINDS

__all__ = ["INSTRUCTIONS", "MCP_TOOLS", "TOOLS_IN_WORDS"]

# How prose names the three tools ("a, b and c"): the command's description, the unknown-tool reply.
TOOLS_IN_WORDS: Final = f"{', '.join(TOOL_NAMES[:-1])} and {TOOL_NAMES[-1]}"

# spec: seed 000 "工具与 session 方法" -- PrepareRequest = IntentParseRequest + instance.
_PREPARE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "instance": {"type": "string", "description": "Name of the configured intent-runtime instance."},
        "input": {"type": "string", "description": "The user's current request text, verbatim."},
        "context": {
            "description": "Optional earlier conversation: one background text, or messages in order.",
            "anyOf": [
                {"type": "string"},
                {"type": "null"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
                            "content": {"type": "string"},
                        },
                        "required": ["role", "content"],
                        "additionalProperties": False,
                    },
                },
            ],
        },
        "fields": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
            "description": "Top-level schema fields to extract; [] recognizes intents only; omit for all fields.",
        },
    },
    "required": ["instance", "input"],
    "additionalProperties": False,
}

_ACCEPT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "jobId": {
            "type": "string",
            "description": "jobId of the task being answered, copied from that task.",
        },
        "stepToken": {"type": "string", "description": "stepToken of the same task, copied from that task."},
        "candidateText": {
            "type": "string",
            "description": "The complete candidate as one JSON text, following the task's format.",
        },
    },
    "required": ["jobId", "stepToken", "candidateText"],
    "additionalProperties": False,
}

_CANCEL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "jobId": {"type": "string", "description": "jobId of the job to stop."},
        "outcome": {
            "type": "string",
            "enum": list(CANCEL_OUTCOMES),
            "description": "Why the job stops; cancelled when omitted.",
        },
        "detail": {"type": "string", "description": "Optional note, at most 2048 UTF-8 bytes."},
    },
    "required": ["jobId"],
    "additionalProperties": False,
}

# D-MCP-004: the BridgeReply union as outputSchema.  Root "type": "object" keeps it valid on
# the 2025 revisions too.  Each kind's branch checks only its "kind" constant and its required
# members; the members' types are annotations ("description"), which validators do not
# evaluate.  Why: every SDK client validates every result against this schema, and a branch
# that descends into each member costs that client about 4x more per call (jsonschema builds
# one sub-validator per member: 0.097 vs 0.024 ms on the seed's data task).  anyOf, not oneOf:
# the branches exclude each other by the "kind" constant, so the two accept the same replies,
# and anyOf stops at the first branch that fits.  Members stay open (no additionalProperties):
# the Bridge, not this declaration, owns the exact reply shape.
_REPLY_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"kind": {"type": "string", "enum": list(REPLY_KINDS)}},
    "required": ["kind"],
    "anyOf": [
        {
            "description": (
                "A task: jobId, stepToken, stage (core or data), instructions and payload are strings, "
                "format is an object; expiresAt (a string) only when the Bridge has a job TTL."
            ),
            "properties": {"kind": {"const": "task"}},
            "required": ["kind", "jobId", "stepToken", "stage", "instructions", "payload", "format"],
        },
        {
            "description": "The finished recognition: result is an object.",
            "properties": {"kind": {"const": "result"}},
            "required": ["kind", "result"],
        },
        {
            "description": (
                "A failure: error is an object with code, stage and message (strings), issues (an array) "
                "and, where some of the work stands, partialResult (an object)."
            ),
            "properties": {"kind": {"const": "error"}},
            "required": ["kind", "error"],
        },
    ],
}

_PREPARE_DESCRIPTION: Final = (
    "Start recognizing one user request with a configured intent-runtime instance. Pass the instance "
    "name, the user's current input verbatim, optional context (a background string, or earlier "
    "messages with role user, assistant or tool) and optional fields (top-level schema field names to "
    "extract; [] recognizes intents only; omit to extract every field). The reply is a BridgeReply in "
    'structuredContent (the same JSON is in the text content): kind "task" means end this tool call, '
    "write the complete candidate that the task's own instructions, payload and format ask for, and "
    f'submit it with {ACCEPT_TOOL}; kind "result" is the finished recognition (read result); kind '
    '"error" reports why this call failed (read error.code, error.issues).'
)
_ACCEPT_DESCRIPTION: Final = (
    "Submit your candidate for the task you last received. Copy jobId and stepToken from that task "
    "exactly, never from examples or older tasks. candidateText is the whole candidate as one JSON "
    "text (JSON.stringify of the object), built from that task's instructions, payload and format; "
    "not only changed fields, not the final result, never empty. The reply is a new task (a repair or "
    "the next stage: answer it with its own new jobId and stepToken), the result, or an error. An "
    "error does not always end the job: some rejections (for example LIMIT_EXCEEDED for an oversized "
    "candidate) keep the job and stepToken active, so a corrected complete candidate can be "
    f"submitted for the same task. If you will not produce a candidate, call {CANCEL_TOOL} instead."
)
_CANCEL_DESCRIPTION: Final = (
    'Stop a job you will not finish, so it is released. outcome: "cancelled" (default) when you '
    'abandon it, "refusal" when you decline to write the candidate, "incomplete" when you cannot '
    "write a complete one; use this instead of submitting empty or partial candidateText. detail is "
    "an optional note of at most 2048 UTF-8 bytes. The reply reports the job's terminal state: "
    "isError true here does not mean the cancel failed, and a job that already finished answers "
    "with its original terminal reply, which may be a result."
)

# spec: R-BRG-003, R-BRG-004, R-BRG-005 -- D-MCP-001: plain dicts in wire (camelCase) form,
# so a host can embed them as they are.
MCP_TOOLS: Final[list[dict[str, Any]]] = [
    {"name": name, "description": description, "inputSchema": schema, "outputSchema": _REPLY_SCHEMA}
    for name, description, schema in (
        (PREPARE_TOOL, _PREPARE_DESCRIPTION, _PREPARE_SCHEMA),
        (ACCEPT_TOOL, _ACCEPT_DESCRIPTION, _ACCEPT_SCHEMA),
        (CANCEL_TOOL, _CANCEL_DESCRIPTION, _CANCEL_SCHEMA),
    )
]

INSTRUCTIONS: Final = (
    "intent-runtime turns a user request into checked, structured intents and data. You write the "
    "candidates; the server checks them and assembles the result. The loop:\n"
    f"1. Call {PREPARE_TOOL} with the instance name and the user's input (optional context, fields).\n"
    '2. When the reply has kind "task", end that tool call. Write the complete candidate JSON that '
    "this task's own instructions, payload and format ask for (payload is a JSON string describing "
    "the material; format.schema, when present, is the candidate's schema).\n"
    f"3. Submit it with {ACCEPT_TOOL}, using that task's own jobId and stepToken and the whole "
    "candidate as candidateText.\n"
    "4. If the reply is another task (a repair, or the next stage), continue from step 2 with the "
    "new task and its new jobId and stepToken.\n"
    '5. Stop on kind "result" (read result) or kind "error" (read error.code). An error reports '
    "that one call: some rejected submissions keep the job and its stepToken active, so judge from "
    "the call you made and the last task you received, not from the code alone, whether to correct "
    "and resubmit the same task or to stop.\n"
    "Never invent jobId or stepToken values and never submit empty or partial text. If you refuse, "
    f'or cannot write a complete candidate, call {CANCEL_TOOL} with outcome "refusal" or '
    '"incomplete"; use "cancelled" to abandon a job you no longer need.'
)
