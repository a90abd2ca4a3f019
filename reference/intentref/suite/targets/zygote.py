"""Fast start-up for the bundled reference server over stdio: fork a pre-imported process.

Importing the MCP SDK takes seconds of CPU, and the suite needs a fresh server for hundreds
of cases.  The zygote imports ``intentref.mcp.cli`` once and forks a child per server that
runs ``mcp_cli.main(argv)`` on the three pipe ends the client passed: a real separate
process still answers (D-CNF-006); only the interpreter start-up and the imports are skipped.

    python -m intentref.suite.targets.zygote SOCKET

Per connection on SOCKET: the client sends one JSON line ``{"argv": [...], "cwd": ...}``
with three descriptors attached (SCM_RIGHTS); the zygote answers the child's pid on one
line and, when the child exits, its exit status on another (negative: killed by that
signal).  Closing the connection early kills the child.

The zygote is single-threaded (a select loop), so forking it is safe; it exits, taking
its children with it, when its stdin reaches end of input (the runner went away).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import anyio

from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, PREPARE_TOOL
from intentref.mcp._fdio import read_chunks, write_all

READY: Final = "intentref-zygote ready"
_SERVING_MODULES: Final = (
    "intentref.mcp.cli",
    "intentref.mcp.server",
    "intentref.bridge",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "anyio.abc",
    "jsonschema",  # the core loads it on first data validation (schema_subset._validation_kit)
)


def become_child(cwd: str, fds: list[int], main: Callable[[], int]) -> None:
    """In a forked child: take the client's pipes as stdin/stdout/stderr, run ``main`` in
    ``cwd`` and exit with its status; never returns."""
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
    # Nothing of the zygote's may stay open in a server: not the listener, not another
    # client's connection (its EOF would never come), not the passed descriptors.
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 65536)
    code = 1
    try:
        os.chdir(cwd)
        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)  # never run the zygote's own clean-up in a child


class ForkServer:
    """The zygote's select loop: accept a client, fork a child onto its pipes, report the child's exit."""

    def __init__(self, path: str) -> None:
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(64)
        self._selector = selectors.DefaultSelector()
        self._children: dict[int, socket.socket] = {}  # server pid -> its client's connection
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)

    def serve(self) -> None:
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the select through the fd
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "reap")
        self._selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
        print(READY, flush=True)
        try:
            while True:
                for key, _ in self._selector.select():
                    what: Any = key.data
                    if what == "accept":
                        self._accept()
                    elif what == "reap":
                        self._drain_wakeups()
                        self._reap()
                    elif what == "stdin":
                        if not os.read(sys.stdin.fileno(), 4096):
                            return  # the runner has gone: stop
                    else:
                        self._client_gone(what)
        finally:
            for pid in list(self._children):
                _kill(pid, signal.SIGKILL)
            # Reaped here, not left to init: so no server outlives the zygote as a zombie, and
            # its CPU time reaches the runner's RUSAGE_CHILDREN with the zygote's own (what
            # ``intentref bench`` weighs a run by).
            for pid in list(self._children):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)

    def _accept(self) -> None:
        conn, _ = self._listener.accept()
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
            header = json.loads(message.decode("utf-8"))
            if len(fds) != 3:
                raise ValueError("a client must pass exactly stdin, stdout and stderr")
        except (OSError, ValueError):
            conn.close()
            return
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            self.run_child(list(header["argv"]), str(header["cwd"]), fds)
        for fd in fds:
            os.close(fd)  # only the child may hold the server's pipes, or EOF never comes
        self._children[pid] = conn
        conn.sendall(f"{pid}\n".encode())
        self._selector.register(conn, selectors.EVENT_READ, pid)

    def run_child(self, argv: list[str], cwd: str, fds: list[int]) -> None:
        """In the forked child: become ``intent-runtime-mcp ARGV`` on ``fds``; never returns."""

        def serve() -> int:
            from intentref.mcp import cli as mcp_cli

            sys.argv = [mcp_cli.PROG, *argv]
            return mcp_cli.main(argv)

        become_child(cwd, fds, serve)

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass

    def _reap(self) -> None:
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self._children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(conn)
                with contextlib.suppress(OSError):
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                conn.close()

    def _client_gone(self, pid: int) -> None:
        # The client hung up before the server exited (its last resort against a hung
        # server): the server must not outlive the connection.
        conn = self._children.get(pid)
        if conn is None:
            return
        try:
            if conn.recv(1):
                return
        except OSError:
            pass
        self._selector.unregister(conn)
        _kill(pid, signal.SIGKILL)


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


_WARM_REQUESTS: Final = (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "warm", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": PREPARE_TOOL, "arguments": {"instance": "warm", "input": "warm up 000123"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
     "params": {"name": ACCEPT_TOOL, "arguments": {"jobId": "x", "stepToken": "y", "candidateText": "{}"}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": CANCEL_TOOL, "arguments": {"jobId": "x"}}},
)  # fmt: skip
_MODERN_META: Final = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _modern(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "params": {**message.get("params", {}), "_meta": _MODERN_META}}


def _warm_up() -> None:
    """Serve one short session in memory, so the children fork with warm caches (a third of a
    forked server's start-up).  Memory streams only: no thread may run when the zygote forks."""
    import asyncio

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from intentref import Intent
    from intentref.mcp import cli as mcp_cli
    from intentref.mcp.server import serve_intent_mcp

    mcp_cli._parser().parse_args(["--config", "warm.json", "--max-jobs", "1"])
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}}, "required": ["id"]}
    intent = Intent({"language": "zh-CN", "schema": schema})

    async def session(requests: list[dict[str, Any]]) -> None:
        to_server, server_in = anyio.create_memory_object_stream[Any](16)
        server_out, from_server = anyio.create_memory_object_stream[Any](16)
        service = await serve_intent_mcp({"instances": {"warm": intent}}, (server_in, server_out))
        for message in requests:
            await to_server.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(message)))
            if "id" in message:
                await from_server.receive()
        await to_server.aclose()
        await service.close()

    asyncio.run(session(list(_WARM_REQUESTS)))  # the handshake era
    asyncio.run(session([_modern(m) for m in _WARM_REQUESTS[2:]]))  # the 2026-07-28 era
    intent.dispose()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m intentref.suite.targets.zygote SOCKET", file=sys.stderr)
        return 2
    import gc
    import importlib

    for module in _SERVING_MODULES:
        importlib.import_module(module)  # what every server imports, some of it lazily
    _warm_up()
    # Imported objects stay shared with the children: a collection in a child would touch
    # (and so copy) every page of them.
    gc.collect()
    gc.freeze()
    ForkServer(argv[0]).serve()
    return 0


# --------------------------------------------------------------------------- the runner's side


class Zygote:
    """The pre-imported parent of the bundled reference's servers (D-CNF-006); workers given
    its ``socket`` fork servers from it too."""

    def __init__(self, startup_timeout: float) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-zygote-")
        self.socket = os.path.join(self._dir.name, "zygote.sock")
        self._log = open(os.path.join(self._dir.name, "zygote.log"), "wb")  # noqa: SIM115 -- lives with the zygote
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "intentref.suite.targets.zygote", self.socket],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,  # a Ctrl-C reaches the runner, which then stops it
        )  # fmt: skip
        self._timeout = startup_timeout
        self._ready = False
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            if self._ready:
                return
            assert self.proc.stdout is not None
            readable, _, _ = select.select([self.proc.stdout], [], [], self._timeout)
            if readable and self.proc.stdout.readline().decode().strip() == READY:
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


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


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
        sock = None
        try:
            sock = await _zygote_connection(socket_path, startup_timeout)
            _ask_for_server(sock, argv, [in_r, out_w, err_w])
        except BaseException:
            if sock is not None:
                sock.close()
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

    def _receive(self) -> bool | None:
        """Add what the zygote sent to ``_pending``: True if it sent something, None if nothing is there
        yet, False once it hung up."""
        try:
            chunk = self._sock.recv(64)
        except BlockingIOError:
            return None
        except OSError:
            return False
        self._pending += chunk
        return bool(chunk)

    async def _line(self) -> bytes:
        """The next line from the zygote (the pid, then the exit status); b"" if it hung up."""
        while (line := self._take_line()) is None:
            received = self._receive()
            if received is None:
                await anyio.wait_readable(self._sock)
            elif not received:
                return b""
        return line

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            self._poll()  # the watcher may have been cancelled: read the status without it
        return self._returncode

    def _poll(self) -> None:
        line = self._take_line()
        if line is None:
            if self._receive() is False:  # the zygote hung up without a status
                self._returncode = -1
                return
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
    """A connection to the zygote, waiting while it still imports (it binds only then, D-CNF-006)."""
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


def _ask_for_server(sock: socket.socket, argv: list[str], fds: list[int]) -> None:
    """The request the zygote reads (see above): ``argv`` to run in this folder, on ``fds`` as stdin, stdout, stderr."""
    header = json.dumps({"argv": argv, "cwd": os.getcwd()}).encode("utf-8") + b"\n"
    socket.send_fds(sock, [header], fds)


class ForkedServer:
    """A reference server forked by the zygote for HTTP: stdin and stdout /dev/null, ``stderr``
    for the caller to read; closing hangs up on the zygote, which stops it."""

    def __init__(self, socket_path: str, argv: list[str], startup_timeout: float = 60.0) -> None:
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            self._sock = anyio.run(_zygote_connection, socket_path, startup_timeout)
            _ask_for_server(self._sock, argv, [null, null, err_w])
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


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main(sys.argv[1:]))
