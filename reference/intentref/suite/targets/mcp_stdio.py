"""The MCP target spawned over stdio: a command template, its server processes, and servers started ahead.

Over stdio one process is one connection is one Bridge session (D-MCP-002), which shapes
everything here (D-CNF-001..004):

* a run is a configuration; its connections are server processes of that configuration,
  kept while the run lasts (``mcp.ConnectionRun``, D-CNF-002);
* a case's further connections (a second session, or a session reopened after ``close``)
  are further processes of the same configuration: separate Bridges, so the case is
  unsupported when it also sets Bridge options (capacity is Bridge-wide);
* a configuration fault is an exit before answering, whatever the status and stderr say:
  the runner judges a configuration case by that alone (D-CNF-051).

The bundled reference's processes are forked from a pre-imported zygote instead of started
cold (``zygote``, D-CNF-006); any other command is spawned (``transport``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from intentref.suite.targets.base import (
    DEFAULT_TIMEOUT,
    OWN_RUNS_AT_ONCE,
    REFERENCE_CAPABILITIES,
    PlannedRun,
    Run,
    TargetUnsupported,
)
from intentref.suite.targets.harness import dumps_wire
from intentref.suite.targets.mcp import Connection, ConnectionRun, McpTarget, connections_of
from intentref.suite.targets.transport import ProcessInfo, ServerProcess, SpawnedProcess, stdio_transport
from intentref.suite.targets.zygote import ForkedProcess, Zygote

# Servers of upcoming runs of their own started ahead (StdioTarget.expect_runs): one for each
# run the worker has open at once, and one more, so none waits for its server to start.
PREFETCH: Final = OWN_RUNS_AT_ONCE + 1
PLACEHOLDERS: Final = ("config", "maxJobs", "maxReplayEntries", "maxReplayBytes", "jobTtlMs", "replayTtlMs")
# The bundled CLI: each option flag only when the run sets that option.
REFERENCE_ARGS: Final = (
    "--config {config} [--max-jobs {maxJobs}] [--max-replay-entries {maxReplayEntries}]"
    " [--max-replay-bytes {maxReplayBytes}] [--job-ttl-ms {jobTtlMs}] [--replay-ttl-ms {replayTtlMs}]"
)
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z]+)\}")


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


# --------------------------------------------------------------------------- stdio


@dataclass(frozen=True)
class _Started:
    """A server started ahead for a planned run of its own (prefetch).

    A warm server is read by name (``key`` to find it, ``config`` and ``argv`` to open the
    run on it), never by position; frozen, since it is handed over whole or discarded whole.
    """

    key: str
    config: str  # the instances file written for it
    argv: list[str]
    connection: Connection


class StdioTarget(McpTarget):
    """An MCP server spawned over stdio, driven by the SDK Client in one era.

    ``command`` is a template (see :class:`CommandTemplate`); ``"{config}"`` becomes the
    path of a ``{"instances": ...}`` file written for the run.
    """

    long_lived_runs = True  # a run is a process start: keep runs, merge configurations (D-CNF-050)

    def __init__(
        self,
        command: str | CommandTemplate,
        era: str = "auto",
        timeout: float = DEFAULT_TIMEOUT,
        name: str | None = None,
        env: dict[str, str] | None = None,
        fork: bool = False,
        zygote_socket: str | None = None,
    ) -> None:
        super().__init__(era, timeout)
        self.template = command if isinstance(command, CommandTemplate) else CommandTemplate.parse(command)
        if "config" not in self.template.placeholders():
            raise ValueError("the server command must contain {config}, the path of the instances file")
        self.startup_timeout = max(3 * timeout, 60.0)  # a cold start imports the whole SDK
        self.env = dict(os.environ) if env is None else env
        self.name = name or f"stdio: {self.template.display()}"
        # fork: the template is the console script's arguments, each process forked from the zygote at
        # zygote_socket, or from one of the target's own started with its first process (D-CNF-006).
        self._fork = fork
        self._zygote_socket = zygote_socket
        self._zygote: Zygote | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-stdio-")
        self._runs = 0
        self.prefetch = PREFETCH
        self._lock = threading.Lock()  # open() is called from the runner's threads
        self._planned: collections.deque[tuple[str, dict[str, Any], dict[str, Any]]] = collections.deque()
        self._warm: collections.deque[_Started] = collections.deque()

    @classmethod
    def reference(cls, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, fork: bool = True,
                  zygote_socket: str | None = None) -> StdioTarget:  # fmt: skip
        """The bundled ``intent-runtime-mcp``.

        ``fork`` (the default) forks each server process from a pre-imported zygote instead
        of starting the console script cold: same code, same pipes, a fraction of the
        start-up (D-CNF-006).  ``zygote_socket`` names a zygote another process started
        (the runner's workers share one); without it the target starts its own with its first
        server process, so a target built only to plan cases starts none.
        """
        template = CommandTemplate.parse(REFERENCE_ARGS, prefix=() if fork else reference_program())
        target = cls(template, era, timeout, name=f"reference over stdio ({'forked' if fork else 'cold start'})",
                     fork=fork, zygote_socket=zygote_socket if fork else None)  # fmt: skip
        target.capabilities = REFERENCE_CAPABILITIES  # D-CNF-030: what the bundled CLI takes
        return target

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return self.template.unsupported(bridge_options)

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        if case.get("bridge") and connections_of(case) > 1:
            return ("needs two connections to one Bridge with these options; over stdio each connection "
                    "is its own server process (D-CNF-001)")  # fmt: skip
        return None

    def _write_config(self, instances: dict[str, Any]) -> str:
        with self._lock:
            self._runs += 1
            number = self._runs
        path = os.path.join(self._dir.name, f"run-{number}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        return path

    def _zygote_path(self) -> str | None:
        """The socket of the zygote this target forks from, its own started now if it has none yet."""
        if not self._fork or self._zygote_socket is not None:
            return self._zygote_socket
        with self._lock:
            if self._zygote is None:
                self._zygote = Zygote(self.startup_timeout)
        self._zygote.wait()
        return self._zygote.socket

    def spawn(self, argv: list[str], wait: bool = True) -> Connection:
        info = ProcessInfo(argv)
        socket_path, env = self._zygote_path(), self.env
        startup = self.startup_timeout

        async def start() -> ServerProcess:
            if socket_path is not None:
                return await ForkedProcess.start(socket_path, argv, startup)
            return await SpawnedProcess.start(argv, env)

        return Connection(self, lambda: stdio_transport(info, start), self.startup_timeout, info, wait=wait)

    # --- prefetch: the runner says which runs of their own come next ---------------------

    def expect_runs(self, runs: list[PlannedRun]) -> None:
        """The runs (instances, options) that ``open`` will be asked for, in order.

        Their servers are started ``PREFETCH`` ahead, so a case with its own configuration
        waits for its process only when start-ups are slower than the cases themselves.
        """
        with self._lock:
            self._discard_warm()
            self._planned = collections.deque((_run_key(i, o), i, o) for i, o in runs if not self.unsupported(o))
        self._top_up()

    def _top_up(self) -> None:
        while True:
            with self._lock:
                if not self._planned or len(self._warm) >= self.prefetch:
                    return
                key, instances, options = self._planned.popleft()
            config = self._write_config(instances)
            argv = self.template.render(config, options)
            started = _Started(key, config, argv, self.spawn(argv, wait=False))
            with self._lock:
                self._warm.append(started)

    def _take_warm(self, key: str) -> _Started | None:
        # The first started server of this configuration, wherever it stands: parallel
        # cases open their runs in nearly, not exactly, the planned order.
        with self._lock:
            found = next((started for started in self._warm if started.key == key), None)
            if found is not None:
                self._warm.remove(found)
        if found is not None:
            self._top_up()
        return found

    def _discard_warm(self) -> None:
        while self._warm:
            started = self._warm.popleft()
            started.connection.close()
            _remove(started.config)

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        reason = self.unsupported(bridge_options)
        if reason is not None:
            raise TargetUnsupported(reason)
        warm = self._take_warm(_run_key(instances, bridge_options)) if self._warm else None
        if warm is not None:
            config, argv, connection = warm.config, warm.argv, warm.connection
        else:
            config = self._write_config(instances)
            argv = self.template.render(config, bridge_options)
            connection = None
        try:
            return _StdioRun(self, argv, config, connection)
        except BaseException:
            _remove(config)
            raise

    def close(self) -> None:
        with self._lock:
            self._planned.clear()
            self._discard_warm()
        super().close()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        self._dir.cleanup()


def _run_key(instances: dict[str, Any], options: dict[str, Any]) -> str:
    return dumps_wire([instances, options])


def _remove(config: str) -> None:
    with contextlib.suppress(OSError):  # the target's own folder goes as a whole when it closes
        os.unlink(config)


class _StdioRun(ConnectionRun):
    """One configuration: its connections are server processes, kept until the run closes."""

    def __init__(self, target: StdioTarget, argv: list[str], config: str, started: Connection | None = None) -> None:
        super().__init__()
        self._target = target
        self._argv = argv
        self._config = config
        # Waited for here, so a refused configuration shows at open.
        self._idle.append(started.wait() if started is not None else target.spawn(argv))

    def _new(self) -> Connection:
        return self._target.spawn(self._argv)  # a further connection: a further process (D-CNF-001)

    def close(self) -> None:
        super().close()
        _remove(self._config)


