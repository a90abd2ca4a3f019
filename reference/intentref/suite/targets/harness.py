"""The ``--harness`` target: an implementation's Bridge API driven over JSON lines.

An implementation that is not an MCP server wraps its Bridge in a program that reads one
request per line on stdin and writes one response per line on stdout
(``conformance/harness.schema.json``; ``harness_reference`` is the reference's own).  A
harness process is kept between runs (D-CNF-008).  ``smoke`` tells a broken harness from a
working harness over an implementation that may still be wrong (D-CNF-009).
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from intentref.mcp.replies import is_bridge_reply
from intentref.suite.targets.base import (
    DEFAULT_TIMEOUT,
    STDERR_TAIL,
    CallSession,
    ConfigRejected,
    Reply,
    Run,
    ServerExited,
    Session,
    Target,
    TargetCannotStart,
    TargetUnsupported,
    load_instances,
)
from intentref.suite.targets.recording import RECEIVED, SENT

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# The members an answer carries (conformance/harness.schema.json): each one's check, and its form for a message.
_MEMBERS: Final[dict[str, tuple[Callable[[Any], bool], str]]] = {
    "ok": (lambda v: v is True, '{"ok": true}'),
    "session": (lambda v: isinstance(v, str) and v != "", '{"session": id}'),
    "reply": (lambda v: isinstance(v, dict), '{"reply": BridgeReply}'),
}


def dumps_wire(value: Any) -> str:
    """JSON text as ES2019 ``JSON.stringify`` writes it: a lone surrogate as its ``\\uXXXX`` escape,
    the one form that crosses a UTF-8 wire intact."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def split_command(command: str | Sequence[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else list(command)


class HarnessBroken(Exception):
    """The harness did not speak the protocol: ``kind`` says how (start, exit, json, id, shape, timeout, error)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class LineChild:
    """A child process exchanging JSON lines on stdin/stdout; stderr is kept for diagnostics."""

    def __init__(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        self.argv = argv
        self.timeout = timeout
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise HarnessBroken("start", f"cannot start {shlex.join(argv)}: {exc}") from None
        self._lines: collections.deque[bytes | None] = collections.deque()
        self._ready = threading.Condition()
        self._stderr = bytearray()
        self._next_id = 0
        self.broken: str | None = None  # set once the child failed; it is never reused
        self.tap: Callable[[str, Any], None] | None = None  # where a case records its lines (D-CNF-064)
        threading.Thread(target=self._read_stdout, daemon=True, name="harness stdout").start()
        threading.Thread(target=self._read_stderr, daemon=True, name="harness stderr").start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._ready:
                self._lines.append(line)
                self._ready.notify()
        with self._ready:
            self._lines.append(None)  # end of output
            self._ready.notify()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        # read1: whatever is there, so a chatty harness's stderr never blocks it.
        for chunk in iter(lambda: self.proc.stderr.read1(4096) if self.proc.stderr else b"", b""):  # type: ignore[attr-defined]
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def _stderr_hint(self) -> str:
        tail = self.stderr.strip().splitlines()[-5:]
        return ("; stderr: " + " | ".join(tail)) if tail else ""

    def _fail(self, kind: str, message: str) -> HarnessBroken:
        self.broken = message
        return HarnessBroken(kind, message)

    def _line(self, deadline: float) -> bytes | None:
        with self._ready:
            while not self._lines:
                left = deadline - time.monotonic()
                if (left <= 0 or not self._ready.wait(left)) and not self._lines:
                    raise self._fail("timeout", f"no answer within {self.timeout:g} s")
            return self._lines.popleft()

    def request(self, op: str, **members: Any) -> dict[str, Any]:
        """Send one request and return its response object, or raise HarnessBroken / TargetUnsupported."""
        if self.broken is not None:
            raise HarnessBroken("exit", f"the harness already failed: {self.broken}")
        self._next_id += 1
        number = self._next_id
        sent = {"id": number, "op": op, **members}
        if self.tap is not None:
            self.tap(SENT, sent)
        line = dumps_wire(sent) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode("utf-8"))
            self.proc.stdin.flush()
        except (OSError, ValueError):
            raise self._fail("exit", f"the harness stopped reading (exit {self.proc.poll()}){self._stderr_hint()}") from None
        raw = self._line(time.monotonic() + self.timeout)
        if raw is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1)
            raise self._fail("exit", f"the harness exited ({self.proc.poll()}) instead of answering {op}{self._stderr_hint()}")
        try:
            response = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._fail("json", f"the answer to {op} is not a JSON line: {raw[:200]!r}") from None
        if self.tap is not None:
            self.tap(RECEIVED, response)
        if not isinstance(response, dict):
            raise self._fail("shape", f"the answer to {op} is not a JSON object: {raw[:200]!r}")
        if response.get("id") != number:
            raise self._fail("id", f"the answer to request {number} ({op}) carries id {response.get('id')!r}")
        if "unsupported" in response:
            raise TargetUnsupported(f"the harness does not support this: {response['unsupported']}")
        if "error" in response:
            # The implementation raised where the API returns a reply: it broke, the case errors.
            raise HarnessBroken("error", f"the harness reported an internal error on {op}: {response['error']}")
        return response

    def member(self, response: dict[str, Any], name: str, what: str | None = None) -> Any:
        check, shown = _MEMBERS[name]
        if name not in response or not check(response[name]):
            raise self._fail("shape", f"expected {what or shown}, got {dumps_wire(response)[:300]}")
        return response[name]

    def close(self) -> None:
        """Ask the harness to stop; kill it if it does not (at once, if it already broke)."""
        if self.proc.poll() is None:
            if self.broken is None:
                with contextlib.suppress(HarnessBroken, TargetUnsupported):
                    self.timeout = min(self.timeout, 5.0)
                    self.request("shutdown")
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5 if self.broken is None else 0.2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class _HarnessSession(CallSession):
    def __init__(self, child: LineChild, session_id: str) -> None:
        self._child = child
        self._id = session_id

    def _call(self, op: str, request: Any) -> Reply:
        response = self._child.request(op, session=self._id, request=request)
        return Reply(self._child.member(response, "reply"))

    def close(self) -> None:
        self._child.request("close", session=self._id)

    def record_into(self, tap: Callable[[str, Any], None] | None) -> bool:
        self._child.tap = tap  # one session at a time records: the runner runs one case per run
        return True


class _HarnessRun(Run):
    def __init__(self, target: HarnessTarget, child: LineChild) -> None:
        self._target = target
        self._child = child

    def connect(self) -> Session:
        response = self._child.request("connect")
        session = self._child.member(response, "session")
        return _HarnessSession(self._child, session)

    def close(self) -> None:
        self._target._give_back(self._child)


class HarnessTarget(Target):
    """An implementation behind the JSON-lines harness protocol (``conformance/harness.schema.json``).

    Every Bridge option goes to the harness, which refuses one it cannot take in its answer to configure.
    """

    transport = "harness"

    def __init__(self, command: str | Sequence[str], timeout: float = DEFAULT_TIMEOUT, name: str | None = None) -> None:
        self.argv = split_command(command)
        if not self.argv:
            raise ValueError("the harness command is empty")
        self.timeout = timeout
        self.name = name or f"harness: {shlex.join(self.argv)}"
        self._idle: list[LineChild] = []
        self._lock = threading.Lock()

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        with self._lock:
            child = self._idle.pop() if self._idle else None
        if child is None:
            try:
                child = LineChild(self.argv, self.timeout)
            except HarnessBroken as exc:  # the command cannot run at all (D-CNF-013)
                raise TargetCannotStart(str(exc)) from None
        try:
            response = child.request("configure", instances=instances, bridge=bridge_options)
        except TargetUnsupported:
            self._give_back(child)
            raise
        except HarnessBroken as exc:
            child.close()
            if exc.kind == "exit":  # gone before answering configure: the runner decides whose fault
                raise ServerExited(str(exc)) from None
            raise
        except BaseException:
            child.close()
            raise
        if "configError" in response:
            self._give_back(child)
            raise ConfigRejected(response["configError"] if isinstance(response["configError"], dict) else {})
        if response.get("ok") is not True:
            child.close()
            raise HarnessBroken("shape", f'expected {{"ok": true}} or {{"configError": ...}}, got {dumps_wire(response)[:300]}')
        return _HarnessRun(self, child)

    def _give_back(self, child: LineChild) -> None:
        # A child that broke (or died) is never handed to another run.
        if child.broken is None and child.proc.poll() is None:
            with self._lock:
                self._idle.append(child)
        else:
            child.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()


# --------------------------------------------------------------------------- --smoke


def smoke(command: str | Sequence[str], timeout: float = DEFAULT_TIMEOUT, say: Callable[[str], None] = print) -> bool:
    """Check the harness protocol alone, only the shape of every answer; True when it works (D-CNF-009)."""
    argv = split_command(command)
    say(f"harness smoke check: {shlex.join(argv)}")
    notes: list[str] = []
    child: LineChild | None = None
    try:
        child = LineChild(argv, timeout)
        say("  ✓ started")
        response = child.request("configure", instances=load_instances(), bridge={})
        if "configError" in response:
            notes.append(f"the implementation refused the suite's instances: {dumps_wire(response['configError'])[:200]}")
            say("  ✓ configure answered (with a configError)")
        else:
            child.member(response, "ok", '{"ok": true} or {"configError": ...}')
            say("  ✓ configure")
            response = child.request("connect")
            session = child.member(response, "session")
            say(f"  ✓ connect (session {session!r})")
            response = child.request("prepare", session=session, request={"instance": "default", "input": "查询订单 000123"})
            reply = child.member(response, "reply")
            if not is_bridge_reply(reply):
                raise child._fail("shape", f'"reply" is not a BridgeReply (kind task, result or error): {dumps_wire(reply)[:200]}')
            say(f"  ✓ prepare (a {reply['kind']} reply)")
            if reply["kind"] != "task":
                notes.append(f"prepare on the default instance answered kind {reply['kind']!r}, not a task")
            child.member(child.request("close", session=session), "ok")
            say("  ✓ close")
        child.member(child.request("shutdown"), "ok")
        try:
            child.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise child._fail("exit", f"the harness did not exit within {timeout:g} s of shutdown") from None
        say("  ✓ shutdown")
        verdict = "verdict: HARNESS OK -- the protocol works; run the suite to judge the implementation"
    except HarnessBroken as exc:
        if exc.kind != "error" or child is None:
            say(f"  ✗ {exc}")
            say(f"verdict: BROKEN HARNESS ({exc.kind}) -- fix the harness program before judging the implementation")
            return False
        # A well-formed {"id", "error"} answer: the protocol works, the implementation raised.
        notes.append(str(exc))
        verdict = "verdict: HARNESS OK -- the protocol works, but the implementation failed; run the suite"
    except TargetUnsupported as exc:
        say(f"  ✗ {exc.reason}")
        say("verdict: BROKEN HARNESS (unsupported) -- the smoke check uses only what every harness must support")
        return False
    finally:
        if child is not None:
            child.close()  # a harness that already exited after shutdown is left as it is
    for note in notes:
        say(f"  ! {note}")
    say(verdict)
    return True
