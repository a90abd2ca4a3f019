"""What a host did in one run of a scenario, read back from the judge's logs.

The server (``serve``) logs every tool call with the reply it sent; the scripted model
(``model``) logs every run with the task it was given.  ``read_run`` merges both logs
into one timeline, in the order things happened, which is what the rules walk.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    """One tool call as the server saw it."""

    connection: str
    number: int  # the N-th call of its connection, 1-based
    tool: str
    arguments: dict[str, Any]
    reply: dict[str, Any] | None  # None when a scripted fault replaced the reply
    fault: str | None
    active: list[str]  # the connection's jobs still active after the call
    t: float
    protocol: str | None = None  # the MCP protocol version the call came in (which era)

    @property
    def job_id(self) -> str | None:
        """The call's jobId; a value of another type as JSON text, so that it can be a key."""
        value = self.arguments.get("jobId")
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, sort_keys=True, default=str)

    def where(self, connections: list[str]) -> str:
        index = connections.index(self.connection) + 1 if self.connection in connections else 0
        return f"call {self.number} {self.tool} (connection {index})"


@dataclass
class ModelRun:
    """One run of the scripted model."""

    number: int  # 0-based, in the order of runs
    task: Any  # the parsed stdin, or None when it was not JSON
    stdin: str | None  # the raw stdin, kept only when it was not JSON
    behaviour: dict[str, Any]
    stdout: str
    exit: int
    t: float

    def where(self) -> str:
        return f"model run {self.number + 1}"


@dataclass
class Connection:
    name: str
    pid: int | None = None
    closed: bool = False
    active_at_close: list[str] = field(default_factory=list)


@dataclass
class Run:
    """One run of one scenario: the timeline and how the host ended."""

    scenario_id: str
    wording: str
    timeline: list[Call | ModelRun]
    connections: dict[str, Connection]
    host_exit: int | None  # None when the judge had to stop the host (time limit)
    host_stdout: str
    host_stderr: str
    seconds: float
    left_running: list[int] = field(default_factory=list)  # server pids alive after the host exited

    @property
    def calls(self) -> list[Call]:
        return [event for event in self.timeline if isinstance(event, Call)]

    @property
    def model_runs(self) -> list[ModelRun]:
        return [event for event in self.timeline if isinstance(event, ModelRun)]

    @property
    def connection_order(self) -> list[str]:
        return list(self.connections)

    @property
    def timed_out(self) -> bool:
        return self.host_exit is None

    @property
    def faulted(self) -> bool:
        return any(call.fault for call in self.calls)


def _json_lines(path: pathlib.Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line cut short by a killed process tells nothing reliable
        if isinstance(record, dict):
            records.append(record)
    return records


def read_timeline(
    server_log: pathlib.Path, model_log: pathlib.Path
) -> tuple[list[Call | ModelRun], dict[str, Connection]]:
    connections: dict[str, Connection] = {}
    events: list[Call | ModelRun] = []
    for record in _json_lines(server_log):
        name = str(record.get("connection"))
        connection = connections.setdefault(name, Connection(name))
        kind = record.get("event")
        if kind == "open":
            connection.pid = record.get("pid")
        elif kind == "close":
            connection.closed = True
            connection.active_at_close = list(record.get("active") or [])
        elif kind == "call":
            arguments = record.get("arguments")
            events.append(Call(
                connection=name, number=int(record.get("call", 0)), tool=str(record.get("tool")),
                arguments=arguments if isinstance(arguments, dict) else {}, reply=record.get("reply"),
                fault=record.get("fault"), active=list(record.get("active") or []), t=float(record.get("t", 0)),
                protocol=record.get("protocol"),
            ))  # fmt: skip
    for record in _json_lines(model_log):
        events.append(ModelRun(
            number=int(record.get("run", 0)), task=record.get("task"), stdin=record.get("stdin"),
            behaviour=record.get("behaviour") or {}, stdout=str(record.get("stdout", "")),
            exit=int(record.get("exit", 0)), t=float(record.get("t", 0)),
        ))  # fmt: skip
    # A call is logged after its reply is made, a model run when it starts: a host that
    # runs its model on a reply necessarily does so after the reply was logged.
    events.sort(key=lambda event: event.t)
    return events, connections
