"""The stdio transport of the MCP targets: a ``mcp.Client`` Transport over a server process's stdin/stdout.

The process is either spawned (``SpawnedProcess``, any command) or forked from the reference
zygote (``zygote.ForkedProcess``): the same pipes and JSON-RPC lines either way, only the
start-up differs (D-CNF-006).

JSON is written as a JavaScript host writes it: the SDK's own writer goes through pydantic,
which cannot encode a lone surrogate at all, while ``JSON.stringify`` sends it as its
``\\uXXXX`` escape (D-CNF-005).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from intentref.suite.targets.base import STDERR_TAIL
from intentref.suite.targets.harness import dumps_wire
from intentref.suite.targets.recording import RECEIVED, SENT

CLOSE_GRACE: Final = 2.0  # seconds a server gets after its stdin closes (then SIGTERM, then SIGKILL)


@dataclass
class ProcessInfo:
    """What a stdio transport learnt about its server process, for diagnostics."""

    argv: list[str]
    pid: int | None = None
    returncode: int | None = None
    stderr: bytearray = field(default_factory=bytearray)

    def hint(self) -> str:
        tail = self.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        if self.pid is None:
            status = "the process never started"
        elif self.returncode is None:
            status = "still running"
        else:
            status = f"exit status {self.returncode}"
        return status + (f"; stderr: {' | '.join(tail)}" if tail else "")


class ServerProcess(Protocol):
    pid: int

    @property
    def returncode(self) -> int | None: ...
    async def write(self, data: bytes) -> None: ...
    async def close_stdin(self) -> None: ...
    def stdout(self) -> AsyncIterator[bytes]: ...
    def stderr(self) -> AsyncIterator[bytes]: ...
    async def watch(self) -> None: ...  # runs until the process has exited
    def signal(self, signum: int) -> None: ...
    async def aclose(self) -> None: ...

# --------------------------------------------------------------------------- spawned


class SpawnedProcess:
    """Any command, in a new session so a termination reaches everything it started."""

    def __init__(self, process: Any) -> None:
        self._process = process
        self.pid = int(process.pid)

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str] | None) -> SpawnedProcess:
        return cls(await anyio.open_process(argv, env=env, start_new_session=True))

    @property
    def returncode(self) -> int | None:
        code = self._process.returncode
        return None if code is None else int(code)

    async def write(self, data: bytes) -> None:
        await self._process.stdin.send(data)

    async def close_stdin(self) -> None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._process.stdin.aclose()

    async def _chunks(self, stream: Any) -> AsyncIterator[bytes]:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in stream:
                yield chunk

    def stdout(self) -> AsyncIterator[bytes]:
        return self._chunks(self._process.stdout)

    def stderr(self) -> AsyncIterator[bytes]:
        return self._chunks(self._process.stderr)

    async def watch(self) -> None:
        with contextlib.suppress(Exception):
            await self._process.wait()

    def signal(self, signum: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signum)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._process.aclose()


# --------------------------------------------------------------------------- the transport


def _parse_line(line: bytes) -> SessionMessage | Exception:
    # The standard library parser: it reads \ud800 escapes, which pydantic's refuses.
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except Exception as exc:
        return exc


def _wire_message(message: SessionMessage) -> bytes:
    data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return (dumps_wire(data) + "\n").encode("utf-8")


@contextlib.asynccontextmanager
async def stdio_transport(info: ProcessInfo, start: Callable[[], Awaitable[ServerProcess]]) -> AsyncIterator[Any]:
    """A Transport for ``mcp.Client`` over the stdin/stdout of the process ``start()`` gives.

    Shutdown follows the MCP sequence: close stdin, wait, SIGTERM, wait, SIGKILL.
    """
    process = await start()
    info.pid = process.pid
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](16)

    async def read_stdout() -> None:
        pending = b""
        async with read_send:
            async for chunk in process.stdout():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        try:
                            await read_send.send(_parse_line(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return

    async def write_stdin() -> None:
        try:
            async with write_receive:
                async for message in write_receive:
                    await process.write(_wire_message(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server is gone: let pending requests fail now

    async def read_stderr() -> None:
        async for chunk in process.stderr():
            info.stderr += chunk
            del info.stderr[:-STDERR_TAIL]

    async def watch() -> None:
        await process.watch()
        info.returncode = process.returncode

    async with anyio.create_task_group() as tg:
        for task in (read_stdout, write_stdin, read_stderr, watch):
            tg.start_soon(task)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                await process.close_stdin()
                for signum in (None, signal.SIGTERM, signal.SIGKILL):
                    if signum is not None:
                        process.signal(signum)
                    with anyio.move_on_after(CLOSE_GRACE):
                        while process.returncode is None:
                            await anyio.sleep(0.002)
                    if process.returncode is not None:
                        break
                info.returncode = process.returncode
                await read_receive.aclose()
            tg.cancel_scope.cancel()
    await process.aclose()


# --------------------------------------------------------------------------- recording (--trace)


def message_json(message: SessionMessage) -> Any:
    """A JSON-RPC message as its JSON value, as the wire carries it (D-CNF-064)."""
    return message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)


class _Tapped:
    """One of the client's streams, telling ``tap_of()`` (when set) each message that passes."""

    def __init__(self, stream: Any, tap_of: Callable[[], Callable[[str, Any], None] | None]) -> None:
        self._stream = stream
        self._tap_of = tap_of

    async def __aenter__(self) -> Any:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _TappedSend(_Tapped):
    async def send(self, message: Any) -> None:
        tap = self._tap_of()
        if tap is not None and isinstance(message, SessionMessage):
            tap(SENT, message_json(message))
        await self._stream.send(message)


class _TappedReceive(_Tapped):
    def _heard(self, item: Any) -> Any:
        tap = self._tap_of()
        if tap is not None:
            tap(RECEIVED, message_json(item) if isinstance(item, SessionMessage) else {"unreadable": str(item)})
        return item

    async def receive(self) -> Any:
        return self._heard(await self._stream.receive())

    def __aiter__(self) -> _TappedReceive:
        return self

    async def __anext__(self) -> Any:
        return self._heard(await self._stream.__anext__())


@contextlib.asynccontextmanager
async def tapped(transport: Any, tap_of: Callable[[], Callable[[str, Any], None] | None]) -> AsyncIterator[Any]:
    """``transport`` (stdio or streamable HTTP) with its two streams telling ``tap_of()`` what they carry.

    Only a connection made while ``--trace`` is on is wrapped; ``tap_of()`` is None between
    the cases that record, so the handshake and other cases' messages are not kept.
    """
    async with transport as (read_stream, write_stream):
        yield _TappedReceive(read_stream, tap_of), _TappedSend(write_stream, tap_of)
