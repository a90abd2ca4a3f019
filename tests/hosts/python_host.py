"""A host on the Python MCP SDK that follows every host rule of seed 000.

    python python_host.py --server "SERVER COMMAND" --model "MODEL COMMAND" --request FILE
    python python_host.py --url URL --model "MODEL COMMAND" --request FILE      (streamable HTTP)

It is the host loop README links (tests/mcp/host_loop_example.py) carried through to every
rule ``intentref host`` judges (R-HST-001 … R-HST-016) and the reference's own choices
(D-HST-003 … D-HST-006).  Each decision a host makes is one small method, so that each
broken host of ``tests/hosts/broken/`` overrides exactly one of them.

Exit status: 0 with the final BridgeReply printed as JSON; 1 when it stopped without one
(a failing model, a protocol-layer failure).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from mcp import Client, StdioServerParameters

DETAIL_LIMIT = 2048  # UTF-8 bytes (seed 000 "工具与 session 方法")
SIZE_RETRIES = 3  # D-HST-004


class ProtocolFailure(Exception):
    """A tool call that threw, or a tool result without a BridgeReply (R-HST-012)."""


class ModelFailed(Exception):
    """The model exited with a status other than 0, 3 or 4."""


@dataclass
class Answer:
    status: int
    text: str


def utf8_prefix(text: str, limit: int = DETAIL_LIMIT) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes, never half a character."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


class Host:
    def __init__(self, server: str, model: str, request: dict[str, Any], url: str | None = None) -> None:
        self.server = shlex.split(server)
        self.url = url
        self.model = shlex.split(model)
        self.request = request
        self.client: Any = None
        self.tasks_seen: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ talking to the service

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await self.client.call_tool(tool, arguments)
        except Exception as exc:  # the SDK or protocol layer refused the call (R-HST-012)
            raise ProtocolFailure(f"{tool} raised {type(exc).__name__}: {exc}") from exc
        return self.reply_of(result)

    def reply_of(self, result: Any) -> dict[str, Any]:
        """The BridgeReply in a tool result, or ProtocolFailure (seed 000 "MCP 外层返回")."""
        reply = result.structured_content
        if not isinstance(reply, dict) or reply.get("kind") not in ("task", "result", "error"):
            raise ProtocolFailure("the tool result carries no BridgeReply")
        return reply

    # ------------------------------------------------------------------ the model

    def model_input(self, task: dict[str, Any]) -> dict[str, Any]:
        return task  # R-HST-001: the task exactly as received

    async def run_model(self, task: dict[str, Any]) -> Answer:
        process = await asyncio.create_subprocess_exec(
            *self.model, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        stdout, _ = await process.communicate(
            json.dumps(self.model_input(task), ensure_ascii=False).encode("utf-8")
        )
        return Answer(process.returncode or 0, stdout.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ the decisions

    def accept_arguments(self, task: dict[str, Any], candidate_text: str) -> dict[str, Any]:
        # R-HST-007: this task's own tokens; R-HST-014: the whole candidate as produced.
        return {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": candidate_text}

    def cancel_outcome(self, status: int) -> str:
        return "refusal" if status == 3 else "incomplete"  # R-HST-002, R-HST-003

    def cancel_detail(self, text: str) -> str:
        return utf8_prefix(text)  # R-HST-006, D-HST-006

    def is_size_rejection(self, reply: dict[str, Any]) -> bool:
        """A reply to our accept that refused the candidate's size and kept the job (by code and path, never message)."""
        if reply.get("kind") != "error":
            return False
        error = reply["error"]
        return error.get("code") == "LIMIT_EXCEEDED" and any(
            issue.get("path") in (None, "/candidateText") for issue in error.get("issues", [])
        )  # a path inside the candidate would be a fault of its content, not of its size

    async def declined(self, task: dict[str, Any], answer: Answer) -> dict[str, Any]:
        """A refusal or an incomplete output: cancel, never submit (R-HST-004)."""
        arguments = {"jobId": task["jobId"], "outcome": self.cancel_outcome(answer.status)}
        if answer.text:
            arguments["detail"] = self.cancel_detail(answer.text)
        return await self.call("intent_cancel", arguments)

    async def answer(self, task: dict[str, Any]) -> dict[str, Any]:
        """Run the model on ``task`` and act on its answer; the service's next reply."""
        answer = await self.run_model(task)
        if answer.status in (3, 4):
            return await self.declined(task, answer)
        if answer.status != 0:
            raise ModelFailed(f"the model exited {answer.status}")
        return await self.call("intent_accept", self.accept_arguments(task, answer.text))

    # ------------------------------------------------------------------ the loop

    async def loop(self) -> dict[str, Any]:
        reply = await self.call("intent_prepare", self.request)
        while reply["kind"] == "task":
            task = reply
            self.tasks_seen.append(task)
            reply = await self.answer(task)
            retries = 0
            while self.is_size_rejection(reply) and retries < SIZE_RETRIES:  # R-HST-010, D-HST-004
                retries += 1
                reply = await self.answer(task)  # the same task, so the same tokens
        return self.finish(reply)

    def finish(self, reply: dict[str, Any]) -> dict[str, Any]:
        return reply  # R-HST-008, R-HST-009: stop at a result or error and report it as received

    async def release(self) -> None:
        """D-HST-003, D-HST-005: cancel the job in hand, if any; its own failure does not matter."""
        if self.tasks_seen:
            with contextlib.suppress(ProtocolFailure):
                await self.call(
                    "intent_cancel", {"jobId": self.tasks_seen[-1]["jobId"], "outcome": "cancelled"}
                )

    async def main(self) -> dict[str, Any] | None:
        failure: Exception | None = None
        reply: dict[str, Any] | None = None
        target: Any = self.url or StdioServerParameters(command=self.server[0], args=self.server[1:])
        async with Client(target) as client:  # one connection; leaving it ends the server (R-HST-013)
            self.client = client
            try:
                reply = await self.loop()
            except (ProtocolFailure, ModelFailed) as exc:
                await self.release()
                failure = exc
        if failure is not None:
            print(f"host: stopped without a reply: {failure}", file=sys.stderr)
            return None
        return reply


def main(host_class: type[Host] = Host, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a host of the intent-runtime protocol")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", help="the MCP server's command line (stdio)")
    where.add_argument("--url", help="the MCP server's URL (streamable HTTP)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--request", required=True)
    args = parser.parse_args(argv)
    with open(args.request, encoding="utf-8") as file:
        request = json.load(file)
    reply = asyncio.run(host_class(args.server or "", args.model, request, args.url).main())
    if reply is None:
        return 1
    print(json.dumps(reply, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
