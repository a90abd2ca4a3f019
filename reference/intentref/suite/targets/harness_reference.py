"""The reference Bridge behind the JSON-lines harness protocol.

    python -m intentref.suite.targets.harness_reference

Reads one request per line on stdin and answers each with one line on stdout, as
``conformance/harness.schema.json`` describes; ``intentref conformance --harness`` drives
it.  It exists so the harness target itself is tested against a known-good
implementation, and as a model for other implementations' harnesses.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

from intentref.bridge import create_intent_bridge
from intentref.core.errors import IntentParseError
from intentref.core.wire import TOOL_OF_OP
from intentref.intent import Intent
from intentref.suite.targets.harness import dumps_wire


class Harness:
    def __init__(self) -> None:
        self._bridge: Any = None
        self._intents: list[Any] = []  # the harness built them, so it disposes of them
        self._sessions: dict[str, Any] = {}
        self._counter = 0

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        method = getattr(self, f"_op_{op}", None) if isinstance(op, str) else None
        if method is None and op not in TOOL_OF_OP:
            return {"error": f"unknown op {op!r}"}
        try:
            if method is None:  # prepare, accept or cancel: the session's own method of that name
                return {"reply": getattr(self._session(message), str(op))(message.get("request"))}
            answer: dict[str, Any] = method(message)
            return answer
        except Exception as exc:  # the implementation raised: say so rather than die
            return {"error": f"{type(exc).__name__}: {exc}"}

    def _close_bridge(self) -> None:
        if self._bridge is not None:
            self._bridge.close()  # closes every session (spec: R-BRG-007)
        for intent in self._intents:
            intent.dispose()  # the Bridge leaves caller Intents alone (spec: R-BRG-017)
        self._bridge, self._intents, self._sessions = None, [], {}

    def _op_configure(self, message: dict[str, Any]) -> dict[str, Any]:
        # A new run: the previous Bridge goes, its sessions with it (D-CNF-008).
        self._close_bridge()
        instances = message.get("instances", {})
        try:
            built: dict[str, Any] = {}
            for name, config in instances.items():
                built[name] = Intent(config)
                self._intents.append(built[name])
            self._bridge = create_intent_bridge({"instances": built, **message.get("bridge", {})})
        except IntentParseError as exc:
            return {"configError": exc.to_json()}
        return {"ok": True}

    def _op_connect(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._bridge is None:
            return {"error": "connect before configure"}
        self._counter += 1
        name = f"s{self._counter}"
        self._sessions[name] = self._bridge.connect()
        return {"session": name}

    def _session(self, message: dict[str, Any]) -> Any:
        session = self._sessions.get(message.get("session"))  # type: ignore[arg-type]
        if session is None:
            raise LookupError(f"no open session {message.get('session')!r}")
        return session

    def _op_close(self, message: dict[str, Any]) -> dict[str, Any]:
        self._session(message).close()
        del self._sessions[message["session"]]
        return {"ok": True}

    def _op_shutdown(self, message: dict[str, Any]) -> dict[str, Any]:
        self._close_bridge()
        return {"ok": True}


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    harness = Harness()
    for raw in stdin:
        try:
            message = json.loads(raw.decode("utf-8"))  # \\ud800 escapes come back as lone surrogates
        except (UnicodeDecodeError, ValueError):
            stdout.write(b'{"id":null,"error":"request is not a JSON line"}\n')
            stdout.flush()
            continue
        if not isinstance(message, dict):
            message = {}
        answer = {"id": message.get("id"), **harness.handle(message)}
        stdout.write(dumps_wire(answer).encode("utf-8") + b"\n")
        stdout.flush()
        if message.get("op") == "shutdown":
            return 0
    harness.handle({"op": "shutdown"})  # end of input: close what we built
    return 0


def main() -> int:
    return serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main())
