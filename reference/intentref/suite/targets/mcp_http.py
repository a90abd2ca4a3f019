"""The MCP targets on streamable HTTP: a server already listening, or the bundled one started per worker.

Over HTTP the runner keeps connections alive, as hosts' clients do, unless the server holds
its replies back on a kept-alive connection (``probe_keep_alive``, D-CNF-056).  Request
bodies are written as a JavaScript host writes them (``WireHttpClient``, D-CNF-005).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, Final

import httpx2
from mcp.client.streamable_http import streamable_http_client

from intentref.suite.targets.base import (
    DEFAULT_TIMEOUT,
    OWN_RUNS_AT_ONCE,
    REFERENCE_CAPABILITIES,
    Run,
    Session,
    TargetCannotStart,
    TargetUnsupported,
    load_instances,
)
from intentref.suite.targets.harness import dumps_wire
from intentref.suite.targets.mcp import (
    Connection,
    ConnectionRun,
    ConnectionSession,
    McpTarget,
)
from intentref.suite.targets.mcp_stdio import reference_program
from intentref.suite.targets.zygote import ForkedServer
from intentref.suite.usage import HEADERS_VARIABLE

# Long-lived runs of an HTTP target serving cases side by side in one worker (D-CNF-054): one per
# thread a worker has (its long-lived one and OWN_RUNS_AT_ONCE beside it, which take long-lived
# units once no run of its own waits: over HTTP none does, a case with a Bridge of its own is
# unsupported there).
HTTP_LANES: Final = OWN_RUNS_AT_ONCE + 1


# --------------------------------------------------------------------------- streamable HTTP


class HttpTarget(McpTarget):
    """A server already listening on streamable HTTP; its configuration is its own.

    The server must serve ``conformance/instances.json`` (``http-reference`` starts the
    bundled one so).  Handshake era: each session is its own MCP session, if the server
    issues session ids; one that issued none at the first handshake cannot tell clients
    apart (D-CNF-063).  2026-07-28 era: requests carry no session, one Bridge session owns
    every job (D-MCP-003).  In either case the cases needing several connections or a close
    are unsupported (D-CNF-004).  The runner's workers each open their own sessions, so
    cases run side by side.  ``headers`` go with every request, the probe's too (D-CNF-067).
    """

    # Its instances are the server's own: the CLI checks it serves the suite's first (D-CNF-013).
    configured_elsewhere = True
    # A case over streamable HTTP spends most of its time waiting on request round trips, so
    # a worker keeps this many long-lived runs (sessions of their own) serving cases side by side.
    long_lived_lanes = HTTP_LANES

    def __init__(self, url: str, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, name: str | None = None,
                 headers: Mapping[str, str] | None = None) -> None:  # fmt: skip
        super().__init__(era, timeout)
        self.url = url
        self.headers = dict(headers or {})
        self.name = name or f"http: {url}"
        self._keep_alive: HttpKeepAlive | None = None
        self._probe_lock = threading.Lock()
        # Whether the server issued an Mcp-Session-Id at the first handshake (D-CNF-063).
        self._issued_session_id: bool | None = None

    def keep_alive(self) -> HttpKeepAlive:
        """Kept alive or one per request: probed once, with the first connection (D-CNF-056)."""
        with self._probe_lock:
            if self._keep_alive is None:
                self._keep_alive = probe_keep_alive(self.url, self.timeout, self.headers)
            return self._keep_alive

    def findings(self) -> list[str]:
        finding = self.keep_alive().finding()
        return [] if finding is None else [finding]

    def negotiate(self) -> str:
        """The era in force, negotiated now with one connection when it is ``auto``."""
        if self.era.found is None:
            self.connection().close()
        return self.era.era

    def issues_session_ids(self) -> bool:
        """Whether the server issued an Mcp-Session-Id at its first handshake, connecting now if none was made."""
        if self._issued_session_id is None:
            self.connection().close()
        return bool(self._issued_session_id)

    def shared_session(self) -> str | None:
        if self.negotiate() == "2026":
            return "2026-07-28 HTTP requests carry no session and share one Bridge session (D-MCP-003, D-CNF-004)"
        if not self.issues_session_ids():
            return ("the server issued no session id (Mcp-Session-Id) at its handshake, so it cannot tell "
                    "two HTTP clients apart (D-CNF-063)")  # fmt: skip
        return None

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        if bridge_options:
            return "an HTTP server is already configured; Bridge options cannot be set per case"
        return None

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        if "setup" in case:
            return "an HTTP server is already configured; its instances cannot be replaced per case"
        return None

    def connection(self) -> Connection:
        keep_alive = self.keep_alive()
        seen = SessionIdSeen()

        def transport() -> Any:
            return _http_transport(self.url, self.timeout, keep_alive, seen, self.headers)

        connection = Connection(self, transport, max(3 * self.timeout, 30.0), address=self.url)
        if self._issued_session_id is None:  # the first handshake's answer is the server's (D-CNF-063)
            self._issued_session_id = seen.issued
        return connection

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        reason = self.unsupported(bridge_options)
        if reason is not None:
            raise TargetUnsupported(reason)
        return _HttpRun(self)


class _HttpRun(ConnectionRun):
    """Handshake era: a connection is an MCP session, kept for the next case unless a case closed it.

    2026-07-28 era: a connection is a stateless client; every session of the run shares it.
    """

    def __init__(self, target: HttpTarget) -> None:
        super().__init__()
        self._target = target

    def _new(self) -> Connection:
        return self._target.connection()

    def _keeps(self, connection: Connection, closed: bool) -> bool:
        # A closed handshake-era session really ends (its Bridge session with it): another
        # session on the same server may see the difference.
        return connection.broken is None and not closed

    def connect(self) -> Session:
        if self._target.era.era == "2026":
            with self._lock:
                shared = self._idle[0] if self._idle and self._idle[0].broken is None else None
            if shared is None:
                shared = self._new()
                with self._lock:
                    for old in self._idle:
                        old.close()
                    self._idle = [shared]
            return ConnectionSession(self, shared)
        return super().connect()

    def released(self, session: ConnectionSession, closed: bool) -> None:
        if self._target.era.era == "2026":
            # The one stateless client stays (the era has no connection to close), so the
            # session's jobs are ended here, as on any connection kept for another session.
            problems = session.end_jobs()
            with self._lock:
                self._left.extend(problems)
            return
        super().released(session, closed)


# --------------------------------------------------------------------------- the bundled server over HTTP


class HttpReferenceTarget(HttpTarget):
    """The bundled server on streamable HTTP at 127.0.0.1 (an ephemeral port), serving the suite's instances.

    Each target starts its own server when its first run opens (each of the runner's workers
    is a target of its own), forked from the reference zygote when one is given (D-CNF-006).
    The reference speaks both eras, so ``auto`` is 2026-07-28 without asking.
    """

    def __init__(self, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, zygote_socket: str | None = None,
                 instances: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__("", "2026" if era == "auto" else era, timeout, name="reference over HTTP")
        self.capabilities = REFERENCE_CAPABILITIES
        self._zygote_socket = zygote_socket
        self._instances = instances
        self._server: HttpReference | None = None
        self._server_lock = threading.Lock()

    def connection(self) -> Connection:
        with self._server_lock:
            if self._server is None:
                instances = load_instances() if self._instances is None else self._instances
                self._server = HttpReference(instances, zygote_socket=self._zygote_socket)
                self.url = self._server.url
        return super().connection()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None


class HttpReference:
    """The bundled server on streamable HTTP at 127.0.0.1 (an ephemeral port), serving ``instances``."""

    def __init__(self, instances: dict[str, Any], startup_timeout: float = 60.0, zygote_socket: str | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-http-")
        config = os.path.join(self._dir.name, "instances.json")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        argv = ["--config", config, "--http", "127.0.0.1:0"]
        self._forked: ForkedServer | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        stderr: IO[bytes]
        if zygote_socket is not None:
            self._forked = ForkedServer(zygote_socket, argv, startup_timeout)
            stderr = self._forked.stderr
        else:
            self.proc = subprocess.Popen([*reference_program(), *argv], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
            assert self.proc.stderr is not None
            stderr = self.proc.stderr
        self._stderr: list[str] = []
        found = threading.Event()
        self.url = ""

        def drain() -> None:
            for raw in stderr:
                line = raw.decode("utf-8", "replace")
                self._stderr.append(line)
                # mcp_cli prints the bound endpoint on stderr once it serves.
                match = re.search(r"serving streamable HTTP at (http://\S+)", line)
                if match and not self.url:
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True, name="http reference stderr").start()
        if not found.wait(startup_timeout) or not self.url:
            self.close()
            raise RuntimeError(f"the reference HTTP server did not start: {''.join(self._stderr)[-2000:]}")

    def close(self) -> None:
        if self._forked is not None:
            self._forked.close()
        elif self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._dir.cleanup()


# --------------------------------------------------------------------------- the wire: bodies and connections


@contextlib.asynccontextmanager
async def _http_transport(url: str, timeout: float, keep_alive: HttpKeepAlive, seen: SessionIdSeen,
                          headers: Mapping[str, str]) -> AsyncIterator[Any]:  # fmt: skip
    transport = httpx2.AsyncHTTPTransport(verify=tls_context(), socket_options=NODELAY, limits=keep_alive.limits())
    # The user's headers are the client's own: the SDK's per-request ones (Accept, the session) still win.
    http = WireHttpClient(timeout=httpx2.Timeout(max(timeout, 30.0), read=300.0), transport=transport,
                          headers=headers, event_hooks={"response": [seen.observe]})  # fmt: skip
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


@dataclass
class SessionIdSeen:
    """Whether any reply on one connection carried an Mcp-Session-Id header (D-CNF-063)."""

    issued: bool = False

    async def observe(self, response: httpx2.Response) -> None:
        if response.headers.get("mcp-session-id"):
            self.issued = True


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
# spec: D-CNF-068 -- the statuses of a server refusing the request's credentials: no case can run.
REFUSED_CREDENTIALS: Final = (401, 403)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one verifying TLS context of this process's HTTP clients.

    httpx builds one per client unless it is given one, reading the CA bundle each time
    (about 20 ms): a run makes a client per connection and two for the probe, most of them
    for plain ``http://`` URLs that never use it.
    """
    return httpx2.create_ssl_context()


@dataclass(frozen=True)
class HttpKeepAlive:
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


def _reply_seconds(url: str, timeout: float, keep_alive: bool, headers: Mapping[str, str] | None) -> list[float]:
    transport = httpx2.HTTPTransport(verify=tls_context(), socket_options=NODELAY,
                                     limits=HttpKeepAlive(keep_alive).limits())  # fmt: skip
    seconds = []
    with httpx2.Client(transport=transport, timeout=min(timeout, PROBE_TIMEOUT), headers=headers) as http:
        for _ in range(PROBE_REQUESTS):
            started = time.perf_counter()
            response = http.post(url, content=_PROBE_BODY, headers=_PROBE_HEADERS)
            response.read()
            seconds.append(time.perf_counter() - started)
            if response.status_code in REFUSED_CREDENTIALS:
                raise TargetCannotStart(_refused(url, response, sent=bool(headers)))
    return seconds[1:]


def _refused(url: str, response: httpx2.Response, sent: bool) -> str:
    """One line: the server wants credentials, and the option that gives them (D-CNF-068)."""
    challenge = response.headers.get("www-authenticate", "")
    said = f"{response.status_code} {response.reason_phrase}" + (f" ({challenge[:300]})" if challenge else "")
    given = "it refused the headers given" if sent else "no --header was given"
    return (f"the server at {url} answered {said}: {given}; send its token with "
            f'--header "Authorization: Bearer TOKEN" or a line of ${HEADERS_VARIABLE}')  # fmt: skip


def probe_keep_alive(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> HttpKeepAlive:
    """Whether the server at ``url`` answers a kept-alive connection as fast as a fresh one (D-CNF-056).

    A server that cannot be reached, or leaves a ping unanswered for ``PROBE_TIMEOUT``, is given
    kept-alive connections: the first real one says what is wrong, in the runner's usual words.
    One that refuses the request's credentials stops the run: ``TargetCannotStart`` (D-CNF-068).
    """
    try:
        kept = statistics.median(_reply_seconds(url, timeout, True, headers))
        fresh = statistics.median(_reply_seconds(url, timeout, False, headers))
    except (httpx2.HTTPError, OSError):
        return HttpKeepAlive(keep_alive=True)
    held_back = kept - fresh
    return HttpKeepAlive(keep_alive=held_back < HELD_BACK_SECONDS, held_back=max(held_back, 0.0))
