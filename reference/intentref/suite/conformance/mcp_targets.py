"""MCP targets: a server spawned over stdio, or one already listening on streamable HTTP.

Both drive the server through the MCP SDK's own ``Client`` on an event loop in a
background thread (an anyio blocking portal), so the synchronous runner can call them.

Over stdio one process is one connection is one Bridge session (D-MCP-002), which
shapes everything here (D-CNF-001..004):

* a run is one server process; the shared run's connection serves case after case, and
  at the end of a case ``release()`` cancels whatever jobs the case left active instead
  of closing the connection;
* a case's further connections (a second session, or a session reopened after
  ``close``) are further processes of the same configuration: separate Bridges, so the
  case is unsupported when it also sets Bridge options (capacity is Bridge-wide);
* a configuration fault is an exit status and a line on stderr, not a
  SerializedIntentError, so construction cases are checked only for their verdict.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from intentref.suite.conformance.harness import dumps_wire
from intentref.suite.conformance.mcp_transport import (
    CLOSE_GRACE,
    ForkedProcess,
    ProcessInfo,
    SpawnedProcess,
    WireHttpClient,
    Zygote,
    stdio_transport,
)
from intentref.suite.conformance.targets import (
    CallSession,
    ConfigRejected,
    ProtocolRefusal,
    Reply,
    Run,
    ServerExited,
    Session,
    TargetCannotStart,
    TargetUnsupported,
)

DEFAULT_TIMEOUT: Final = 10.0
# Cases with runs of their own executed at once beside the shared run (D-CNF-011): most of
# such a case's time is its server starting or a TTL running out, not CPU.
PARALLEL_RUNS: Final = 4
# Server processes of the shared configuration the shared cases are dealt over (D-CNF-012).
# Measured on 2 CPUs: 1 -> 63, 2 -> 76, 4 -> 97 cases/s; more gave nothing (the runner's
# own client work, under one GIL, is then the limit).
SHARED_RUNS: Final = 4
# Servers of upcoming configured runs started ahead (StdioTarget.expect_runs): one for
# each parallel case, so none waits for its server while the one before runs.
PREFETCH: Final = PARALLEL_RUNS + 1
# Seconds a server that broke off its start-up gets to be reaped, so its exit status can be
# shown; a process that never existed is not waited for at all.
PROCESS_REAP_WAIT: Final = 3.0
ERAS: Final = {"2026": "2026-07-28", "legacy": "legacy"}  # our name -> Client(mode=...)
PLACEHOLDERS: Final = ("config", "maxJobs", "maxReplayEntries", "maxReplayBytes", "jobTtlMs", "replayTtlMs")
# The bundled CLI: each option flag only when the run sets that option.
REFERENCE_ARGS: Final = (
    "--config {config} [--max-jobs {maxJobs}] [--max-replay-entries {maxReplayEntries}]"
    " [--max-replay-bytes {maxReplayBytes}] [--job-ttl-ms {jobTtlMs}] [--replay-ttl-ms {replayTtlMs}]"
)
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z]+)\}")
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_CONFIG_FAULT: Final = re.compile(r"configuration fault: .*?: (?P<code>[A-Z][A-Z0-9_]+): (?P<message>.*)$", re.M)


def reference_program() -> list[str]:
    """The installed ``intent-runtime-mcp`` next to this interpreter, or the module form."""
    script = Path(sys.executable).with_name("intent-runtime-mcp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "intentref.mcp.cli"]


# --------------------------------------------------------------------------- command templates


@dataclass(frozen=True)
class CommandTemplate:
    """A command line with ``{placeholders}``; ``[ ... ]`` groups are dropped when their option is unset.

    ``intent-runtime-mcp --config {config} [--max-jobs {maxJobs}]`` runs with ``--max-jobs 3``
    for a case setting ``maxJobs: 3`` and without the flag otherwise.  An option with no
    placeholder anywhere in the template cannot be passed, so such a run is unsupported.
    """

    prefix: tuple[str, ...]  # literal tokens (a program and its own arguments)
    parts: tuple[tuple[str, ...], ...]  # each a group of tokens; single-token groups are not optional
    optional: tuple[bool, ...]

    @classmethod
    def parse(cls, text: str, prefix: Sequence[str] = ()) -> CommandTemplate:
        parts: list[tuple[str, ...]] = []
        optional: list[bool] = []
        group: list[str] | None = None
        for token in shlex.split(text):
            opens, closes = group is None and token.startswith("["), token.endswith("]")
            if opens:
                group, token = [], token[1:]
            if group is not None:
                if closes:
                    token = token[:-1]
                if token:
                    group.append(token)
                if closes:
                    parts.append(tuple(group))
                    optional.append(True)
                    group = None
            else:
                parts.append((token,))
                optional.append(False)
        if group is not None:
            raise ValueError(f"unclosed [ group in command template {text!r}")
        template = cls(tuple(prefix), tuple(parts), tuple(optional))
        unknown = template.placeholders() - set(PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)} in {text!r}; known: {list(PLACEHOLDERS)}")
        if not template.prefix and not template.parts:
            raise ValueError("the command template is empty")
        return template

    def placeholders(self) -> set[str]:
        return {name for part in self.parts for token in part for name in _PLACEHOLDER.findall(token)}

    def unsupported(self, options: dict[str, Any]) -> str | None:
        names = self.placeholders()
        missing = [option for option in options if option not in names]
        if missing:
            return f"the server command has no placeholder for Bridge option(s) {', '.join(missing)}"
        required = {n for part, opt in zip(self.parts, self.optional, strict=True) if not opt for t in part
                    for n in _PLACEHOLDER.findall(t)} - {"config"}  # fmt: skip
        if required - set(options):
            return f"the server command always passes {', '.join(sorted(required - set(options)))}, which this run does not set"
        return None

    def render(self, config: str, options: dict[str, Any]) -> list[str]:
        values = {"config": config, **{k: v if isinstance(v, str) else json.dumps(v) for k, v in options.items()}}
        argv = list(self.prefix)
        for part, opt in zip(self.parts, self.optional, strict=True):
            wanted = {n for token in part for n in _PLACEHOLDER.findall(token)}
            if opt and not wanted <= values.keys():
                continue
            argv.extend(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), token) for token in part)
        return argv

    def display(self) -> str:
        shown = [shlex.quote(t) if "\n" not in t else "<launcher>" for t in self.prefix]
        for part, opt in zip(self.parts, self.optional, strict=True):
            text = " ".join(shlex.quote(t) if not _PLACEHOLDER.search(t) else t for t in part)
            shown.append(f"[{text}]" if opt else text)
        return " ".join(shown)


# --------------------------------------------------------------------------- case analysis


def connections_of(case: dict[str, Any]) -> int:
    """How many connections the case opens: a session name opens one on first use and after ``close``."""
    open_names: set[str] = set()
    count = 0
    for step in case["steps"]:
        name = step.get("session", "main")
        if step["op"] == "close":
            open_names.discard(name)
        elif step["op"] != "sleep" and name not in open_names:
            open_names.add(name)
            count += 1
    return count


def verdict_only(expect: Any) -> bool:
    """A construction expectation MCP can check: only whether the server starts (D-CNF-003)."""
    return bool(expect == {"ok": True} or expect == {"$not": {"ok": True}})


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, member order does not matter."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def reply_of(result: types.CallToolResult) -> Reply:
    """The Reply of one tools/call: structuredContent, its text block and the envelope facts."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    text = texts[0] if texts else None
    value = result.structured_content
    is_error, single = bool(result.is_error), len(result.content) == 1

    def envelope() -> dict[str, Any]:
        return {"isError": is_error, "textIsReply": single and text is not None and _text_is(text, value)}

    return Reply(value, text, envelope_of=envelope)


def _text_is(text: str, value: Any) -> bool:
    # Fast path first: a server that writes the object it put in structuredContent produces
    # exactly this text, and a deep comparison of every task costs more than the rest of the call.
    if text == dumps_wire(value):
        return True
    try:
        return _same_json(json.loads(text), value)
    except ValueError:
        return False


# --------------------------------------------------------------------------- connections


class Connection:
    """One MCP client connection, held open by a task on the portal's event loop.

    Construction starts it; ``wait()`` blocks until the server has answered (or raises
    why it did not), so a target can start connections ahead of need (prefetch).
    """

    def __init__(self, portal: BlockingPortal, make_transport: Callable[[], Any], mode: str, timeout: float,
                 startup_timeout: float, info: ProcessInfo | None = None, wait: bool = True,
                 address: str = "") -> None:  # fmt: skip
        self._portal = portal
        self.address = address  # where an HTTP server should answer, for the message when none does
        self._make_transport = make_transport
        self._mode = mode
        self.timeout = timeout
        self.info = info
        self.broken: str | None = None
        self._stop: anyio.Event | None = None
        self._client: Client | None = None
        self._ready = threading.Event()  # set once connected, or once the attempt is over
        self._failure: Exception | None = None
        self._loop: asyncio.AbstractEventLoop = portal.call(asyncio.get_running_loop)
        self._holder = portal.start_task_soon(self._hold, startup_timeout)
        self._holder.add_done_callback(lambda _: self._ready.set())
        if wait:
            self.wait()

    def wait(self) -> Connection:
        self._ready.wait()
        if self._client is None:
            if self._failure is None:
                exc = self._holder.exception() if not self._holder.cancelled() else None
                self._failure = self._startup_error(exc or RuntimeError("the connection was cancelled"))
            raise self._failure
        return self

    async def _hold(self, startup_timeout: float) -> None:
        self._stop = anyio.Event()
        # One scope around the whole connection, its deadline lifted once the server
        # answered: the Client's task groups must nest inside it, not straddle it.
        with anyio.CancelScope(deadline=anyio.current_time() + startup_timeout) as scope:
            async with Client(
                self._make_transport(),
                mode=self._mode,
                cache=None,  # tools/call is not cacheable; nothing to gain from a cache
                client_info=types.Implementation(name="intentref-conformance", version="0.1.0"),
            ) as client:
                await client.list_tools()  # a real round trip: the server is up and serving
                scope.deadline = math.inf
                self._client = client
                self._ready.set()
                await self._stop.wait()
        if scope.cancelled_caught and self._client is None:
            raise TimeoutError("the server did not answer in time")

    def _startup_error(self, exc: BaseException) -> Exception:
        root = _root(exc)
        if self.info is None:
            if isinstance(root, httpx2.ConnectError):  # nothing listens there: no case can run
                return TargetCannotStart(f"nothing answers at {self.address or 'the server address'} ({_describe(exc)})")
            return RuntimeError(f"could not connect: {_describe(exc)}")
        if self.info.pid is None:
            if isinstance(root, OSError):  # the process was never created: the command cannot run at all
                return TargetCannotStart(f"cannot run {self.info.argv[0]!r}: {root.strerror or root}")
            return RuntimeError(f"the server did not start ({_describe(exc)}): {self.info.hint()}")
        deadline = time.monotonic() + PROCESS_REAP_WAIT
        while self.info.returncode is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the transport records the status once the process is reaped
        fault = _CONFIG_FAULT.search(self.info.stderr_text())
        if self.info.returncode == 2 or fault is not None:
            # The command's answer to a configuration it refuses (intent-runtime-mcp: status 2
            # and one line naming file, pointer and code); MCP carries nothing more (D-CNF-003).
            error: dict[str, Any] = {"message": self.info.hint()}
            if fault is not None:
                error = {"code": fault["code"], "message": fault["message"]}
            return ConfigRejected(error)
        if self.info.returncode is not None:
            return ServerExited(f"the server exited before answering ({self.info.hint()})")
        return RuntimeError(f"the server did not start ({_describe(exc)}): {self.info.hint()}")

    def call(self, tool: str, arguments: Any) -> Reply:
        if self.broken is not None:
            raise RuntimeError(f"the connection is broken: {self.broken}")
        if not isinstance(arguments, dict):
            # tools/call carries its arguments as an object; a request that is not one can be
            # put to a Bridge directly, never through MCP.
            raise TargetUnsupported(f"MCP tool arguments are an object, and this request is a {type(arguments).__name__}")
        try:
            # Straight onto the loop: a blocking portal's call costs twice as much per hop,
            # and a suite makes thousands of them.
            result = asyncio.run_coroutine_threadsafe(self._call(tool, arguments), self._loop).result()
        except MCPError as exc:
            if exc.code == types.PARSE_ERROR and _has_lone_surrogate(arguments):
                # The server's JSON-RPC layer refused the escape before any tool ran (the
                # reference's handshake-era HTTP does, D-MCP-008): the question cannot be
                # asked over this transport, and the connection goes on (D-CNF-005).
                raise TargetUnsupported(
                    f"the server's JSON-RPC layer refused a lone-surrogate escape ({exc.message})"
                ) from None
            if exc.code not in _TRANSPORT_FAILURES:
                # An error response to this request: the protocol layer refused the call
                # and the connection goes on (seed 000 allows such a throw).
                raise ProtocolRefusal(f"a JSON-RPC error {exc.code}: {exc.message}"[:500], exc.code) from None
            raise self._broke(tool, exc) from None
        except Exception as exc:  # a timeout, a closed connection, a malformed answer
            raise self._broke(tool, exc) from None
        reply = reply_of(result)
        if result.is_error and not _is_bridge_reply(reply.value):
            # An SDK's own refusal (an input-schema check, say) dressed as a tool result.
            shown = (reply.text or "no text content").replace("\n", " ")
            raise ProtocolRefusal(f"an isError tool result that is not a BridgeReply: {shown}"[:500])
        return reply

    def _broke(self, tool: str, exc: BaseException) -> RuntimeError:
        self.broken = _describe(exc)
        if self.info is None:
            return RuntimeError(f"{tool} failed: {self.broken}")
        deadline = time.monotonic() + 1.0
        while self.info.returncode is None and time.monotonic() < deadline and not isinstance(exc, TimeoutError):
            time.sleep(0.01)  # a closed connection is usually a server that exited: say how
        return RuntimeError(f"{tool} failed: {self.broken} ({self.info.hint()})")

    async def _call(self, tool: str, arguments: Any) -> types.CallToolResult:
        assert self._client is not None
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments))
        with anyio.fail_after(self.timeout):
            # Not Client.call_tool: that validates structuredContent against the declared
            # outputSchema and raises; the suite's matchers judge the reply instead (D-CNF-005).
            return await self._client.session.send_request(request, types.CallToolResult)

    def close(self) -> None:
        self._ready.wait()  # a connection still starting is closed once it has started (or failed)
        stop, self._stop = self._stop, None
        if stop is None or self._client is None:
            return
        with contextlib.suppress(Exception):
            self._portal.call(stop.set)
            self._holder.result(timeout=3 * CLOSE_GRACE + 5)


# JSON-RPC error codes that say the connection failed, not that the server refused the call.
_TRANSPORT_FAILURES: Final = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})


def _is_bridge_reply(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("task", "result", "error")


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _root(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "no answer within the timeout"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_TOOLS: Final = {"prepare": "intent_prepare", "accept": "intent_accept", "cancel": "intent_cancel"}


class _OwnSession:
    """A session that is its connection: closing it closes the connection."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def prepare(self, request: Any) -> Reply:
        return self._connection.call("intent_prepare", request)

    def accept(self, request: Any) -> Reply:
        return self._connection.call("intent_accept", request)

    def cancel(self, request: Any) -> Reply:
        return self._connection.call("intent_cancel", request)

    def close(self) -> None:
        self._connection.close()


class _SharedSession(CallSession):
    """A case's session on a connection that outlives the case (D-CNF-002).

    It remembers the jobs the case may have left active, and ``release()`` cancels them so
    that the next case on the connection starts with nothing of this one's still active.
    """

    def __init__(self, owner: _SharedOwner, connection: Connection) -> None:
        self._owner = owner
        self._connection = connection
        self._jobs: dict[str, None] = {}  # insertion-ordered set

    def _call(self, op: str, request: Any) -> Reply:
        reply = self._connection.call(_TOOLS[op], request)
        value = reply.value
        job = request.get("jobId") if isinstance(request, dict) else None
        if isinstance(value, dict) and value.get("kind") == "task" and isinstance(value.get("jobId"), str):
            self._jobs[value["jobId"]] = None
        elif isinstance(value, dict) and value.get("kind") == "result" and isinstance(job, str):
            self._jobs.pop(job, None)  # finished: nothing left to release
        return reply


    def release(self) -> None:
        try:
            for job in self._jobs:
                self._connection.call("intent_cancel", {"jobId": job})  # a terminal job just repeats its reply
        finally:
            self._jobs.clear()
            self._owner.released(self)

    def close(self) -> None:
        self._owner.closed(self)


class _SharedOwner:
    def released(self, session: _SharedSession) -> None: ...
    def closed(self, session: _SharedSession) -> None: ...


# --------------------------------------------------------------------------- the event loop


class _Portal:
    """One background event loop per target, started on first use."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()

    def get(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                self._portal = self._stack.enter_context(start_blocking_portal(backend="asyncio"))
            return self._portal

    def close(self) -> None:
        with self._lock:
            portal, self._portal = self._portal, None
            if portal is not None:
                # Cancel whatever a caller left open (a run never closed): a plain exit would
                # wait for those connections forever.  Their transports still stop their servers.
                with contextlib.suppress(RuntimeError):
                    portal.call(portal.stop, True)
            self._stack.close()


# --------------------------------------------------------------------------- stdio


class StdioTarget:
    """An MCP server spawned per run over stdio, driven by the SDK Client in one era.

    ``command`` is a template (see :class:`CommandTemplate`); ``"{config}"`` becomes the
    path of a ``{"instances": ...}`` file written for the run.
    """

    transport = "mcp"
    capabilities: frozenset[str]  # set by reference() only; another server is probed (D-CNF-030)

    def __init__(
        self,
        command: str | CommandTemplate,
        era: str = "2026",
        timeout: float = DEFAULT_TIMEOUT,
        name: str | None = None,
        env: dict[str, str] | None = None,
        _zygote: Zygote | None = None,
    ) -> None:
        if era not in ERAS:
            raise ValueError(f"era must be one of {sorted(ERAS)}, got {era!r}")
        self.template = command if isinstance(command, CommandTemplate) else CommandTemplate.parse(command)
        if "config" not in self.template.placeholders():
            raise ValueError("the server command must contain {config}, the path of the instances file")
        self.era = era
        self.timeout = timeout
        self.startup_timeout = max(3 * timeout, 60.0)  # a cold start imports the whole SDK
        self.env = dict(os.environ) if env is None else env
        self.name = name or f"stdio: {self.template.display()} ({era})"
        self._portal = _Portal()
        self._zygote = _zygote
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-stdio-")
        self._runs = 0
        self.parallel_runs = PARALLEL_RUNS
        self.shared_runs = SHARED_RUNS
        self.prefetch = PREFETCH
        self._lock = threading.Lock()  # open() is called from the runner's worker threads
        self._planned: collections.deque[tuple[str, dict[str, Any], dict[str, Any]]] = collections.deque()
        self._warm: collections.deque[tuple[str, str, list[str], Connection]] = collections.deque()

    @classmethod
    def reference(cls, era: str = "2026", timeout: float = DEFAULT_TIMEOUT, fork: bool = True) -> StdioTarget:
        """The bundled ``intent-runtime-mcp``.

        ``fork`` (the default) forks each server process from a pre-imported zygote instead
        of starting the console script cold: same code, same pipes, a fraction of the
        start-up (D-CNF-006).
        """
        from intentref.suite.conformance.targets import REFERENCE_CAPABILITIES

        if not fork:
            template = CommandTemplate.parse(REFERENCE_ARGS, prefix=reference_program())
            target = cls(template, era, timeout, name=f"reference over stdio ({era})")
        else:
            zygote = Zygote(max(3 * timeout, 60.0))
            template = CommandTemplate.parse(REFERENCE_ARGS)  # the console script's arguments
            target = cls(template, era, timeout, name=f"reference over stdio ({era}, forked)", _zygote=zygote)
        target.capabilities = REFERENCE_CAPABILITIES  # D-CNF-030: what the bundled CLI takes
        return target

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return self.template.unsupported(bridge_options)

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        setup = case.get("setup")
        if setup is not None and "expect" in setup and not verdict_only(setup["expect"]):
            return ("inspects the configuration error, which MCP does not carry: the server only "
                    "refuses to start (D-CNF-003)")  # fmt: skip
        if case.get("bridge") and connections_of(case) > 1:
            return ("needs two connections to one Bridge with these options; over stdio each connection "
                    "is its own server process (D-CNF-001)")  # fmt: skip
        return None

    def _write_config(self, instances: dict[str, Any]) -> str:
        self._runs += 1
        path = os.path.join(self._dir.name, f"run-{self._runs}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        return path

    def spawn(self, argv: list[str], wait: bool = True) -> Connection:
        info = ProcessInfo(argv)
        zygote, env = self._zygote, self.env

        def start() -> Any:
            if zygote is not None:
                return ForkedProcess.start(zygote.socket, argv)
            return SpawnedProcess.start(argv, env)

        if zygote is not None:
            zygote.wait()
        return Connection(self._portal.get(), lambda: stdio_transport(info, start), ERAS[self.era], self.timeout,
                          self.startup_timeout, info, wait=wait)  # fmt: skip

    # --- prefetch: the runner says which runs of their own come next ---------------------

    def expect_runs(self, runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """The runs (instances, options) that ``open`` will be asked for, in order.

        Their servers are started ``PREFETCH`` ahead, so a case with its own configuration
        waits for its process only when start-ups are slower than the cases themselves.
        """
        with self._lock:
            self._discard_warm()
            self._planned = collections.deque((_run_key(i, o), i, o) for i, o in runs)
            self._top_up()

    def _top_up(self) -> None:
        while self._planned and len(self._warm) < self.prefetch:
            key, instances, options = self._planned.popleft()
            config = self._write_config(instances)
            argv = self.template.render(config, options)
            self._warm.append((key, config, argv, self.spawn(argv, wait=False)))

    def _take_warm(self, key: str) -> tuple[str, list[str], Connection] | None:
        # The first started server of this configuration, wherever it stands: parallel
        # cases open their runs in nearly, not exactly, the planned order.
        for index, entry in enumerate(self._warm):
            if entry[0] == key:
                del self._warm[index]
                self._top_up()
                return entry[1], entry[2], entry[3]
        return None

    def _drop(self, entry: tuple[str, str, list[str], Connection]) -> None:
        entry[3].close()
        with contextlib.suppress(OSError):
            os.unlink(entry[1])

    def _discard_warm(self) -> None:
        while self._warm:
            self._drop(self._warm.popleft())

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        reason = self.unsupported(bridge_options)
        if reason is not None:
            raise TargetUnsupported(reason)
        with self._lock:
            warm = self._take_warm(_run_key(instances, bridge_options)) if self._warm else None
            if warm is not None:
                config, argv, connection = warm
            else:
                config = self._write_config(instances)
                argv = self.template.render(config, bridge_options)
                connection = None
        try:
            return _StdioRun(self, argv, config, connection)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(config)
            raise

    def close(self) -> None:
        with self._lock:
            self._planned.clear()
            self._discard_warm()
        self._portal.close()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        self._dir.cleanup()


def _run_key(instances: dict[str, Any], options: dict[str, Any]) -> str:
    return dumps_wire([instances, options])


class _StdioRun(_SharedOwner):
    """One configuration: a primary server process reused case after case, plus any extras."""

    def __init__(self, target: StdioTarget, argv: list[str], config: str, started: Connection | None = None) -> None:
        self._target = target
        self._argv = argv
        self._config = config
        # Waited for here, so a refused configuration shows at open.
        self._primary: Connection | None = started.wait() if started is not None else target.spawn(argv)
        self._busy = False
        self._extras: list[Connection] = []

    def connect(self) -> Session:
        if self._primary is not None and self._primary.broken is not None:
            self._primary.close()
            self._primary = None
        if self._primary is None:
            self._primary, self._busy = self._target.spawn(self._argv), False
        if not self._busy:
            self._busy = True
            return _SharedSession(self, self._primary)
        extra = self._target.spawn(self._argv)  # a second connection: a second process (D-CNF-001)
        self._extras.append(extra)
        return _OwnSession(extra)

    def released(self, session: _SharedSession) -> None:
        self._busy = False

    def closed(self, session: _SharedSession) -> None:
        # An explicit close step: the connection really ends, its Bridge session with it.
        if self._primary is not None:
            self._primary.close()
        self._primary, self._busy = None, False

    def close(self) -> None:
        for connection in [*self._extras, *([self._primary] if self._primary else [])]:
            connection.close()
        self._extras, self._primary = [], None
        with contextlib.suppress(OSError):
            os.unlink(self._config)


# --------------------------------------------------------------------------- streamable HTTP


class HttpTarget:
    """A server already listening on streamable HTTP; its configuration is its own.

    The server must serve ``conformance/instances.json`` (``--http-reference`` starts the
    bundled one so).  Handshake era: each session is its own MCP session.  2026-07-28 era:
    requests carry no session, one Bridge session owns every job (D-MCP-003), so cases
    needing several connections or a close are unsupported (D-CNF-004).
    """

    transport = "mcp"
    # Its instances are the server's own: the CLI checks it serves the suite's first (D-CNF-013).
    configured_elsewhere = True

    def __init__(self, url: str, era: str = "2026", timeout: float = DEFAULT_TIMEOUT, name: str | None = None) -> None:
        if era not in ERAS:
            raise ValueError(f"era must be one of {sorted(ERAS)}, got {era!r}")
        self.url = url
        self.era = era
        self.timeout = timeout
        self.name = name or f"http: {url} ({era})"
        self._portal = _Portal()

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        if bridge_options:
            return "an HTTP server is already configured; Bridge options cannot be set per case"
        return None

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        if "setup" in case:
            return "an HTTP server is already configured; its instances cannot be replaced per case"
        if self.era == "2026" and (connections_of(case) > 1 or any(s["op"] == "close" for s in case["steps"])):
            return ("needs separate connections or a close; 2026-07-28 HTTP requests carry no session and "
                    "share one Bridge session (D-MCP-003, D-CNF-004)")  # fmt: skip
        return None

    def connection(self) -> Connection:
        def transport() -> Any:
            return _http_transport(self.url, self.timeout)

        return Connection(self._portal.get(), transport, ERAS[self.era], self.timeout, max(3 * self.timeout, 30.0),
                          address=self.url)  # fmt: skip

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        if bridge_options:
            raise TargetUnsupported(self.unsupported(bridge_options) or "")
        return _HttpRun(self)

    def close(self) -> None:
        self._portal.close()


@contextlib.asynccontextmanager
async def _http_transport(url: str, timeout: float) -> AsyncIterator[Any]:
    # No keep-alive: a server that sends its response head and body in two segments with
    # Nagle on stalls every reused connection for a delayed ACK (40 ms on Linux, measured
    # against the reference); a fresh loopback connection per request costs far less.
    http = WireHttpClient(timeout=httpx2.Timeout(max(timeout, 30.0), read=300.0),
                          limits=httpx2.Limits(max_keepalive_connections=0))  # fmt: skip
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


class _HttpRun(_SharedOwner):
    def __init__(self, target: HttpTarget) -> None:
        self._target = target
        # 2026-07-28: one stateless client for the run; legacy: a session per connect().
        self._shared = target.connection() if target.era == "2026" else None
        self._own: list[Connection] = []

    def connect(self) -> Session:
        if self._shared is not None:
            if self._shared.broken is not None:
                self._shared.close()
                self._shared = self._target.connection()
            return _SharedSession(self, self._shared)
        connection = self._target.connection()
        self._own.append(connection)
        return _OwnSession(connection)

    def closed(self, session: _SharedSession) -> None:
        session.release()  # nothing to close: the era has no connection (unsupported_case keeps such cases out)

    def close(self) -> None:
        for connection in [*self._own, *([self._shared] if self._shared else [])]:
            connection.close()
        self._own, self._shared = [], None


class HttpReference:
    """The bundled server on streamable HTTP at 127.0.0.1 (an ephemeral port), serving ``instances``."""

    def __init__(self, instances: dict[str, Any], startup_timeout: float = 60.0) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-http-")
        config = os.path.join(self._dir.name, "instances.json")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        self.proc = subprocess.Popen(
            [*reference_program(), "--config", config, "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self._stderr: list[str] = []
        found = threading.Event()
        self.url = ""

        def drain() -> None:
            assert self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                self._stderr.append(line)
                # mcp_cli prints the bound endpoint on stderr once it serves.
                match = re.search(r"serving streamable HTTP at (http://\S+)", line)
                if match and not self.url:
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True, name="http reference stderr").start()
        if not found.wait(startup_timeout) or not self.url:
            self.close()
            raise RuntimeError(f"the reference HTTP server did not start: {''.join(self._stderr)[-2000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._dir.cleanup()
