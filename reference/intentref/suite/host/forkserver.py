"""Fast start for the judge's server: fork it from a pre-imported process (as D-CNF-006 does).

A host starts ``{server}`` once per scenario run; importing the MCP SDK costs the better part
of a second each time.  ``intentref host`` starts one fork server per run of the judge; the
``{server}`` command line then runs ``launch.py`` (standard library only, no site packages),
which hands its own stdin, stdout and stderr to the fork server and waits.  The fork server
forks a child that serves on exactly those descriptors — the host still talks to a real
separate process over real pipes — and reports the child's exit status, which the launcher
makes its own.  Only the interpreter start-up and the imports are skipped.

    python -m intentref.suite.host.forkserver SOCKET

The protocol on SOCKET is the conformance zygote's (``intentref.suite.targets.zygote``):
one JSON line ``{"argv": [...], "cwd": ...}`` with three descriptors, answered by the child's
pid and later its exit status.  Only the child differs: it runs ``serve.main(argv)``.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Final

from intentref.suite.targets.zygote import ForkServer, become_child

_PRELOADED: Final = (
    "intentref.suite.host.serve",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.abc",
    "jsonschema",
    # what --http serves with (D-HST-011)
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.on",
    "intentref.mcp.http_guard",
    "mcp.server.streamable_http_manager",
)


def _serve_child(argv: list[str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become the judge's server on the launcher's descriptors."""

    def serve() -> int:
        from intentref.suite.host import serve as judge_server

        return judge_server.main(argv)

    become_child(cwd, fds, serve)


class ServeForkServer(ForkServer):
    """The conformance zygote's protocol; only the child differs: it runs the judge's server."""

    def run_child(self, argv: list[str], cwd: str, fds: list[int]) -> None:
        _serve_child(argv, cwd, fds)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m intentref.suite.host.forkserver SOCKET", file=sys.stderr)
        return 2
    for module in _PRELOADED:
        importlib.import_module(module)
    from intentref.suite.host import serve

    serve.suite_instances()  # builds (and so warms) every instance once; each child builds its own
    gc.collect()
    gc.freeze()
    ServeForkServer(argv[0]).serve()
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main(sys.argv[1:]))
