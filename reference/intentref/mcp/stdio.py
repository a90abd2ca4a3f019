"""The MCP server's stdio transport: JSON-RPC lines on this process's stdin and stdout.

What may live here: reading lines from fd 0, writing messages to fd 1, and turning a line
into a ``SessionMessage`` (or the exception that says why not).  Nothing about tools or
the Bridge.  Decisions: D-MCP-008 (lone surrogates), D-MCP-011 (how the descriptors are
read and written).

Why not ``mcp.server.stdio.stdio_server``: it reads and writes through anyio worker
threads, three thread hand-offs per request (read, write, flush) that cost more CPU than
the Bridge's own work on a typical call, and its stdin thread cannot be cancelled, so a
SIGTERM with the client's pipe still open hangs the process.  Here a pipe or socket is
read and written on the event loop itself (non-blocking descriptors, ``wait_readable`` /
``wait_writable``); a terminal keeps a daemon reader thread, a regular file is read
directly.  The message framing and encoding are the SDK's (one ``model_dump_json`` line
per message, UTF-8, ``errors="replace"`` on input), and fd 0 / fd 1 are diverted while
serving as the SDK does, so a stray ``print`` cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import stat
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError as PydanticValidationError

from intentref.core.limits import has_lone_surrogate
from intentref.mcp._fdio import READ_CHUNK, read_chunks, write_all

logger = logging.getLogger(__name__)

# Messages queued between the reader and the server; the reader waits beyond this, so a
# client writing faster than the server answers is slowed down rather than buffered.
READ_QUEUE: Final = 16
# Seconds the writer gets, once the server is done, to finish the line it is writing.
WRITE_GRACE: Final = 5.0
# D-MCP-018: the longest input line kept.  The same bound as an HTTP request body
# (D-MCP-009), so a 10 MB candidate still reaches the Bridge and gets its LIMIT_EXCEEDED
# reply; a longer line is skipped up to its newline without being held, and answered
# with LINE_TOO_LONG_CODE.
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
# JSON-RPC 2.0: -32700 for text that is not JSON, -32600 for a request that cannot be one.
PARSE_ERROR_CODE: Final = -32700
LINE_TOO_LONG_CODE: Final = -32600


class OverlongLine:
    """What the splitter yields in place of a line longer than its limit (D-MCP-018)."""

    def __init__(self, length: int) -> None:
        self.length = length  # bytes seen before the newline; none of them were kept


# --------------------------------------------------------------------------- decoding one line


def recover_tool_call(item: Exception) -> SessionMessage | None:
    """Re-read a ``tools/call`` line pydantic refused only for a lone surrogate in its arguments.

    pydantic's JSON parser rejects ``"\\ud800"`` escapes, so the SDK would drop such a call
    without any answer and its client would wait forever.  The standard library parses
    them, and the call then reaches the Bridge, which owns the verdict (D-MCP-008).  Only
    the arguments and the tool name may hold one: neither is echoed raw, whereas a
    surrogate in the id would make the response itself unsendable.
    """
    if not isinstance(item, PydanticValidationError):
        return None
    errors = item.errors(include_url=False)
    if (
        len(errors) != 1
        or errors[0].get("type") != "json_invalid"
        or not isinstance(errors[0].get("input"), str)
    ):
        return None
    try:
        message = json.loads(errors[0]["input"])
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    rest = {**message, "params": {k: v for k, v in params.items() if k not in ("arguments", "name")}}
    if has_lone_surrogate(rest) or not has_lone_surrogate(params):
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except PydanticValidationError:
        return None


def decode_line(line: bytes) -> SessionMessage | Exception:
    """One input line as the server reads it: the SDK's decoding and validation, plus D-MCP-008."""
    text = line.decode("utf-8", errors="replace")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except Exception as exc:  # the server session answers a malformed line itself
        return recover_tool_call(exc) or exc


def _error_message(code: int, message: str) -> SessionMessage:
    # id null: the request's id could not be read (JSON-RPC 2.0, section 5).
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)))


def read_line(line: bytes | OverlongLine) -> SessionMessage | Exception:
    """What one input item becomes: a message for the server, or an error reply for the client.

    An overlong line, and a line that is not JSON at all, are answered here with a
    JSON-RPC error of id null (D-MCP-018): the SDK's session would log either and answer
    nothing, leaving its client waiting.  The happy path parses once; only a line the
    SDK refused is parsed again, to tell "not JSON" from "JSON but not a message".
    """
    if isinstance(line, OverlongLine):
        return _error_message(
            LINE_TOO_LONG_CODE, f"Invalid Request: the line is longer than {MAX_LINE_BYTES} bytes and was skipped."
        )
    decoded = decode_line(line)
    if isinstance(decoded, SessionMessage):
        return decoded
    return _parse_refusal(line) or decoded


def _parse_refusal(line: bytes) -> SessionMessage | None:
    try:
        json.loads(line)
    except RecursionError:
        return _error_message(PARSE_ERROR_CODE, "Parse error: the JSON is nested too deeply to read.")
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        return _error_message(PARSE_ERROR_CODE, "Parse error: the line is not a JSON text.")
    return None


def encode_message(message: SessionMessage) -> bytes:
    """One output line: the SDK's serialisation of a JSON-RPC message, newline-terminated."""
    return (message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- descriptors


def _pollable(fd: int) -> bool:
    """A pipe or socket: the event loop can wait on it (a regular file or terminal it cannot, or should not)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _claimed(fd: int, diversion: int) -> Iterator[int]:
    """A private duplicate of ``fd`` for the wire, with ``fd`` itself pointed at ``diversion``.

    Same contract as the SDK's stdio server: while serving, fd 0 reads the null device and
    fd 1 writes to stderr, so code that touches the standard descriptors misses the wire.
    """
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    try:
        yield private
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, fd)
        with contextlib.suppress(OSError):
            os.close(private)


@contextlib.contextmanager
def _non_blocking(fd: int, unless_shared_with: int | None = None) -> Iterator[bool]:
    """Make a pollable ``fd`` non-blocking for the duration; yields whether it is.

    Not when it is the same pipe as ``unless_shared_with`` (stdout and stderr on one pipe):
    O_NONBLOCK belongs to the open file, and stderr's writers expect blocking writes.
    """
    shared = unless_shared_with is not None and os.path.sameopenfile(fd, unless_shared_with)
    if shared or not _pollable(fd):
        yield False
        return
    was_blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        yield True
    finally:
        # The open file description may be shared with whoever started us.
        with contextlib.suppress(OSError):
            os.set_blocking(fd, was_blocking)


class _ThreadLines:
    """Lines of a descriptor the loop cannot wait on (a terminal), read by a daemon thread.

    A daemon thread does not hold up exit, and raw ``os.read`` calls take no buffered-object
    lock that interpreter shutdown could trip over (D-MCP-011).  After ``stop()`` the thread
    hands nothing more over and ends at its next read.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: asyncio.Queue[bytes | OverlongLine | None] = asyncio.Queue(maxsize=READ_QUEUE)
        self._loop = asyncio.get_running_loop()
        self._stopped = threading.Event()
        threading.Thread(target=self._pump, name="intent-runtime-mcp stdin", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()

    def _put(self, item: bytes | OverlongLine | None) -> bool:
        try:
            future = asyncio.run_coroutine_threadsafe(self._queue.put(item), self._loop)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        while not self._stopped.is_set():
            try:
                future.result(timeout=0.1)
                return True
            except TimeoutError:
                continue
            except Exception:
                return False
        future.cancel()
        return False

    def _pump(self) -> None:
        splitter = _LineSplitter()
        try:
            while not self._stopped.is_set():
                chunk = os.read(self._fd, READ_CHUNK)
                if not chunk:
                    break
                for line in splitter.feed(chunk):
                    if not self._put(line):
                        return
        except OSError:
            logger.debug("stdin read failed; treating as end of input", exc_info=True)
        rest = splitter.rest()
        if rest and not self._put(rest):
            return
        self._put(None)

    async def lines(self) -> AsyncIterator[bytes | OverlongLine]:
        while (line := await self._queue.get()) is not None:
            yield line


class _LineSplitter:
    """Newline framing over chunks; only each new chunk is searched, so a 10 MB line is not rescanned.

    A line longer than ``limit`` is not accumulated: its bytes are counted and dropped up to
    its newline, and an OverlongLine stands in its place (D-MCP-018).
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._limit = limit
        self._skipped: int | None = None  # bytes of an overlong line dropped so far

    def _take(self, part: bytes | memoryview) -> None:
        if self._skipped is not None:
            self._skipped += len(part)
        elif len(self._pending) + len(part) > self._limit:
            self._skipped = len(self._pending) + len(part)
            self._pending = bytearray()  # release the memory, not only the length
        else:
            self._pending += part

    def feed(self, chunk: bytes) -> list[bytes | OverlongLine]:
        lines: list[bytes | OverlongLine] = []
        view = memoryview(chunk)
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._take(view[start:end])
            if self._skipped is not None:
                lines.append(OverlongLine(self._skipped))
                self._skipped = None
            else:
                lines.append(bytes(self._pending))
                self._pending.clear()
            start = end + 1
        self._take(view[start:])
        return lines

    def rest(self) -> bytes | OverlongLine:
        if self._skipped is not None:
            return OverlongLine(self._skipped)
        return bytes(self._pending)


async def _read_lines(fd: int, pollable: bool) -> AsyncIterator[bytes | OverlongLine]:
    """Lines of ``fd`` until end of input; the last one may lack its newline."""
    if not pollable and os.isatty(fd):
        reader = _ThreadLines(fd)
        try:
            async for line in reader.lines():
                yield line
        finally:
            reader.stop()
        return
    splitter = _LineSplitter()
    async for chunk in read_chunks(fd):
        for line in splitter.feed(chunk):
            yield line
        if not pollable:
            await anyio.lowlevel.checkpoint()  # a regular file never blocks: let the server run
    if rest := splitter.rest():
        yield rest


# --------------------------------------------------------------------------- the transport


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` over this process's stdin and stdout, for ``Server.run``.

    The read stream ends at end of input; leaving the context stops both directions and
    restores fd 0 and fd 1.
    """
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        with _claimed(0, null) as wire_in, _claimed(1, 2) as wire_out, \
                _non_blocking(wire_in) as in_pollable, _non_blocking(wire_out, unless_shared_with=2):  # fmt: skip
            read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](READ_QUEUE)
            write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

            refusals = write_send.clone()  # the reader's own way to the client (D-MCP-018)

            async def read() -> None:
                async with read_send, refusals:
                    async for line in _read_lines(wire_in, in_pollable):
                        if isinstance(line, bytes) and not line.strip():
                            continue
                        item = read_line(line)
                        try:
                            if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCError):
                                await refusals.send(item)
                            else:
                                await read_send.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return  # the transport is stopping

            written = anyio.Event()

            async def write() -> None:
                try:
                    async with write_receive:
                        async for message in write_receive:
                            await write_all(wire_out, encode_message(message))
                except OSError:
                    # The client is gone: nothing more can be said to it; input's end follows.
                    logger.debug("stdout write failed", exc_info=True)
                finally:
                    written.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                tg.start_soon(write)
                try:
                    yield read_receive, write_send
                finally:
                    # The last reply may still be on its way out: let it finish, then stop.
                    write_send.close()
                    refusals.close()
                    with anyio.move_on_after(WRITE_GRACE, shield=True):
                        await written.wait()
                    tg.cancel_scope.cancel()
    finally:
        os.close(null)
