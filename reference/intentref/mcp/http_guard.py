"""What the HTTP server checks before the SDK sees a request, and how it treats slow or greedy peers.

The SDK's streamable-HTTP app reads a request's whole body before it checks ``Host`` and
``Origin``, bounds each body but not the bodies in flight together, and uvicorn has no
timeout for a request's head or body.  This module adds exactly those (D-MCP-022,
D-MCP-023), leaving everything else to the SDK and uvicorn:

* ``RequestGuard`` (ASGI middleware): the SDK's own DNS-rebinding check, run on the headers
  alone; then the body, read against a deadline and a shared byte budget, handed to the
  SDK in one piece.
* ``CallRateLimit`` (ASGI middleware, behind the SDK's bearer middleware): each caller's tool
  calls through a token bucket, 429 past it (D-MCP-034).
* ``GuardedH11Protocol`` (uvicorn protocol): closes a connection whose request head has
  not arrived within the header timeout.
* ``ListeningSocket``: the listening socket; every connection it accepts sends small writes
  at once (``TCP_NODELAY``, D-MCP-029), and running out of descriptors is reported once
  per wake-up.
* ``resource_exhaustion_handler``: one log line per interval, not a traceback per retry,
  when the process runs out of descriptors.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import time
from collections.abc import Callable, Hashable
from typing import Any, Final

import anyio
import h11
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import CLIENT_INFO_META_KEY
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from intentref.mcp.auth import principal_of
from intentref.mcp.capacity import CALL_BURST_SECONDS, principal_client, stateless_client

logger = logging.getLogger(__name__)

# D-MCP-022: a body up to this size is "small": the whole legitimate traffic (a candidate is
# at most 1 MiB, MAX_CANDIDATE_BYTES, and JSON escaping rarely doubles it), served from its
# own budget so that large bodies can never crowd it out.
SMALL_BODY_BYTES: Final = 2 * 1024 * 1024
# D-MCP-022: bytes of small bodies in flight together.  At a few KB per real call this is
# thousands of concurrent calls; only a flood of near-2 MiB bodies reaches it.
DEFAULT_SMALL_BODY_BUDGET: Final = 64 * 1024 * 1024
# D-MCP-022: bytes of large bodies (over SMALL_BODY_BYTES, up to the 16 MiB body limit) in
# flight together: two maximal bodies.  Each costs the SDK several copies while it is
# parsed (about 58 MB resident for 16 MiB), so this is what bounds the server's memory.
DEFAULT_LARGE_BODY_BUDGET: Final = 32 * 1024 * 1024
# D-MCP-022: the average rate at which large bodies are admitted (the pool above is the
# burst).  The SDK spends about 74 ms of CPU on a 16 MiB body, all of it on the one event
# loop every client shares: at 8 MiB/s that is under 4% of a core, however many senders
# push large bodies back to back.  A large body is only ever a mistake (a candidate is at
# most 1 MiB), so making it wait costs no legitimate flow anything.
DEFAULT_LARGE_BODY_RATE: Final = 8 * 1024 * 1024
# D-MCP-022: what a refused request is told to wait; bodies in flight finish in milliseconds
# on loopback, so a second is ample.
RETRY_AFTER_SECONDS: Final = 1
# D-LIM-008: callers tracked at once before those whose bucket has refilled are forgotten.
MAX_TRACKED_CALLERS: Final = 10_000
# D-MCP-023: the whole head of a request (request line and headers) must arrive within this;
# an SDK client sends it in one write.  Counted from the connection's start, or from the end
# of the previous response on a kept-alive connection.
DEFAULT_HEADER_TIMEOUT: Final = 10.0
# D-MCP-023: the whole body must arrive within this, from the end of its head: 16 MiB
# needs only about 4.5 Mbit/s, and a loopback client sends it in milliseconds.
DEFAULT_BODY_TIMEOUT: Final = 30.0
# D-MCP-023: at most one line per this many seconds about running out of descriptors.
RESOURCE_LOG_INTERVAL: Final = 10.0


class TokenBucket:
    """``rate`` units a second on average, up to ``burst`` at once: what one take may spend."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._filled_at = clock()

    def take(self, amount: float = 1.0) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._filled_at) * self.rate)
        self._filled_at = now
        if self._tokens < amount:
            return False
        self._tokens -= amount
        return True

    def full(self) -> bool:
        """Whether the bucket has refilled completely, so forgetting it loses nothing."""
        return self._tokens + (self._clock() - self._filled_at) * self.rate >= self.burst


class BodyBudget:
    """Bytes of request bodies in flight, in two pools, and the rate of large ones (D-MCP-022).

    The large pool bounds memory (bytes in flight); a token bucket over it bounds CPU
    (bytes admitted per second on average, with the pool's size as the burst).
    """

    def __init__(
        self,
        small: int = DEFAULT_SMALL_BODY_BUDGET,
        large: int = DEFAULT_LARGE_BODY_BUDGET,
        large_rate: float = DEFAULT_LARGE_BODY_RATE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = {"small": small, "large": large}
        self.used = {"small": 0, "large": 0}
        self.refused = 0  # requests answered 503, for tests and the soak figure
        self._large_rate = TokenBucket(large_rate, large, clock)

    def take(self, pool: str, size: int) -> bool:
        if self.used[pool] + size > self.limits[pool]:
            return False
        if pool == "large" and not self._large_rate.take(size):
            return False
        self.used[pool] += size
        return True

    def give(self, pool: str, size: int) -> None:
        self.used[pool] -= size


class _Refused(Exception):
    def __init__(self, response: Response, delay: float = 0.0) -> None:
        self.response = response
        self.delay = delay  # seconds to hold the answer (D-MCP-022: a refused body waits out its Retry-After)


def _too_large() -> _Refused:
    return _Refused(Response("Request body too large", status_code=413))


class RequestGuard:
    """ASGI middleware in front of the SDK app: headers first, then a bounded, timed body."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        security: TransportSecuritySettings,
        max_body_size: int,
        budget: BodyBudget,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        self.app = app
        # The SDK's own checker, on headers only: the same allow-lists and answers
        # (421 for Host, 403 for Origin) as it would give after reading the body.
        self._security = TransportSecurityMiddleware(security)
        self._max_body_size = max_body_size
        self._budget = budget
        self._body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = await self._security.validate_request(Request(scope), is_post=False)
        if refusal is not None:  # spec: D-MCP-022 -- before a byte of the body is read
            await refusal(scope, receive, send)
            return
        held: dict[str, int] = {"small": 0, "large": 0}
        try:
            try:
                body, trailer = await self._read_body(scope, receive, held)
            except _Refused as refused:
                if refused.delay:
                    # The refused sender waits out its own Retry-After here, reading nothing,
                    # instead of coming straight back: a client that ignores Retry-After
                    # cannot turn refusals into a flood that costs the server CPU.
                    await anyio.sleep(refused.delay)
                await refused.response(scope, receive, send)
                return
            if _opens_a_session(scope) and not _is_json(body):
                # D-MCP-022: the SDK registers a session (a task, streams) before it parses
                # an opening request, then discards it; answering its parse error here
                # first keeps a flood of garbage from costing a session each.
                await _parse_error()(scope, receive, send)
                return
            replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
            if trailer is not None:
                replay.append(trailer)
            del body
            await self.app(scope, _replaying(replay, receive), send)
        finally:
            for pool, size in held.items():
                self._budget.give(pool, size)

    async def _read_body(self, scope: Scope, receive: Receive, held: dict[str, int]) -> tuple[bytes, Message | None]:
        declared = _content_length(scope)
        if declared is not None and declared > self._max_body_size:
            raise _too_large()
        if declared is not None and declared > SMALL_BODY_BYTES:
            self._take(held, "large", declared)  # a large body reserves its whole declared size first
        chunks: list[bytes] = []
        total = 0
        trailer: Message | None = None
        with anyio.move_on_after(self._body_timeout) as timer:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    trailer = message  # the client went away; the app will see it
                    break
                chunk = message.get("body", b"")
                total += len(chunk)
                if total > self._max_body_size:
                    raise _too_large()
                if chunk and not held["large"]:
                    # An undeclared (chunked) body that grows past the small size counts as large.
                    self._take(held, "small" if total <= SMALL_BODY_BYTES else "large", len(chunk))
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if timer.cancelled_caught:
            raise _Refused(Response("Request body not received in time", status_code=408, headers={"Connection": "close"}))
        return b"".join(chunks), trailer

    def _take(self, held: dict[str, int], pool: str, size: int) -> None:
        if not self._budget.take(pool, size):
            self._budget.refused += 1
            busy = "Too many request bodies in flight; retry shortly."
            raise _Refused(Response(busy, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)}),
                           delay=RETRY_AFTER_SECONDS)  # fmt: skip
        held[pool] += size


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    """A receive that hands out ``messages`` first, then whatever the client sends next."""

    async def replayed() -> Message:
        return messages.pop(0) if messages else await receive()

    return replayed


class CallRates:
    """A token bucket of tool calls per caller (D-MCP-034), forgetting callers whose bucket is full again."""

    def __init__(self, per_second: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self.refused = 0  # calls answered 429, for tests and the soak figure
        self._clock = clock
        self._buckets: dict[Hashable, TokenBucket] = {}

    def take(self, caller: Hashable, calls: int) -> bool:
        bucket = self._buckets.get(caller)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED_CALLERS:
                # A full bucket is what a new caller starts with, so forgetting one changes nothing.
                self._buckets = {key: kept for key, kept in self._buckets.items() if not kept.full()}
            bucket = self._buckets[caller] = TokenBucket(self.per_second, self.per_second * CALL_BURST_SECONDS, self._clock)
        if bucket.take(calls):
            return True
        self.refused += 1
        return False


def _tool_calls(body: bytes) -> list[dict[str, Any]]:
    """The ``tools/call`` requests in a POST body (a JSON-RPC message, or a batch of them)."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return []  # the SDK answers it; no tool runs
    messages = document if isinstance(document, list) else [document]
    return [m for m in messages if isinstance(m, dict) and m.get("method") == "tools/call"]


def _caller(scope: Scope, call: dict[str, Any]) -> Hashable:
    """Whom a tool call counts against: the principal, else the client as D-MCP-026 tells them apart."""
    if (principal := principal_of(scope)) is not None:
        return principal_client(principal).key
    for name, value in scope["headers"]:
        if name == b"mcp-session-id":
            return ("session", value)
    params = call.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    info = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    declared = (str(info.get("name")), str(info.get("version"))) if isinstance(info, dict) else None
    return stateless_client((scope.get("client") or (None,))[0], declared).key


class CallRateLimit:
    """ASGI middleware behind authentication: a tool call past its caller's rate gets 429 (D-MCP-034).

    It runs inside RequestGuard, so the body arrives whole in one message; the refusal is
    answered before the SDK parses the request, so no Bridge session sees it.
    """

    def __init__(self, app: ASGIApp, *, rates: CallRates, authorized: bool = False) -> None:
        self.app = app
        self._rates = rates
        self._authorized = authorized

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or (self._authorized and principal_of(scope) is None):
            await self.app(scope, receive, send)  # an unauthenticated request gets its 401 first
            return
        message = await receive()
        calls = _tool_calls(message.get("body", b""))
        if calls and not self._rates.take(_caller(scope, calls[0]), len(calls)):
            await anyio.sleep(RETRY_AFTER_SECONDS)  # as for a refused body (D-MCP-022): a flood waits its turn
            refusal = Response(
                f"Too many tool calls: at most {self._rates.per_second} a second; retry shortly.",
                status_code=429,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, _replaying([message], receive), send)


def _opens_a_session(scope: Scope) -> bool:
    """A POST the SDK would open a handshake-era session for: no session id, no 2026-07-28 version."""
    if scope.get("method") != "POST":
        return False
    for name, value in scope["headers"]:
        if name == b"mcp-session-id":
            return False
        if name == b"mcp-protocol-version" and value.startswith(b"2026"):
            return False
    return True


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def _parse_error() -> Response:
    # The SDK's own answer to a body that is not JSON (HTTP 400, JSON-RPC -32700, id null).
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: the body is not JSON."}}
    return Response(json.dumps(payload), status_code=400, media_type="application/json")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses such a request before the app runs
    return None


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head (D-MCP-023).

    uvicorn (0.55) bounds only the wait between requests, and any byte resets that wait:
    a client sending a byte now and then held its connection, and a descriptor, forever.
    Here a connection whose next request head is not complete within ``header_timeout``
    of the connection's start (or of its previous response) is closed.
    """

    header_timeout: float = DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._responses = 0

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_overdue, self._responses)

    def _head_overdue(self, responses: int) -> None:
        self._head_timer = None
        # Still waiting for the same request's head: no response since the timer started,
        # and h11 has not yet seen a complete request line and headers.
        if responses == self._responses and self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        self._responses += 1
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)


def guarded_protocol(header_timeout: float) -> type[GuardedH11Protocol]:
    """A protocol class with its own header timeout (uvicorn builds one instance per connection)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"header_timeout": header_timeout})


_RESOURCE_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

# D-MCP-023: loggers that write one line per refused request (uvicorn: "Invalid HTTP request
# received."; the SDK: "Invalid Host header", "Rejecting request for session", ...): any
# client can make them write at will, so each message is rate-limited like the descriptor one.
PER_REQUEST_LOGGERS: Final = (
    "uvicorn.error",
    "mcp.server.transport_security",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server._streamable_http_modern",
)


class RateLimitFilter(logging.Filter):
    """At most one record per message template per RESOURCE_LOG_INTERVAL; the next says how many it folded."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        last, folded = self._seen.get(key, (float("-inf"), 0))
        if now - last < RESOURCE_LOG_INTERVAL:
            self._seen[key] = (last, folded + 1)
            return False
        if len(self._seen) > 1024:  # templates are few; a flood of distinct ones must not grow this
            self._seen.clear()
        self._seen[key] = (now, 0)
        if folded:
            record.msg = f"{record.getMessage()} ({folded} more like it in the last {RESOURCE_LOG_INTERVAL:g} s)"
            record.args = None
        return True


class ListeningSocket(socket.socket):
    """A listening socket: its connections send at once; running out of descriptors is reported once per wake-up.

    D-MCP-029: every accepted connection gets ``TCP_NODELAY``.  asyncio sets it only on
    sockets whose ``proto`` is ``IPPROTO_TCP``, and ``socket.create_server`` (like uvicorn's
    own ``bind_socket``) makes them with ``proto`` 0; left with Nagle's algorithm, a reply
    written as a head and then a body waits for the client's delayed ACK of the head, about
    40 ms on Linux, on every request of a kept-alive connection.

    asyncio's accept loop (CPython 3.11) does not stop at the first EMFILE: it retries up to
    its backlog (2,048 under uvicorn) times in the same tick, each time logging a traceback
    and scheduling another retry, and each retry does the same; at shutdown every pending
    retry fails again on the closed socket.  Here the first failure is raised as usual
    (asyncio then pauses accepting for a second) and the next call in the same wake-up says
    "nothing to accept", which ends asyncio's loop: one retry, one report (D-MCP-023).
    """

    _exhausted = False

    @classmethod
    def adopt(cls, sock: socket.socket) -> ListeningSocket:
        return cls(sock.family, sock.type, sock.proto, fileno=sock.detach())

    def accept(self) -> tuple[socket.socket, Any]:
        if self._exhausted:
            self._exhausted = False
            raise BlockingIOError(errno.EAGAIN, "accepting paused: out of resources")
        try:
            conn, address = super().accept()
        except OSError as exc:
            if exc.errno in _RESOURCE_ERRNOS:
                self._exhausted = True
            raise
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # D-MCP-029
        return conn, address


def resource_exhaustion_handler(
    fallback: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An event-loop exception handler that turns descriptor exhaustion into one line per interval.

    asyncio reports every failed ``accept()`` at the descriptor limit with a traceback
    (and retries each second); anything else goes to ``fallback`` as before (D-MCP-023).
    """
    last = [float("-inf")]
    suppressed = [0]

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS:
            now = clock()
            if now - last[0] < RESOURCE_LOG_INTERVAL:
                suppressed[0] += 1
                return
            more = f" ({suppressed[0]} more since the last report)" if suppressed[0] else ""
            logger.error(
                "out of system resources (%s): new connections wait until descriptors free up%s",
                errno.errorcode.get(exc.errno or 0, exc.errno),
                more,
            )
            last[0] = now
            suppressed[0] = 0
            return
        handle = context.get("handle")
        if isinstance(exc, ValueError) and getattr(getattr(handle, "_callback", None), "__name__", "") == "_start_serving":
            # asyncio's paused accept retrying after the server closed its socket: nothing to report.
            return
        if fallback is not None:
            fallback(loop, context)
        else:
            loop.default_exception_handler(context)

    return handle
