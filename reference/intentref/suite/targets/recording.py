"""What a case exchanged with its target, kept for the report when ``--trace`` is on (D-CNF-064).

A ``Recorder`` belongs to one case: each message sent and received, bounded.  A session
records what its transport carries when it can (``Session.record_into``); any other session
is wrapped, and its calls and replies are recorded as made.  The switch (``enable``) lives in
the environment, so the worker processes see it as the parent set it.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from typing import Any, Final

from intentref.suite.targets.base import CallSession, Reply, Session

# spec: D-CNF-064 -- a failed case of the bundled suite exchanges a few dozen messages at most;
# 200 keeps every one of those and bounds a case that loops (a job polled until its TTL).
MAX_MESSAGES: Final = 200
# A task reply carries instructions of a few KiB and a limits case sends texts of megabytes:
# a string is kept to its first 1 KiB (enough to recognise it) so every member of a message
# stays readable JSON, and a message still longer than 16 KiB (one with many long members) is
# kept as the start of its JSON text.
MAX_STRING_BYTES: Final = 1024
MAX_MESSAGE_BYTES: Final = 16 * 1024
SENT, RECEIVED = "sent", "received"
_SWITCH: Final = "INTENTREF_TRACE"
# Members whose values are credentials, wherever a message carries them: never written down.
_SECRET_NAMES: Final = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "headers"})
_WITHHELD: Final = "(withheld)"


def enable(on: bool) -> None:
    """Turn recording on (or off) for this process and the workers it starts."""
    if on:
        os.environ[_SWITCH] = "1"
    else:
        os.environ.pop(_SWITCH, None)


def enabled() -> bool:
    return os.environ.get(_SWITCH) == "1"


def _kept(value: Any, cut: list[int]) -> Any:
    """``value`` with credential-named members withheld and long strings shortened, counted in ``cut``."""
    if isinstance(value, dict):
        return {k: _WITHHELD if str(k).lower() in _SECRET_NAMES else _kept(v, cut) for k, v in value.items()}
    if isinstance(value, list):
        return [_kept(item, cut) for item in value]
    if isinstance(value, str) and len(value) > MAX_STRING_BYTES // 4:
        encoded = value.encode("utf-8", "surrogatepass")
        if len(encoded) > MAX_STRING_BYTES:
            cut.append(len(encoded))
            start = encoded[:MAX_STRING_BYTES].decode("utf-8", "ignore")
            return f"{start}… ({len(encoded) - MAX_STRING_BYTES} more bytes)"
    return value


def detach(session: Session) -> None:
    """Stop ``session``'s transport recording: a connection kept for the next case records nothing there."""
    session.record_into(None)


class Recorder:
    """One case's messages, bounded (``MAX_MESSAGES``, ``MAX_MESSAGE_BYTES``)."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self._started = time.perf_counter()
        self.messages: list[dict[str, Any]] = []
        self.omitted = 0

    def record(self, direction: str, message: Any, session: str = "main") -> None:
        if len(self.messages) >= MAX_MESSAGES:
            self.omitted += 1
            return
        entry: dict[str, Any] = {"ms": round((time.perf_counter() - self._started) * 1000, 3),
                                 "session": session, "direction": direction}  # fmt: skip
        cut: list[int] = []
        value = _kept(message, cut)
        encoded = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
        if len(encoded) > MAX_MESSAGE_BYTES:
            entry["message"] = encoded[:MAX_MESSAGE_BYTES].decode("utf-8", "ignore")
            entry["truncated"] = f"{len(encoded)} bytes of JSON, the first {MAX_MESSAGE_BYTES} kept as text"
        else:
            entry["message"] = value
            if cut:
                entry["truncated"] = (f"{len(cut)} string(s) of more than {MAX_STRING_BYTES} bytes "
                                      f"kept to their first {MAX_STRING_BYTES}")  # fmt: skip
        self.messages.append(entry)

    def attach(self, session: Session, name: str) -> Session:
        """``session``, recording into this recorder: at its transport when it can, else its calls."""
        tap = functools.partial(self.record, session=name)
        return session if session.record_into(tap) else RecordingSession(session, tap)

    def document(self) -> dict[str, Any]:
        """The trace as a report's case entry carries it (``conformance/report.schema.json``)."""
        return {"transport": self.transport, "messages": self.messages, "omitted": self.omitted,
                "limits": {"messages": MAX_MESSAGES, "bytesPerMessage": MAX_MESSAGE_BYTES,
                           "bytesPerString": MAX_STRING_BYTES}}  # fmt: skip


class RecordingSession(CallSession):
    """A session whose transport cannot be tapped (in process, a user's object): its calls and replies."""

    def __init__(self, inner: Session, tap: Callable[[str, Any], None]) -> None:
        self._inner = inner
        self._tap = tap

    def _call(self, op: str, request: Any) -> Reply:
        self._tap(SENT, {"call": op, "request": request})
        try:
            reply: Reply = getattr(self._inner, op)(request)
        except Exception as exc:
            self._tap(RECEIVED, {"raised": f"{type(exc).__name__}: {exc}"})
            raise
        self._tap(RECEIVED, {"reply": reply.value})
        return reply

    def close(self) -> None:
        self._inner.close()

    def release(self) -> None:
        self._inner.release()
