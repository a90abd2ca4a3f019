"""Client transports for the MCP targets: server processes on stdio pipes, and HTTP connections and bodies.

``stdio_transport`` is a ``mcp.Client`` Transport over a server process's stdin/stdout.
The process is either spawned (any command) or forked from the reference zygote
(``intentref.suite.targets.zygote``): the same pipes and JSON-RPC lines either way, only
the start-up differs (D-CNF-006).

Over HTTP the runner keeps connections alive, as hosts' clients do, unless the server holds
its replies back on a kept-alive connection (``probe_connections``, D-CNF-056).

Both transports write JSON as a JavaScript host does: the SDK's own writers go through
pydantic or httpx2, which cannot encode a lone surrogate at all, while ``JSON.stringify``
sends it as its ``\\uXXXX`` escape (D-CNF-005).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import anyio
import httpx2
import mcp_types as types
from mcp.shared.message import SessionMessage

from intentref.mcp._fdio import read_chunks, write_all
from intentref.suite.targets.harness import dumps_wire

_STDERR_TAIL: Final = 64 * 1024
CLOSE_GRACE: Final = 2.0  # seconds a server gets after its stdin closes (then SIGTERM, then SIGKILL)


@dataclass
class ProcessInfo:
    """What a stdio transport learnt about its server process, for diagnostics."""

    argv: list[str]
    pid: int | None = None
    returncode: int | None = None
    stderr: bytearray = field(default_factory=bytearray)

    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def hint(self) -> str:
        tail = self.stderr_text().strip().splitlines()[-5:]
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


# --------------------------------------------------------------------------- raw descriptors


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


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


# --------------------------------------------------------------------------- forked


class ForkedProcess:
    """A reference server forked by the zygote onto three fresh pipes (D-CNF-006)."""

    def __init__(self, sock: socket.socket, pid: int, stdin: int, stdout: int, stderr: int) -> None:
        self._sock = sock
        self.pid = pid
        self._stdin: int | None = stdin
        self._stdout = stdout
        self._stderr = stderr
        self._returncode: int | None = None
        self._pending = b""  # the part of the status line read so far

    @classmethod
    async def start(cls, socket_path: str, argv: list[str], startup_timeout: float = 60.0) -> ForkedProcess:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            sock = await _zygote_connection(socket_path, startup_timeout)
            try:
                header = json.dumps({"argv": argv, "cwd": os.getcwd()}).encode("utf-8") + b"\n"
                socket.send_fds(sock, [header], [in_r, out_w, err_w])
            except BaseException:
                sock.close()
                raise
        except BaseException:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                _close_fd(fd)
            raise
        for fd in (in_r, out_w, err_w):
            os.close(fd)  # the server's ends: only the server may hold them, or EOF never comes
        for fd in (in_w, out_r, err_r):
            os.set_blocking(fd, False)
        sock.setblocking(False)
        process = cls(sock, 0, in_w, out_r, err_r)
        line = await process._line()
        if not line:
            await process.aclose()
            raise OSError("the zygote did not fork a server")
        process.pid = int(line)
        return process

    def _take_line(self) -> bytes | None:
        line, newline, rest = self._pending.partition(b"\n")
        if not newline:
            return None
        self._pending = rest
        return line

    async def _line(self) -> bytes:
        """The next line from the zygote (the pid, then the exit status); b"" if it hung up."""
        while (line := self._take_line()) is None:
            try:
                chunk = self._sock.recv(64)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
                continue
            except OSError:
                return b""
            if not chunk:
                return b""
            self._pending += chunk
        return line

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            self._poll()  # the watcher may have been cancelled: read the status without it
        return self._returncode

    def _poll(self) -> None:
        line = self._take_line()
        if line is None:
            try:
                data = self._sock.recv(64)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # the zygote hung up without a status
                self._returncode = -1
                return
            self._pending += data
            line = self._take_line()
        if line is not None:
            self._returncode = int(line) if line.strip() else -1

    async def write(self, data: bytes) -> None:
        if self._stdin is None:
            raise anyio.ClosedResourceError
        await write_all(self._stdin, data)

    async def close_stdin(self) -> None:
        fd, self._stdin = self._stdin, None
        _close_fd(fd)

    def stdout(self) -> AsyncIterator[bytes]:
        return read_chunks(self._stdout)

    def stderr(self) -> AsyncIterator[bytes]:
        return read_chunks(self._stderr)

    async def watch(self) -> None:
        while self.returncode is None:  # the zygote writes the status when it reaps the server
            await anyio.wait_readable(self._sock)

    def signal(self, signum: int) -> None:
        if self._returncode is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signum)

    async def aclose(self) -> None:
        await self.close_stdin()
        _close_fd(self._stdout)
        _close_fd(self._stderr)
        self._sock.close()  # the zygote kills a server whose client hung up


async def _zygote_connection(socket_path: str, startup_timeout: float) -> socket.socket:
    """A connection to the zygote at ``socket_path``, waiting for it while it still starts.

    The zygote binds its socket only once it has imported everything, so a worker that
    asks early waits here instead of failing (D-CNF-006).
    """
    deadline = anyio.current_time() + startup_timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(socket_path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if anyio.current_time() >= deadline:
                raise OSError(f"the reference zygote at {socket_path} did not start within {startup_timeout:g} s") from None
            await anyio.sleep(0.02)
        except BaseException:
            sock.close()
            raise


class ForkedServer:
    """A reference server forked by the zygote for a plain (not stdio) transport: HTTP.

    Its stdin and stdout are /dev/null; ``stderr`` is a file object the caller reads (the
    server names its endpoint there).  Closing hangs up on the zygote, which stops it.
    """

    def __init__(self, socket_path: str, argv: list[str], startup_timeout: float = 60.0) -> None:
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            self._sock = anyio.run(_zygote_connection, socket_path, startup_timeout)
            header = json.dumps({"argv": argv, "cwd": os.getcwd()}).encode("utf-8") + b"\n"
            socket.send_fds(self._sock, [header], [null, null, err_w])
        except BaseException:
            _close_fd(err_r)
            raise
        finally:
            _close_fd(err_w)
            _close_fd(null)
        self.stderr = os.fdopen(err_r, "rb")
        pid = self._sock.makefile("rb").readline().strip()
        self.pid = int(pid) if pid else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()  # the zygote stops a server whose client hung up
        with contextlib.suppress(OSError):
            self.stderr.close()


class Zygote:
    """The pre-imported parent of the bundled reference's servers (D-CNF-006).

    Started here; ``wait()`` blocks until it is ready (once).  ``socket`` may be handed to
    other processes (the runner's workers), which fork servers from the same zygote.
    """

    def __init__(self, startup_timeout: float) -> None:
        from intentref.suite.targets.zygote import READY

        self._dir = tempfile.TemporaryDirectory(prefix="intentref-zygote-")
        self.socket = os.path.join(self._dir.name, "zygote.sock")
        self._log = open(os.path.join(self._dir.name, "zygote.log"), "wb")  # noqa: SIM115 -- lives with the zygote
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "intentref.suite.targets.zygote", self.socket],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,  # a Ctrl-C reaches the runner, which then stops it
        )  # fmt: skip
        self._ready_word = READY
        self._timeout = startup_timeout
        self._ready = False
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            if self._ready:
                return
            assert self.proc.stdout is not None
            readable, _, _ = select.select([self.proc.stdout], [], [], self._timeout)
            if readable and self.proc.stdout.readline().decode().strip() == self._ready_word:
                self._ready = True
                return
        log = Path(self._log.name).read_text("utf-8", "replace")[-2000:]
        raise RuntimeError(f"the reference zygote did not start (exit {self.proc.poll()}): {log}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # end of input: the zygote kills its children and exits
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        self._dir.cleanup()


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
            del info.stderr[:-_STDERR_TAIL]

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


class WireHttpClient(httpx2.AsyncClient):
    """An httpx2 client whose JSON bodies are written as a JavaScript host writes them (D-CNF-005)."""

    def build_request(self, method: str, url: Any, **kwargs: Any) -> httpx2.Request:
        if kwargs.get("json") is not None:
            body = dumps_wire(kwargs.pop("json")).encode("utf-8")
            # Case-insensitive: the SDK names it "content-type", and a second Content-Type
            # ("application/json, application/json" on the wire) is refused with 415 by the
            # TypeScript SDK's server.
            headers = httpx2.Headers(kwargs.pop("headers", None) or {})
            if "content-type" not in headers:
                headers["Content-Type"] = "application/json"
            kwargs["content"], kwargs["headers"] = body, headers
        return super().build_request(method, url, **kwargs)


# --------------------------------------------------------------------------- HTTP connections

# Small writes leave at once: a request's head and body are two writes.
NODELAY: Final = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)
# Requests per side of the probe; the first opens the connection and is not counted.
PROBE_REQUESTS: Final = 5
# A kept-alive reply this much slower than a fresh connection's is held back by the server
# (Nagle's algorithm against a delayed ACK costs about 40 ms on Linux); a server that is just
# slow is as slow on a fresh connection.
HELD_BACK_SECONDS: Final = 0.02
# The longest wait for one reply of the probe: a server that answers at all answers a ping in
# milliseconds, and one that does not is left to the run, which says why in its own words.
PROBE_TIMEOUT: Final = 2.0
# Any request will do: the probe times replies, whatever they say.  A ping opens no session.
_PROBE_BODY: Final = b'{"jsonrpc":"2.0","id":"intentref-connection-probe","method":"ping"}'
_PROBE_HEADERS: Final = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one verifying TLS context of this process's HTTP clients.

    httpx builds one per client unless it is given one, reading the CA bundle each time
    (about 20 ms): a run makes a client per connection and two for the probe, most of them
    for plain ``http://`` URLs that never use it.
    """
    return httpx2.create_ssl_context()


@dataclass(frozen=True)
class HttpConnections:
    """How the runner connects to one HTTP server (D-CNF-056)."""

    keep_alive: bool
    held_back: float = 0.0  # seconds the server held each reply on a kept-alive connection back

    def finding(self) -> str | None:
        """One line for the user when the runner had to give up kept-alive connections."""
        if self.keep_alive:
            return None
        return (f"the server held each reply on a kept-alive connection back by {self.held_back * 1000:.0f} ms "
                "(Nagle's algorithm on its sockets? TCP_NODELAY); the suite opens a connection per request, "
                "and hosts that keep connections alive will wait so on every request")  # fmt: skip

    def limits(self) -> httpx2.Limits:
        return httpx2.Limits(max_keepalive_connections=None if self.keep_alive else 0)


def _reply_seconds(url: str, timeout: float, keep_alive: bool) -> list[float]:
    transport = httpx2.HTTPTransport(verify=tls_context(), socket_options=NODELAY,
                                     limits=HttpConnections(keep_alive).limits())  # fmt: skip
    seconds = []
    with httpx2.Client(transport=transport, timeout=min(timeout, PROBE_TIMEOUT)) as http:
        for _ in range(PROBE_REQUESTS):
            started = time.perf_counter()
            http.post(url, content=_PROBE_BODY, headers=_PROBE_HEADERS).read()
            seconds.append(time.perf_counter() - started)
    return seconds[1:]


def probe_connections(url: str, timeout: float) -> HttpConnections:
    """Whether the server at ``url`` answers a kept-alive connection as fast as a fresh one (D-CNF-056).

    A server that cannot be reached, or leaves a ping unanswered for ``PROBE_TIMEOUT``, is given
    kept-alive connections: the first real one says what is wrong, in the runner's usual words.
    """
    try:
        kept = statistics.median(_reply_seconds(url, timeout, keep_alive=True))
        fresh = statistics.median(_reply_seconds(url, timeout, keep_alive=False))
    except (httpx2.HTTPError, OSError):
        return HttpConnections(keep_alive=True)
    held_back = kept - fresh
    return HttpConnections(keep_alive=held_back < HELD_BACK_SECONDS, held_back=max(held_back, 0.0))
