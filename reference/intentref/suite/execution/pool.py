"""Worker processes: the one place the suite starts them (D-CNF-054).

The suite's own work is Python, and Python threads share one interpreter lock, so work that
should use several CPUs goes to worker *processes*.  ``Workers`` starts them, each with its end
of a pipe to this process; ``map_in_workers`` runs a function over a list on them, and
``workers.run_works`` hands out the runner's units over the same pipes.  Workers are forked,
inheriting the imported modules for free; a process that runs threads spawns them instead (a
fork may inherit a lock another thread held), so then ``main``, its arguments, and what they
send must pickle.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Gone:
    """What ``Workers.heard`` gives for a worker whose pipe closed: it ended with ``status``."""

    status: int | None


class Workers:
    """``count`` worker processes, each running ``main(pipe, *args)`` with its end of a pipe to here.

    A context manager: entering starts them, leaving stops any still running (SIGTERM, then
    SIGKILL), so a parent that stops early leaves no worker behind.
    """

    def __init__(self, count: int, main: Callable[..., None], *args: Any) -> None:
        forkable = sys.platform.startswith("linux") and threading.active_count() == 1
        self._context: Any = multiprocessing.get_context("fork" if forkable else "spawn")
        self._main, self._args = main, args
        self.count = count
        self._processes: list[Any] = []
        self._pipes: list[Connection] = []
        self._open: dict[Connection, int] = {}  # the pipes still open -> their worker's number

    def __enter__(self) -> Workers:
        for number in range(self.count):
            ours, theirs = self._context.Pipe(duplex=True)
            process = self._context.Process(target=self._main, args=(theirs, *self._args),
                                            name=f"intentref-worker-{number}", daemon=True)  # fmt: skip
            process.start()
            theirs.close()
            self._processes.append(process)
            self._pipes.append(ours)
            self._open[ours] = number
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self._processes:
            if process.is_alive():
                process.terminate()
        for process in self._processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()
        for pipe in self._pipes:
            pipe.close()

    @property
    def running(self) -> bool:
        """Whether a worker's pipe is still open (it may still send something)."""
        return bool(self._open)

    def send(self, number: int, message: Any) -> None:
        self._pipes[number].send(message)

    def heard(self, timeout: float | None) -> list[tuple[int, Any]]:
        """What the workers sent within ``timeout`` seconds, by worker number; ``Gone`` for one that ended."""
        heard: list[tuple[int, Any]] = []
        for ready in wait(list(self._open), timeout):
            assert isinstance(ready, Connection)
            number = self._open[ready]
            try:
                heard.append((number, ready.recv()))
            except (EOFError, OSError):
                del self._open[ready]
                self._processes[number].join(5)
                heard.append((number, Gone(self._processes[number].exitcode)))
        return heard


def map_in_workers(function: Callable[[Item], Result], items: Sequence[Item], jobs: int) -> list[Result]:
    """``function`` of every item, on up to ``jobs`` worker processes; the results in the order of ``items``.

    Each worker takes the next item when it is free, so items given largest first keep any
    worker from being left with a long one at the end.  With one job or one item everything
    runs here.  An exception in a worker is raised here (as text, if it does not pickle).
    """
    count = min(jobs, len(items))
    if count <= 1:
        return [function(item) for item in items]
    results: dict[int, Result] = {}
    following = iter(range(len(items)))
    finished: set[int] = set()  # the workers told that nothing is left

    def hand_out(workers: Workers, number: int) -> None:
        index = next(following, None)
        if index is None:
            finished.add(number)
        workers.send(number, index)

    with Workers(count, _take_items, function, items) as workers:
        for number in range(count):
            hand_out(workers, number)
        while workers.running:
            for number, message in workers.heard(None):
                if isinstance(message, Gone):
                    if number not in finished:
                        raise RuntimeError(f"a worker process died (exit status {message.status})")
                elif isinstance(message, BaseException):
                    raise message
                else:
                    index, result = message
                    results[index] = result
                    hand_out(workers, number)
    return [results[index] for index in range(len(items))]


def _take_items(pipe: Connection, function: Callable[[Any], Any], items: Sequence[Any]) -> None:
    """A worker of ``map_in_workers``: run the item the parent names until it names none."""
    for index in iter(pipe.recv, None):
        try:
            result = function(items[index])
        except BaseException as exc:
            try:
                pipe.send(exc)
            except Exception:  # it does not pickle: its traceback does
                pipe.send(RuntimeError(f"a worker process broke: {traceback.format_exc(limit=8)}"))
            return
        pipe.send((index, result))
    pipe.close()
