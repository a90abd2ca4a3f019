"""Fast start-up for the bundled reference server over stdio: fork a pre-imported process.

Importing the MCP SDK takes seconds of CPU, and the suite needs a fresh server process
for every case with Bridge options or its own instances (hundreds of them).  The zygote
imports ``intentref.mcp.cli`` once and forks a child per server; the child runs exactly
what the ``intent-runtime-mcp`` console script runs, ``mcp_cli.main(argv)``, with the
three pipe ends the client passed over the zygote's Unix socket as its stdin, stdout and
stderr.  The client writes to a real pipe and a real separate process answers
(D-CNF-006); only the interpreter start-up and the imports are skipped.

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
import selectors
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any, Final

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


def _child(argv: list[str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become ``intent-runtime-mcp ARGV`` on the pipes the client passed."""

    def serve() -> int:
        from intentref.mcp import cli as mcp_cli

        sys.argv = [mcp_cli.PROG, *argv]
        return mcp_cli.main(argv)

    become_child(cwd, fds, serve)


class Zygote:
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
        """In the forked child: serve on ``fds`` as the reference server with ``argv``; never returns."""
        _child(argv, cwd, fds)

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
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
     "params": {"name": "intent_prepare", "arguments": {"instance": "warm", "input": "warm up 000123"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
     "params": {"name": "intent_accept", "arguments": {"jobId": "x", "stepToken": "y", "candidateText": "{}"}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "intent_cancel", "arguments": {"jobId": "x"}}},
)  # fmt: skip
_MODERN_META: Final = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _modern(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "params": {**message.get("params", {}), "_meta": _MODERN_META}}


def _warm_up() -> None:
    """Serve one short session in memory, so the children fork with warm caches.

    Measured: argparse's and re's caches, the SDK's request paths and the first Intent
    built were a third of a forked server's start-up.  Memory streams only -- no thread may
    be running when the zygote forks.
    """
    import asyncio

    import anyio
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
    Zygote(argv[0]).serve()
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main(sys.argv[1:]))
